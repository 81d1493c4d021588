"""Hostile tool arguments: bounded parsing, non-finite numbers, and a fuzzed promise.

Whatever text a model sends as arguments, the answer is the tool's result or an
invalid-arguments / not-valid-JSON answer — never a tool error, never a crash of the
parser, and with ``always_throw=True`` never a ``ToolExecutionError`` for a call whose
tool never ran. Every test runs on asyncio and trio, in sequential and parallel mode
where a batch runs.
"""

from __future__ import annotations

import functools
import json
from typing import Annotated, Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reactcore import (
    AgentToolNode,
    AllowNonFinite,
    DefaultToolExceptionProcessor,
    Tool,
    ToolArgumentError,
    ToolCall,
    tool,
)
from reactcore._json import loads
from reactcore._tools import MAX_ARGUMENT_LENGTH, _read_arguments
from tests.helpers import calls_state

pytestmark = pytest.mark.anyio

ran: list[str] = []


@tool
async def take(x: Any) -> str:
    """Take any JSON value."""
    ran.append("take")
    return "took it"


@tool
async def scale(x: float) -> str:
    """Scale by a finite number."""
    ran.append("scale")
    return f"scaled by {x}"


@tool
async def anything(x: Annotated[float, AllowNonFinite]) -> str:
    """Take any float, NaN and infinities included."""
    return f"got {x}"


DEEP = '{"x": ' + "[" * 200_000 + "]" * 200_000 + "}"
NESTED_150 = '{"x": ' + "[" * 150 + "]" * 150 + "}"
LONG_NUMBER = '{"x": 1' + "0" * 4999 + "}"
TOO_LONG = '{"x": "' + "a" * MAX_ARGUMENT_LENGTH + '"}'


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("always_throw", [False, True])
@pytest.mark.parametrize(
    ("raw", "answer"),
    [
        (DEEP, "Error: invalid arguments for tool 'take': not read: nested deeper than 100 levels"),
        (
            NESTED_150,
            "Error: invalid arguments for tool 'take': not read: nested deeper than 100 levels",
        ),
        (
            LONG_NUMBER,
            "Error: invalid arguments for tool 'take': not read: a number of 5000 characters "
            "(at most 400 are read)",
        ),
        (
            TOO_LONG,
            f"Error: invalid arguments for tool 'take': not read: {len(TOO_LONG)} characters "
            f"(at most {MAX_ARGUMENT_LENGTH} are read)",
        ),
    ],
    ids=["200k-deep", "150-deep", "5000-digits", "too-long"],
)
async def test_hostile_arguments_answer_invalid_arguments(
    raw: str, answer: str, always_throw: bool, parallel: bool
) -> None:
    """Deep nesting, a 5,000-digit number and an over-long text answer the model with an
    invalid-arguments error (not RecursionError/ValueError through the tool-error path);
    with always_throw=True nothing is raised, since the tool never ran."""
    ran.clear()
    node = AgentToolNode(
        [take],
        parallel_tool_execution=parallel,
        exception_processor=DefaultToolExceptionProcessor(always_throw=always_throw),
    )
    state = calls_state(ToolCall("1", "take", raw), ToolCall("2", "take", '{"x": 1}'))
    update = await node(state)
    responses = update["messages"][-1].responses
    assert [(r.response_data, r.is_error) for r in responses] == [
        (answer, True),
        ("took it", False),
    ]
    assert ran == ["take"]


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"])
async def test_non_finite_floats_are_refused_unless_allowed(literal: str, parallel: bool) -> None:
    """`NaN`, `±Infinity` and `1e999` (which reads as infinity) are invalid arguments for a
    `float` parameter; an `Annotated[float, AllowNonFinite]` parameter takes them."""
    ran.clear()
    node = AgentToolNode([scale, anything], parallel_tool_execution=parallel)
    raw = f'{{"x": {literal}}}'
    update = await node(calls_state(ToolCall("1", "scale", raw), ToolCall("2", "anything", raw)))
    refused, allowed = update["messages"][-1].responses
    value = float(literal)
    assert refused.response_data == (
        f"Error: invalid arguments for tool 'scale': expected a finite number, got {value!r} "
        "@ arguments.x"
    )
    assert refused.is_error
    assert allowed.response_data == f"got {value}"
    assert ran == []


def test_non_finite_items_are_refused_where_they_are() -> None:
    """A non-finite number inside a list of floats is refused with its path."""

    @tool
    def total(xs: list[float]) -> float:
        return sum(xs)

    with pytest.raises(ToolArgumentError) as info:
        total.parse_arguments('{"xs": [1, Infinity]}')
    assert str(info.value) == (
        "invalid arguments for tool 'total': expected a finite number, got inf @ arguments.xs[1]"
    )


def test_allow_non_finite_schema_is_a_plain_number() -> None:
    """The marker changes validation only: the model sees `{"type": "number"}`."""
    assert anything.parameters["properties"]["x"] == {"type": "number"}


# --- the fuzzed promise -------------------------------------------------------------------


@attrs.frozen
class Point:
    x: int
    y: int = 0


@tool
async def mixed(a: int, b: str = "", flag: bool | None = None) -> str:
    return "mixed ok"


@tool
async def numbers(xs: list[float], ratio: float = 1.0) -> str:
    return "numbers ok"


@tool
async def nested(p: Point, tags: dict[str, list[int]] | None = None) -> str:
    return "nested ok"


@tool
async def loose(v: Any = None) -> str:
    return "loose ok"


FUZZED: list[Tool] = [mixed, numbers, nested, loose]
RESULTS = {t.name: f"{t.name} ok" for t in FUZZED}

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)
_keys = st.sampled_from(["a", "b", "flag", "xs", "ratio", "p", "tags", "v", "x", "y", "zz"])
_objects = st.dictionaries(_keys, _json, max_size=4).map(json.dumps)
_hostile = st.sampled_from(
    [
        DEEP,
        LONG_NUMBER,
        '{"xs": [1e999]}',
        '{"a": 1' + "0" * 450 + "}",
        '{"p": ' + '{"x": ' * 120 + "1" + "}" * 121,
        '{"a": 1,',
        "[",
        "null",
        "\x00",
    ]
)
_arguments = st.one_of(_objects, _json.map(json.dumps), st.text(max_size=20), _hostile)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(st.tuples(st.sampled_from(FUZZED), _arguments), min_size=1, max_size=4),
    parallel=st.booleans(),
)
async def test_any_arguments_answer_the_result_or_an_argument_error(
    calls: list[tuple[Tool, str]], parallel: bool
) -> None:
    """For random JSON values and strings against a few signatures, every answer is the
    tool's result or `Error: invalid arguments for tool '<name>': …` / `Error: arguments
    for tool '<name>' are not valid JSON: …`; with always_throw=True (any tool error would
    raise ToolExecutionError) nothing is raised."""
    node = AgentToolNode(
        FUZZED,
        parallel_tool_execution=parallel,
        exception_processor=DefaultToolExceptionProcessor(always_throw=True),
    )
    state = calls_state(*(ToolCall(str(i), t.name, raw) for i, (t, raw) in enumerate(calls)))
    update = await node(state)
    for response, (t, _) in zip(update["messages"][-1].responses, calls, strict=True):
        text = response.response_data
        if not response.is_error:
            assert text == RESULTS[t.name]
            continue
        assert text.startswith(
            (
                f"Error: invalid arguments for tool '{t.name}': ",
                f"Error: arguments for tool '{t.name}' are not valid JSON: ",
            )
        ), text


@settings(max_examples=200, deadline=None)
@given(raw=st.one_of(_json.map(json.dumps), st.text(max_size=30), _hostile))
def test_the_short_text_shortcut_reads_exactly_like_the_bounded_parser(raw: str) -> None:
    """Short arguments skip the bounded parser's checks: whatever the text, the result (or
    the error type) is the bounded parser's."""
    outcomes = []
    for read in (_read_arguments, functools.partial(loads, max_length=MAX_ARGUMENT_LENGTH)):
        try:
            outcomes.append(("value", json.dumps(read(raw))))
        except ValueError as exc:
            outcomes.append(("error", type(exc).__name__))
    assert outcomes[0] == outcomes[1]

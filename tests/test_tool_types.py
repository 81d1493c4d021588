"""Argument and return types users already have: dates and times, UUID, Decimal, fixed
tuples, dataclasses, TypedDicts, pydantic v2 models, and per-parameter descriptions from
``Annotated`` and from docstrings (Google, NumPy, Sphinx). Validation stays strict."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import json
import uuid
from typing import Annotated, Any, NotRequired, TypedDict

import pydantic
import pytest

from reactcore import AgentToolNode, Tool, ToolArgumentError, ToolCall, tool
from reactcore._docstrings import parameter_descriptions
from reactcore._results import to_json_text
from tests.helpers import calls_state


@dataclasses.dataclass
class Slot:
    start: dt.datetime
    room: str = "a"
    guests: list[str] = dataclasses.field(default_factory=list)


# The functional form: with postponed annotations, Python 3.11 cannot see NotRequired.
Filter = TypedDict("Filter", {"field": str, "limit": NotRequired[int]})  # noqa: UP013


class Inner(pydantic.BaseModel):
    n: int


class Outer(pydantic.BaseModel):
    inner: Inner
    when: dt.date
    tags: list[Inner] = []


class Node(pydantic.BaseModel):
    children: list[Node] = []


U = "12345678-1234-5678-1234-567812345678"
PLUS_2 = dt.timezone(dt.timedelta(hours=2))
OUTER = Outer(inner=Inner(n=1), when=dt.date(2024, 5, 2))
DECIMAL_PATTERN = "^-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?$"


def schema(hint: Any) -> dict[str, Any]:
    def fn(x):  # type: ignore[no-untyped-def]
        return x

    fn.__annotations__ = {"x": hint}
    found: dict[str, Any] = Tool.from_function(fn, name="t").parameters["properties"]["x"]
    return found


def read(hint: Any, value: Any) -> Any:
    def fn(x):  # type: ignore[no-untyped-def]
        return x

    fn.__annotations__ = {"x": hint}
    return Tool.from_function(fn, name="t").parse_arguments(json.dumps({"x": value}))["x"]


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        (dt.datetime, {"type": "string", "format": "date-time"}),
        (dt.date, {"type": "string", "format": "date"}),
        (dt.time, {"type": "string", "format": "time"}),
        (uuid.UUID, {"type": "string", "format": "uuid"}),
        (
            decimal.Decimal,
            {
                "anyOf": [
                    {"type": "number"},
                    {
                        "type": "string",
                        "pattern": DECIMAL_PATTERN,
                    },
                ]
            },
        ),
        (tuple[()], {"type": "array", "maxItems": 0}),
        (
            Slot,
            {
                "type": "object",
                "properties": {
                    "start": {"type": "string", "format": "date-time"},
                    "room": {"type": "string", "default": "a"},
                    "guests": {"type": "array", "items": {"type": "string"}},
                },
                "additionalProperties": False,
                "required": ["start"],
            },
        ),
        (
            Filter,
            {
                "type": "object",
                "properties": {"field": {"type": "string"}, "limit": {"type": "integer"}},
                "additionalProperties": False,
                "required": ["field"],
            },
        ),
        (Annotated[int, "How many."], {"type": "integer", "description": "How many."}),
        (
            Annotated[int, pydantic.Field(description="From pydantic.")],
            {"type": "integer", "description": "From pydantic."},
        ),
    ],
    ids=repr,
)
def test_schema_of_the_added_types(hint: Any, expected: dict[str, Any]) -> None:
    """Dates and times are ISO 8601 strings with a format, UUID a uuid string, Decimal a
    number or a decimal string, dataclasses and TypedDicts closed objects, and an
    Annotated text becomes the description."""
    assert schema(hint) == expected


def test_pydantic_schema_is_pydantics_own_with_refs_inlined() -> None:
    """A pydantic model's schema is `model_json_schema()`, with `$defs` references
    inlined (the tool's parameters are the schema's root, so they could not resolve)."""
    got = schema(Outer)
    inner = Inner.model_json_schema()
    assert got["properties"]["inner"] == inner
    assert got["properties"]["tags"]["items"] == inner
    assert "$defs" not in json.dumps(got) and "$ref" not in json.dumps(got)
    assert got["required"] == ["inner", "when"]


def test_recursive_pydantic_model_is_a_type_error_naming_it() -> None:
    """A self-referential model has no finite inlined schema: refused at definition."""
    with pytest.raises(TypeError, match="tool 't', parameter 'x': cannot describe the recursive"):
        schema(Node)


@pytest.mark.parametrize(
    ("hint", "value", "expected"),
    [
        (
            dt.datetime,
            "2024-05-01T10:00:00+02:00",
            dt.datetime(2024, 5, 1, 10, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        ),
        (dt.date, "2024-05-01", dt.date(2024, 5, 1)),
        (dt.time, "10:30", dt.time(10, 30)),
        (uuid.UUID, U, uuid.UUID(U)),
        (decimal.Decimal, "1.10", decimal.Decimal("1.10")),
        (decimal.Decimal, 1.1, decimal.Decimal("1.1")),
        (decimal.Decimal, 3, decimal.Decimal(3)),
        (tuple[int, str], [1, "x"], (1, "x")),
        (Slot, {"start": "2024-05-01T10:00:00"}, Slot(dt.datetime(2024, 5, 1, 10))),
        (Filter, {"field": "name"}, {"field": "name"}),
        (
            Outer,
            {"inner": {"n": 1}, "when": "2024-05-02"},
            Outer(inner=Inner(n=1), when=dt.date(2024, 5, 2)),
        ),
    ],
    ids=repr,
)
def test_values_of_the_added_types_are_read(hint: Any, value: Any, expected: Any) -> None:
    """Good values become real objects of the declared type (exact decimals)."""
    got = read(hint, value)
    assert got == expected
    assert type(got) is type(expected)


@pytest.mark.parametrize(
    ("hint", "value", "message"),
    [
        (dt.datetime, 5, "expected an ISO 8601 date-time string, got int 5 @ arguments.x"),
        (
            dt.datetime,
            "tomorrow",
            "expected an ISO 8601 date-time string, got 'tomorrow' @ arguments.x",
        ),
        (
            dt.date,
            "2024-05-01T10:00",
            "expected an ISO 8601 date string, got '2024-05-01T10:00' @ arguments.x",
        ),
        (uuid.UUID, "nope", "expected a UUID string, got 'nope' @ arguments.x"),
        (decimal.Decimal, "NaN", "expected a finite decimal number, got 'NaN' @ arguments.x"),
        (decimal.Decimal, "1,5", "expected a finite decimal number, got '1,5' @ arguments.x"),
        (decimal.Decimal, True, "expected a finite decimal number, got True @ arguments.x"),
        (tuple[int, str], [1], "expected an array of 2 items, got 1 @ arguments.x"),
        (tuple[int, str], "ab", "expected an array, got str @ arguments.x"),
        (
            tuple[int, str],
            ["1", 2],
            "expected an integer, got str '1' @ arguments.x[0]; "
            "expected a string, got int 2 @ arguments.x[1]",
        ),
        (Slot, {"start": "2024-05-01", "extra": 1}, "unexpected extra @ arguments.x"),
        (
            Slot,
            {"start": 1},
            "expected an ISO 8601 date-time string, got int 1 @ arguments.x.start",
        ),
        (Filter, {"limit": 1}, "required, missing @ arguments.x.field"),
        (
            Filter,
            {"field": "f", "limit": "5"},
            "expected an integer, got str '5' @ arguments.x.limit",
        ),
        (
            Outer,
            {"inner": {"n": "5"}, "when": "2024-05-02"},
            "expected Outer: inner.n: Input should be a valid integer @ arguments.x",
        ),
    ],
    ids=repr,
)
def test_wrong_values_of_the_added_types_name_the_problem(
    hint: Any, value: Any, message: str
) -> None:
    """Strict validation stays: no number is a date, no "5" an int (pydantic in strict
    mode too), a fixed tuple has exactly its items; the error says where."""
    with pytest.raises(ToolArgumentError) as info:
        read(hint, value)
    assert str(info.value) == f"invalid arguments for tool 't': {message}"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (dt.datetime(2024, 5, 1, 10, 30), '"2024-05-01T10:30:00"'),
        (dt.date(2024, 5, 1), '"2024-05-01"'),
        (dt.time(9, 5), '"09:05:00"'),
        (uuid.UUID(U), f'"{U}"'),
        (decimal.Decimal("1.10"), '"1.10"'),
        ((1, "x"), '[1, "x"]'),
        (
            Slot(dt.datetime(2024, 5, 1)),
            '{"start": "2024-05-01T00:00:00", "room": "a", "guests": []}',
        ),
        (
            Outer(inner=Inner(n=1), when=dt.date(2024, 5, 2)),
            '{"inner": {"n": 1}, "when": "2024-05-02", "tags": []}',
        ),
    ],
    ids=repr,
)
def test_results_of_the_added_types_become_json(value: Any, text: str) -> None:
    """A tool returning one of these types answers the model with JSON text."""
    assert to_json_text(value) == text


GOOGLE = """Book a room.

Args:
    start (datetime): When the meeting starts,
        in the room's time zone.
    room: Which room.

Returns:
    The booking.
"""

NUMPY = """Book a room.

Parameters
----------
start : datetime
    When the meeting starts,
    in the room's time zone.
room : str, optional
    Which room.

Returns
-------
Slot
    The booking.
"""

SPHINX = """Book a room.

:param datetime start: When the meeting starts,
    in the room's time zone.
:param room: Which room.
:returns: The booking.
"""


@pytest.mark.parametrize("doc", [GOOGLE, NUMPY, SPHINX], ids=["google", "numpy", "sphinx"])
def test_docstring_parameter_sections_describe_the_parameters(doc: str) -> None:
    """Each style's parameter section gives the parameters' descriptions (continuation
    lines joined); an Annotated text wins over the docstring."""
    assert parameter_descriptions(doc) == {
        "start": "When the meeting starts, in the room's time zone.",
        "room": "Which room.",
    }

    def book(start: dt.datetime, room: Annotated[str, "The room's name."] = "a") -> str:
        return room

    book.__doc__ = doc
    properties = tool(book).parameters["properties"]
    assert properties["start"] == {
        "type": "string",
        "format": "date-time",
        "description": "When the meeting starts, in the room's time zone.",
    }
    assert properties["room"]["description"] == "The room's name."


def test_prose_without_a_parameter_section_describes_nothing() -> None:
    """A docstring that merely mentions words and colons gives no descriptions."""
    assert parameter_descriptions("Look up a city: any city.\n\nNote: be quick.") == {}


@pytest.mark.anyio
@pytest.mark.parametrize("parallel", [False, True])
async def test_added_types_answer_through_the_node(parallel: bool) -> None:
    """Through the node: a tool taking a dataclass and a UUID, returning a dataclass with
    a datetime, answers the model with JSON; a wrong date answers an argument error."""

    @tool
    async def reschedule(slot: Slot, booking: uuid.UUID) -> Slot:
        return dataclasses.replace(
            slot, start=slot.start + dt.timedelta(days=1), room=str(booking)[:4]
        )

    good = json.dumps({"slot": {"start": "2024-05-01T10:00:00"}, "booking": U})
    bad = json.dumps({"slot": {"start": "May 1st"}, "booking": U})
    node = AgentToolNode([reschedule], parallel_tool_execution=parallel)
    update = await node(
        calls_state(ToolCall("1", "reschedule", good), ToolCall("2", "reschedule", bad))
    )
    first, second = update["messages"][-1].responses
    assert first.response_data == '{"start": "2024-05-02T10:00:00", "room": "1234", "guests": []}'
    assert second.response_data == (
        "Error: invalid arguments for tool 'reschedule': expected an ISO 8601 date-time "
        "string, got 'May 1st' @ arguments.slot.start"
    )

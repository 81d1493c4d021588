"""What a tool returns reaches the model as JSON for the common Python types (sets,
tuples, dates, decimals, UUIDs, paths, enums, attrs, dataclass and pydantic values, bytes
inside a value); a return annotation that cannot be sent is refused when the tool is
defined, naming the tool and the type; a tool without a description warns, naming it."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import io
import pathlib
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import IO, Any, Literal, NamedTuple, NewType, TypedDict

import attrs
import pydantic
import pytest

from reactcore import (
    AgentToolNode,
    AssistantMessage,
    ImagePart,
    Tool,
    ToolCall,
    ToolCallResponse,
    ToolResponseMessage,
    tool,
)

pytestmark = pytest.mark.anyio


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Size(enum.IntEnum):
    S = 1


@attrs.frozen
class Stay:
    city: str
    nights: int
    tags: frozenset[str]
    arrival: dt.date


@dataclasses.dataclass
class Invoice:
    total: decimal.Decimal
    id: uuid.UUID
    colour: Colour


class Point(NamedTuple):
    x: int
    y: int


class Room(pydantic.BaseModel):
    number: int
    booked: set[str]
    since: dt.datetime


class Movie(TypedDict):
    title: str
    year: int


UserId = NewType("UserId", str)
ID = uuid.UUID("12345678-1234-5678-1234-567812345678")
BLOB = b"\x00\xffpng"  # not UTF-8: sent in base64
WHEN = dt.datetime(2026, 12, 4, 23, 30, tzinfo=dt.UTC)

# (what the tool returns, what the model reads)
RESULTS: list[tuple[Any, str]] = [
    ({"lima", "oslo", "bern"}, '["bern", "lima", "oslo"]'),
    (frozenset({3, 1, 2}), "[1, 2, 3]"),
    ({"k": {2, 1}}, '{"k": [1, 2]}'),
    ((1, "a", None), '[1, "a", null]'),
    (Point(1, 2), "[1, 2]"),
    (dt.date(2026, 12, 24), '"2026-12-24"'),
    (WHEN, '"2026-12-04T23:30:00+00:00"'),
    (dt.time(9, 40), '"09:40:00"'),
    (decimal.Decimal("269.70"), '"269.70"'),
    (ID, f'"{ID}"'),
    (pathlib.Path("/srv/data/a.csv"), '"/srv/data/a.csv"'),
    (pathlib.PurePosixPath("notes/b.md"), '"notes/b.md"'),
    (Colour.RED, '"red"'),
    (Size.S, "1"),
    (
        Stay("Lisbon", 3, frozenset({"sea", "old town"}), dt.date(2026, 12, 24)),
        '{"city": "Lisbon", "nights": 3, "tags": ["old town", "sea"], "arrival": "2026-12-24"}',
    ),
    (
        Invoice(decimal.Decimal("1.10"), ID, Colour.BLUE),
        f'{{"total": "1.10", "id": "{ID}", "colour": "blue"}}',
    ),
    (
        Room(number=7, booked={"a"}, since=WHEN),
        '{"number": 7, "booked": ["a"], "since": "2026-12-04T23:30:00Z"}',
    ),
    ({"blob": BLOB}, f'{{"blob": "{base64.b64encode(BLOB).decode()}"}}'),
    (
        [{"when": dt.date(2026, 1, 2)}, {Colour.RED, Colour.BLUE}],
        '[{"when": "2026-01-02"}, ["blue", "red"]]',
    ),
]


async def answer_of(result: Any) -> tuple[str, bool]:
    """What the model reads of a tool that returns ``result``, and whether it is an error."""

    @tool
    def give() -> Any:
        """Give the value."""
        return result

    call = ToolCall("c1", "give", "{}")
    update = await AgentToolNode([give])({"messages": [AssistantMessage("", [call])]})
    message = update["messages"][0]
    assert isinstance(message, ToolResponseMessage)
    response = message.responses[0]
    return response.response_data, response.is_error


@pytest.mark.parametrize(("result", "sent"), RESULTS, ids=lambda v: type(v).__name__)
async def test_common_python_values_reach_the_model_as_json(result: Any, sent: str) -> None:
    """Each common Python value a tool returns is answered as this JSON (sets sorted,
    dates ISO 8601, decimals exact, enums by value, objects by field, nested bytes in
    base64), never as ``Error: TypeError: Object of type set is not JSON serializable``."""
    assert await answer_of(result) == (sent, False)


async def test_a_set_of_unorderable_items_is_sent_in_some_order() -> None:
    """A set whose items cannot be ordered (mixed types) is still an array of them."""
    text, is_error = await answer_of({1, "a"})
    assert not is_error
    assert text in ('[1, "a"]', '["a", 1]')


async def test_a_value_of_no_known_kind_is_an_error_naming_its_type() -> None:
    """A value the serialiser cannot send, from a tool whose annotation let it through
    (``Any``), is an error response naming the value's type (not a bare TypeError)."""

    class Handle:
        pass

    text, is_error = await answer_of({"handle": Handle()})
    assert is_error
    assert "Handle cannot be sent to the model as JSON" in text


# --- return annotations, checked when the tool is defined ------------------------------


class Plain:
    """A class that is none of the kinds a result may be."""


@attrs.frozen
class WithCallback:
    name: str
    on_done: Callable[[], None]


UNSENDABLE: list[tuple[Any, str]] = [
    (Plain, "Plain"),
    (IO[str], "IO[str]"),
    (io.TextIOWrapper, "TextIOWrapper"),
    (Callable[[], int], "Callable"),
    (type[int], "type[int]"),
    (dict[str, Plain], "Plain"),
    (list[Plain] | None, "Plain"),
    (WithCallback, "WithCallback.on_done"),
    (Iterator[int], "Iterator[int]"),
]


def define_tool(annotation: Any, name: str = "fetch") -> Tool:
    def fetch() -> None:
        """Fetch something."""

    fetch.__annotations__["return"] = annotation
    return Tool.from_function(fetch, name=name)


@pytest.mark.parametrize(("annotation", "named"), UNSENDABLE, ids=str)
def test_a_return_annotation_that_cannot_be_sent_is_refused(annotation: Any, named: str) -> None:
    """``-> Plain``, a file, a callable, a class, a generator, or a container or class
    holding one: a ``TypeError`` when the tool is defined, naming the tool, the
    annotation and what in it cannot be sent."""
    with pytest.raises(TypeError, match=r"^tool 'fetch': its return annotation") as caught:
        define_tool(annotation)
    assert named in str(caught.value)
    assert "cannot be sent to the model" in str(caught.value)


SENDABLE: list[Any] = [
    Any,
    object,
    None,
    str,
    int,
    float,
    bool,
    bytes,
    set[str],
    frozenset[int],
    tuple[int, ...],
    tuple[str, dt.date],
    list[dict[str, decimal.Decimal]],
    Sequence[int],
    Mapping[str, uuid.UUID],
    dt.datetime,
    dt.date | None,
    dt.time,
    pathlib.Path,
    Colour,
    Size,
    Literal["a", "b"],
    UserId,
    Stay,
    Invoice,
    Point,
    Room,
    Movie,
    ImagePart,
    list[ImagePart | str],
    ToolCallResponse,
]


@pytest.mark.parametrize("annotation", SENDABLE, ids=str)
def test_return_annotations_that_can_be_sent_are_accepted(annotation: Any) -> None:
    """Every kind the serialiser sends (and ``Any``, taken on trust) defines a tool."""
    assert define_tool(annotation).name == "fetch"


def test_the_reported_set_tool_is_defined_and_answers() -> None:
    """``-> set`` (issue 29's example) is a valid tool: it is defined, with no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @tool
        def tags() -> set[str]:
            """The tags."""
            return {"b", "a"}

    assert tags.name == "tags"


# --- descriptions -------------------------------------------------------------------------


def test_a_tool_without_a_description_warns_naming_it() -> None:
    """A tool with neither a docstring nor ``description=`` (or a blank one) is a
    ``UserWarning`` naming it, pointing at the line that defined it; one with either
    defines quietly."""
    with pytest.warns(UserWarning, match=r"tool 'lookup' has no description") as caught:

        @tool
        def lookup(key: str) -> str:
            return key

    assert [w.filename for w in caught] == [__file__]
    with pytest.warns(UserWarning, match=r"tool 'blank' has no description"):
        tool(lambda: "x", name="blank", description="  ")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tool(lambda: "x", name="described", description="Say x.")

        @tool
        def documented() -> str:
            """Say y."""
            return "y"


def test_a_plain_function_given_to_a_node_warns_once() -> None:
    """A plain function without a docstring, given as a tool, warns once where the node
    (or agent) is made; the same warning is not repeated for each node."""

    def ping() -> str:
        return "pong"

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            AgentToolNode([ping])
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(messages) == 1 and "tool 'ping' has no description" in messages[0]

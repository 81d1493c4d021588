"""Tools: ``@tool``, the JSON Schema of parameters, strict argument parsing, ToolContext."""

from __future__ import annotations

import enum
import functools
import inspect
import json
import threading
import typing
from typing import Any, Literal

import anyio
import anyio.lowlevel
import anyio.to_thread
import attrs
import pytest

from reactcore import (
    AgentToolNode,
    AssistantMessage,
    KeyStrategy,
    OverAllState,
    RunnableConfig,
    Tool,
    ToolArgumentError,
    ToolCall,
    ToolContext,
    UserMessage,
    check_cancelled,
    tool,
)

# --- types the tools below use (module level, so string annotations resolve) -----------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


@attrs.frozen
class Point:
    x: int
    y: int = 0


@attrs.frozen
class Shape:
    name: str
    corners: list[Point]
    tags: list[str] = attrs.field(factory=list)


@attrs.frozen
class Circle:
    radius: float


@attrs.frozen
class Square:
    side: float


@attrs.frozen
class Ring:
    radius: float
    width: float = 1.0


class Plain:
    """A class that is neither attrs nor an enum: no schema for it."""


@attrs.frozen
class HasSet:
    members: set[int]


def fn_with(hint: Any, default: Any = inspect.Parameter.empty) -> Any:
    """A function ``fn(x: hint [= default])`` whose annotation is the real object."""

    def fn(x):  # type: ignore[no-untyped-def]
        return x

    fn.__annotations__ = {"x": hint}
    if default is not inspect.Parameter.empty:
        fn.__defaults__ = (default,)
    return fn


def schema_of(hint: Any) -> dict[str, Any]:
    return Tool.from_function(fn_with(hint)).parameters["properties"]["x"]  # type: ignore[no-any-return]


def context(state: OverAllState | None = None) -> ToolContext:
    return ToolContext(
        call=ToolCall("c1", "t"),
        config=RunnableConfig(),
        tool_context={"user": "u1"},
        source=state if state is not None else OverAllState({}),
    )


# --- @tool and Tool.from_function -------------------------------------------------------


def test_bare_decorator_takes_name_and_docstring_from_the_function() -> None:
    """Bare ``@tool``: name = function name, description = cleaned docstring, no options."""

    @tool
    def get_weather(city: str) -> str:
        """Get the weather.

        Returns a short sentence.
        """
        return city

    assert isinstance(get_weather, Tool)
    assert get_weather.name == "get_weather"
    assert get_weather.description == "Get the weather.\n\nReturns a short sentence."
    assert get_weather.is_async is False
    assert (get_weather.timeout, get_weather.return_direct, get_weather.limiter) == (
        None,
        False,
        None,
    )
    assert get_weather.func("Oslo") == "Oslo"


def test_decorator_with_options() -> None:
    """``@tool(name=, description=, timeout=, return_direct=, limiter=)`` sets each option."""
    limiter = anyio.CapacityLimiter(2)

    @tool(
        name="lookup", description="Look it up.", timeout=2.5, return_direct=True, limiter=limiter
    )
    async def find(key: str) -> str:
        """Ignored docstring."""
        return key

    assert find.name == "lookup"
    assert find.description == "Look it up."
    assert find.timeout == 2.5
    assert find.return_direct is True
    assert find.limiter is limiter
    assert find.is_async is True


def test_decorator_with_no_options_equals_bare_decorator() -> None:
    """``@tool()`` behaves as bare ``@tool``."""

    @tool()
    def ping() -> str:
        """Ping."""
        return "pong"

    assert (ping.name, ping.description, ping.parameters["properties"]) == ("ping", "Ping.", {})


def test_missing_docstring_and_explicit_empty_description() -> None:
    """No docstring gives description ""; description="" wins over a docstring."""

    def undocumented() -> None:
        pass

    def documented() -> None:
        """Docs."""

    assert Tool.from_function(undocumented).description == ""
    assert Tool.from_function(documented, description="").description == ""


@pytest.mark.parametrize("timeout", [0, -1, -0.5])
def test_non_positive_timeout_is_a_value_error(timeout: float) -> None:
    """A timeout of zero or less is a ValueError naming the tool, at definition."""
    with pytest.raises(ValueError, match=r"'slow'.*timeout must be positive"):
        tool(name="slow", timeout=timeout)(fn_with(int))


def test_async_callable_object_and_partial_are_tools() -> None:
    """An object with ``async __call__`` is an async tool; a partial takes the rest as params."""

    class Doubler:
        async def __call__(self, n: int) -> int:
            return 2 * n

    def power(base: int, exponent: int) -> int:
        return int(base**exponent)

    doubler = Tool.from_function(Doubler(), name="double")
    square = Tool.from_function(functools.partial(power, exponent=2), name="square")
    assert doubler.is_async is True
    assert doubler.parameters["required"] == ["n"]
    assert doubler.parse_arguments('{"n": 3}') == {"n": 3}
    assert square.is_async is False
    assert square.parameters["required"] == ["base"]
    assert square.parse_arguments('{"base": 3}') == {"base": 3, "exponent": 2}


@pytest.mark.parametrize("source", ["*args: int", "**kwargs: int", "n: int, /"])
def test_unnameable_parameters_are_a_type_error(source: str) -> None:
    """*args, **kwargs and positional-only parameters cannot be named by JSON: TypeError."""
    namespace: dict[str, Any] = {}
    exec(f"def f({source}) -> None: pass", namespace)
    with pytest.raises(TypeError, match="must be nameable"):
        tool(namespace["f"])


# --- JSON Schema ------------------------------------------------------------------------

POINT_SCHEMA = {
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
    "additionalProperties": False,
    "required": ["x"],
}


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (Any, {}),
        (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (tuple[float, ...], {"type": "array", "items": {"type": "number"}}),
        (
            tuple[int, str],
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (dict[str, bool], {"type": "object", "additionalProperties": {"type": "boolean"}}),
        (
            list[dict[str, int | None]],
            {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                },
            },
        ),
        (Literal["asc", "desc"], {"enum": ["asc", "desc"]}),
        (Color, {"enum": ["red", "blue"]}),
        (Level, {"enum": [1, 2]}),
        (Point, POINT_SCHEMA),
        (
            Shape,
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "corners": {"type": "array", "items": POINT_SCHEMA},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "additionalProperties": False,
                "required": ["name", "corners"],
            },
        ),
        (
            Circle | Square,
            {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {"radius": {"type": "number"}},
                        "additionalProperties": False,
                        "required": ["radius"],
                    },
                    {
                        "type": "object",
                        "properties": {"side": {"type": "number"}},
                        "additionalProperties": False,
                        "required": ["side"],
                    },
                ]
            },
        ),
    ],
    ids=repr,
)
def test_schema_from_type_hints(hint: Any, expected: dict[str, Any]) -> None:
    """Each supported hint has its JSON Schema (an attrs factory default is neither
    required nor given as "default")."""
    assert schema_of(hint) == expected


def test_parameters_schema_required_and_defaults() -> None:
    """Parameters form a closed object; those with defaults are not required and show the
    default as JSON (enum by value, attrs instance as an object)."""

    @tool
    def search(
        query: str,
        limit: int = 10,
        color: Color = Color.BLUE,
        origin: Point = Point(1, 2),
        cursor: str | None = None,
    ) -> str:
        return query

    assert search.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "color": {"enum": ["red", "blue"], "default": "blue"},
            "origin": {**POINT_SCHEMA, "default": {"x": 1, "y": 2}},
            "cursor": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "additionalProperties": False,
        "required": ["query"],
    }


def test_unannotated_parameter_is_a_type_error_at_definition() -> None:
    """A parameter without a hint is refused when the tool is defined (not a silent ``{}``
    schema); ``Any`` says "any JSON value" explicitly."""

    def loose(value):  # type: ignore[no-untyped-def]
        return value

    with pytest.raises(TypeError) as info:
        Tool.from_function(loose)
    assert str(info.value) == (
        "tool 'loose', parameter 'value': has no type annotation; annotate it "
        "(Any accepts any JSON value)"
    )

    def explicit(value: Any) -> Any:
        return value

    loose_tool = Tool.from_function(explicit)
    assert loose_tool.parameters["properties"] == {"value": {}}
    assert loose_tool.parse_arguments('{"value": [1, {"a": null}]}') == {"value": [1, {"a": None}]}


def test_no_parameters_is_an_empty_closed_object() -> None:
    """A tool without parameters has an empty, closed object schema and no required list."""

    @tool
    def now() -> str:
        return "12:00"

    assert now.parameters == {"type": "object", "properties": {}, "additionalProperties": False}


@pytest.mark.parametrize(
    ("hint", "named"),
    [
        (set[int], "set[int]"),
        (frozenset[str], "frozenset[str]"),
        (bytes, "bytes"),
        (object, "object"),
        (Plain, "Plain"),
        (list, "list"),
        (dict[int, str], "dict[int, str]"),
        (HasSet, "set[int]"),
        (int | str, "int | str"),
        (list[float | str], "float | str"),
        (Circle | int, "Circle | int"),
    ],
    ids=repr,
)
def test_unsupported_types_are_a_type_error_at_definition(hint: Any, named: str) -> None:
    """A type the schema cannot describe, or the converter cannot read back (a union other
    than ``X | None`` or attrs classes told apart by fields), is a TypeError naming it."""
    with pytest.raises(TypeError) as info:
        Tool.from_function(fn_with(hint), name="t")
    assert named in str(info.value)


@pytest.mark.parametrize(
    ("hint", "message"),
    [
        (bytes, "tool 't', parameter 'x': cannot describe bytes as JSON Schema"),
        (set[int], "tool 't', parameter 'x': cannot describe set[int] as JSON Schema"),
        (Plain, "tool 't', parameter 'x': cannot describe Plain as JSON Schema"),
    ],
    ids=repr,
)
def test_unsupported_type_error_names_the_tool_and_the_parameter(hint: Any, message: str) -> None:
    """The TypeError at definition says which tool, which parameter, and which type."""
    with pytest.raises(TypeError) as info:
        Tool.from_function(fn_with(hint), name="t")
    assert str(info.value) == message


def test_unreadable_union_error_names_the_tool_and_the_parameter() -> None:
    """A union the converter cannot read back names the tool, parameter and union."""
    with pytest.raises(TypeError, match=r"^tool 't', parameter 'x': cannot read int \| str"):
        Tool.from_function(fn_with(int | str), name="t")


def test_ambiguous_union_of_attrs_classes_is_a_type_error() -> None:
    """A union of attrs classes that cannot be told apart by their fields is refused."""

    with pytest.raises(TypeError, match=r"'t'.*disambiguate.*Circle"):
        Tool.from_function(fn_with(Circle | Ring), name="t")


# --- ToolContext ------------------------------------------------------------------------


def test_tool_context_parameter_is_hidden_from_the_schema() -> None:
    """A ToolContext parameter is not shown to the model and not accepted from it."""

    @tool
    def remember(fact: str, ctx: ToolContext) -> str:
        return fact

    assert remember.wants_context is True
    assert remember.parameters["properties"] == {"fact": {"type": "string"}}
    assert remember.parameters["required"] == ["fact"]
    with pytest.raises(ToolArgumentError, match="unexpected ctx"):
        remember.parse_arguments('{"fact": "f", "ctx": {}}')


@pytest.mark.parametrize(
    "hint",
    [ToolContext, ToolContext | None, typing.Optional[ToolContext]],  # noqa: UP045
    ids=repr,
)
def test_optional_tool_context_is_injected_and_hidden(hint: Any) -> None:
    """``ToolContext | None`` and ``Optional[ToolContext]`` are the context parameter too:
    hidden from the schema, refused from the model, injected by ``bind``."""

    def remember(fact: str, ctx: Any = None) -> str:
        return fact

    remember.__annotations__ = {"fact": str, "ctx": hint, "return": str}
    remember_tool = Tool.from_function(remember)
    assert remember_tool.wants_context is True
    assert remember_tool.parameters["properties"] == {"fact": {"type": "string"}}
    with pytest.raises(ToolArgumentError, match="unexpected ctx"):
        remember_tool.parse_arguments('{"fact": "f", "ctx": null}')
    ctx = context()
    assert remember_tool.bind({"fact": "f"}, ctx) == {"fact": "f", "ctx": ctx}


def test_bind_injects_the_context_under_its_parameter_name() -> None:
    """bind adds the ToolContext under the function's parameter name, and only there."""

    @tool
    def with_ctx(n: int, runtime: ToolContext) -> int:
        return n

    @tool
    def without_ctx(n: int) -> int:
        return n

    ctx = context()
    assert with_ctx.bind({"n": 1}, ctx) == {"n": 1, "runtime": ctx}
    assert with_ctx.bind({"n": 1}, None) == {"n": 1}
    assert without_ctx.bind({"n": 1}, ctx) == {"n": 1}
    assert without_ctx.wants_context is False


def test_context_only_tool_takes_no_model_arguments() -> None:
    """A tool whose only parameter is the ToolContext takes "" or {} and nothing else."""

    @tool
    def whoami(ctx: ToolContext) -> str:
        return str(ctx.tool_context["user"])

    assert whoami.wants_context is True
    assert whoami.parameters["properties"] == {}
    assert whoami.parse_arguments("") == {}
    assert whoami.parse_arguments("{}") == {}
    with pytest.raises(ToolArgumentError, match=r"unexpected a, b.*takes no arguments"):
        whoami.parse_arguments('{"b": 1, "a": 2}')
    assert whoami.func(**whoami.bind({}, context())) == "u1"


@pytest.mark.anyio
async def test_async_tool_receives_context_and_arguments() -> None:
    """An async tool called with parsed, bound kwargs gets its arguments and the context,
    and its state updates land in ``ctx.update``."""

    @tool
    async def note(text: str, ctx: ToolContext) -> str:
        ctx.update["notes"] = [text]
        return f"{ctx.call.id}:{text}"

    ctx = context()
    kwargs = note.bind(note.parse_arguments('{"text": "hi"}'), ctx)
    assert await note.func(**kwargs) == "c1:hi"
    assert ctx.update == {"notes": ["hi"]}


def test_context_state_is_a_deep_copy() -> None:
    """Mutating anything reachable from ``ctx.state`` never changes the source state."""
    source = OverAllState(
        {"messages": [UserMessage("hi")], "profile": {"tags": ["a"]}},
        {"profile": KeyStrategy.MERGE},
    )
    ctx = context(source)
    snapshot = ctx.state
    assert snapshot == source
    assert snapshot.strategy("profile") is KeyStrategy.MERGE
    snapshot["messages"].append(UserMessage("injected"))
    snapshot["profile"]["tags"].append("b")
    snapshot["profile"]["new"] = 1
    assert source["messages"] == [UserMessage("hi")]
    assert source["profile"] == {"tags": ["a"]}


def test_each_context_has_its_own_update_map() -> None:
    """``update`` starts empty and is never shared between calls."""
    first, second = context(), context()
    first.update["k"] = 1
    assert second.update == {}


# --- check_cancelled --------------------------------------------------------------------


def test_check_cancelled_outside_any_event_loop_does_nothing() -> None:
    """check_cancelled() from plain sync code (no event loop, no worker) returns quietly."""
    check_cancelled()


@pytest.mark.anyio
async def test_check_cancelled_on_the_event_loop_thread_does_nothing() -> None:
    """Inline on the event loop thread, even inside a cancelled scope, it does nothing:
    only the next checkpoint delivers the cancellation."""
    reached = []
    with anyio.CancelScope() as scope:
        scope.cancel()
        check_cancelled()
        reached.append("after check")
        await anyio.lowlevel.checkpoint()
    assert reached == ["after check"]
    assert scope.cancelled_caught


@pytest.mark.anyio
async def test_check_cancelled_in_a_worker_thread_raises_once_cancelled() -> None:
    """In a worker thread, it returns while the call is live and raises once it is cancelled."""
    outcome: list[str] = []
    checked, go = threading.Event(), threading.Event()

    def work() -> None:
        check_cancelled()
        checked.set()
        go.wait(10)
        try:
            check_cancelled()
        except BaseException as exc:
            outcome.append(type(exc).__name__)
            raise
        outcome.append("no cancellation")

    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.to_thread.run_sync, work)
        first_check_passed = await anyio.to_thread.run_sync(checked.wait, 10)
        tg.cancel_scope.cancel()
        go.set()
    assert first_check_passed
    assert outcome in (["CancelledError"], ["Cancelled"])


# --- parse_arguments --------------------------------------------------------------------


@tool
def everything(
    count: int,
    ratio: float,
    label: str,
    flag: bool,
    color: Color,
    order: Literal["asc", "desc"],
    shape: Shape,
    level: Level = Level.LOW,
    tags: list[str] = [],  # noqa: B006 - only read
    weights: dict[str, float] = {},  # noqa: B006 - only read
    note: str | None = None,
    figure: Circle | Square | None = None,
    exact: Literal[1, 2] = 1,
    ids: tuple[int, ...] = (),
) -> str:
    """Every supported parameter kind."""
    return ""


GOOD: dict[str, Any] = {
    "count": 3,
    "ratio": 0.5,
    "label": "l",
    "flag": False,
    "color": "red",
    "order": "asc",
    "shape": {"name": "tri", "corners": [{"x": 1}, {"x": 2, "y": 3}]},
}


def parse(**changes: Any) -> dict[str, Any]:
    """Parse GOOD with ``changes`` applied (a value of ``...`` removes the key)."""
    arguments = {k: v for k, v in {**GOOD, **changes}.items() if v is not ...}
    return everything.parse_arguments(json.dumps(arguments))


def test_correct_arguments_are_structured_and_defaults_applied() -> None:
    """Good arguments are structured into real values; omitted ones take their defaults."""
    assert parse() == {
        "count": 3,
        "ratio": 0.5,
        "label": "l",
        "flag": False,
        "color": Color.RED,
        "order": "asc",
        "shape": Shape("tri", [Point(1), Point(2, 3)]),
        "level": Level.LOW,
        "tags": [],
        "weights": {},
        "note": None,
        "figure": None,
        "exact": 1,
        "ids": (),
    }


@pytest.mark.parametrize(
    ("changes", "name", "expected"),
    [
        ({"ratio": 2}, "ratio", 2.0),
        ({"count": 4.0}, "count", 4),
        ({"level": 2}, "level", Level.HIGH),
        ({"color": "blue"}, "color", Color.BLUE),
        ({"tags": ["a", "b"]}, "tags", ["a", "b"]),
        ({"weights": {"a": 1, "b": 0.5}}, "weights", {"a": 1.0, "b": 0.5}),
        ({"note": "n"}, "note", "n"),
        ({"note": None}, "note", None),
        ({"figure": {"radius": 1}}, "figure", Circle(1.0)),
        ({"figure": {"side": 2.5}}, "figure", Square(2.5)),
        ({"exact": 2}, "exact", 2),
        ({"ids": [3, 1]}, "ids", (3, 1)),
    ],
    ids=repr,
)
def test_values_that_fit_are_accepted(changes: dict[str, Any], name: str, expected: Any) -> None:
    """Values that fit are accepted: float takes an int, int takes an integral float, enums
    by value, unions of attrs classes by their fields."""
    value = parse(**changes)[name]
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("changes", "fragments"),
    [
        pytest.param(
            {"count": "5"}, ["arguments.count", "expected an integer", "'5'"], id="str-int"
        ),
        pytest.param(
            {"count": 5.7}, ["arguments.count", "expected an integer", "5.7"], id="float-int"
        ),
        pytest.param(
            {"count": True}, ["arguments.count", "expected an integer", "bool"], id="bool-int"
        ),
        pytest.param({"count": None}, ["arguments.count", "expected an integer"], id="null-int"),
        pytest.param({"ratio": "0.5"}, ["arguments.ratio", "expected a number"], id="str-float"),
        pytest.param({"ratio": False}, ["arguments.ratio", "expected a number"], id="bool-float"),
        pytest.param({"label": 1}, ["arguments.label", "expected a string", "int"], id="int-str"),
        pytest.param({"flag": "true"}, ["arguments.flag", "expected a boolean"], id="str-bool"),
        pytest.param({"flag": 1}, ["arguments.flag", "expected a boolean"], id="int-bool"),
        pytest.param(
            {"color": "green"}, ["arguments.color", '"red", "blue"', "'green'"], id="enum-value"
        ),
        pytest.param({"color": "RED"}, ["arguments.color", '"red", "blue"'], id="enum-name"),
        pytest.param({"level": True}, ["arguments.level", "1, 2", "bool"], id="enum-bool"),
        pytest.param({"order": "up"}, ["arguments.order", '"asc", "desc"', "'up'"], id="literal"),
        pytest.param({"exact": True}, ["arguments.exact", "1, 2", "bool"], id="literal-bool"),
        pytest.param(
            {"shape": {"name": "t", "corners": [{"x": "1"}]}},
            ["arguments.shape.corners[0].x", "expected an integer"],
            id="nested-field",
        ),
        pytest.param(
            {"shape": {"name": "t", "corners": [], "color": "red"}},
            ["arguments.shape", "unexpected color"],
            id="nested-extra",
        ),
        pytest.param(
            {"shape": {"corners": []}}, ["arguments.shape.name", "missing"], id="nested-missing"
        ),
        pytest.param({"shape": "tri"}, ["arguments.shape", "Shape"], id="object-as-string"),
        pytest.param({"tags": "ab"}, ["arguments.tags", "expected an array", "str"], id="str-list"),
        pytest.param({"tags": {"a": 1}}, ["arguments.tags", "expected an array"], id="dict-list"),
        pytest.param({"ids": "12"}, ["arguments.ids", "expected an array"], id="str-tuple"),
        pytest.param({"tags": ["a", 2]}, ["arguments.tags[1]", "expected a string"], id="item"),
        pytest.param({"weights": [1]}, ["arguments.weights", "expected an object"], id="list-dict"),
        pytest.param({"weights": {"a": "x"}}, ["arguments.weights['a']", "number"], id="value"),
        pytest.param({"note": 3}, ["arguments.note", "expected a string"], id="optional"),
        pytest.param({"count": ...}, ["arguments.count", "required, missing"], id="missing"),
        pytest.param({"extra": 1}, ["arguments", "unexpected extra"], id="extra"),
    ],
)
def test_arguments_that_do_not_fit_name_the_parameter(
    changes: dict[str, Any], fragments: list[str]
) -> None:
    """A wrong argument is a ToolArgumentError naming the tool, the parameter's path and
    what was expected; the tool is never called with a bad value."""
    with pytest.raises(ToolArgumentError, match="invalid arguments for tool 'everything'") as info:
        parse(**changes)
    assert info.value.tool_name == "everything"
    assert isinstance(info.value, ValueError)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_every_problem_is_reported_at_once() -> None:
    """Several wrong or missing arguments are all listed in one error."""
    with pytest.raises(ToolArgumentError) as info:
        everything.parse_arguments('{"count": "x", "extra": 1}')
    message = str(info.value)
    for fragment in ["arguments.count", "arguments.ratio", "arguments.shape", "unexpected extra"]:
        assert fragment in message


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ('{"count": ', "not valid JSON"),
        ("{'count': 1}", "not valid JSON"),
        ("[1, 2]", "invalid arguments for tool 'everything': expected a JSON object, got array"),
        ("5", "invalid arguments for tool 'everything': expected a JSON object, got number"),
        ('"text"', "invalid arguments for tool 'everything': expected a JSON object, got string"),
        ("null", "invalid arguments for tool 'everything': expected a JSON object, got null"),
    ],
)
def test_malformed_or_non_object_json_is_an_argument_error(raw: str, fragment: str) -> None:
    """Arguments that are not valid JSON, or not a JSON object, are a ToolArgumentError."""
    with pytest.raises(ToolArgumentError, match=fragment) as info:
        everything.parse_arguments(raw)
    assert "'everything'" in str(info.value)


@pytest.mark.parametrize("raw", ["", "   ", "{}"])
def test_empty_arguments_mean_no_arguments(raw: str) -> None:
    """An empty (or blank) arguments string means {}: every default is used."""

    @tool
    def page(number: int = 1, size: int = 20) -> str:
        return ""

    assert page.parse_arguments(raw) == {"number": 1, "size": 20}


def test_empty_arguments_still_need_required_parameters() -> None:
    """ "" is {} — so a required parameter is still reported missing."""
    with pytest.raises(ToolArgumentError, match=r"arguments\.count"):
        everything.parse_arguments("")


def test_parsed_arguments_call_the_function() -> None:
    """What parse_arguments returns can be passed straight to the function."""

    @tool
    def area(shape: Shape, scale: float = 1.0) -> float:
        return scale * len(shape.corners)

    kwargs = area.parse_arguments('{"shape": {"name": "sq", "corners": [{"x": 0}]}, "scale": 2}')
    assert area.func(**kwargs) == 2.0


@pytest.mark.anyio
async def test_optional_tool_context_reaches_the_tool_through_the_node() -> None:
    """A tool declaring ``ctx: ToolContext | None = None`` gets the real context from the
    node, and its update lands in the state."""

    @tool
    async def note(text: str, ctx: ToolContext | None = None) -> str:
        assert ctx is not None
        ctx.update["notes"] = [text]
        return f"{ctx.call.id}:{ctx.tool_context['user']}"

    node = AgentToolNode([note], tool_context={"user": "ada"})
    asking = AssistantMessage("", [ToolCall("n1", "note", '{"text": "hi"}')])
    update = await node(OverAllState({"messages": [UserMessage("go"), asking]}))
    assert update["messages"][-1].responses[0].response_data == "n1:ada"
    assert update["notes"] == ["hi"]


# --- messages name types with the right article ------------------------------------------


@pytest.mark.anyio
async def test_messages_name_a_type_with_the_right_article() -> None:
    """Errors that name a type put "an" before a vowel sound: ``got an int`` for a thread
    id, ``found an AssistantMessage last`` for a node's state, but ``a UserMessage``."""
    with pytest.raises(TypeError, match=r", got an int$"):
        RunnableConfig(thread_id=5)  # type: ignore[arg-type]
    node = AgentToolNode([])
    with pytest.raises(ValueError, match=r"found an AssistantMessage last$"):
        await node({"messages": [AssistantMessage("no calls")]})
    with pytest.raises(ValueError, match=r"found a UserMessage last$"):
        await node({"messages": [UserMessage("hi")]})

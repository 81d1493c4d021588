"""Tools: a function the model may call, with a schema from its signature.

``@tool`` turns a sync or async function into a ``Tool``. The JSON Schema of its
parameters comes from the type hints (see ``_schema``); the model's JSON arguments are
structured strictly with the project's converter, so a wrong call is an error response
that names the parameter and the tool is never called with bad values. The JSON is read
within bounds (``MAX_ARGUMENT_LENGTH`` characters, the depth and number limits of
``_json``), so hostile arguments are an argument error too, never a parser crash.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import os
import re
import sys
import types
import typing
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, overload

import anyio
import anyio.from_thread
import attrs
import cattrs

from . import _validate as valid
from ._config import RunnableConfig
from ._docstrings import parameter_descriptions
from ._exceptions import ToolArgumentError
from ._json import MAX_DEPTH, MAX_NUMBER_DIGITS, JSONLimitError, loads
from ._messages import ToolCall
from ._results import unsendable
from ._schema import json_schema, object_schema, type_name
from ._serde import converter, describe_error
from ._state import OverAllState
from ._threads import abandoned_exception
from ._tool_annotations import ToolAnnotations

if TYPE_CHECKING:
    from ._approval import Resume
    from .models.base import Usage

USAGE_ADDED = "_usage_added_"
"""In a call's update: model usage the call caused (``ToolContext.add_usage``), added to
the run's usage when the batch's updates are applied (never a state key of its own)."""
TOOL_DECISIONS = "_tool_decisions_"
"""In a run's context: call id → the ``Resume`` for a call that paused the run (its
``ToolCallResponse.interrupt``), while the batch that runs it again after the pause runs."""


@attrs.define(eq=False)
class ToolContext:
    """What a tool may ask for by annotating a parameter ``ToolContext`` (hidden from the model).

    ``state`` is a snapshot: a deep copy made on first access, so a tool can never change
    the node's input state. ``update`` is this call's own map of state updates; it is
    merged by key strategy after the call, and dropped if the call fails or times out.
    """

    call: ToolCall
    config: RunnableConfig
    tool_context: Mapping[str, Any]
    _source: OverAllState = attrs.field(alias="source")
    update: dict[str, Any] = attrs.field(factory=dict)
    _snapshot: OverAllState | None = attrs.field(default=None, init=False)

    @property
    def state(self) -> OverAllState:
        """A private deep copy of the state the node was called with."""
        if self._snapshot is None:
            data = copy.deepcopy(dict(self._source.data))
            self._snapshot = OverAllState(data, self._source.key_strategies)
        return self._snapshot

    @property
    def decisions(self) -> Resume | None:
        """The human's decisions for this call, when it runs again after it paused the run
        (it answered with ``ToolCallResponse(interrupt=...)``): the ``Resume`` the caller
        gave, restricted to this call's scoped ids and with the scope taken off (``Resume({})``
        when the caller decided none of them); ``None`` otherwise."""
        found: Mapping[str, Resume] = self.config.context.get(TOOL_DECISIONS) or {}
        return found.get(self.call.id)

    def add_usage(self, usage: Usage) -> None:
        """Count ``usage`` (model calls this call caused: an agent it ran) in the run's
        usage, once the call has ended; dropped with the rest of ``update`` if it fails."""
        earlier = self.update.get(USAGE_ADDED)
        total = usage if earlier is None else converter.structure(earlier, type(usage)) + usage
        # Kept as JSON: a call's update may wait in a checkpoint (a batch cut short).
        self.update[USAGE_ADDED] = converter.unstructure(total)


def check_cancelled() -> None:
    """Raise the backend's cancellation if this tool call was timed out or cancelled.

    Call it now and then from a sync tool: a tool in a worker thread cannot be stopped from
    outside, so after a timeout its thread is abandoned and ends at its next check. From a
    tool running inline (on the event loop thread) it does nothing.
    """
    try:
        anyio.from_thread.check_cancelled()
    except anyio.NoEventLoopError:
        return
    stop = abandoned_exception()
    if stop is not None:
        raise stop


MAX_ARGUMENT_LENGTH = 1_000_000
"""The most characters of a tool call's JSON arguments that are read."""
MAX_NAME_LENGTH = 64
SAFE_NAME = re.compile(rf"[a-zA-Z0-9_-]{{1,{MAX_NAME_LENGTH}}}")
"""A tool name model providers accept: 1 to 64 letters, digits, ``_`` and ``-``."""


def check_tool_name(name: str) -> str:
    """``name``, if providers accept it (``SAFE_NAME``); else ``ValueError`` naming it."""
    if not SAFE_NAME.fullmatch(name):
        raise ValueError(
            f"tool name {name!r} is not one model providers accept: use 1 to "
            f"{MAX_NAME_LENGTH} letters, digits, '_' or '-'"
        )
    return name


def _read_arguments(raw: str) -> Any:
    """``raw`` parsed within the bounded parser's limits.

    Text no longer than a number may be, with fewer brackets than the depth limit, is
    within every limit by construction: the plain decoder reads it (most arguments are
    that short), without the bounded parser's per-number and depth checks.
    """
    if len(raw) <= MAX_NUMBER_DIGITS and raw.count("[") + raw.count("{") <= MAX_DEPTH:
        return json.loads(raw)
    return loads(raw, max_length=MAX_ARGUMENT_LENGTH)


def _json_type(value: Any) -> str:
    kinds = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return kinds.get(type(value), "number")


def _is_async(func: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004 - async callable objects count too
    )


def _doc(func: Callable[..., Any]) -> str:
    """The docstring of a function, of the function a ``partial`` wraps, or of a callable
    object's class."""
    target: Any = func
    while isinstance(target, functools.partial):
        target = target.func
    return inspect.getdoc(target) or ""


def _type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    """The hints of a function, a ``functools.partial`` of one, or a callable object."""
    target: Any = func
    while isinstance(target, functools.partial):
        target = target.func
    if not (inspect.isroutine(target) or isinstance(target, type)):
        target = type(target).__call__
    return typing.get_type_hints(target, include_extras=True)


def _is_context(hint: Any) -> bool:
    """``ToolContext``, ``ToolContext | None`` or ``Optional[ToolContext]``."""
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    if hint is ToolContext:
        return True
    args = typing.get_args(hint)
    is_union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    return is_union and set(args) == {ToolContext, type(None)}


def _check_hint(hint: Any, where: str) -> None:
    """``TypeError`` naming the tool and parameter when ``hint`` has no schema or the
    converter cannot read it back."""
    try:
        json_schema(hint)
    except TypeError as exc:
        raise TypeError(f"{where}: {exc}") from exc
    try:
        converter.get_structure_hook(hint)
    except (cattrs.errors.StructureHandlerNotFoundError, TypeError) as exc:
        # What the schema can describe but the converter cannot read (``int | str``).
        raise TypeError(f"{where}: cannot read {type_name(hint)} from JSON: {exc}") from exc


def _check_result(hint: Any, tool_name: str) -> None:
    """``TypeError`` naming the tool and its return annotation when a value of that type
    cannot be sent to the model (``_results``): the developer's bug, not the model's."""
    problem = unsendable(hint)
    if problem is not None:
        named = type_name(hint)
        which = "" if problem == named else f" ({problem})"
        raise TypeError(
            f"tool {tool_name!r}: its return annotation {named}{which} cannot be sent to "
            "the model; return str, a JSON value (numbers, bool, None, lists, tuples, sets, "
            "dicts), an Enum, a date or time, Decimal, UUID, a path, bytes or content parts, "
            "or an attrs class, dataclass, TypedDict or pydantic model of those"
        )


def _outside_stacklevel() -> int:
    """The ``stacklevel`` of a warning its caller gives, pointing at the first frame outside
    reactcore: the user's line that defined the tool (through ``@tool`` or an agent)."""
    package = os.path.join(os.path.dirname(__file__), "")  # ".../reactcore/"
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


@attrs.frozen(eq=False)
class _Signature:
    """The model-visible parameters of a function, and how to structure arguments for them."""

    schema: dict[str, Any]
    names: tuple[str, ...]
    context_param: str | None
    args_cls: type | None
    structure: Callable[[Any, Any], Any] | None
    # The parameter given the whole structured value (``of_type``), else each field its own.
    whole: str | None = None

    @classmethod
    def of_type(cls, tp: Any, tool_name: str, param: str, context_param: str) -> _Signature:
        """The model-visible parameters are the fields of ``tp`` (an attrs class, a
        dataclass, a ``TypedDict``, a pydantic model); the function gets the structured
        value as ``param``. ``TypeError`` for a type without fields."""
        where = f"tool {tool_name!r}, input {type_name(tp)}"
        _check_hint(tp, where)
        schema = json_schema(tp)
        if schema.get("type") != "object" or "properties" not in schema:
            raise TypeError(
                f"{where}: must be a class with fields (an attrs class, a dataclass, a "
                "TypedDict or a pydantic model): its fields are the tool's parameters"
            )
        structure = converter.get_structure_hook(tp)
        return cls(schema, (param,), context_param, tp, structure, whole=param)

    @classmethod
    def of(cls, func: Callable[..., Any], tool_name: str) -> _Signature:
        hints = _type_hints(func)
        _check_result(hints.get("return", Any), tool_name)
        fields: dict[str, Any] = {}
        context_param = None
        for p in inspect.signature(func).parameters.values():
            where = f"tool {tool_name!r}, parameter {p.name!r}"
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
                raise TypeError(f"{where}: must be nameable (not *args, **kwargs or positional)")
            if p.name not in hints:
                raise TypeError(
                    f"{where}: has no type annotation; annotate it (Any accepts any JSON value)"
                )
            hint = hints[p.name]
            if _is_context(hint):
                context_param = p.name
                continue
            _check_hint(hint, where)
            default = attrs.NOTHING if p.default is p.empty else p.default
            fields[p.name] = attrs.field(type=hint, default=default)
        if not fields:
            empty = {"type": "object", "properties": {}, "additionalProperties": False}
            return cls(empty, (), context_param, None, None)
        args_cls = attrs.make_class(f"{tool_name}_arguments", fields, slots=False)
        field_hints = {name: f.type for name, f in attrs.fields_dict(args_cls).items()}
        schema = object_schema(attrs.fields(args_cls), field_hints)
        # ``Annotated[X, "text"]`` wins over the docstring's parameter section.
        for name, text in parameter_descriptions(_doc(func)).items():
            if name in schema["properties"]:
                schema["properties"][name].setdefault("description", text)
        try:
            structure = converter.get_structure_hook(args_cls)
        except (cattrs.errors.StructureHandlerNotFoundError, TypeError) as exc:
            # What the schema can describe but the converter cannot read (``int | str``).
            raise TypeError(f"tool {tool_name!r}: cannot read arguments: {exc}") from exc
        return cls(schema, tuple(fields), context_param, args_cls, structure)


_TIMEOUT = valid.number(positive=True, optional=True)


@attrs.frozen(eq=False)
class Tool:
    """A callable the model can ask for by ``name``.

    ``timeout`` (seconds) overrides the node's; ``return_direct`` ends the run with this
    tool's answer; ``limiter`` (an ``anyio.CapacityLimiter``) caps how many calls of every
    tool sharing it run at once — a per-resource limit on top of the node's.
    ``annotations`` are the hints it gives about itself (``ToolAnnotations``: read-only,
    destructive, idempotent …), read by the approval hook and the retry interceptor.
    """

    name: str = attrs.field(validator=valid.text(non_empty=True))
    description: str = attrs.field(validator=valid.text())
    parameters: dict[str, Any] = attrs.field(validator=valid.mapping())
    func: Callable[..., Any] = attrs.field(validator=valid.function())
    is_async: bool = attrs.field(validator=valid.boolean())
    timeout: float | None = attrs.field(default=None, validator=_TIMEOUT)
    return_direct: bool = attrs.field(default=False, validator=valid.boolean())
    limiter: anyio.CapacityLimiter | None = attrs.field(
        default=None,
        validator=valid.instance_of(
            anyio.CapacityLimiter, "an anyio.CapacityLimiter", optional=True
        ),
    )
    _signature: _Signature | None = attrs.field(
        default=None,
        alias="signature",
        repr=False,
        validator=valid.instance_of(_Signature, "a tool signature", optional=True),
    )
    _check: Callable[[dict[str, Any]], str | None] | None = attrs.field(
        default=None, alias="check", repr=False, validator=valid.function(optional=True)
    )
    annotations: ToolAnnotations | None = attrs.field(
        default=None,
        kw_only=True,
        validator=valid.instance_of(ToolAnnotations, "a ToolAnnotations", optional=True),
    )

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        return_direct: bool = False,
        limiter: anyio.CapacityLimiter | None = None,
        annotations: ToolAnnotations | None = None,
    ) -> Tool:
        """A tool from a sync or async function; see ``@tool``."""
        tool_name = name or getattr(func, "__name__", None)
        if not tool_name:
            raise ValueError("a tool needs a name")
        check_tool_name(tool_name)
        _TIMEOUT.spec.check(f"tool {tool_name!r}: timeout", timeout)
        signature = _Signature.of(func, tool_name)
        doc = _doc(func)
        said = doc if description is None else description
        if isinstance(said, str) and not said.strip():
            warnings.warn(
                f"tool {tool_name!r} has no description: the model sees only its name and "
                "parameters; give the function a docstring or @tool(description=...)",
                UserWarning,
                stacklevel=_outside_stacklevel(),
            )
        return cls(
            tool_name,
            description if description is not None else doc,
            signature.schema,
            func,
            _is_async(func),
            timeout,
            return_direct,
            limiter,
            signature,
            annotations=annotations,
        )

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        parameters: dict[str, Any],
        func: Callable[..., Any],
        *,
        check: Callable[[dict[str, Any]], str | None],
        timeout: float | None = None,
        limiter: anyio.CapacityLimiter | None = None,
        annotations: ToolAnnotations | None = None,
        context: str | None = None,
    ) -> Tool:
        """A tool whose parameters are a given JSON Schema (a remote tool's, say).

        ``func`` is called with the model's arguments as keywords once ``check`` passed
        them: ``check(arguments)`` returns ``None`` or says what is wrong, and the model
        gets that as ``invalid arguments for tool '<name>': <problem>``. ``name`` must be
        one providers accept (``SAFE_NAME``): map a remote tool's name first, as
        ``reactcore.mcp`` does. ``context`` names the keyword through which ``func`` also
        gets the call's ``ToolContext`` (one no argument of the schema uses).
        """
        check_tool_name(name)
        _TIMEOUT.spec.check(f"tool {name!r}: timeout", timeout)
        signature = None if context is None else _Signature(parameters, (), context, None, None)
        return cls(
            name,
            description,
            parameters,
            func,
            _is_async(func),
            timeout,
            False,
            limiter,
            check=check,
            annotations=annotations,
            signature=signature,
        )

    @classmethod
    def from_input_type(
        cls,
        name: str,
        description: str,
        input_type: Any,
        func: Callable[[Any, ToolContext], Awaitable[Any]],
        *,
        timeout: float | None = None,
    ) -> Tool:
        """A tool taking one value of ``input_type``, a class with fields (an attrs class,
        a dataclass, a ``TypedDict``, a pydantic model): its fields are the parameters the
        model sees, and the async ``func(value, context)`` gets the value structured (as
        strictly as ``@tool``'s arguments) and the call's ``ToolContext``."""
        check_tool_name(name)
        _TIMEOUT.spec.check(f"tool {name!r}: timeout", timeout)
        signature = _Signature.of_type(input_type, name, "value", "context")
        return cls(name, description, signature.schema, func, True, timeout, signature=signature)

    @property
    def wants_context(self) -> bool:
        """Whether the function takes a ``ToolContext`` parameter."""
        return self._signature is not None and self._signature.context_param is not None

    def parse_arguments(self, raw: str) -> dict[str, Any]:
        """Keyword arguments from the model's JSON; ``ToolArgumentError`` says what is wrong.

        The text is read within bounds (``MAX_ARGUMENT_LENGTH`` characters, and the
        depth and number-length limits of ``reactcore._json``): hostile arguments are an
        invalid-arguments answer, never a crash of the parser.
        """
        try:
            # "{}" is what most calls of argument-less tools carry: skip the decoder.
            data = {} if raw == "{}" or not raw.strip() else _read_arguments(raw)
        except JSONLimitError as exc:
            raise ToolArgumentError(
                f"invalid arguments for tool '{self.name}': not read: {exc}",
                tool_name=self.name,
            ) from exc
        except json.JSONDecodeError as exc:
            raise ToolArgumentError(
                f"arguments for tool '{self.name}' are not valid JSON: {exc.msg} at position "
                f"{exc.pos}",
                tool_name=self.name,
            ) from exc
        if not isinstance(data, dict):
            raise ToolArgumentError(
                f"invalid arguments for tool '{self.name}': expected a JSON object, "
                f"got {_json_type(data)}",
                tool_name=self.name,
            )
        if self._check is not None:
            problem = self._check(data)
            if problem is not None:
                raise ToolArgumentError(
                    f"invalid arguments for tool '{self.name}': {problem}", tool_name=self.name
                )
            return dict(data)
        sig = self._signature
        if sig is None or sig.structure is None:
            if data:
                raise ToolArgumentError(
                    f"invalid arguments for tool '{self.name}': unexpected "
                    f"{', '.join(sorted(data))} (it takes no arguments)",
                    tool_name=self.name,
                )
            return {}
        try:
            value = sig.structure(data, sig.args_cls)
        except Exception as exc:
            raise ToolArgumentError(
                f"invalid arguments for tool '{self.name}': {describe_error(exc, 'arguments')}",
                tool_name=self.name,
            ) from exc
        if sig.whole is not None:
            return {sig.whole: value}
        kwargs: dict[str, Any] = vars(value).copy()
        return kwargs

    def bind(self, kwargs: dict[str, Any], context: ToolContext | None) -> dict[str, Any]:
        """``kwargs`` with the ``ToolContext`` added where the function asks for it."""
        if context is not None and self._signature is not None and self._signature.context_param:
            kwargs[self._signature.context_param] = context
        return kwargs


class ToolNameClash(ValueError):
    """Raised where two different tools with one name meet (an agent's, a node's, a hook's
    or an interceptor's tools, or a dynamic tool): the model could not tell them apart."""


def _function_name(t: Tool) -> str:
    func: Any = t.func
    while isinstance(func, functools.partial):
        func = func.func
    name = getattr(func, "__qualname__", None) or type(func).__qualname__
    module = getattr(func, "__module__", None)
    return f"{module}.{name}" if module else str(name)


def name_clash(name: str, first: tuple[Tool, str], second: tuple[Tool, str]) -> ToolNameClash:
    """The error for two tools named ``name``: each ``(tool, where it came from)``."""
    return ToolNameClash(
        f"two tools are named {name!r}: {_function_name(first[0])} ({first[1]}) and "
        f"{_function_name(second[0])} ({second[1]}); tool names must be unique "
        "(rename one with @tool(name=...))"
    )


def index_tools(sources: Iterable[tuple[str, Iterable[Any]]]) -> dict[str, Tool]:
    """Name → tool over ``(where, tools)`` sources, in order; plain functions are wrapped.

    The same ``Tool`` object (or the same function) listed twice is one tool; two
    different tools with one name raise ``ToolNameClash`` naming both functions.
    """
    index: dict[str, tuple[Tool, str]] = {}
    wrapped: list[tuple[Any, Tool]] = []  # functions already wrapped, by identity
    for where, values in sources:
        for value in values:
            if isinstance(value, Tool):
                t = value
            elif callable(value):
                t = next((w for v, w in wrapped if v is value), None) or Tool.from_function(value)
                wrapped.append((value, t))
            else:
                raise TypeError(f"{value!r} is not a tool (from {where})")
            seen = index.get(t.name)
            if seen is None:
                index[t.name] = (t, where)
            elif seen[0] is not t:
                raise name_clash(t.name, seen, (t, where))
    return {name: t for name, (t, _) in index.items()}


@overload
def tool(func: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    return_direct: bool = False,
    limiter: anyio.CapacityLimiter | None = None,
    annotations: ToolAnnotations | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    return_direct: bool = False,
    limiter: anyio.CapacityLimiter | None = None,
    annotations: ToolAnnotations | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a ``Tool`` of a function: ``@tool`` or ``@tool(name=..., timeout=...)``."""

    def make(f: Callable[..., Any]) -> Tool:
        return Tool.from_function(
            f,
            name=name,
            description=description,
            timeout=timeout,
            return_direct=return_direct,
            limiter=limiter,
            annotations=annotations,
        )

    return make if func is None else make(func)


# A node's ``tools``: each a Tool or a function (checked where either node is made).
TOOLS = valid.each(
    valid.satisfies("a Tool or a function", test=lambda v: isinstance(v, Tool) or callable(v))
)

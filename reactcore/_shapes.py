"""The documented JSON form of every event and of ``AgentResult``: ``to_json`` and
``event_from_json``, through the project's one converter (the one that writes the wire
and checkpoints), so a service can stream events (as SSE, over a queue) and a client can
read them back.

An event is an object tagged with its type, its class name in snake_case, then its
fields::

    {"type": "tool_call_started", "call_id": "c1", "name": "search", "arguments": "{...}"}

Messages are written as in checkpoints (tagged on ``"type"``: ``system``, ``user``,
``assistant``, ``tool``), ``Usage`` and ``ToolCallDelta`` as their fields, tuples as
arrays. A ``SubagentEvent`` holds the subagent's event in this same form, under
``"event"``, and its ``path`` as a list of ``{"call_id", "agent", "run_id"}``.
``RunFailed`` carries its error as ``{"type": <exception class name>, "message":
<str(error)>}``; read back, it is a ``ReportedError`` with that ``type_name``. An
``AgentResult`` is::

    {"text": ..., "output": <JSON> | null, "status": "finished" | "interrupted",
     "interrupt": null | {"calls": [<ToolCall>, ...]}, "model_calls": 2,
     "usage": {"prompt_tokens": ..., "completion_tokens": ..., "total_tokens": ...},
     "messages": [<message>, ...],
     "state": {"key_strategies": {...}, "values": {<key>: {"kind": ..., "value": ...}}},
     "finish_reason": "stop" | "length" | ... | null}

(``usage`` leaves out ``cached_tokens`` / ``reasoning_tokens`` / ``cache_creation_tokens``
while they are 0.)

where ``state`` is the final state in its checkpoint form, without ``messages`` (they
are the top-level ``messages``); ``usage`` is derived from the state and ignored when read
back; a structured ``output`` is written as its JSON form and read back as that JSON.
Everything ``to_json`` returns is JSON-native (dicts, lists, str, int, finite float, bool,
None), ready for ``json.dumps``; a value that is not (in ``output``, a state value, a
message's ``metadata``) is a ``TypeError`` naming where it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ._approval import Interrupt
from ._checkpoint import _json_problem, _register_tagged_union
from ._events import (
    Event,
    ModelCallFinished,
    ModelCallRetried,
    ModelCallStarted,
    ModelDelta,
    RunFailed,
    RunFinished,
    RunInterrupted,
    StateUpdated,
    SubagentCall,
    SubagentEvent,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallTimedOut,
)
from ._exceptions import ReportedError
from ._json import loads
from ._messages import AssistantMessage, Message, ToolCall
from ._result import AgentResult
from ._serde import StrictTypeError, converter, describe_error
from ._state import MESSAGES, OverAllState
from .models.base import Usage

EVENT_TYPES: tuple[type[Any], ...] = (
    ModelCallStarted,
    ModelDelta,
    ModelCallRetried,
    ModelCallFinished,
    ToolCallStarted,
    ToolCallFinished,
    ToolCallTimedOut,
    ToolCallCancelled,
    StateUpdated,
    RunFinished,
    RunFailed,
    RunInterrupted,
    SubagentEvent,
)
"""Every event with a JSON form, in the order a run sends them. A new event type is
added here, and nowhere else: its tag is its class name in snake_case (``event_tag``)."""


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


_TAGS = {cls: _snake(cls.__name__) for cls in EVENT_TYPES}


def event_tag(cls: type[Any]) -> str:
    """The ``"type"`` of an event class in JSON: ``ToolCallStarted`` → ``tool_call_started``
    (read from a table for the events: asked once per event a service streams)."""
    return _TAGS.get(cls) or _snake(cls.__name__)


# --- AgentResult ----------------------------------------------------------------------


@attrs.frozen
class _ResultDocument:
    """An ``AgentResult`` as written (see the module docstring)."""

    text: str
    output: Any
    status: Literal["finished", "interrupted"]
    interrupt: Interrupt | None
    model_calls: int
    usage: Usage
    messages: list[Message]
    state: OverAllState
    finish_reason: str | None = None


def _unstructure_result(result: AgentResult) -> dict[str, Any]:
    rest = {k: v for k, v in result.state.items() if k != MESSAGES}
    document = _ResultDocument(
        result.text,
        result.output,
        result.status,
        result.interrupt,
        result.model_calls,
        result.usage,
        result.messages,
        OverAllState(rest, result.state.key_strategies),
        result.finish_reason,
    )
    out: dict[str, Any] = converter.unstructure(document)
    return out


def _structure_result(value: Any, _: Any) -> AgentResult:
    document = converter.structure(value, _ResultDocument)
    state = document.state
    data = {**state.data, MESSAGES: document.messages}
    return AgentResult(
        OverAllState(data, state.key_strategies),
        document.text,
        document.output,
        document.model_calls,
        document.status,
        document.interrupt,
        document.finish_reason,
    )


converter.register_unstructure_hook(AgentResult, _unstructure_result)
converter.register_structure_hook(AgentResult, _structure_result)


# --- events whose fields need more than their declared types --------------------------


_MESSAGE: Any = Message  # a union: mypy takes ``structure``'s second argument as a class


def _structure_assistant(value: Any, _: Any) -> AssistantMessage:
    message = converter.structure(value, _MESSAGE)
    if not isinstance(message, AssistantMessage):
        raise StrictTypeError(f"expected an assistant message, got {type(message).__name__}")
    return message


def _unstructure_message(message: Message) -> Any:
    return converter.unstructure(message, Message)


_tagged_message = override(unstruct_hook=_unstructure_message, struct_hook=_structure_assistant)
converter.register_unstructure_hook(
    ModelCallFinished,
    make_dict_unstructure_fn(ModelCallFinished, converter, message=_tagged_message),
)
converter.register_structure_hook(
    ModelCallFinished,
    make_dict_structure_fn(ModelCallFinished, converter, message=_tagged_message),
)


@attrs.frozen
class _ErrorDocument:
    type: str
    message: str


@attrs.frozen
class _RunFailedDocument:
    error: _ErrorDocument


def _unstructure_failed(event: RunFailed) -> Any:
    error = event.error
    name = error.type_name if isinstance(error, ReportedError) else type(error).__name__
    return converter.unstructure(_RunFailedDocument(_ErrorDocument(name, str(error))))


def _structure_failed(value: Any, _: Any) -> RunFailed:
    error = converter.structure(value, _RunFailedDocument).error
    return RunFailed(ReportedError(error.message, type_name=error.type))


@attrs.frozen
class _RunFinishedDocument:
    result: AgentResult


@attrs.frozen
class _RunInterruptedDocument:
    calls: tuple[ToolCall, ...]
    result: AgentResult | None


def _unstructure_finished(event: RunFinished) -> Any:
    return converter.unstructure(_RunFinishedDocument(event.result))


def _structure_finished(value: Any, _: Any) -> RunFinished:
    return RunFinished(converter.structure(value, _RunFinishedDocument).result)


def _unstructure_interrupted(event: RunInterrupted) -> Any:
    return converter.unstructure(_RunInterruptedDocument(event.calls, event.result))


def _structure_interrupted(value: Any, _: Any) -> RunInterrupted:
    document = converter.structure(value, _RunInterruptedDocument)
    return RunInterrupted(document.calls, document.result)


@attrs.frozen
class _SubagentDocument:
    path: tuple[SubagentCall, ...]
    event: dict[str, Any]


def _unstructure_subagent(event: SubagentEvent) -> Any:
    inner = converter.unstructure(event.event, _AnyEvent)
    return converter.unstructure(_SubagentDocument(event.path, inner))


def _structure_subagent(value: Any, _: Any) -> SubagentEvent:
    document = converter.structure(value, _SubagentDocument)
    return SubagentEvent(document.path, converter.structure(document.event, _AnyEvent))


def _is(cls: type[Any]) -> Callable[[Any], bool]:
    return lambda tp: tp is cls


for _event, _unstructure, _structure in (
    (RunFailed, _unstructure_failed, _structure_failed),
    (RunFinished, _unstructure_finished, _structure_finished),
    (RunInterrupted, _unstructure_interrupted, _structure_interrupted),
    (SubagentEvent, _unstructure_subagent, _structure_subagent),
):
    # By predicate: registering an attrs class resolves its annotations, and these name
    # ``AgentResult``, which ``_events`` imports only for type checking.
    converter.register_unstructure_hook_func(_is(_event), _unstructure)
    converter.register_structure_hook_func(_is(_event), _structure)


# --- the tagged union of events -------------------------------------------------------

_AnyEvent: Any = Union[EVENT_TYPES]  # noqa: UP007  (a union built from a tuple)
_register_tagged_union(_AnyEvent, "type", {event_tag(cls): cls for cls in EVENT_TYPES})


def _checked(value: Any, what: str) -> dict[str, Any]:
    problem = _json_problem(value, "$")
    if problem is not None:
        raise TypeError(f"{what} cannot be written as JSON: it holds {problem}")
    out: dict[str, Any] = value
    return out


def to_json(value: Event | AgentResult) -> dict[str, Any]:
    """The JSON form of an event or an ``AgentResult`` (see the module docstring), as
    JSON-native values: ``json.dumps(to_json(event))``.

    Raised by ``to_json``: ``TypeError`` when ``value`` is neither, or holds a value JSON
    cannot (the message says where).
    """
    if isinstance(value, AgentResult):
        return _checked(converter.unstructure(value), "the result")
    if type(value) not in EVENT_TYPES:
        raise TypeError(f"not an event or an AgentResult: {value!r}")
    return _checked(converter.unstructure(value, _AnyEvent), f"the {type(value).__name__}")


def event_from_json(data: Mapping[str, Any] | str | bytes) -> Event:
    """The event whose JSON form (or JSON text) is ``data``; ``to_json``'s inverse.

    Raised by ``event_from_json``: ``ValueError`` when ``data`` is not JSON, or not an
    event's form: the message says what is wrong where (``@ $.result.messages[0].text``).
    """
    document = loads(data) if isinstance(data, str | bytes) else data
    try:
        event: Event = converter.structure(document, _AnyEvent)
    except (cattrs.BaseValidationError, StrictTypeError, KeyError) as exc:
        raise ValueError(f"not an event's JSON form: {describe_error(exc, '$')}") from exc
    return event

"""What crosses the workflow/activity/client boundary, and how: explicit JSON strings
written through the project's checkpoint converter (messages as the checkpoint's tagged
union, states as checkpoint states), so a payload means the same in every process.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

import attrs

from .._approval import Approve, Decision, Edit, Reject, Resume
from .._checkpoint import Checkpoint, dump_checkpoint, load_checkpoint
from .._events import (
    Event,
    ModelCallFinished,
    ModelCallStarted,
    StateUpdated,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallTimedOut,
)
from .._messages import AssistantMessage, ContentPart, Message, SystemMessage, ToolCall
from .._serde import converter as converter
from .._state import OverAllState
from ..models.base import ChatOptions, ToolSpec, Usage

_T = TypeVar("_T")
_NO_OPTIONS = attrs.asdict(ChatOptions())


def dumps(value: Any) -> str:
    """``value`` (an attrs payload below) as JSON text."""
    return json.dumps(converter.unstructure(value), allow_nan=False)


def loads(text: str, cls: type[_T]) -> _T:
    """The payload of type ``cls`` in ``text``."""
    return converter.structure(json.loads(text), cls)


def dump_state(state: OverAllState, **fields: Any) -> str:
    """``state`` as checkpoint JSON (``fields``: the checkpoint's other fields)."""
    values = {"thread_id": "", "next": "end", "step": 0, "run_id": "", **fields}
    return dump_checkpoint(Checkpoint(state=state, **values))


def load_state(text: str) -> Checkpoint:
    """The checkpoint written by ``dump_state``."""
    return load_checkpoint(text)


@attrs.frozen
class Conversation:
    """Messages by reference (see ``_refs``): those of the stored node ``base`` (none
    when ``None``), then the messages of ``keys``; ``inline`` holds the JSON of those of
    ``keys`` the store may not have yet. ``key`` names the node this conversation is
    stored as (the activity receiving it stores it)."""

    key: str
    base: str | None
    keys: list[str]
    inline: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class Carry:
    """What a run hands to the run it continues as: the state (checkpoint JSON; without
    its messages when ``messages`` names them in the store), the model calls so far in
    the checkpoint, how many events the earlier runs recorded, and what the run counted
    so far: its hooks' ``run_counts`` (the limits' run counts) and the structured-output
    retries it spent (``output_retries``) — the chain is one run."""

    checkpoint: str
    messages: str | None = None
    events: int = 0
    run_counts: dict[str, int] = attrs.field(factory=dict)
    output_retries: int = 0


@attrs.frozen
class RunInput:
    """The workflow's argument: which agent, the input as a state update, the config;
    ``carry`` when the run goes on from an earlier one (continue-as-new)."""

    agent: str
    update: str  # checkpoint JSON of the input as state values
    thread_id: str
    metadata: dict[str, Any] = attrs.field(factory=dict)
    carry: Carry | None = None


@attrs.frozen
class RunOutcome:
    """The workflow's answer: how it ended and the state it ended in (checkpoint JSON;
    its messages stored under ``messages`` when the agent has a store)."""

    status: str  # "finished" | "cancelled"
    checkpoint: str
    message: str = ""
    messages: str | None = None


@attrs.frozen
class SaveInput:
    """Store ``conversation`` (the ``reactcore.save`` activity)."""

    agent: str
    conversation: Conversation


@attrs.frozen
class LoadInput:
    """Read the messages of the stored node ``key`` from number ``offset`` on, about
    ``max_bytes`` of them (the ``reactcore.load`` activity)."""

    agent: str
    key: str
    offset: int
    max_bytes: int


@attrs.frozen
class LoadOutput:
    """A page of messages (their JSON, as stored); ``done`` once it is the last."""

    messages: list[str]
    done: bool


@attrs.frozen
class ModelInput:
    """One model call: the request as the interceptors left it."""

    agent: str
    messages: list[Message]
    system: SystemMessage | None
    tools: list[str]
    tool_specs: list[ToolSpec]
    iteration: int
    stream: bool
    thread_id: str
    options: dict[str, Any] = attrs.field(factory=dict)  # ChatOptions' fields, JSON-native
    conversation: Conversation | None = None  # the messages by reference, if not in ``messages``


def dump_options(options: ChatOptions) -> dict[str, Any]:
    """``options`` as JSON-native data (its ``tool_choice`` union has no cattrs hook)."""
    return {k: v for k, v in attrs.asdict(options).items() if v != _NO_OPTIONS[k]}


def load_options(data: Mapping[str, Any]) -> ChatOptions:
    """The ``ChatOptions`` ``dump_options`` wrote."""
    return ChatOptions(**data)


@attrs.frozen
class ModelOutput:
    message: AssistantMessage
    usage: Usage | None = None


@attrs.frozen
class ToolInput:
    """One tool call; ``state`` (checkpoint JSON) only for tools that take a context
    (without its messages when ``conversation`` names them); ``decisions`` (``dump_resume``
    JSON) when the call runs again after it paused the run (``ToolContext.decisions``)."""

    agent: str
    call: ToolCall
    timeout: float
    thread_id: str
    state: str | None = None
    metadata: dict[str, Any] = attrs.field(factory=dict)
    conversation: Conversation | None = None
    decisions: str | None = None


@attrs.frozen
class ToolOutput:
    """What the call produced, all of its ``ToolCallResponse``: ``update`` is checkpoint
    JSON of its state update, ``parts`` its content parts, ``data`` what it kept aside for
    callers (JSON values), ``interrupt`` the calls it paused the run for."""

    text: str
    is_error: bool = False
    update: str | None = None
    timed_out: bool = False
    parts: tuple[ContentPart, ...] = ()
    data: Any = None
    interrupt: tuple[ToolCall, ...] | None = None


@attrs.frozen
class CancelToolInput:
    call_id: str
    reason: str = ""


_EVENT_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        ModelCallStarted,
        ModelCallFinished,
        ToolCallStarted,
        ToolCallFinished,
        ToolCallTimedOut,
        ToolCallCancelled,
        StateUpdated,
    )
}


def dump_event(event: Event) -> dict[str, Any] | None:
    """A loop event as JSON-native data (``None`` for the ones not kept: model deltas and
    the terminal events, which the workflow records itself)."""
    name = type(event).__name__
    if name not in _EVENT_TYPES:
        return None
    data: dict[str, Any] = converter.unstructure(event)
    return {"type": name, **data}


def load_event(data: Mapping[str, Any]) -> Any:
    """The event ``dump_event`` wrote."""
    fields = {k: v for k, v in data.items() if k != "type"}
    return converter.structure(fields, _EVENT_TYPES[data["type"]])


def dump_resume(resume: Resume) -> str:
    """A human's decisions as JSON text."""
    out: dict[str, Any] = {}
    for call_id, decision in resume.decisions.items():
        if isinstance(decision, Edit):
            arguments = decision.arguments
            raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
            out[call_id] = {"kind": "edit", "arguments": raw}
        elif isinstance(decision, Reject):
            out[call_id] = {"kind": "reject", "message": decision.message}
        else:
            out[call_id] = {"kind": "approve"}
    return json.dumps(out)


def load_resume(text: str) -> Resume:
    """The ``Resume`` that ``dump_resume`` wrote."""
    decisions: dict[str, Decision] = {}
    for call_id, item in json.loads(text).items():
        if item["kind"] == "edit":
            decisions[call_id] = Edit(item["arguments"])
        elif item["kind"] == "reject":
            decisions[call_id] = Reject(item["message"])
        else:
            decisions[call_id] = Approve()
    return Resume(decisions)

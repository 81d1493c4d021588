"""Checkpoints: the state of a conversation saved after every step, and the savers that
keep them (in memory, or in SQLite; ``reactcore.postgres`` adds PostgreSQL).

Savers also keep who owns each thread (``LeasingSaver``): one live run per thread, the
claim taken before the run reads its checkpoint and released when it ends; a second run
gets ``ThreadBusy``. ``hold_lease`` turns a saver's blocking claim primitives (acquire,
renew, release: a ``LeaseBackend``) into that claim, with a keeper task that renews it
and relays cancel requests (``request_cancel``) to the run. A claim that can lapse (a
lease with a TTL) fences its writes: the saver keeps the claim's token per (thread,
owner) and stores a checkpoint of that owner only while the token is still the thread's
current one; a stale owner's write raises ``LeaseLost``. Every saver takes the same
thread ids (``check_thread_id``: non-empty, valid Unicode without NUL, at most
``THREAD_ID_MAX_BYTES`` bytes in UTF-8), checked before any I/O.

A checkpoint is stored as JSON text (``dump_checkpoint`` / ``load_checkpoint``), written
through the project's one cattrs converter. The format, schema version 1::

    {
      "schema": 1,
      "thread_id": "t1", "state": {...}, "next": "model", "step": 3, "run_id": "r1",
      "model_calls": 2, "interrupt": null | [{"id": ..., "name": ..., "arguments": ...}],
      "created_at": 1700000000.0, "metadata": {...}
    }

where ``state`` is ``{"key_strategies": {"messages": "append", ...}, "values": {...}}``
and each state value is tagged with its kind, so that nothing has to be guessed back::

    {"kind": "json", "value": <any JSON value>}
    {"kind": "messages", "value": [{"type": "user", "text": "hi"}, ...]}
    {"kind": "messages", "value": [{"type": "user", "text": "What is this?", "parts": [
        {"type": "image", "url": "data:image/png;base64,...", "detail": null}]}]}
    {"kind": "message", "value": {"type": "assistant", "text": "", "tool_calls": [...],
                                  "metadata": {...}}}
    {"kind": "usage", "value": {"prompt_tokens": 1, "completion_tokens": 2,
                                "total_tokens": 3}}

Messages are a tagged union on ``"type"`` (``system``, ``user``, ``assistant``, ``tool``)
and keep every field (``is_error``, ``metadata``, a system message's ``role``, the
content ``parts`` of user messages and tool responses), unlike the chat-completions wire
format. Content parts are a tagged union on ``"type"`` too (``text``, ``image``,
``audio``, ``file``) with their own fields. ``role`` and ``parts`` are written only when
they are not their defaults (``"system"``, no parts). Any other state value must be
JSON-native: ``str``, ``int``, ``float`` (finite), ``bool``, ``None``, ``list``, ``tuple``
and ``dict`` with ``str`` keys, exactly those types (an enum or other subclass would come
back as its base type, so it is refused). Tuples come back as lists. Anything else is
refused when dumping, with an error naming the state key: a checkpoint never holds a
silent ``str()`` of a value. Nor is a checkpoint written that would not load back: the
messages, ``Usage`` values and the checkpoint's own fields are structured back before the
text is returned, so a saver never stores what it cannot read.

Compatibility: a file written with schema version ``n`` loads in every later version.
Changing the format means bumping ``CHECKPOINT_SCHEMA`` and teaching ``load_checkpoint``
to upgrade the older layouts; ``tests/fixtures/checkpoint_v1.json`` pins version 1.
"""

from __future__ import annotations

import builtins
import errno
import hashlib
import json
import math
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
import attrs
import cattrs

from . import _validate as valid
from ._config import THREAD_ID_MAX_BYTES as THREAD_ID_MAX_BYTES
from ._config import check_thread_id as check_thread_id
from ._exceptions import LeaseLost, ThreadBusy
from ._logging import get_logger
from ._messages import (
    AssistantMessage,
    AudioPart,
    ContentPart,
    FilePart,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from ._serde import StrictTypeError, converter, describe_error, store_when_set
from ._state import KeyStrategy, OverAllState
from .models.base import Usage

NextStep = Literal["model", "tools", "end"]

CHECKPOINT_SCHEMA = 1
"""The version of the checkpoint JSON layout that this code writes (and the newest it reads)."""


@attrs.frozen
class Checkpoint:
    """The conversation ``thread_id`` after step number ``step`` of run ``run_id``.

    ``next`` is where the loop goes on from (``"end"``: the run finished); ``interrupt``
    holds the tool calls waiting for a human, when the run paused for approval.
    """

    thread_id: str
    state: OverAllState
    next: NextStep
    step: int
    run_id: str
    model_calls: int = 0
    interrupt: tuple[ToolCall, ...] | None = None
    created_at: float = 0.0
    metadata: dict[str, Any] = attrs.field(factory=dict, hash=False)


class Saver(Protocol):
    """Where checkpoints live. Every method is async (a saver may do I/O).

    These four methods are all a saver needs; ``LeasingSaver`` adds thread ownership
    across processes (without it, ownership holds among the runs of one process).
    """

    async def get(self, thread_id: str) -> Checkpoint | None:
        """The latest checkpoint of ``thread_id``, or ``None``."""
        ...

    async def put(self, thread_id: str, checkpoint: Checkpoint) -> None:
        """Store ``checkpoint`` as the latest of ``thread_id``."""
        ...

    async def list(self, thread_id: str) -> list[Checkpoint]:
        """Every checkpoint of ``thread_id``, oldest first."""
        ...

    async def delete(self, thread_id: str) -> None:
        """Forget ``thread_id``."""
        ...


ThreadStatus = Literal["unfinished", "interrupted", "finished"]


@attrs.frozen
class ThreadInfo:
    """A thread as ``saver.threads()`` lists it, from its latest checkpoint.

    ``status``: ``"finished"`` (its last run ended), ``"interrupted"`` (it waits for a
    human's decision), or ``"unfinished"`` (a run stopped before its end: it crashed, was
    cancelled or failed, or is running right now; ``invoke(None, config)`` resumes it).
    """

    thread_id: str
    status: ThreadStatus
    run_id: str
    step: int
    updated_at: float


def thread_status(checkpoint: Checkpoint) -> ThreadStatus:
    """The status of a thread whose latest checkpoint is ``checkpoint``."""
    if checkpoint.next == "end":
        return "finished"
    return "interrupted" if checkpoint.interrupt else "unfinished"


class LeasingSaver(Saver, Protocol):
    """A saver that also keeps who owns each thread: one live run at a time.

    ``ReactAgent`` claims the thread of every run that has a ``thread_id`` before it
    reads the checkpoint, and holds the claim until the run ends. A saver with no
    ``claim`` method still gets ownership, but only among the runs of this process
    (a table kept per saver object); savers shared by processes must implement it.
    """

    def claim(
        self,
        thread_id: str,
        *,
        owner: str,
        wait: float = 0.0,
        on_cancel: Callable[[], None] = ...,
    ) -> AbstractAsyncContextManager[object]:
        """Own ``thread_id`` for the ``async with`` block, as ``owner`` (a run id).

        Raised on entering: ``ThreadBusy`` when another live run owns the thread, at
        once, or after waiting ``wait`` seconds for it to end; ``ValueError`` for a thread
        id that breaks the rule of ``check_thread_id``. While the block runs, the saver
        calls ``on_cancel()`` when someone asked to cancel the thread
        (``request_cancel``) or when the claim was lost. Leaving releases the claim,
        even when cancelled.

        **Fencing.** A saver whose claims can lapse (a lease with a TTL) must fence the
        writes of the block: ``put`` of a checkpoint whose ``run_id`` is ``owner`` is
        stored only while ``owner``'s claim is still the thread's current one, checked in
        the same atomic write, and otherwise raises ``LeaseLost``. The saver keeps the
        claim's token itself, per (thread, owner), so ``put(thread_id, checkpoint)``
        needs no extra argument. The block's value is the saver's own: reactcore's savers
        give a ``Lease`` (whose ``lost`` the run reports); ``None`` is fine.
        """
        ...

    async def request_cancel(self, thread_id: str) -> bool:
        """Ask the run that owns ``thread_id`` (in any process) to stop; whether one did."""
        ...

    async def threads(
        self,
        *,
        status: ThreadStatus | None = "unfinished",
        after: str | None = None,
        limit: int = 100,
    ) -> builtins.list[ThreadInfo]:
        """A page of threads with ``status`` (``None``: all), ordered by thread id, the
        first after ``after``; the next page starts after the last one's id."""
        ...


# --- thread ids -------------------------------------------------------------------------

# --- JSON-native values -----------------------------------------------------------------

_JSON_SCALARS = (str, int, float, bool, type(None))


def _json_problem(value: Any, path: str) -> str | None:
    """What makes ``value`` not JSON-native (and where, under ``path``), or ``None``."""
    kind = type(value)
    if kind is float and not math.isfinite(value):
        return f"{value!r} at {path} (JSON has no NaN or infinity)"
    if kind in _JSON_SCALARS:
        return None
    if kind is list or kind is tuple:
        items = ((f"{path}[{i}]", item) for i, item in enumerate(value))
    elif kind is dict:
        bad_key = next((k for k in value if type(k) is not str), None)
        if bad_key is not None:
            return f"the {type(bad_key).__name__} key {bad_key!r} at {path} (keys must be str)"
        items = ((f"{path}[{k!r}]", item) for k, item in value.items())
    else:
        return f"a {kind.__module__}.{kind.__qualname__} at {path}"
    return next((p for sub, item in items if (p := _json_problem(item, sub))), None)


def _require_json(value: Any, owner: str, path: str = "$") -> None:
    """Raise ``TypeError`` when ``value`` (belonging to ``owner``) is not JSON-native."""
    problem = _json_problem(value, path)
    if problem is not None:
        raise TypeError(
            f"{owner} cannot be checkpointed: it holds {problem}; checkpoints keep only "
            "messages, Usage and JSON-native values (str, int, float, bool, None, list, "
            "tuple, dict with str keys)"
        )


# --- tagged unions ----------------------------------------------------------------------


def _register_tagged_union(union: Any, tag_name: str, tags: Mapping[str, type]) -> None:
    """Un/structure ``union`` as the member's own fields plus ``tag_name``: its tag.

    (cattrs' ``configure_tagged_union`` fails on an unknown tag with a bare ``KeyError``;
    this one says what was expected.)
    """
    tag_of = {cls: tag for tag, cls in tags.items()}

    def unstructure(value: Any) -> dict[str, Any]:
        tag = tag_of.get(type(value))
        if tag is None:
            known = ", ".join(cls.__name__ for cls in tags.values())
            raise TypeError(f"a {type(value).__qualname__} is none of {known}")
        fields: dict[str, Any] = converter.unstructure(value, type(value))
        return {tag_name: tag, **fields}

    def structure(value: Any, _: Any) -> Any:
        if not isinstance(value, Mapping):
            raise StrictTypeError(f"expected an object, got {type(value).__name__}")
        tag = value.get(tag_name)
        cls = tags.get(tag) if isinstance(tag, str) else None
        if cls is None:
            expected = ", ".join(json.dumps(t) for t in tags)
            raise StrictTypeError(f"expected {tag_name!r} to be one of {expected}, got {tag!r}")
        return converter.structure({k: v for k, v in value.items() if k != tag_name}, cls)

    converter.register_unstructure_hook(union, unstructure)
    converter.register_structure_hook(union, structure)


_register_tagged_union(
    ContentPart,
    "type",
    {"text": TextPart, "image": ImagePart, "audio": AudioPart, "file": FilePart},
)

# (After the part union's hooks: the generated functions look them up now.)
# Fields added after checkpoint schema 1 are left out while they hold their default, so a
# checkpoint of what version 1 could hold is written exactly as version 1 wrote it.
store_when_set(AssistantMessage, "visible_tools", "finish_reason", "reasoning", "provider_data")
store_when_set(SystemMessage, "role")
store_when_set(UserMessage, "parts")
store_when_set(ToolResponse, "parts", "data")

_register_tagged_union(
    Message,
    "type",
    {
        "system": SystemMessage,
        "user": UserMessage,
        "assistant": AssistantMessage,
        "tool": ToolResponseMessage,
    },
)


# --- state values -----------------------------------------------------------------------


@attrs.frozen
class _JsonValue:
    value: Any


@attrs.frozen
class _MessageValue:
    value: Message


@attrs.frozen
class _MessagesValue:
    value: list[Message]


@attrs.frozen
class _UsageValue:
    value: Usage


_StateValue = _JsonValue | _MessageValue | _MessagesValue | _UsageValue

_register_tagged_union(
    _StateValue,
    "kind",
    {
        "json": _JsonValue,
        "message": _MessageValue,
        "messages": _MessagesValue,
        "usage": _UsageValue,
    },
)

_MESSAGE_TYPES = (SystemMessage, UserMessage, AssistantMessage, ToolResponseMessage)


def _check_messages(key: str, messages: builtins.list[Message]) -> None:
    """Message fields are typed; only their ``metadata`` may hold arbitrary values."""
    for index, message in enumerate(messages):
        metadata = getattr(message, "metadata", None)
        if metadata is not None:
            _require_json(dict(metadata), f"state key {key!r}", f"$[{index}].metadata")


def _is_message(value: Any) -> bool:
    # Exactly these classes: a subclass would come back as its base class, or not at all.
    return type(value) in _MESSAGE_TYPES


def _wrap(key: str, value: Any) -> _StateValue:
    """The state value ``value`` of ``key``, tagged with its kind (checked for JSON)."""
    if type(value) is Usage:
        return _UsageValue(value)
    if _is_message(value):
        _check_messages(key, [value])
        return _MessageValue(value)
    if type(value) in (list, tuple) and value and all(_is_message(m) for m in value):
        _check_messages(key, list(value))
        return _MessagesValue(list(value))
    _require_json(value, f"state key {key!r}")
    return _JsonValue(value)


@attrs.frozen
class _StateDocument:
    """An ``OverAllState`` as stored: its strategies, and its values tagged by kind."""

    key_strategies: dict[str, KeyStrategy]
    values: dict[str, _StateValue]


_LOADS_AS: dict[str, Any] = {"message": Message, "messages": list[Message], "usage": Usage}


def _dump_value(key: str, value: Any) -> Any:
    """The state value ``value`` of ``key`` as stored, once it is known to load back.

    JSON values were checked exactly (``_require_json``); the others are structured back
    here, as ``load_checkpoint`` will (a message made with attrs validation switched off,
    a ``Usage`` of strings), so that a saver never stores what it could not read.
    """
    dumped: dict[str, Any] = converter.unstructure(_wrap(key, value), _StateValue)
    loads_as = _LOADS_AS.get(dumped["kind"])
    if loads_as is not None:
        try:
            converter.structure(dumped["value"], loads_as)
        except (cattrs.BaseValidationError, StrictTypeError) as exc:
            raise TypeError(
                f"state key {key!r} cannot be checkpointed: it would not load back: "
                f"{describe_error(exc, '$')}"
            ) from exc
    return dumped


def _unstructure_state(state: OverAllState) -> Any:
    strategies = converter.unstructure(dict(state.key_strategies), dict[str, KeyStrategy])
    values = {key: _dump_value(key, value) for key, value in state.items()}
    return {"key_strategies": strategies, "values": values}


def _structure_state(value: Any, _: Any) -> OverAllState:
    document = converter.structure(value, _StateDocument)
    values = {key: tagged.value for key, tagged in document.values.items()}
    return OverAllState(values, document.key_strategies)


converter.register_unstructure_hook(OverAllState, _unstructure_state)
converter.register_structure_hook(OverAllState, _structure_state)


# --- checkpoints as JSON text -----------------------------------------------------------


def dump_checkpoint(checkpoint: Checkpoint) -> str:
    """``checkpoint`` as JSON text, with the format version under ``"schema"``.

    Raised by ``dump_checkpoint``: ``TypeError`` when a state value (or the checkpoint's
    metadata, or a message's metadata) is not something a checkpoint keeps, or when
    anything in it would not load back (a message field of the wrong type, made with
    attrs validation switched off; a ``Usage`` or a checkpoint field of the wrong type);
    the message names the state key and where in the value the problem is. So what
    ``dump_checkpoint`` returns, ``load_checkpoint`` reads. The text is ASCII
    (non-ASCII characters escaped), so that any Python string, even one with a lone
    surrogate, can be stored.
    """
    _require_json(checkpoint.metadata, "the checkpoint metadata")
    body: dict[str, Any] = converter.unstructure(checkpoint)
    _check_loads_back(body)
    return json.dumps({"schema": CHECKPOINT_SCHEMA, **body}, allow_nan=False)


def _check_loads_back(body: dict[str, Any]) -> None:
    """Raise ``TypeError`` unless ``load_checkpoint`` would read the checkpoint's own
    fields and key strategies back (its state values were checked one by one)."""
    state = {**body["state"], "values": {}}
    try:
        converter.structure({**body, "state": state}, Checkpoint)
    except (cattrs.BaseValidationError, StrictTypeError) as exc:
        raise TypeError(
            f"the checkpoint cannot be written: it would not load back: {describe_error(exc, '$')}"
        ) from exc


def _schema_of(document: Any) -> int:
    """The schema version of a parsed checkpoint, if this code can read it."""
    if not isinstance(document, dict) or "schema" not in document:
        raise ValueError("not a reactcore checkpoint: expected an object with a 'schema' field")
    schema = document["schema"]
    if type(schema) is not int or schema < 1:
        raise ValueError(f"not a reactcore checkpoint: unknown schema version {schema!r}")
    if schema > CHECKPOINT_SCHEMA:
        raise ValueError(
            f"checkpoint schema version {schema} is newer than this reactcore reads "
            f"(up to {CHECKPOINT_SCHEMA}): upgrade reactcore to load it"
        )
    return schema


def load_checkpoint(text: str | bytes) -> Checkpoint:
    """The checkpoint stored in ``text`` (as written by ``dump_checkpoint``).

    Raised by ``load_checkpoint``: ``ValueError`` when ``text`` is not JSON, not a
    checkpoint, of an unknown or newer schema version, or malformed (the message says
    what is wrong where, e.g. ``@ $.state.values['messages'].value[2].text``).
    """
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a reactcore checkpoint: invalid JSON ({exc})") from exc
    _schema_of(document)
    fields = {k: v for k, v in document.items() if k != "schema"}
    try:
        return converter.structure(fields, Checkpoint)
    except (cattrs.BaseValidationError, StrictTypeError) as exc:
        raise ValueError(f"malformed checkpoint: {describe_error(exc, '$')}") from exc


# --- thread ownership -------------------------------------------------------------------

_T = TypeVar("_T")

Renewal = Literal["held", "cancel", "lost"]
"""What renewing a claim found: still ours, ours with a cancel request, or taken away."""

_log = get_logger(component="leases")

WAIT_POLL = 0.05
"""How often (seconds) a run that waits for a thread tries again."""


class LeaseBackend(Protocol):
    """The blocking primitives of one kind of claim, turned into ``claim`` by
    ``hold_lease`` (each method is called in a worker thread, or inline when cheap)."""

    def try_acquire(self, thread_id: str, owner: str) -> str | None:
        """Take ``thread_id`` for ``owner``: ``None`` when taken, else who holds it."""
        ...

    def renew(self, thread_id: str, owner: str) -> Renewal:
        """Keep the claim alive; say whether it is still ours and whether to cancel."""
        ...

    def release(self, thread_id: str, owner: str) -> None:
        """Give the claim up (nothing happens if ``owner`` no longer holds it)."""
        ...


Call = Callable[[Callable[..., Any], str, str], Any]


@attrs.define(eq=False)
class Lease:
    """What the claims of reactcore's savers give their block: the thread, its owner and,
    once the claim was taken over, ``lost``: the ``LeaseLost`` the run ends with."""

    thread_id: str
    owner: str
    lost: LeaseLost | None = None


async def _inline(function: Callable[..., _T], *args: Any) -> _T:
    await anyio.lowlevel.checkpoint()
    return function(*args)


async def _in_thread(function: Callable[..., _T], *args: Any) -> _T:
    return await anyio.to_thread.run_sync(function, *args)


@asynccontextmanager
async def hold_lease(
    backend: LeaseBackend,
    thread_id: str,
    owner: str,
    *,
    wait: float,
    heartbeat: float,
    on_cancel: Callable[[], None],
    lost_after: float | None = None,
    in_thread: bool = True,
) -> AsyncIterator[Lease]:
    """``claim`` for ``backend``: acquire (waiting up to ``wait`` seconds), renew every
    ``heartbeat`` seconds while the block runs, release when it ends (shielded).

    A claim that another owner took over, or that could not be renewed for
    ``lost_after`` seconds (its TTL: by then another process may have taken it), is
    lost: the lease's ``lost`` is set, then ``on_cancel()`` is called.
    """
    check_thread_id(thread_id)
    lease = Lease(thread_id, owner)
    call = _in_thread if in_thread else _inline
    deadline = anyio.current_time() + wait
    while True:
        # Shielded: an acquisition that succeeded is always followed by its release.
        with anyio.CancelScope(shield=True):
            holder = await call(backend.try_acquire, thread_id, owner)
        if holder is None:
            break
        remaining = deadline - anyio.current_time()
        if remaining <= 0:
            raise ThreadBusy(thread_id, holder)
        await anyio.sleep(min(WAIT_POLL, remaining))
    failure: Exception | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_keep, call, backend, lease, heartbeat, on_cancel, lost_after)
            try:
                yield lease
            except Exception as exc:  # raised after the group, as itself
                failure = exc
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await call(backend.release, thread_id, owner)
            except Exception as exc:  # the claim lapses at its TTL; the run's outcome stands
                _log.warning("lease_release_failed", thread_id=thread_id, error=repr(exc))
    if failure is not None:
        raise failure


async def _keep(
    call: Call,
    backend: LeaseBackend,
    lease: Lease,
    heartbeat: float,
    on_cancel: Callable[[], None],
    lost_after: float | None,
) -> None:
    """Renew the claim until cancelled; tell the run when it must stop."""
    thread_id, owner = lease.thread_id, lease.owner
    renewed = anyio.current_time()
    while True:
        await anyio.sleep(heartbeat)
        try:
            verdict: Renewal = await call(backend.renew, thread_id, owner)
        except Exception as exc:
            _log.warning("lease_renew_failed", thread_id=thread_id, error=repr(exc))
            if lost_after is not None and anyio.current_time() - renewed > lost_after:
                reason = (
                    f"its lease could not be renewed for {lost_after:g} s, so another owner "
                    "may have taken it over"
                )
                lease.lost = LeaseLost(thread_id, owner, reason=reason)
                on_cancel()
                return
            continue
        renewed = anyio.current_time()
        if verdict == "lost":
            _log.warning("lease_lost", thread_id=thread_id, run_id=owner)
            lease.lost = LeaseLost(thread_id, owner)
        if verdict != "held":
            on_cancel()
        if verdict == "lost":
            return


@attrs.define(eq=False)
class _Holder:
    owner: str
    cancel: bool = False


@attrs.define(eq=False)
class LocalLeases:
    """Claims among the runs of this process: a table guarded by a threading lock (so
    runs on several event loops may share it)."""

    _held: dict[str, _Holder] = attrs.field(factory=dict, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    def try_acquire(self, thread_id: str, owner: str) -> str | None:
        with self._lock:
            holder = self._held.get(thread_id)
            if holder is not None:
                return f"run {holder.owner}"
            self._held[thread_id] = _Holder(owner)
            return None

    def renew(self, thread_id: str, owner: str) -> Renewal:
        with self._lock:
            holder = self._held.get(thread_id)
            if holder is None or holder.owner != owner:
                return "lost"
            return "cancel" if holder.cancel else "held"

    def release(self, thread_id: str, owner: str) -> None:
        with self._lock:
            holder = self._held.get(thread_id)
            if holder is not None and holder.owner == owner:
                del self._held[thread_id]

    def request_cancel(self, thread_id: str) -> bool:
        with self._lock:
            holder = self._held.get(thread_id)
            if holder is not None:
                holder.cancel = True
            return holder is not None

    def claim(
        self, thread_id: str, owner: str, wait: float, on_cancel: Callable[[], None]
    ) -> AbstractAsyncContextManager[Lease]:
        return hold_lease(
            self,
            thread_id,
            owner,
            wait=wait,
            heartbeat=0.1,
            on_cancel=on_cancel,
            in_thread=False,
        )


_fallback_leases: weakref.WeakKeyDictionary[Any, LocalLeases] = weakref.WeakKeyDictionary()
_fallback_lock = threading.Lock()


def _leases_of(saver: Any) -> LocalLeases:
    """The process-local claims of a saver that has no ``claim`` of its own."""
    with _fallback_lock:
        try:
            leases = _fallback_leases.get(saver)
            if leases is None:
                leases = _fallback_leases[saver] = LocalLeases()
        except TypeError:
            raise TypeError(
                f"{type(saver).__name__} has no claim() and cannot be weakly referenced: "
                "implement LeasingSaver.claim to give its threads ownership"
            ) from None
        return leases


def claim_thread(
    saver: Saver, thread_id: str, *, owner: str, wait: float, on_cancel: Callable[[], None]
) -> AbstractAsyncContextManager[object]:
    """Own ``thread_id`` through ``saver`` (see ``LeasingSaver``): its own ``claim``, or
    process-local ownership for a saver without one. The thread id is checked first
    (``check_thread_id``), whatever the saver."""
    check_thread_id(thread_id)
    claim = getattr(saver, "claim", None)
    if callable(claim):
        result: AbstractAsyncContextManager[object] = claim(
            thread_id, owner=owner, wait=wait, on_cancel=on_cancel
        )
        return result
    return _leases_of(saver).claim(thread_id, owner, wait, on_cancel)


async def request_cancel(saver: Saver, thread_id: str) -> bool:
    """Ask the run owning ``thread_id`` to stop, through ``saver``; whether one did."""
    check_thread_id(thread_id)
    ask = getattr(saver, "request_cancel", None)
    if callable(ask):
        answer: bool = await ask(thread_id)
        return answer
    await anyio.lowlevel.checkpoint()
    return _leases_of(saver).request_cancel(thread_id)


def _page(
    infos: Iterable[ThreadInfo], status: ThreadStatus | None, after: str | None, limit: int
) -> builtins.list[ThreadInfo]:
    """The ``threads()`` page of ``infos`` (in any order)."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    if after is not None:
        check_thread_id(after)
    chosen = (
        i
        for i in infos
        if (status is None or i.status == status) and (after is None or i.thread_id > after)
    )
    return sorted(chosen, key=lambda i: i.thread_id)[:limit]


def _info(checkpoint: Checkpoint) -> ThreadInfo:
    return ThreadInfo(
        checkpoint.thread_id,
        thread_status(checkpoint),
        checkpoint.run_id,
        checkpoint.step,
        checkpoint.created_at,
    )


# --- savers -----------------------------------------------------------------------------


def _check_thread(thread_id: str, checkpoint: Checkpoint) -> None:
    """A checkpoint is stored under its own thread, a valid thread id (anything else is
    a caller's bug)."""
    check_thread_id(thread_id)
    if checkpoint.thread_id != thread_id:
        raise ValueError(
            f"cannot store a checkpoint of thread {checkpoint.thread_id!r} "
            f"under thread {thread_id!r}"
        )


@attrs.define(eq=False)
class MemorySaver:
    """Keeps every checkpoint of every thread in memory, as given (they are frozen).

    Nothing is serialised, so values that ``dump_checkpoint`` would refuse are kept too.
    A lock guards the map, so runs on any threads of any event loops may share one saver;
    each operation is short and never waits, so taking the lock on the loop is fine.
    Threads are owned by one run at a time among the runs sharing this saver (``claim``);
    a claim never lapses, so there is no stale owner to fence. Every method checks the
    thread id first (``check_thread_id``).
    """

    _threads: dict[str, builtins.list[Checkpoint]] = attrs.field(factory=dict, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    _leases: LocalLeases = attrs.field(factory=LocalLeases, init=False)

    def claim(
        self,
        thread_id: str,
        *,
        owner: str,
        wait: float = 0.0,
        on_cancel: Callable[[], None] = lambda: None,
    ) -> AbstractAsyncContextManager[Lease]:
        """Own ``thread_id`` for the block (see ``LeasingSaver.claim``)."""
        return self._leases.claim(thread_id, owner, wait, on_cancel)

    async def request_cancel(self, thread_id: str) -> bool:
        """Ask the run owning ``thread_id`` to stop; whether one does."""
        check_thread_id(thread_id)
        await anyio.lowlevel.checkpoint()
        return self._leases.request_cancel(thread_id)

    async def threads(
        self,
        *,
        status: ThreadStatus | None = "unfinished",
        after: str | None = None,
        limit: int = 100,
    ) -> builtins.list[ThreadInfo]:
        """A page of threads with ``status`` (see ``LeasingSaver.threads``)."""
        await anyio.lowlevel.checkpoint()
        with self._lock:
            latest = [stored[-1] for stored in self._threads.values() if stored]
        return _page(map(_info, latest), status, after, limit)

    async def get(self, thread_id: str) -> Checkpoint | None:
        """The latest checkpoint of ``thread_id``, or ``None``."""
        check_thread_id(thread_id)
        await anyio.lowlevel.checkpoint()
        with self._lock:
            stored = self._threads.get(thread_id)
            return stored[-1] if stored else None

    async def put(self, thread_id: str, checkpoint: Checkpoint) -> None:
        """Store ``checkpoint`` as the latest of ``thread_id``.

        Raised by ``put``: ``ValueError`` when ``checkpoint.thread_id`` is another thread,
        or ``thread_id`` breaks the rule of ``check_thread_id``.
        """
        _check_thread(thread_id, checkpoint)
        await anyio.lowlevel.checkpoint()
        with self._lock:
            self._threads.setdefault(thread_id, []).append(checkpoint)

    async def delete(self, thread_id: str) -> None:
        """Forget ``thread_id``."""
        check_thread_id(thread_id)
        await anyio.lowlevel.checkpoint()
        with self._lock:
            self._threads.pop(thread_id, None)

    async def list(self, thread_id: str) -> builtins.list[Checkpoint]:
        """Every checkpoint of ``thread_id``, oldest first (a new list)."""
        check_thread_id(thread_id)
        await anyio.lowlevel.checkpoint()
        with self._lock:
            return builtins.list(self._threads.get(thread_id, ()))


_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS checkpoints (
    id INTEGER PRIMARY KEY,
    thread_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    body TEXT NOT NULL
)
"""
_CREATE_INDEX = (
    "CREATE INDEX IF NOT EXISTS checkpoints_thread_step ON checkpoints (thread_id, step)"
)
_CREATE_THREADS = """
CREATE TABLE IF NOT EXISTS threads (
    thread_id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    run_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    updated_at REAL NOT NULL
)
"""
_CREATE_CANCELS = """
CREATE TABLE IF NOT EXISTS cancel_requests (
    thread_id TEXT PRIMARY KEY,
    requested_at REAL NOT NULL
)
"""
_INSERT = (
    "INSERT INTO checkpoints (thread_id, step, run_id, created_at, body) VALUES (?, ?, ?, ?, ?)"
)
_UPSERT_THREAD = """
INSERT INTO threads (thread_id, status, run_id, step, updated_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (thread_id) DO UPDATE SET status = excluded.status, run_id = excluded.run_id,
    step = excluded.step, updated_at = excluded.updated_at
"""
_SELECT_LATEST = "SELECT body FROM checkpoints WHERE thread_id = ? ORDER BY id DESC LIMIT 1"
_SELECT_ALL = "SELECT body FROM checkpoints WHERE thread_id = ? ORDER BY id"
_SELECT_THREADS = """
SELECT thread_id, status, run_id, step, updated_at FROM threads
WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR thread_id > ?2)
ORDER BY thread_id LIMIT ?3
"""
_DELETE = (
    "DELETE FROM checkpoints WHERE thread_id = ?",
    "DELETE FROM threads WHERE thread_id = ?",
    "DELETE FROM cancel_requests WHERE thread_id = ?",
)
_REQUEST_CANCEL = "INSERT OR REPLACE INTO cancel_requests (thread_id, requested_at) VALUES (?, ?)"
_SELECT_CANCEL = "SELECT 1 FROM cancel_requests WHERE thread_id = ?"
_CLEAR_CANCEL = "DELETE FROM cancel_requests WHERE thread_id = ?"


def _migrate_to_1(conn: sqlite3.Connection) -> None:
    """Version 1: one row per checkpoint."""
    conn.execute(_CREATE_TABLE)
    conn.execute(_CREATE_INDEX)


def _migrate_to_2(conn: sqlite3.Connection) -> None:
    """Version 2: a row per thread (its latest status, for ``threads()``), filled from
    the checkpoints already there, and the cancel requests of ``request_cancel``."""
    conn.execute(_CREATE_THREADS)
    conn.execute(_CREATE_CANCELS)
    latest = (
        "SELECT body FROM checkpoints"
        " WHERE id IN (SELECT max(id) FROM checkpoints GROUP BY thread_id)"
    )
    for (body,) in conn.execute(latest).fetchall():
        info = _info(load_checkpoint(body))
        conn.execute(_UPSERT_THREAD, attrs.astuple(info))


_MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (_migrate_to_1, _migrate_to_2)
"""``_MIGRATIONS[n]`` brings a file from layout version ``n`` to ``n + 1``."""

SQLITE_SCHEMA = len(_MIGRATIONS)
"""The version of the SQLite layout (``PRAGMA user_version``); 0 is a new, empty file."""


def _user_version(conn: sqlite3.Connection) -> int:
    version: int = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SQLITE_SCHEMA:
        raise ValueError(
            f"checkpoint database layout version {version} is newer than this reactcore "
            f"knows (up to {SQLITE_SCHEMA}): upgrade reactcore to open it"
        )
    return version


def _transaction(conn: sqlite3.Connection, work: Callable[[], _T]) -> _T:
    """Run ``work`` in one write transaction (taking the write lock at once)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = work()
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return result


def _create_schema(conn: sqlite3.Connection) -> None:
    """Bring the file to the current layout once, even when several processes open it
    at the same time (the write lock: one process migrates, the others wait)."""
    if _user_version(conn) == SQLITE_SCHEMA:
        return

    def migrate() -> None:
        for step in _MIGRATIONS[_user_version(conn) :]:
            step(conn)
        conn.execute(f"PRAGMA user_version = {SQLITE_SCHEMA}")

    _transaction(conn, migrate)


def _connect(path: str, busy_timeout: float) -> sqlite3.Connection:
    """A connection to ``path`` in WAL mode with the schema in place.

    ``timeout`` is SQLite's busy timeout: a statement that finds the file locked by
    another process retries for that long before failing with "database is locked".
    Autocommit (``isolation_level=None``): each statement is its own transaction.
    """
    conn = sqlite3.connect(
        path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        _create_schema(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _holder_of(fd: int) -> str:
    """The holder named in a lock file (which its holder writes just after locking)."""
    for _ in range(5):
        text = os.pread(fd, 256, 0).decode("utf-8", "replace")
        if "\n" in text:
            return text.split("\n")[0]
        time.sleep(0.01)
    return "another run"


@attrs.define(eq=False)
class _FileLeases:
    """Claims shared by the processes of one machine: an exclusive ``flock`` on a file
    per thread in ``directory``. The kernel drops the lock when its holder dies, so a
    killed process never keeps a thread. The file holds its holder's name and pid
    (emptied on release), for ``ThreadBusy`` and ``request_cancel``; cancel requests
    live in the database."""

    directory: Path
    saver: SqliteSaver
    _fds: dict[tuple[str, str], int] = attrs.field(factory=dict, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    def _path(self, thread_id: str) -> Path:
        digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()
        return self.directory / f"{digest[:40]}.lock"

    def try_acquire(self, thread_id: str, owner: str) -> str | None:
        import fcntl  # POSIX only, and only needed here: importing reactcore works anywhere

        with self._lock:
            mine = next((o for (t, o) in self._fds if t == thread_id), None)
        if mine is not None:  # held in this process: no need to ask the kernel
            return f"run {mine} (pid {os.getpid()})"
        self.directory.mkdir(exist_ok=True)
        fd = os.open(self._path(thread_id), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                holder = _holder_of(fd)
                os.close(fd)
                return holder
            with self._lock:
                self._fds[(thread_id, owner)] = fd
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"run {owner} (pid {os.getpid()})\n{os.getpid()}\n".encode(), 0)
            self.saver._locked(lambda conn: conn.execute(_CLEAR_CANCEL, (thread_id,)))
        except BaseException:
            with self._lock:
                self._fds.pop((thread_id, owner), None)
            os.close(fd)  # closing drops the lock too
            raise
        return None

    def renew(self, thread_id: str, owner: str) -> Renewal:
        row = self.saver._locked(lambda conn: conn.execute(_SELECT_CANCEL, (thread_id,)).fetchone())
        return "held" if row is None else "cancel"

    def release(self, thread_id: str, owner: str) -> None:
        with self._lock:
            fd = self._fds.pop((thread_id, owner), None)
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
            self.saver._locked(lambda conn: conn.execute(_CLEAR_CANCEL, (thread_id,)))
        finally:
            os.close(fd)  # drops the lock

    def holder_alive(self, thread_id: str) -> bool:
        """Whether a live process holds ``thread_id`` (from the pid in its file)."""
        try:
            lines = self._path(thread_id).read_text("utf-8", "replace").split("\n")
        except FileNotFoundError:
            return False
        return len(lines) > 1 and lines[1].isdigit() and _process_alive(int(lines[1]))


@attrs.define(eq=False)
class SqliteSaver:
    """Keeps checkpoints in the SQLite file ``path``: one row per checkpoint, the
    checkpoint as ``dump_checkpoint`` JSON in ``body``, and a row per thread with its
    latest status (both written in one transaction).

    Nothing happens in ``__init__``: the file is opened (and the table created) on first
    use, in a worker thread, like every SQLite call, so the event loop never blocks on
    the disk or on a lock held by another process. Use ``async with SqliteSaver(path)``,
    or call ``aclose()`` when done; a closed saver raises ``anyio.ClosedResourceError``.

    **One connection, guarded by a threading lock.** Runs of this process share it and
    take turns; a turn is a statement or two. The alternative, a connection per
    operation, would make our own runs contend through SQLite's file lock, whose busy
    handler sleeps and polls instead of queueing (and fails after the timeout under
    load), and would reopen the file and reread the schema each time. Encoding and
    decoding JSON happen in the worker thread, outside the lock.

    **Other processes** may read and write the same file: the journal is WAL, so readers
    see the last committed checkpoints while a writer writes, and a write that finds
    another writer waits up to ``busy_timeout`` seconds.

    **Ownership** (``claim``): one run at a time per thread, among the runs of every
    process on this machine, through a file lock per thread in the folder
    ``<path>.leases`` (POSIX ``flock``; a killed process's locks are dropped by the
    kernel at once). A run polls for cancel requests every ``cancel_poll`` seconds. A
    claim never lapses while its process lives, even a paused one (SIGSTOP, a long GC
    pause): the thread stays busy until it resumes or dies, so no stale owner ever
    writes beside a successor, and writes need no fencing token.

    Order is insertion order (the row id), which is the order ``put`` was called.
    ``path`` may be ``":memory:"`` (one private database, for tests; ownership is then
    among this process's runs).
    """

    path: str | os.PathLike[str] = attrs.field(
        validator=valid.instance_of((str, os.PathLike), "a str or an os.PathLike (a path)")
    )
    busy_timeout: float = attrs.field(default=10.0, validator=valid.number(minimum=0))
    cancel_poll: float = attrs.field(default=0.25, validator=valid.number(positive=True))
    _conn: sqlite3.Connection | None = attrs.field(default=None, init=False)
    _closed: bool = attrs.field(default=False, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    _leases: _FileLeases | LocalLeases = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        if os.fspath(self.path) == ":memory:":
            self._leases = LocalLeases()
        else:
            self._leases = _FileLeases(Path(f"{os.fspath(self.path)}.leases"), self)

    async def __aenter__(self) -> SqliteSaver:
        await self._run(lambda conn: None)  # open now, so a bad file fails here
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection (waiting for the operation in progress). Idempotent."""
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._close)

    def _close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _locked(self, operation: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``operation`` on the connection (opened on first use), holding the lock."""
        with self._lock:
            if self._closed:
                raise anyio.ClosedResourceError("this SqliteSaver was closed")
            if self._conn is None:
                self._conn = _connect(os.fspath(self.path), self.busy_timeout)
            return operation(self._conn)

    async def _run(self, operation: Callable[[sqlite3.Connection], _T]) -> _T:
        return await anyio.to_thread.run_sync(self._locked, operation)

    async def get(self, thread_id: str) -> Checkpoint | None:
        """The latest checkpoint of ``thread_id``, or ``None``."""
        check_thread_id(thread_id)

        def latest() -> Checkpoint | None:
            row = self._locked(lambda conn: conn.execute(_SELECT_LATEST, (thread_id,)).fetchone())
            return None if row is None else load_checkpoint(row[0])

        return await anyio.to_thread.run_sync(latest)

    async def put(self, thread_id: str, checkpoint: Checkpoint) -> None:
        """Store ``checkpoint`` as the latest of ``thread_id`` (one transaction).

        Raised by ``put``: ``ValueError`` when ``checkpoint.thread_id`` is another thread,
        or ``thread_id`` breaks the rule of ``check_thread_id``; ``TypeError`` when the
        state holds a value a checkpoint cannot keep (see ``dump_checkpoint``);
        ``sqlite3.Error`` when the file cannot be written.
        """
        _check_thread(thread_id, checkpoint)
        row = (thread_id, checkpoint.step, checkpoint.run_id, checkpoint.created_at)
        info = attrs.astuple(_info(checkpoint))

        def insert() -> None:
            body = dump_checkpoint(checkpoint)

            def write(conn: sqlite3.Connection) -> None:
                conn.execute(_INSERT, (*row, body))
                conn.execute(_UPSERT_THREAD, info)

            self._locked(lambda conn: _transaction(conn, lambda: write(conn)))

        await anyio.to_thread.run_sync(insert)

    async def delete(self, thread_id: str) -> None:
        """Forget ``thread_id``."""
        check_thread_id(thread_id)

        def forget(conn: sqlite3.Connection) -> None:
            for statement in _DELETE:
                conn.execute(statement, (thread_id,))

        await self._run(lambda conn: _transaction(conn, lambda: forget(conn)))

    async def list(self, thread_id: str) -> builtins.list[Checkpoint]:
        """Every checkpoint of ``thread_id``, oldest first."""
        check_thread_id(thread_id)

        def every() -> builtins.list[Checkpoint]:
            rows = self._locked(lambda conn: conn.execute(_SELECT_ALL, (thread_id,)).fetchall())
            return [load_checkpoint(body) for (body,) in rows]

        return await anyio.to_thread.run_sync(every)

    async def threads(
        self,
        *,
        status: ThreadStatus | None = "unfinished",
        after: str | None = None,
        limit: int = 100,
    ) -> builtins.list[ThreadInfo]:
        """A page of threads with ``status`` (see ``LeasingSaver.threads``)."""
        _page((), status, after, limit)  # checks limit
        rows = await self._run(
            lambda conn: conn.execute(_SELECT_THREADS, (status, after, limit)).fetchall()
        )
        return [ThreadInfo(*row) for row in rows]

    def claim(
        self,
        thread_id: str,
        *,
        owner: str,
        wait: float = 0.0,
        on_cancel: Callable[[], None] = lambda: None,
    ) -> AbstractAsyncContextManager[Lease]:
        """Own ``thread_id`` for the block, across processes (see ``LeasingSaver.claim``)."""
        check_thread_id(thread_id)
        if isinstance(self._leases, LocalLeases):
            return self._leases.claim(thread_id, owner, wait, on_cancel)
        return hold_lease(
            self._leases,
            thread_id,
            owner,
            wait=wait,
            heartbeat=self.cancel_poll,
            on_cancel=on_cancel,
        )

    async def request_cancel(self, thread_id: str) -> bool:
        """Ask the run owning ``thread_id`` (in any process on this machine) to stop;
        whether a live one owns it. The run sees it within ``cancel_poll`` seconds."""
        check_thread_id(thread_id)
        leases = self._leases
        if isinstance(leases, LocalLeases):
            await anyio.lowlevel.checkpoint()
            return leases.request_cancel(thread_id)

        def ask() -> bool:
            if not leases.holder_alive(thread_id):
                return False
            self._locked(lambda conn: conn.execute(_REQUEST_CANCEL, (thread_id, time.time())))
            return True

        return await anyio.to_thread.run_sync(ask)

"""Checkpoints: the state of a conversation saved after every step, and the savers that
keep them (in memory, or in SQLite).

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
import json
import math
import os
import sqlite3
import threading
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
import attrs
import cattrs
from cattrs.gen import make_dict_unstructure_fn, override

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
from ._models.base import Usage
from ._serde import StrictTypeError, converter, describe_error
from ._state import KeyStrategy, OverAllState

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
    """Where checkpoints live. Every method is async (a saver may do I/O)."""

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


# ``visible_tools`` is left out while ``None`` (a message not made by the LLM node), so
# such messages keep the exact schema-1 layout; older checkpoints load it as ``None``.
converter.register_unstructure_hook(
    AssistantMessage,
    make_dict_unstructure_fn(
        AssistantMessage, converter, visible_tools=override(omit_if_default=True)
    ),
)

_register_tagged_union(
    ContentPart,
    "type",
    {"text": TextPart, "image": ImagePart, "audio": AudioPart, "file": FilePart},
)

# Fields added after schema version 1 are left out while they hold their default, so a
# checkpoint of what version 1 could hold is written exactly as version 1 wrote it.
_ADDED: dict[type, str] = {SystemMessage: "role", UserMessage: "parts", ToolResponse: "parts"}
for _cls, _added in _ADDED.items():
    _overrides: dict[str, Any] = {_added: override(omit_if_default=True)}
    converter.register_unstructure_hook(
        _cls, make_dict_unstructure_fn(_cls, converter, **_overrides)
    )

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


# --- savers -----------------------------------------------------------------------------


def _check_thread(thread_id: str, checkpoint: Checkpoint) -> None:
    """A checkpoint is stored under its own thread: anything else is a caller's bug."""
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
    """

    _threads: dict[str, builtins.list[Checkpoint]] = attrs.field(factory=dict, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    async def get(self, thread_id: str) -> Checkpoint | None:
        """The latest checkpoint of ``thread_id``, or ``None``."""
        await anyio.lowlevel.checkpoint()
        with self._lock:
            stored = self._threads.get(thread_id)
            return stored[-1] if stored else None

    async def put(self, thread_id: str, checkpoint: Checkpoint) -> None:
        """Store ``checkpoint`` as the latest of ``thread_id``.

        Raised by ``put``: ``ValueError`` when ``checkpoint.thread_id`` is another thread.
        """
        _check_thread(thread_id, checkpoint)
        await anyio.lowlevel.checkpoint()
        with self._lock:
            self._threads.setdefault(thread_id, []).append(checkpoint)

    async def delete(self, thread_id: str) -> None:
        """Forget ``thread_id``."""
        await anyio.lowlevel.checkpoint()
        with self._lock:
            self._threads.pop(thread_id, None)

    async def list(self, thread_id: str) -> builtins.list[Checkpoint]:
        """Every checkpoint of ``thread_id``, oldest first (a new list)."""
        await anyio.lowlevel.checkpoint()
        with self._lock:
            return builtins.list(self._threads.get(thread_id, ()))


SQLITE_SCHEMA = 1
"""The version of the SQLite layout (``PRAGMA user_version``); 0 is a new, empty file."""

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
_INSERT = (
    "INSERT INTO checkpoints (thread_id, step, run_id, created_at, body) VALUES (?, ?, ?, ?, ?)"
)
_SELECT_LATEST = "SELECT body FROM checkpoints WHERE thread_id = ? ORDER BY id DESC LIMIT 1"
_SELECT_ALL = "SELECT body FROM checkpoints WHERE thread_id = ? ORDER BY id"
_DELETE = "DELETE FROM checkpoints WHERE thread_id = ?"

_T = TypeVar("_T")


def _user_version(conn: sqlite3.Connection) -> int:
    version: int = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SQLITE_SCHEMA:
        raise ValueError(
            f"checkpoint database layout version {version} is newer than this reactcore "
            f"knows (up to {SQLITE_SCHEMA}): upgrade reactcore to open it"
        )
    return version


def _create_schema(conn: sqlite3.Connection) -> None:
    """Create the table and index once, even when several processes open a new file."""
    if _user_version(conn) == SQLITE_SCHEMA:
        return
    conn.execute("BEGIN IMMEDIATE")  # the write lock: one process creates, others wait
    try:
        if _user_version(conn) < SQLITE_SCHEMA:
            conn.execute(_CREATE_TABLE)
            conn.execute(_CREATE_INDEX)
            conn.execute(f"PRAGMA user_version = {SQLITE_SCHEMA}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


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


@attrs.define(eq=False)
class SqliteSaver:
    """Keeps checkpoints in the SQLite file ``path``: one row per checkpoint, the
    checkpoint as ``dump_checkpoint`` JSON in ``body``.

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

    Order is insertion order (the row id), which is the order ``put`` was called.
    ``path`` may be ``":memory:"`` (one private database, for tests).
    """

    path: str | os.PathLike[str]
    busy_timeout: float = 10.0
    _conn: sqlite3.Connection | None = attrs.field(default=None, init=False)
    _closed: bool = attrs.field(default=False, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

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

        def latest() -> Checkpoint | None:
            row = self._locked(lambda conn: conn.execute(_SELECT_LATEST, (thread_id,)).fetchone())
            return None if row is None else load_checkpoint(row[0])

        return await anyio.to_thread.run_sync(latest)

    async def put(self, thread_id: str, checkpoint: Checkpoint) -> None:
        """Store ``checkpoint`` as the latest of ``thread_id``.

        Raised by ``put``: ``ValueError`` when ``checkpoint.thread_id`` is another thread;
        ``TypeError`` when the state holds a value a checkpoint cannot keep (see
        ``dump_checkpoint``); ``sqlite3.Error`` when the file cannot be written.
        """
        _check_thread(thread_id, checkpoint)
        row = (thread_id, checkpoint.step, checkpoint.run_id, checkpoint.created_at)

        def insert() -> None:
            body = dump_checkpoint(checkpoint)
            self._locked(lambda conn: conn.execute(_INSERT, (*row, body)))

        await anyio.to_thread.run_sync(insert)

    async def delete(self, thread_id: str) -> None:
        """Forget ``thread_id``."""
        await self._run(lambda conn: conn.execute(_DELETE, (thread_id,)))

    async def list(self, thread_id: str) -> builtins.list[Checkpoint]:
        """Every checkpoint of ``thread_id``, oldest first."""

        def every() -> builtins.list[Checkpoint]:
            rows = self._locked(lambda conn: conn.execute(_SELECT_ALL, (thread_id,)).fetchall())
            return [load_checkpoint(body) for (body,) in rows]

        return await anyio.to_thread.run_sync(every)

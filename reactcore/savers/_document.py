"""The document format: a checkpoint as self-contained JSON text (``dump_checkpoint`` /
``load_checkpoint``, for export and import), and the tagged state values and messages
every saver's records are made of.

A checkpoint is written as JSON text (``dump_checkpoint`` / ``load_checkpoint``), written
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
from collections.abc import Mapping
from itertools import islice
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from .. import _validate as valid
from .._messages import (
    AssistantMessage,
    AudioPart,
    ContentPart,
    FilePart,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from .._serde import StrictTypeError, converter, describe_error, store_when_set
from .._state import KeyStrategy, OverAllState
from ..models.base import Usage
from ._protocol import Checkpoint

CHECKPOINT_SCHEMA = 1
"""The version of the checkpoint JSON layout that this code writes (and the newest it reads)."""

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
        return f"{valid.a_or_an(f'{kind.__module__}.{kind.__qualname__}')} at {path}"
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
            raise TypeError(f"{valid.a_or_an(type(value).__qualname__)} is none of {known}")
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


def _check_messages(key: str, messages: builtins.list[Message], start: int = 0) -> None:
    """Message fields are typed; only their ``metadata`` may hold arbitrary values."""
    for index, message in enumerate(messages, start):
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


# The saver's address of a checkpoint is not part of it: never written, never read.
converter.register_unstructure_hook(
    Checkpoint,
    make_dict_unstructure_fn(Checkpoint, converter, checkpoint_id=override(omit=True)),
)
converter.register_structure_hook(
    Checkpoint,
    make_dict_structure_fn(Checkpoint, converter, checkpoint_id=override(omit=True)),
)


# --- pieces of a checkpoint, for the savers' records ------------------------------------

# (Unions, which the converter's signature does not take as types.)
_MESSAGE: Any = Message
_TAGGED: Any = _StateValue

_NO_STATE = OverAllState({})


def dump_fields(checkpoint: Checkpoint) -> dict[str, Any]:
    """The checkpoint's own fields (all but its thread and state) as stored, checked to
    load back (``TypeError`` as in ``dump_checkpoint``)."""
    _require_json(checkpoint.metadata, "the checkpoint metadata")
    body: dict[str, Any] = converter.unstructure(attrs.evolve(checkpoint, state=_NO_STATE))
    _check_loads_back(body)
    del body["thread_id"], body["state"]
    return body


def load_fields(
    thread_id: str, fields: Mapping[str, Any], state: OverAllState, checkpoint_id: str | None
) -> Checkpoint:
    """The checkpoint of ``thread_id`` with the stored ``fields`` and ``state``."""
    empty: dict[str, Any] = {"key_strategies": {}, "values": {}}
    try:
        bare = converter.structure({**fields, "thread_id": thread_id, "state": empty}, Checkpoint)
    except (cattrs.BaseValidationError, StrictTypeError) as exc:
        raise ValueError(f"malformed checkpoint: {describe_error(exc, '$')}") from exc
    return attrs.evolve(bare, state=state, checkpoint_id=checkpoint_id)


def same_value(old: Any, new: Any) -> bool:
    """Whether ``new`` would be stored exactly as ``old``: equal, field by field (also
    the fields equality ignores), and of the same types all the way down (``True`` is
    not ``1``)."""
    if old is new:
        return True
    kind = type(old)
    if kind is not type(new):
        return False
    if kind is dict or isinstance(old, Mapping):
        return old.keys() == new.keys() and all(same_value(old[k], new[k]) for k in old)
    if kind is list or kind is tuple:
        return len(old) == len(new) and all(map(same_value, old, new))
    if attrs.has(kind):
        return all(
            same_value(getattr(old, a.name), getattr(new, a.name)) for a in attrs.fields(kind)
        )
    return bool(old == new)


def is_message_list(value: Any, known: int = 0) -> bool:
    """Whether ``value`` is stored as a list of messages (a message log, in a saver);
    its first ``known`` items are known to be messages already."""
    if type(value) not in (list, tuple) or not value:
        return False
    return all(type(m) in _MESSAGE_TYPES for m in islice(value, known, None))


def dump_value(key: str, value: Any) -> dict[str, Any]:
    """The state value ``value`` of ``key`` as stored: tagged with its kind, checked."""
    dumped: dict[str, Any] = _dump_value(key, value)
    return dumped


def load_value(tagged: Any) -> Any:
    """The state value stored as ``tagged`` (by ``dump_value``)."""
    try:
        return converter.structure(tagged, _TAGGED).value
    except (cattrs.BaseValidationError, StrictTypeError) as exc:
        raise ValueError(f"malformed state value: {describe_error(exc, '$')}") from exc


def dump_messages(key: str, messages: builtins.list[Message], start: int) -> builtins.list[Any]:
    """``messages`` (``start`` onwards, of the list under ``key``) as stored, each checked
    to load back; a ``TypeError`` names the key and the message's index in the list."""
    _check_messages(key, messages, start)
    dumped = []
    for index, message in enumerate(messages, start):
        value = converter.unstructure(message, Message)
        try:
            converter.structure(value, _MESSAGE)
        except (cattrs.BaseValidationError, StrictTypeError) as exc:
            raise TypeError(
                f"state key {key!r} cannot be checkpointed: it would not load back: "
                f"{describe_error(exc, f'$[{index}]')}"
            ) from exc
        dumped.append(value)
    return dumped


def load_message(value: Any) -> Message:
    """The message stored as ``value`` (by ``dump_messages``)."""
    try:
        message: Message = converter.structure(value, _MESSAGE)
    except (cattrs.BaseValidationError, StrictTypeError) as exc:
        raise ValueError(f"malformed message: {describe_error(exc, '$')}") from exc
    return message

"""The layout's records as JSON text: how ``SqliteSaver`` and ``PostgresSaver`` store
them (and how ``MemorySaver`` counts what the same records would take).

- A **record** (one per checkpoint) is ``{"fields": {...}, "values": {...}}``, plus
  ``"keys"`` (the state's key order) and ``"key_strategies"`` when they changed, in a
  snapshot always. ``fields`` are the checkpoint's own fields, as in ``dump_checkpoint``
  (``next``, ``step``, ``run_id``, ``model_calls``, ``interrupt``, ``created_at``,
  ``metadata``); ``values`` maps each changed key to its tagged value, as in
  ``dump_checkpoint`` (``{"kind": "json" | "message" | "usage", "value": ...}``), or to a
  pointer into the message log: ``{"kind": "log", "segment": 3, "length": 42}``.
- A **message** of the log is its ``dump_checkpoint`` JSON, except that large texts
  (tool results, and the data of images, audio and files: ``BLOB_MIN_CHARS`` characters
  or more) are replaced by ``{"blob": "<sha256 of the text>"}``.
- A **blob** is such a text as a JSON string, stored once per thread under its hash,
  however many messages and checkpoints hold it.

Every text is ASCII (non-ASCII escaped), so any Python string can be stored.
"""

from __future__ import annotations

import builtins
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .._messages import Message
from .._serde import converter
from .._state import KeyStrategy, OverAllState
from ._document import (
    dump_fields,
    dump_messages,
    dump_value,
    load_fields,
    load_message,
    same_value,
)
from ._document import load_value as load_tagged
from ._log import Logged, Record, Slot, Stored
from ._protocol import Checkpoint

BLOB_MIN_CHARS = 1024
"""Texts of a message at least this long are stored once, as a blob (by content hash)."""

# Where a message's large texts are: the fields of content parts holding data, and the
# text of a tool's response.
_PART_DATA = {"image": "url", "audio": "data_base64", "file": "file_data"}


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _texts(message: dict[str, Any]) -> Iterable[tuple[dict[str, Any], str]]:
    """The (holder, field) of every text of a dumped message that may be large."""
    kind = message.get("type")
    parts = list(message.get("parts", ())) if kind == "user" else []
    if kind == "tool":
        for response in message.get("responses", ()):
            yield response, "response_data"
            parts += response.get("parts", ())
    for part in parts:
        field = _PART_DATA.get(part.get("type"))
        if field is not None:
            yield part, field


def take_blobs(message: dict[str, Any], blobs: dict[str, str]) -> dict[str, Any]:
    """``message`` (dumped; changed in place) with its large texts replaced by references,
    the texts put in ``blobs`` (hash → JSON text)."""
    for holder, field in _texts(message):
        text = holder.get(field)
        if isinstance(text, str) and len(text) >= BLOB_MIN_CHARS:
            digest = _hash(text)
            blobs.setdefault(digest, json.dumps(text))
            holder[field] = {"blob": digest}
    return message


def blob_refs(message: dict[str, Any]) -> Iterable[str]:
    """The hashes of the blobs a stored message refers to."""
    for holder, field in _texts(message):
        ref = holder.get(field)
        if isinstance(ref, dict):
            yield str(ref.get("blob"))


def put_blobs(message: dict[str, Any], blobs: Mapping[str, str]) -> dict[str, Any]:
    """``message`` (stored; changed in place) with its blob references replaced by the
    texts (``ValueError`` for one that is missing)."""
    for holder, field in _texts(message):
        ref = holder.get(field)
        if isinstance(ref, dict):
            text = blobs.get(str(ref.get("blob")))
            if text is None:
                raise ValueError(f"malformed message log: blob {ref.get('blob')!r} is missing")
            holder[field] = json.loads(text)
    return message


class JsonCodec:
    """The layout's pieces as JSON documents (see the module docstring)."""

    def value(self, key: str, value: Any) -> Stored:
        tagged = dump_value(key, value)
        return Stored(tagged, json.dumps(tagged, allow_nan=False))

    def same(self, old: Stored, new: Stored) -> bool:
        return old.text == new.text

    def same_message(self, old: Message, new: Message) -> bool:
        return same_value(old, new)

    def messages(self, key: str, messages: Sequence[Message], start: int) -> builtins.list[Any]:
        return dump_messages(key, list(messages), start)

    def fields(self, checkpoint: Checkpoint) -> Any:
        return dump_fields(checkpoint)

    def load(self, stored: Stored) -> Any:
        return load_tagged(stored.value)

    def checkpoint(self, thread_id: str, record: Record, state: OverAllState) -> Checkpoint:
        return load_fields(thread_id, record.fields, state, str(record.seq))


def record_text(record: Record) -> str:
    """``record`` (its slots from ``JsonCodec``) as stored."""
    values = {
        key: {"kind": "log", "segment": s.segment, "length": s.length}
        if isinstance(s, Logged)
        else s.value
        for key, s in record.changed.items()
    }
    body: dict[str, Any] = {"fields": record.fields, "values": values}
    if record.keys is not None:
        body["keys"] = list(record.keys)
    if record.strategies is not None:
        strategies = dict(record.strategies)
        body["key_strategies"] = converter.unstructure(strategies, dict[str, KeyStrategy])
    return json.dumps(body, allow_nan=False)


def parse_record(seq: int, snapshot: bool, text: str | bytes) -> Record:
    """The record stored as ``text``."""
    try:
        body = json.loads(text)
        changed: dict[str, Slot] = {}
        for key, value in body["values"].items():
            if value.get("kind") == "log":
                changed[key] = Logged(int(value["segment"]), int(value["length"]))
            else:
                changed[key] = Stored(value, json.dumps(value))
        keys = body.get("keys")
        strategies = body.get("key_strategies")
        if strategies is not None:
            strategies = converter.structure(strategies, dict[str, KeyStrategy])
        fields = body["fields"]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"malformed checkpoint record {seq}: {exc!r}") from exc
    return Record(
        seq, fields, changed, None if keys is None else tuple(keys), strategies, bool(snapshot)
    )


def message_text(stored: dict[str, Any], blobs: dict[str, str]) -> str:
    """A new message's stored form as the text of its row (its large texts into
    ``blobs``)."""
    return json.dumps(take_blobs(stored, blobs))


def load_stored_message(text: str | bytes, blobs: Mapping[str, str]) -> Message:
    """The message stored as ``text`` (with the ``blobs`` it refers to)."""
    return load_message(put_blobs(json.loads(text), blobs))


def text_size(dump: Callable[[], str], fallback: Any) -> int:
    """The length of the text ``dump()`` gives; of ``repr(fallback)`` when it cannot be
    made (a value only ``MemorySaver`` keeps)."""
    try:
        return len(dump())
    except (TypeError, ValueError):
        return len(repr(fallback))

"""Reading a thread back from the tables of the layout (``_sql``): its records from
a snapshot on, the segments and messages they point to, the blobs those refer to, all
checked before anything is decoded; a fork's rows through its ancestors' (``forks``)."""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .._exceptions import DamagedThread
from .._messages import Message
from ._codec import JsonCodec, blob_refs, load_stored_message, parse_record
from ._log import Head, Record, Replay, Segment, chain, check_records, pointers, snapshot_of
from ._protocol import Checkpoint

if TYPE_CHECKING:
    from ._sql import Dialect

CODEC = JsonCodec()

Fetch = Callable[[str, Mapping[str, Any]], Sequence[Sequence[Any]]]
"""Runs the named statement (``STATEMENTS``) with its parameters; the rows."""


@attrs.frozen
class Rows:
    """What a reader fetched of one thread (in one transaction): its records (the ones
    asked for, from a snapshot on), segments, and the message rows and blobs they need."""

    records: tuple[Record, ...]
    segments: Mapping[int, Segment]
    messages: Mapping[tuple[int, int], str]
    blobs: Mapping[str, str]
    stamp: str | None


@attrs.frozen
class Layer:
    """One thread of the ancestry of a thread that was forked (``fork``): its records of
    ``seq`` in ``after`` + 1 .. ``upto``, its segments up to id ``segment`` (``None``:
    all; the thread read itself)."""

    thread: str
    after: int = 0
    upto: int | None = None
    segment: int | None = None


def layers_of(fetch: Fetch, thread_id: str) -> builtins.list[Layer]:
    """The threads whose rows make ``thread_id``, its first ancestor first (just itself,
    for a thread that is no fork)."""
    layers: builtins.list[Layer] = []
    thread, upto, segment = thread_id, None, None
    while True:
        rows = fetch("fork_of", {"thread": thread})
        if not rows:
            layers.append(Layer(thread, 0, upto, segment))
            break
        parent, at, last_segment = rows[0]
        layers.append(Layer(thread, int(at), upto, segment))
        thread, upto, segment = str(parent), int(at), int(last_segment)
    layers.reverse()
    return layers


def _records_of(
    fetch: Fetch, layers: Sequence[Layer], which: str, seq: int | None
) -> tuple[tuple[Record, ...], int, int] | None:
    """The records ``which`` names (``latest``, ``upto`` record ``seq``, ``records``),
    the first and last ``seq`` they must be; ``None`` when there is no such thread or
    checkpoint."""
    leaf = layers[-1]
    params = {"thread": leaf.thread, "seq": seq}
    if len(layers) == 1:
        records = tuple(_parse_record(leaf.thread, *row) for row in fetch(which, params))
        last = records[-1].seq if records else None
        if last is None or (which == "upto" and last != seq):
            stored = fetch("last_seq", params)[0][0]  # (not found: is the thread damaged?)
            if stored is None or (which == "upto" and seq is not None and seq > stored):
                return None  # no such thread, or no such checkpoint
            last = int(stored) if which != "upto" else seq
        assert last is not None
        if which == "records":
            first = 1
        elif records and records[0].snapshot:
            first = records[0].seq
        else:
            first = snapshot_of(last)
        return records, first, last
    stored = fetch("last_seq", params)[0][0]
    top = leaf.after if stored is None else int(stored)
    if which == "upto" and (seq is None or seq > top):
        return None
    last = seq if which == "upto" and seq is not None else top
    first = 1 if which == "records" else snapshot_of(last)
    found: builtins.list[Record] = []
    for layer in layers:
        after = max(first - 1, layer.after)
        upto = last if layer.upto is None else min(last, layer.upto)
        if after < upto:
            rows = fetch("range", {"thread": layer.thread, "after": after, "upto": upto})
            found += (_parse_record(leaf.thread, *row) for row in rows)
    return tuple(found), first, last


def fetch_rows(
    fetch: Fetch, dialect: Dialect, thread_id: str, which: str, seq: int | None = None
) -> Rows | None:
    """The rows of ``thread_id`` for the statement ``which`` (``latest``, ``upto`` record
    ``seq``, or every record: ``records``), or ``None`` when it has none. A fork's rows
    are its ancestors' up to where it forked, then its own (``layers_of``); the ends of
    the segments it inherits are left unknown, so that it appends to its own only.

    Raised: ``DamagedThread`` naming the first row the records need that is missing or
    unreadable (a record, its snapshot, a segment, a message, a blob): checked here, in
    the reader's transaction, before anything is decoded."""
    layers = layers_of(fetch, thread_id)
    found = _records_of(fetch, layers, which, seq)
    if found is None:
        return None
    records, first, last = found
    check_records(thread_id, records, first, last)
    segments: dict[int, Segment] = {}
    owner: dict[int, str] = {}  # the thread whose rows hold each segment
    for layer in layers:
        for i, p, b in fetch("segments", {"thread": layer.thread}):
            if layer.segment is None or int(i) <= layer.segment:
                segments[int(i)] = Segment(int(i), None if p is None else int(p), int(b))
                owner[int(i)] = layer.thread
    stops: dict[int, int] = {}  # how far into each segment the records read
    for pointer in pointers(records):
        for segment_id, _, stop in chain(thread_id, segments, pointer):
            stops[segment_id] = max(stops.get(segment_id, 0), stop)
    messages: dict[tuple[int, int], str] = {}
    for layer in layers:
        needed = sorted(i for i in stops if owner[i] == layer.thread)
        if needed:
            params = {"thread": layer.thread, "segments": dialect.values(needed)}
            messages.update(((int(g), int(p)), body) for g, p, body in fetch("messages", params))
    for segment_id, stop in stops.items():
        for position in range(segments[segment_id].base, stop):
            if (segment_id, position) not in messages:
                raise DamagedThread(thread_id, f"message {position} of segment {segment_id}")
    for segment_id, position in messages:
        if owner[segment_id] == thread_id:
            known = segments[segment_id]
            known.end = max(known.end or 0, position + 1)
    hashes = sorted({h for key, body in messages.items() for h in _blob_refs(thread_id, key, body)})
    blobs: dict[str, str] = {}
    for layer in reversed(layers):
        missing = [h for h in hashes if h not in blobs]
        if missing:
            params = {"thread": layer.thread, "hashes": dialect.values(missing)}
            blobs.update((str(h), b) for h, b in fetch("blobs", params))
    missing_blob = next((h for h in hashes if h not in blobs), None)
    if missing_blob is not None:
        raise DamagedThread(thread_id, f"blob {missing_blob}")
    return Rows(records, segments, messages, blobs, stamp_of(fetch, thread_id))


def _blob_refs(thread_id: str, key: tuple[int, int], body: str) -> Iterable[str]:
    try:
        return builtins.list(blob_refs(json.loads(body)))
    except ValueError as exc:
        where = f"message {key[1]} of segment {key[0]}"
        raise DamagedThread(thread_id, where, f"cannot be read ({exc})") from exc


def _parse_record(thread_id: str, seq: int, snapshot: bool, text: str | bytes) -> Record:
    try:
        return parse_record(seq, snapshot, text)
    except ValueError as exc:
        raise DamagedThread(
            thread_id, f"checkpoint record {seq}", f"cannot be read ({exc})"
        ) from exc


def stamp_of(fetch: Fetch, thread_id: str) -> str | None:
    """The thread's stamp (``None``: no thread, or one stored by an older layout)."""
    rows = fetch("stamp", {"thread": thread_id})
    return None if not rows or rows[0][0] is None else str(rows[0][0])


def replay(thread_id: str, rows: Rows) -> Replay:
    """A replay of ``rows``, its messages decoded as they are read (each once)."""
    decoded: dict[tuple[int, int], Message] = {}

    def message_at(segment: int, position: int) -> Message:
        key = (segment, position)
        message = decoded.get(key)
        if message is None:
            text = rows.messages.get(key)
            where = f"message {position} of segment {segment}"
            if text is None:
                raise DamagedThread(thread_id, where)
            try:
                message = decoded[key] = load_stored_message(text, rows.blobs)
            except ValueError as exc:
                raise DamagedThread(thread_id, where, f"cannot be read ({exc})") from exc
        return message

    return Replay(thread_id, CODEC, rows.segments, message_at)


def latest(thread_id: str, rows: Rows) -> tuple[Checkpoint, Head]:
    """The last checkpoint of ``rows``, and the writer's head after it."""
    replaying = replay(thread_id, rows)
    for record in rows.records:
        replaying.apply(record)
    return replaying.checkpoint(), replaying.head(rows.stamp)


def every(thread_id: str, rows: Rows) -> Iterator[Checkpoint]:
    """Every checkpoint of ``rows`` (from its first record, a snapshot), in order."""
    replaying = replay(thread_id, rows)
    for record in rows.records:
        replaying.apply(record)
        yield replaying.checkpoint()

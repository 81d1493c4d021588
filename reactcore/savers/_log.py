"""The incremental layout every saver keeps a thread in: message logs and deltas.

A thread is stored as

- **message logs**: each state key holding a list of messages (``messages``, and any
  other such key) points into an append-only log of the thread's messages. The log is
  made of **segments**: a segment holds the messages of positions ``base`` onwards, and
  takes the positions before ``base`` from its ``parent`` segment (up to ``base``). A
  pointer ``(segment, length)`` names the list of positions ``0 .. length - 1`` along that
  chain. A step that appends messages appends them to the pointer's segment; a step that
  changes earlier messages (a summary replacing the history, a message removed, a partial
  tool answer replaced by a longer one) starts a new segment at the first position that
  changed, whose parent keeps everything before it. Nothing stored is ever rewritten, so
  every older checkpoint can still be rebuilt.
- **records**: one per checkpoint, numbered ``seq`` = 1, 2, 3 … per thread: the
  checkpoint's own fields (step, next, run id, interrupt …), the state keys whose value
  changed since the record before (a log key's new pointer; any other key's new value),
  the key order and strategies when they changed. Every ``SNAPSHOT_EVERY``-th record is a
  **snapshot**: it holds every key, so rebuilding a checkpoint replays at most that many
  records.

Writing a checkpoint costs what the step added (its new messages, its changed keys),
never the history again; reading one back reads its records since the last snapshot and
the messages of its chain, each once.

This module is the layout itself, the same for every saver: ``encode`` turns a
checkpoint into the delta from the thread's ``Head`` (what the writer knows of the latest
checkpoint), ``Replay`` rebuilds checkpoints from records. How records, segments and
messages are kept (objects in memory; rows of JSON text in SQLite and PostgreSQL) is the
``Codec`` of each saver.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable, Mapping, Sequence
from itertools import compress, count, islice
from typing import Any, Protocol

import attrs

from .._exceptions import DamagedThread
from .._messages import Message
from .._state import KeyStrategy, OverAllState
from ._document import is_message_list
from ._protocol import Checkpoint

SNAPSHOT_EVERY = 32
"""Every this many records of a thread, one holds every state key (seq 1, 33, 65 …)."""


@attrs.define(eq=False)
class Segment:
    """A run of a message log: positions ``base`` onwards; the positions before ``base``
    come from ``parent``. ``end``: one past the last position stored in it, when known
    (a writer appends only to a segment whose end it knows)."""

    id: int
    parent: int | None
    base: int
    end: int | None = None


@attrs.frozen
class Logged:
    """A state key whose list of messages is positions ``0 .. length - 1`` of the log,
    along the chain of ``segment``."""

    segment: int
    length: int


@attrs.frozen(eq=False)
class Stored:
    """A state key's value as the saver keeps it (``value``), and, for savers that store
    text, that text (``text``): two values are the same when their texts are."""

    value: Any
    text: str | None = None


Slot = Logged | Stored


@attrs.frozen(eq=False)
class Record:
    """One checkpoint as stored: its own fields (in the codec's form), the slots of the
    keys that changed since the record before (of every key, in a snapshot), and the
    key order and strategies when they changed (always, in a snapshot)."""

    seq: int
    fields: Any
    changed: Mapping[str, Slot]
    keys: tuple[str, ...] | None
    strategies: Mapping[str, KeyStrategy] | None
    snapshot: bool


@attrs.frozen
class Entry:
    """A message appended to the log: where, the message, and its stored form."""

    segment: int
    position: int
    message: Message
    stored: Any


class Codec(Protocol):
    """How a saver keeps the pieces of the layout (objects, or JSON documents)."""

    def value(self, key: str, value: Any) -> Stored:
        """The value of a state key that is not a message log, as kept (checked)."""
        ...

    def same(self, old: Stored, new: Stored) -> bool:
        """Whether ``new`` is what ``old`` already holds."""
        ...

    def same_message(self, old: Message, new: Message) -> bool:
        """Whether ``new`` is the message ``old`` already stored."""
        ...

    def messages(self, key: str, messages: Sequence[Message], start: int) -> builtins.list[Any]:
        """The stored forms of new messages of ``key`` (at ``start`` onwards), checked."""
        ...

    def fields(self, checkpoint: Checkpoint) -> Any:
        """The checkpoint's own fields, as kept (checked)."""
        ...

    def load(self, stored: Stored) -> Any:
        """The state value ``stored`` holds."""
        ...

    def checkpoint(self, thread_id: str, record: Record, state: OverAllState) -> Checkpoint:
        """The checkpoint ``record`` stores, with its rebuilt ``state``."""
        ...


@attrs.define(eq=False)
class Head:
    """What a writer knows of its thread's latest checkpoint (record ``seq``; 0: none):
    enough to store the next one as a delta, and to give it back. ``logs`` holds the
    message lists of the logged keys; ``segments``, every segment of the thread;
    ``record``, the latest record; ``stamp``, the thread's version in a shared store
    (changed by every write: a head whose stamp is no longer the thread's is stale)."""

    seq: int = 0
    keys: tuple[str, ...] = ()
    strategies: dict[str, KeyStrategy] = attrs.field(factory=dict)
    slots: dict[str, Slot] = attrs.field(factory=dict)
    logs: dict[str, builtins.list[Message]] = attrs.field(factory=dict)
    segments: dict[int, Segment] = attrs.field(factory=dict)
    record: Record | None = None
    stamp: str | None = None

    def apply(self, delta: Delta, stamp: str | None = None) -> None:
        """Move on to the checkpoint ``delta`` stored (once it is stored, as ``stamp``)."""
        record = delta.record
        self.seq, self.record, self.stamp = record.seq, record, stamp
        if record.keys is not None:
            self.keys = record.keys
        if record.strategies is not None:
            self.strategies = dict(record.strategies)
        slots = {**self.slots, **record.changed}
        self.slots = {key: slots[key] for key in self.keys}
        logs = {**self.logs, **delta.logs}
        self.logs = {k: logs[k] for k, slot in self.slots.items() if isinstance(slot, Logged)}
        for segment in delta.segments:
            self.segments[segment.id] = attrs.evolve(segment)
        for segment_id, end in delta.ends.items():
            self.segments[segment_id].end = end


@attrs.frozen(eq=False)
class Delta:
    """What storing one checkpoint adds: its record, the new segments, the new messages;
    and, for the writer's ``Head``, the new lists of the changed logs and the new ends of
    the segments appended to."""

    record: Record
    segments: tuple[Segment, ...]
    entries: tuple[Entry, ...]
    logs: Mapping[str, builtins.list[Message]]
    ends: Mapping[int, int]


def encode(head: Head, checkpoint: Checkpoint, codec: Codec) -> Delta:
    """``checkpoint`` as the delta from ``head``: the work is what changed, whatever the
    length of the history (comparing the lists goes by identity, message by message)."""
    seq = head.seq + 1
    snapshot = (seq - 1) % SNAPSHOT_EVERY == 0
    state = checkpoint.state
    keys = tuple(state)
    strategies = dict(state.key_strategies)
    fields = codec.fields(checkpoint)
    writer = _LogWriter(head, codec)
    changed: dict[str, Slot] = {}
    for key in keys:
        value, old = state[key], head.slots.get(key)
        slot: Slot
        before = head.logs.get(key, []) if isinstance(old, Logged) else []
        common = _common_prefix(before, value, codec.same_message) if before else 0
        if is_message_list(value, common):
            slot = writer.write(key, list(value), old, before, common)
        else:
            slot = codec.value(key, value)
            if isinstance(old, Stored) and codec.same(old, slot):
                slot = old
        if snapshot or slot is not old:
            changed[key] = slot
    record = Record(
        seq,
        fields,
        changed,
        keys if snapshot or keys != head.keys else None,
        strategies if snapshot or strategies != head.strategies else None,
        snapshot,
    )
    return Delta(record, tuple(writer.segments), tuple(writer.entries), writer.logs, writer.ends)


def _common_prefix(before: Sequence[Message], new: Any, same: Callable[[Any, Any], bool]) -> int:
    """How many first messages of ``new`` are those of ``before``. Found at C speed while
    they are the very same objects (the loop's lists share them: the cost per message is
    a pointer comparison); ``same`` is asked only where they are not."""
    if type(new) not in (list, tuple):
        return 0
    limit = min(len(before), len(new))
    start = 0
    while start < limit:
        differing = map(operator.is_not, islice(before, start, limit), islice(new, start, limit))
        start = next(compress(count(start), differing), limit)
        if start == limit or not same(before[start], new[start]):
            return start
        start += 1
    return limit


@attrs.define(eq=False)
class _LogWriter:
    """Where the new messages of each log key go: appended to the segment the key points
    into, or a new segment from the first position that changed."""

    head: Head
    codec: Codec
    segments: builtins.list[Segment] = attrs.field(factory=list)
    entries: builtins.list[Entry] = attrs.field(factory=list)
    logs: dict[str, builtins.list[Message]] = attrs.field(factory=dict)
    ends: dict[int, int] = attrs.field(factory=dict)
    _next_id: int = 0

    def __attrs_post_init__(self) -> None:
        self._next_id = max(self.head.segments, default=0) + 1

    def write(
        self,
        key: str,
        new: builtins.list[Message],
        old: Slot | None,
        before: builtins.list[Message],
        common: int,
    ) -> Slot:
        """The slot of ``key``, whose messages are now ``new`` (the first ``common`` of
        them those of ``before``, the list ``old`` points to)."""
        if common == len(before) == len(new):
            assert isinstance(old, Logged)
            return old
        self.logs[key] = new
        tip = self.head.segments[old.segment] if isinstance(old, Logged) else None
        if common == len(new):  # cut back to a prefix: nothing new to store
            return Logged(self._covering(tip, common - 1), common)
        if tip is not None and common == len(before) == tip.end:
            self._append(key, tip.id, new, common)
            self.ends[tip.id] = len(new)
            return Logged(tip.id, len(new))
        parent = self._covering(tip, common - 1) if common else None
        segment = Segment(self._next_id, parent, common, len(new))
        self._next_id += 1
        self.segments.append(segment)
        self._append(key, segment.id, new, common)
        return Logged(segment.id, len(new))

    def _append(self, key: str, segment: int, new: builtins.list[Message], start: int) -> None:
        stored = self.codec.messages(key, new[start:], start)
        self.entries += [
            Entry(segment, start + i, message, form)
            for i, (message, form) in enumerate(zip(new[start:], stored, strict=True))
        ]

    def _covering(self, tip: Segment | None, position: int) -> int:
        """The segment of ``tip``'s chain that holds ``position``."""
        segments = self.head.segments
        assert tip is not None
        while tip.base > position:
            assert tip.parent is not None
            tip = segments[tip.parent]
        return tip.id


def chain(
    thread_id: str, segments: Mapping[int, Segment], pointer: Logged
) -> builtins.list[tuple[int, int, int]]:
    """The ``(segment, start, stop)`` runs making positions ``0 .. length - 1`` of
    ``pointer``, in order (``DamagedThread`` when a segment of the chain is missing)."""

    def segment_of(segment_id: int) -> Segment:
        found = segments.get(segment_id)
        if found is None:
            raise DamagedThread(thread_id, f"segment {segment_id}")
        return found

    runs = []
    stop, segment = pointer.length, segment_of(pointer.segment)
    while stop > 0:
        if segment.base < stop:
            runs.append((segment.id, segment.base, stop))
            stop = segment.base
        if segment.parent is None:
            break
        segment = segment_of(segment.parent)
    if stop > 0:
        raise DamagedThread(thread_id, f"segment holding message {stop - 1}")
    runs.reverse()
    return runs


def snapshot_of(seq: int) -> int:
    """The snapshot record that record ``seq`` builds on (itself, for a snapshot)."""
    return (seq - 1) // SNAPSHOT_EVERY * SNAPSHOT_EVERY + 1


def check_records(thread_id: str, records: Sequence[Record], first: int, last: int) -> None:
    """Raise ``DamagedThread`` naming the first missing record unless ``records`` are the
    thread's records ``first`` to ``last`` (each once, in order), ``first`` a snapshot."""
    whole = len(records) == last - first + 1 and records and records[0].snapshot
    if whole and all(r.seq == seq for r, seq in zip(records, count(first))):
        return
    present = {r.seq for r in records}
    missing = next((seq for seq in range(first, last + 1) if seq not in present), None)
    if missing is None:
        raise DamagedThread(thread_id, f"checkpoint record {first}", "is no snapshot")
    raise DamagedThread(thread_id, f"checkpoint record {missing}")


@attrs.define(eq=False)
class Replay:
    """Rebuilds checkpoints from a thread's records, applied in order from a snapshot:
    ``apply(record)``, then ``checkpoint()`` for the state as of that record. Messages are
    read through ``message_at(segment, position)``."""

    thread_id: str
    codec: Codec
    segments: Mapping[int, Segment]
    message_at: Callable[[int, int], Message]
    record: Record | None = None
    keys: tuple[str, ...] = ()
    strategies: Mapping[str, KeyStrategy] = attrs.field(factory=dict)
    slots: dict[str, Slot] = attrs.field(factory=dict)

    def apply(self, record: Record) -> None:
        if self.record is None and not record.snapshot:
            raise DamagedThread(self.thread_id, f"checkpoint record {snapshot_of(record.seq)}")
        self.record = record
        if record.snapshot:
            self.slots = {}
        self.slots.update(record.changed)
        if record.keys is not None:
            self.keys = record.keys
        if record.strategies is not None:
            self.strategies = record.strategies

    def messages(self, pointer: Logged) -> builtins.list[Message]:
        return [
            self.message_at(segment, position)
            for segment, start, stop in chain(self.thread_id, self.segments, pointer)
            for position in range(start, stop)
        ]

    def value(self, key: str) -> Any:
        slot = self.slots.get(key)
        if slot is None:
            assert self.record is not None
            record, problem = f"checkpoint record {self.record.seq}", f"has no state key {key!r}"
            raise DamagedThread(self.thread_id, record, problem)
        return self.messages(slot) if isinstance(slot, Logged) else self.codec.load(slot)

    def checkpoint(self) -> Checkpoint:
        assert self.record is not None
        values = {key: self.value(key) for key in self.keys}
        state = OverAllState(values, self.strategies)
        return self.codec.checkpoint(self.thread_id, self.record, state)

    def head(self, stamp: str | None = None) -> Head:
        """The writer's head at the last record applied (its segments' ends as given)."""
        assert self.record is not None
        slots = {key: self.slots[key] for key in self.keys}
        logs = {k: self.messages(s) for k, s in slots.items() if isinstance(s, Logged)}
        segments = {s.id: attrs.evolve(s) for s in self.segments.values()}
        record, strategies = self.record, dict(self.strategies)
        return Head(record.seq, self.keys, strategies, slots, logs, segments, record, stamp)


def latest_of(thread_id: str, head: Head, codec: Codec) -> Checkpoint:
    """The checkpoint ``head`` knows (its messages the very objects it holds)."""
    assert head.record is not None
    values = {
        key: list(head.logs[key]) if isinstance(slot, Logged) else codec.load(slot)
        for key, slot in head.slots.items()
    }
    state = OverAllState(values, head.strategies)
    return codec.checkpoint(thread_id, head.record, state)


def pointers(records: Sequence[Record]) -> builtins.list[Logged]:
    """Every log pointer ``records`` hold (for a reader: which segments it needs)."""
    return [slot for r in records for slot in r.changed.values() if isinstance(slot, Logged)]


def seq_of(checkpoint_id: str) -> int | None:
    """The record number a checkpoint id names (``None``: it names no checkpoint)."""
    if checkpoint_id.isascii() and checkpoint_id.isdigit() and int(checkpoint_id) > 0:
        return int(checkpoint_id)
    return None

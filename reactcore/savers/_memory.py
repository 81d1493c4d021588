"""``MemorySaver``: the layout of message logs and deltas (``_log``), kept as objects."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import Any

import anyio.lowlevel
import attrs

from .._config import check_thread_id
from .._exceptions import DamagedThread, ThreadHasForks
from .._messages import Message
from .._state import OverAllState
from ._codec import JsonCodec, message_text, record_text, text_size
from ._document import dump_fields, same_value
from ._forks import ForkingMethods, taken
from ._leases import Lease, LocalLeases
from ._log import (
    Head,
    Logged,
    Record,
    Replay,
    Slot,
    Stored,
    check_records,
    encode,
    seq_of,
    snapshot_of,
)
from ._protocol import (
    Checkpoint,
    SaverStatistics,
    ThreadInfo,
    ThreadStatus,
    _check_thread,
    _info,
    _page,
)

_NO_STATE = OverAllState({})


class _ObjectCodec:
    """The layout's pieces as the objects themselves: nothing is serialised; a state
    value is the same when it is the same object, a message when it is the same in every
    field (an equal message the loop made again is not stored again)."""

    def value(self, key: str, value: Any) -> Stored:
        return Stored(value)

    def same(self, old: Stored, new: Stored) -> bool:
        return old.value is new.value

    def same_message(self, old: Message, new: Message) -> bool:
        return same_value(old, new)

    def messages(self, key: str, messages: Sequence[Message], start: int) -> builtins.list[Any]:
        return list(messages)

    def fields(self, checkpoint: Checkpoint) -> Any:
        return attrs.evolve(checkpoint, state=_NO_STATE, checkpoint_id=None)

    def load(self, stored: Stored) -> Any:
        return stored.value

    def checkpoint(self, thread_id: str, record: Record, state: OverAllState) -> Checkpoint:
        fields: Checkpoint = record.fields  # (a fork reads its parent's: its own id)
        return attrs.evolve(fields, thread_id=thread_id, state=state, checkpoint_id=str(record.seq))


_CODEC = _ObjectCodec()
_JSON = JsonCodec()


@attrs.frozen
class _Origin:
    """Where a fork starts: its parent thread, the parent's record ``seq`` it goes on
    from, and the last ``segment`` of the parent's log it reads."""

    parent: _Thread
    seq: int
    segment: int


@attrs.define(eq=False)
class _Thread:
    """One thread: its records, its message log, the writer's head, and its latest
    checkpoint (as put, with its id); for a fork, where it starts (its own records and
    messages are those it added)."""

    thread_id: str
    head: Head = attrs.field(factory=Head)
    records: builtins.list[Record] = attrs.field(factory=list)
    messages: dict[tuple[int, int], Message] = attrs.field(factory=dict)
    latest: Checkpoint | None = None
    origin: _Origin | None = None

    def replay(self) -> Replay:
        return Replay(self.thread_id, _CODEC, self.head.segments, self._message_at)

    def _message_at(self, segment: int, position: int) -> Message:
        message = self.messages.get((segment, position))
        origin = self.origin
        if message is None and origin is not None and segment <= origin.segment:
            return origin.parent._message_at(segment, position)
        if message is None:
            raise DamagedThread(self.thread_id, f"message {position} of segment {segment}")
        return message

    def upto(self, seq: int) -> builtins.list[Record]:
        """The records of checkpoints 1 .. ``seq`` (a fork's: its parent's, then its own)."""
        own = [r for r in self.records if r.seq <= seq]
        if self.origin is None:
            return own
        return self.origin.parent.upto(min(seq, self.origin.seq)) + own

    def replay_to(self, seq: int) -> Replay:
        """A replay that applied the records up to ``seq`` (from its snapshot on)."""
        upto = self.upto(seq)
        start = max((r.seq for r in upto if r.snapshot), default=snapshot_of(seq))
        chosen = [r for r in upto if r.seq >= start]
        check_records(self.thread_id, chosen, start, seq)
        replaying = self.replay()
        for record in chosen:
            replaying.apply(record)
        return replaying

    def at(self, seq: int) -> Checkpoint | None:
        """The checkpoint of record ``seq`` (rebuilt from its snapshot on)."""
        if not 1 <= seq <= self.head.seq:
            return None
        return self.replay_to(seq).checkpoint()

    def every(self) -> builtins.list[Checkpoint]:
        """Every checkpoint, oldest first (each rebuilt)."""
        records = self.upto(self.head.seq)
        check_records(self.thread_id, records, 1, self.head.seq)
        replaying, every = self.replay(), []
        for record in records:
            replaying.apply(record)
            every.append(replaying.checkpoint())
        return every

    def fork(self, seq: int, new_thread_id: str) -> _Thread | None:
        """A new thread forked from this one at record ``seq`` (``None``: no such
        record); forked from this one's parent when ``seq`` is at or before this one's
        own start."""
        if self.origin is not None and seq <= self.origin.seq:
            return self.origin.parent.fork(seq, new_thread_id)
        if not 1 <= seq <= self.head.seq:
            return None
        replaying = self.replay_to(seq)
        parent = replaying.checkpoint()
        head = replaying.head()
        for segment in head.segments.values():
            segment.end = None  # the fork appends to segments of its own only
        origin = _Origin(self, seq, max(head.segments, default=0))
        latest = attrs.evolve(parent, thread_id=new_thread_id)
        return _Thread(new_thread_id, head, latest=latest, origin=origin)

    def as_text(self) -> tuple[int, int]:
        """The bytes this thread's records, messages and blobs take in ``SqliteSaver``,
        and the number of blobs."""
        blobs: dict[str, str] = {}
        size = sum(text_size(partial(_message_text, m, blobs), m) for m in self.messages.values())
        size += sum(text_size(partial(_record_text, r), r) for r in self.records)
        return size + sum(len(b) for b in blobs.values()), len(blobs)


def _message_text(message: Message, blobs: dict[str, str]) -> str:
    return message_text(_JSON.messages("", [message], 0)[0], blobs)


def _record_text(record: Record) -> str:
    return record_text(_as_json(record))


def _as_json(record: Record) -> Record:
    """``record`` with its pieces as ``JsonCodec`` makes them."""

    def slot(key: str, value: Slot) -> Slot:
        return value if isinstance(value, Logged) else _JSON.value(key, value.value)

    changed = {key: slot(key, value) for key, value in record.changed.items()}
    return attrs.evolve(record, fields=dump_fields(record.fields), changed=changed)


@attrs.define(eq=False)
class MemorySaver(ForkingMethods):
    """Keeps every checkpoint of every thread in memory, in the layout of every saver
    (see ``reactcore.savers``): each thread's messages in an append-only log, each
    checkpoint a record of what changed. Nothing is serialised: the log and the records
    hold the objects given (messages and state values are shared with the run, never
    copied), so values that ``dump_checkpoint`` would refuse are kept too, and a
    checkpoint costs memory for what its step added, whatever the length of the history.

    ``get`` gives the latest checkpoint as put (its ``checkpoint_id`` set); older ones
    (``list``, ``get(thread_id, checkpoint_id=...)``) are rebuilt from the log, equal to
    what was put and holding the same message objects.

    A lock guards the map, so runs on any threads of any event loops may share one saver;
    each operation is short and never waits, so taking the lock on the loop is fine.
    Threads are owned by one run at a time among the runs sharing this saver (``claim``);
    a claim never lapses, so there is no stale owner to fence. Every method checks the
    thread id first (``check_thread_id``).
    """

    _threads: dict[str, _Thread] = attrs.field(factory=dict, init=False)
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
            latest = [t.latest for t in self._threads.values() if t.latest is not None]
        return _page(map(_info, latest), status, after, limit)

    async def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The latest checkpoint of ``thread_id``, or the one named ``checkpoint_id`` (an
        id ``list`` gave); ``None`` when there is none."""
        check_thread_id(thread_id)
        await anyio.lowlevel.checkpoint()
        with self._lock:
            stored = self._threads.get(thread_id)
            if stored is None:
                return None
            if checkpoint_id is None:
                return stored.latest
            seq = seq_of(checkpoint_id)
            return None if seq is None else stored.at(seq)

    async def put(self, thread_id: str, checkpoint: Checkpoint) -> None:
        """Store ``checkpoint`` as the latest of ``thread_id``: its new messages appended
        to the thread's log, a record of what changed.

        Raised by ``put``: ``ValueError`` when ``checkpoint.thread_id`` is another thread,
        or ``thread_id`` breaks the rule of ``check_thread_id``; ``ThreadBusy`` when
        another run than ``checkpoint.run_id`` owns the thread (nothing is stored).
        """
        _check_thread(thread_id, checkpoint)
        await anyio.lowlevel.checkpoint()
        with self._leases.writing(thread_id, checkpoint.run_id), self._lock:
            stored = self._threads.get(thread_id) or _Thread(thread_id)
            delta = encode(stored.head, checkpoint, _CODEC)
            stored.records.append(delta.record)
            stored.messages.update(((e.segment, e.position), e.message) for e in delta.entries)
            stored.head.apply(delta)
            stored.latest = attrs.evolve(checkpoint, checkpoint_id=str(delta.record.seq))
            self._threads[thread_id] = stored

    async def delete(self, thread_id: str) -> None:
        """Forget ``thread_id`` (``ThreadHasForks``, and nothing deleted, while threads
        forked from it remain)."""
        check_thread_id(thread_id)
        await anyio.lowlevel.checkpoint()
        with self._lock:
            stored = self._threads.get(thread_id)
            forks = sorted(
                name
                for name, t in self._threads.items()
                if stored is not None and t.origin is not None and t.origin.parent is stored
            )
            if forks:
                raise ThreadHasForks(thread_id, forks)
            self._threads.pop(thread_id, None)

    async def _make_fork(
        self, thread_id: str, checkpoint_id: str, new_thread_id: str
    ) -> Checkpoint:
        await anyio.lowlevel.checkpoint()
        with self._lock:
            if new_thread_id in self._threads:
                raise ValueError(taken(new_thread_id))
            stored = self._threads.get(thread_id)
            seq = seq_of(checkpoint_id)
            made = None if stored is None or seq is None else stored.fork(seq, new_thread_id)
            if made is None:
                raise ValueError(
                    f"checkpoint_id {checkpoint_id!r} names no checkpoint of thread "
                    f"{thread_id!r} (the ids of saver.list or saver.history)"
                )
            self._threads[new_thread_id] = made
            assert made.latest is not None
            return made.latest

    async def list(self, thread_id: str) -> builtins.list[Checkpoint]:
        """Every checkpoint of ``thread_id``, oldest first (a new list)."""
        check_thread_id(thread_id)
        await anyio.lowlevel.checkpoint()
        with self._lock:
            stored = self._threads.get(thread_id)
            return [] if stored is None else stored.every()

    async def statistics(self, thread_id: str | None = None) -> SaverStatistics:
        """What this saver holds (for ``thread_id``, or all); ``stored_bytes`` is the
        text the same records would take in ``SqliteSaver`` (a value only this saver
        keeps counts the length of its ``repr``)."""
        if thread_id is not None:
            check_thread_id(thread_id)
        await anyio.lowlevel.checkpoint()
        with self._lock:
            chosen = [t for name, t in self._threads.items() if thread_id in (None, name)]
            texts = [t.as_text() for t in chosen]
            return SaverStatistics(
                len(chosen),
                sum(len(t.records) for t in chosen),
                sum(len(t.messages) for t in chosen),
                sum(blobs for _, blobs in texts),
                sum(size for size, _ in texts),
            )

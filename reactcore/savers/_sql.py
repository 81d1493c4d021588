"""What ``SqliteSaver`` and ``PostgresSaver`` share: the tables of the layout, the
statements (written once, with the dialects' differences filled in), the rows one
checkpoint adds, forks, and the upgrade of a layout of whole checkpoints; reading a
thread back is ``_sql_rows``.

Tables (``<schema>.`` in front, in PostgreSQL)::

    checkpoints (thread_id, seq, step, run_id, created_at, snapshot, body)  -- a record each
    segments    (thread_id, segment, parent, base)                          -- the log's runs
    messages    (thread_id, segment, position, body)                        -- the log
    blobs       (thread_id, hash, body)                                     -- large texts
    threads     (thread_id, status, run_id, step, updated_at, stamp)        -- for threads()
    forks       (thread_id, parent, seq, segment)                           -- a fork's origin

A fork (``saver.fork``) has a ``forks`` row naming its parent thread, the record ``seq``
it starts after and the last ``segment`` of the parent's log it may read: reading it
reads the parent's records up to ``seq`` and segments up to ``segment`` (and so on up
its parent's own origin), then its own rows, which hold only what it added.

The latest checkpoint of a thread is its record of highest ``seq``, read through the
primary key ``(thread_id, seq)`` and a partial index on its snapshots.
"""

from __future__ import annotations

import builtins
import json
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Literal, Protocol, TypeVar

import anyio.to_thread
import attrs

from .._config import check_thread_id
from .._exceptions import ThreadBusy, ThreadHasForks
from ._codec import message_text, record_text
from ._document import load_checkpoint
from ._forks import ForkingMethods, taken
from ._log import Delta, Head, encode, latest_of, seq_of
from ._protocol import Checkpoint, SaverStatistics, ThreadInfo, ThreadStatus, _info, _page
from ._sql_rows import CODEC, Fetch, Rows, every, fetch_rows, latest, stamp_of

_TABLES: tuple[str, ...] = (
    "ALTER TABLE {s}threads ADD COLUMN stamp text",
    """CREATE TABLE {s}checkpoints (
        thread_id text {collate} NOT NULL,
        seq integer NOT NULL,
        step integer NOT NULL,
        run_id text NOT NULL,
        created_at {real} NOT NULL,
        snapshot boolean NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (thread_id, seq))""",
    "CREATE INDEX checkpoints_snapshots ON {s}checkpoints (thread_id, seq) WHERE snapshot",
    """CREATE TABLE {s}segments (
        thread_id text {collate} NOT NULL,
        segment integer NOT NULL,
        parent integer,
        base integer NOT NULL,
        PRIMARY KEY (thread_id, segment))""",
    """CREATE TABLE {s}messages (
        thread_id text {collate} NOT NULL,
        segment integer NOT NULL,
        position integer NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (thread_id, segment, position))""",
    """CREATE TABLE {s}blobs (
        thread_id text {collate} NOT NULL,
        hash text NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (thread_id, hash))""",
)
"""The tables of the layout of message logs (created by the upgrade to it), and the
thread's ``stamp``: a random version, new at every write."""

_FORK_TABLES: tuple[str, ...] = (
    """CREATE TABLE {s}forks (
        thread_id text {collate} NOT NULL PRIMARY KEY,
        parent text {collate} NOT NULL,
        seq integer NOT NULL,
        segment integer NOT NULL)""",
    "CREATE INDEX forks_parent ON {s}forks (parent, thread_id)",
)
"""The table of forks (created by the upgrade that brought forks)."""

_RECORDS = "SELECT seq, snapshot, body FROM {s}checkpoints WHERE thread_id = :thread"
_FROM_SNAPSHOT = (
    " AND seq >= (SELECT seq FROM {s}checkpoints WHERE thread_id = :thread AND snapshot"
    "{upto} ORDER BY seq DESC LIMIT 1){upto} ORDER BY seq"
)

STATEMENTS: dict[str, str] = {
    # reading
    "latest": _RECORDS + _FROM_SNAPSHOT.replace("{upto}", ""),
    "upto": _RECORDS + _FROM_SNAPSHOT.replace("{upto}", " AND seq <= :seq"),
    "records": _RECORDS + " ORDER BY seq",
    "segments": "SELECT segment, parent, base FROM {s}segments WHERE thread_id = :thread",
    "messages": "SELECT segment, position, body FROM {s}messages"
    " WHERE thread_id = :thread AND segment {in:segments}",
    "blobs": "SELECT hash, body FROM {s}blobs WHERE thread_id = :thread AND hash {in:hashes}",
    "range": _RECORDS + " AND seq > :after AND seq <= :upto ORDER BY seq",
    "last_seq": "SELECT max(seq) FROM {s}checkpoints WHERE thread_id = :thread",
    "fork_of": "SELECT parent, seq, segment FROM {s}forks WHERE thread_id = :thread",
    "forks_of": "SELECT thread_id FROM {s}forks WHERE parent = :thread ORDER BY thread_id",
    # (PostgreSQL: the parent's row locked against a ``delete`` until the fork is stored)
    "lock_parent": "SELECT 1 FROM {s}threads WHERE thread_id = :thread",
    "stamp": "SELECT stamp FROM {s}threads WHERE thread_id = :thread",
    "threads": "SELECT thread_id, status, run_id, step, updated_at FROM {s}threads"
    " WHERE (CAST(:status AS text) IS NULL OR status = :status)"
    " AND (CAST(:after AS text) IS NULL OR thread_id > :after)"
    " ORDER BY thread_id LIMIT :limit",
    # writing (the rows of one checkpoint; PostgreSQL writes them in one statement)
    "insert_blob": "INSERT INTO {s}blobs (thread_id, hash, body) VALUES (:thread, :hash, :body)"
    " ON CONFLICT DO NOTHING",
    "insert_segment": "INSERT INTO {s}segments (thread_id, segment, parent, base)"
    " VALUES (:thread, :segment, :parent, :base)",
    "insert_message": "INSERT INTO {s}messages (thread_id, segment, position, body)"
    " VALUES (:thread, :segment, :position, :body)",
    "insert_checkpoint": "INSERT INTO {s}checkpoints"
    " (thread_id, seq, step, run_id, created_at, snapshot, body)"
    " VALUES (:thread, :seq, :step, :run, :at, :snapshot, :body)",
    "insert_fork": "INSERT INTO {s}forks (thread_id, parent, seq, segment)"
    " VALUES (:thread, :parent, :seq, :segment) ON CONFLICT DO NOTHING RETURNING thread_id",
    "insert_thread": "INSERT INTO {s}threads (thread_id, status, run_id, step, updated_at, stamp)"
    " VALUES (:thread, :status, :run, :step, :at, :stamp) ON CONFLICT DO NOTHING"
    " RETURNING thread_id",
    "upsert_thread": "INSERT INTO {s}threads (thread_id, status, run_id, step, updated_at, stamp)"
    " VALUES (:thread, :status, :run, :step, :at, :stamp)"
    " ON CONFLICT (thread_id) DO UPDATE SET status = excluded.status, run_id = excluded.run_id,"
    " step = excluded.step, updated_at = excluded.updated_at, stamp = excluded.stamp",
    # the whole store, or one thread
    **{
        f"count_{table}": f"SELECT count(*), coalesce(sum(length(body)), 0) FROM {{s}}{table}"
        " WHERE CAST(:thread AS text) IS NULL OR thread_id = :thread"
        for table in ("checkpoints", "messages", "blobs")
    },
    "count_threads": "SELECT count(*) FROM {s}threads"
    " WHERE CAST(:thread AS text) IS NULL OR thread_id = :thread",
    **{
        f"delete_{table}": f"DELETE FROM {{s}}{table} WHERE thread_id = :thread"
        for table in ("checkpoints", "segments", "messages", "blobs", "threads", "forks")
    },
}

CHECK_FORKS = "forks_of"
"""In ``delete``'s statements: refuse to delete a thread that has forks."""

FORGET = (
    CHECK_FORKS,
    *(f"delete_{t}" for t in ("checkpoints", "segments", "messages", "blobs", "threads", "forks")),
)
"""The statements ``delete`` runs, in one transaction (SQLite's: it holds the write lock
from its first statement, so no write comes between them, nor a fork)."""


@attrs.frozen
class Dialect:
    """What differs between SQLite and PostgreSQL in ``STATEMENTS`` and ``_TABLES``."""

    name: Literal["sqlite", "postgres"]
    prefix: str  # the schema of the tables, with its dot ("" in SQLite)

    def sql(self, statement: str) -> str:
        """``statement`` in this dialect: tables in the schema, parameters in the
        driver's style (``:name`` in sqlite3, ``%(name)s`` in psycopg), lists of values
        as one parameter each."""
        lists = r"IN (SELECT value FROM json_each(:\1))" if self.name == "sqlite" else r"= ANY(:\1)"
        text = re.sub(r"\{in:(\w+)\}", lists, statement).format(
            s=self.prefix,
            collate='COLLATE "C"' if self.name == "postgres" else "",
            real="double precision" if self.name == "postgres" else "REAL",
        )
        if self.name == "sqlite":
            return text
        return re.sub(r"(?<![:\w]):(\w+)", r"%(\1)s", text)

    def values(self, items: Sequence[Any]) -> Any:
        """A list of values as one parameter (``{in:name}``)."""
        return json.dumps(list(items)) if self.name == "sqlite" else list(items)

    def statements(self) -> dict[str, str]:
        return {name: self.sql(text) for name, text in STATEMENTS.items()}

    def tables(self) -> builtins.list[str]:
        return [self.sql(text) for text in _TABLES]

    def fork_tables(self) -> builtins.list[str]:
        return [self.sql(text) for text in _FORK_TABLES]


# --- writing a checkpoint ---------------------------------------------------------------


@attrs.frozen
class Write:
    """The rows storing one checkpoint (as parameters of ``STATEMENTS``), and its delta."""

    delta: Delta
    expected: str | None  # the thread's stamp the writer knows
    checkpoint: dict[str, Any]
    segments: tuple[dict[str, Any], ...]
    messages: tuple[dict[str, Any], ...]
    blobs: tuple[dict[str, Any], ...]
    thread: dict[str, Any]


def write(head: Head, checkpoint: Checkpoint) -> Write:
    """The rows of ``checkpoint`` after ``head`` (``TypeError`` when it holds what a
    checkpoint cannot keep, before anything is written)."""
    delta = encode(head, checkpoint, CODEC)
    thread = checkpoint.thread_id
    blobs: dict[str, str] = {}
    messages = tuple(
        {
            "thread": thread,
            "segment": e.segment,
            "position": e.position,
            "body": message_text(e.stored, blobs),
        }
        for e in delta.entries
    )
    segments = tuple(
        {"thread": thread, "segment": s.id, "parent": s.parent, "base": s.base}
        for s in delta.segments
    )
    info = _info(checkpoint)
    record = delta.record
    return Write(
        delta,
        head.stamp,
        {
            "thread": thread,
            "seq": record.seq,
            "step": checkpoint.step,
            "run": checkpoint.run_id,
            "at": checkpoint.created_at,
            "snapshot": record.snapshot,
            "body": record_text(record),
        },
        segments,
        messages,
        tuple({"thread": thread, "hash": h, "body": b} for h, b in blobs.items()),
        {
            "thread": thread,
            "status": info.status,
            "run": info.run_id,
            "step": info.step,
            "at": info.updated_at,
            "stamp": uuid.uuid4().hex,
        },
    )


def execute_write(run: Callable[[str, Sequence[Mapping[str, Any]]], None], rows: Write) -> None:
    """Store ``rows`` statement by statement (``run(name, parameter sets)``), in the
    caller's transaction."""
    run("insert_blob", rows.blobs)
    run("insert_segment", rows.segments)
    run("insert_message", rows.messages)
    run("insert_checkpoint", [rows.checkpoint])
    run("upsert_thread", [rows.thread])


def statistics(fetch: Fetch, thread_id: str | None) -> SaverStatistics:
    """What the tables hold (for ``thread_id``, or all)."""
    params = {"thread": thread_id}
    [(threads,)] = fetch("count_threads", params)
    counts = {t: fetch(f"count_{t}", params)[0] for t in ("checkpoints", "messages", "blobs")}
    return SaverStatistics(
        int(threads),
        int(counts["checkpoints"][0]),
        int(counts["messages"][0]),
        int(counts["blobs"][0]),
        sum(int(size) for _, size in counts.values()),
    )


# --- upgrading a layout of whole checkpoints --------------------------------------------


def convert(
    fetch: Fetch, run: Callable[[str, Sequence[Mapping[str, Any]]], None], old: str
) -> None:
    """Store every checkpoint of the table ``old`` (one row per checkpoint, its
    ``dump_checkpoint`` JSON in ``body``, in ``id`` order) in the layout of message
    logs, thread by thread, in order: each loads back exactly as it was."""
    for (thread_id,) in fetch(f"threads_in:{old}", {}):
        head = Head()
        for (body,) in fetch(f"bodies_in:{old}", {"thread": thread_id}):
            rows = write(head, load_checkpoint(body))
            execute_write(run, rows)
            head.apply(rows.delta, rows.thread["stamp"])


def old_table_statements(old: str) -> dict[str, str]:
    """The statements ``convert`` reads the table ``old`` with."""
    return {
        f"threads_in:{old}": f"SELECT DISTINCT thread_id FROM {{s}}{old} ORDER BY thread_id",
        f"bodies_in:{old}": f"SELECT body FROM {{s}}{old} WHERE thread_id = :thread ORDER BY id",
    }


# --- the savers' operations, over a connection of either dialect -------------------------

_T = TypeVar("_T")

HEADS_KEPT = 256
"""How many threads' heads a saver keeps (those written or read last)."""

WRITE_ATTEMPTS = 3
"""How many times ``put`` reads the thread again when another writer moved it on."""


class Connection(Protocol):
    """A connection inside a transaction, running ``STATEMENTS`` by name."""

    def fetch(self, name: str, params: Mapping[str, Any]) -> Sequence[Sequence[Any]]: ...

    def run(self, name: str, param_sets: Sequence[Mapping[str, Any]]) -> None: ...


Transact = Callable[[Callable[[Connection], _T], bool], _T]
"""Runs ``work(connection)`` in one transaction (``True``: one that writes), blocking."""


@attrs.define(eq=False)
class Tables:
    """The operations of a saver on the tables of the layout, in either dialect: blocking
    calls (for a worker thread), each in one transaction of ``transact``; JSON is decoded
    outside it.

    The writer's ``Head`` of each thread (what the latest checkpoint holds) is kept while
    a run of this saver claims the thread, and for the last ``HEADS_KEPT`` other threads
    read or written, so that ``put`` stores only what the step added. Another writer (a
    process sharing the file or database) may have moved the thread on since: every
    write checks, in its transaction, that the thread's last record is still the head's,
    and otherwise reads the thread again and retries.
    """

    dialect: Dialect
    transact: Transact[Any]
    forget: tuple[str, ...] = FORGET  # the statements of ``delete``, in one transaction
    _heads: OrderedDict[str, Head] = attrs.field(factory=OrderedDict, init=False)
    _claimed: dict[str, int] = attrs.field(factory=dict, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    @asynccontextmanager
    async def claimed(
        self, thread_id: str, claim: AbstractAsyncContextManager[_T]
    ) -> AsyncIterator[_T]:
        """``claim`` of ``thread_id``, during which the thread's head is kept whatever
        the number of threads (its run writes to it); afterwards it is one of the last
        ``HEADS_KEPT`` threads used, kept for the thread's next run."""
        async with claim as value:
            with self._lock:
                self._claimed[thread_id] = self._claimed.get(thread_id, 0) + 1
            try:
                yield value
            finally:
                with self._lock:
                    self._claimed[thread_id] -= 1
                    if not self._claimed[thread_id]:
                        del self._claimed[thread_id]

    def _rows(self, thread_id: str, which: str, seq: int | None = None) -> Rows | None:
        def read(conn: Connection) -> Rows | None:
            return fetch_rows(conn.fetch, self.dialect, thread_id, which, seq)

        rows: Rows | None = self.transact(read, False)
        return rows

    def take_head(self, thread_id: str) -> Head:
        """The head of ``thread_id``, taken out (a concurrent ``put`` on the thread reads
        its own); read from the tables when not kept."""
        with self._lock:
            head = self._heads.pop(thread_id, None)
        if head is not None:
            return head
        rows = self._rows(thread_id, "latest")
        return Head() if rows is None else latest(thread_id, rows)[1]

    def keep_head(self, thread_id: str, head: Head) -> None:
        with self._lock:
            self._heads[thread_id] = head
            self._heads.move_to_end(thread_id)
            extra = len(self._heads) - len(self._claimed) - HEADS_KEPT
            if extra > 0:
                unclaimed = [t for t in self._heads if t not in self._claimed][:extra]
                for name in unclaimed:
                    del self._heads[name]

    def forget_head(self, thread_id: str) -> None:
        with self._lock:
            self._heads.pop(thread_id, None)

    def get(self, thread_id: str, checkpoint_id: str | None) -> Checkpoint | None:
        if checkpoint_id is not None:
            seq = seq_of(checkpoint_id)
            rows = None if seq is None else self._rows(thread_id, "upto", seq)
            if rows is None or rows.records[-1].seq != seq:
                return None
            return latest(thread_id, rows)[0]

        def read(conn: Connection) -> Checkpoint | Rows | None:
            stamp = stamp_of(conn.fetch, thread_id)
            with self._lock:  # (a ``put`` takes the head out under the lock to change it)
                head = self._heads.get(thread_id)
                if head is not None and head.record is not None and head.stamp == stamp:
                    self._heads.move_to_end(thread_id)
                    return latest_of(thread_id, head, CODEC)  # nobody wrote it since
            return fetch_rows(conn.fetch, self.dialect, thread_id, "latest")

        rows = self.transact(read, False)
        if isinstance(rows, Checkpoint):
            return rows
        if rows is None:
            self.keep_head(thread_id, Head())
            return None
        checkpoint, head = latest(thread_id, rows)
        self.keep_head(thread_id, head)  # a run resuming the thread writes next
        return checkpoint

    def put(self, thread_id: str, checkpoint: Checkpoint, store: Callable[[Write], bool]) -> None:
        """Store ``checkpoint`` through ``store`` (which writes the rows, in one
        transaction, when the thread's last record is still the head's, and says
        whether it did)."""
        for _ in range(WRITE_ATTEMPTS):
            head = self.take_head(thread_id)
            rows = write(head, checkpoint)
            if store(rows):
                head.apply(rows.delta, rows.thread["stamp"])
                self.keep_head(thread_id, head)
                return
        raise ThreadBusy(thread_id, "another writer, which kept storing checkpoints meanwhile")

    def store(self, conn: Connection, rows: Write) -> bool:
        """Write ``rows`` unless another writer wrote the thread since its writer read it
        (its stamp changed; the caller's transaction must hold the write lock)."""
        if stamp_of(conn.fetch, rows.checkpoint["thread"]) != rows.expected:
            return False
        execute_write(conn.run, rows)
        return True

    def list(self, thread_id: str) -> builtins.list[Checkpoint]:
        rows = self._rows(thread_id, "records")
        return [] if rows is None else builtins.list(every(thread_id, rows))

    def delete(self, thread_id: str) -> None:
        """Forget ``thread_id``: the statements of ``forget``, in one transaction."""
        params = [{"thread": thread_id}]

        def forget(conn: Connection) -> None:
            for name in self.forget:
                if name != CHECK_FORKS:
                    conn.run(name, params)
                elif forks := conn.fetch(name, params[0]):
                    raise ThreadHasForks(thread_id, [str(row[0]) for row in forks])

        self.forget_head(thread_id)
        self.transact(forget, True)

    def fork(self, thread_id: str, checkpoint_id: str, new_thread_id: str) -> Checkpoint:
        """Make ``new_thread_id`` a fork of ``thread_id`` at ``checkpoint_id``: its
        ``forks`` row and its ``threads`` row, in one transaction; its checkpoint.

        A fork taken at or before where its parent itself forked is a fork of the
        parent's parent (and so on): a thread depends only on the threads it needs.
        In PostgreSQL, the parent's row is locked (``FOR SHARE``) first, so a ``delete``
        of it either comes before (the fork finds no checkpoint) or after (and finds the
        fork). Raised: ``ValueError`` when ``new_thread_id`` holds a thread already, or
        ``checkpoint_id`` names no checkpoint of ``thread_id``."""
        seq = seq_of(checkpoint_id)

        def create(conn: Connection) -> Checkpoint:
            new = {"thread": new_thread_id}
            exists = conn.fetch("stamp", new) or conn.fetch("fork_of", new)
            if exists or conn.fetch("last_seq", new)[0][0] is not None:
                raise ValueError(taken(new_thread_id))
            parent = thread_id
            conn.fetch("lock_parent", {"thread": parent})
            while seq is not None and (origin := conn.fetch("fork_of", {"thread": parent})):
                if seq > int(origin[0][1]):
                    break
                parent = str(origin[0][0])
                conn.fetch("lock_parent", {"thread": parent})
            rows = fetch_rows(conn.fetch, self.dialect, parent, "upto", seq) if seq else None
            if rows is None:
                raise ValueError(
                    f"checkpoint_id {checkpoint_id!r} names no checkpoint of thread "
                    f"{thread_id!r} (the ids of saver.list or saver.history)"
                )
            checkpoint = attrs.evolve(latest(parent, rows)[0], thread_id=new_thread_id)
            info = _info(checkpoint)
            fork = {"thread": new_thread_id, "parent": parent, "seq": seq}
            thread = {
                "thread": new_thread_id,
                "status": info.status,
                "run": info.run_id,
                "step": info.step,
                "at": info.updated_at,
                "stamp": uuid.uuid4().hex,
            }
            segment = max(rows.segments, default=0)
            if not conn.fetch("insert_fork", {**fork, "segment": segment}) or not conn.fetch(
                "insert_thread", thread
            ):
                raise ValueError(taken(new_thread_id))  # (made meanwhile, in PostgreSQL)
            return checkpoint

        self.forget_head(new_thread_id)
        made: Checkpoint = self.transact(create, True)
        return made

    def threads(
        self, status: ThreadStatus | None, after: str | None, limit: int
    ) -> builtins.list[ThreadInfo]:
        _page((), status, after, limit)  # checks limit and after
        params = {"status": status, "after": after, "limit": limit}
        rows = self.transact(lambda conn: conn.fetch("threads", params), False)
        return [ThreadInfo(*row) for row in rows]

    def statistics(self, thread_id: str | None) -> SaverStatistics:
        counted: SaverStatistics = self.transact(
            lambda conn: statistics(conn.fetch, thread_id), False
        )
        return counted


class TableSaver(ForkingMethods):
    """The methods of ``SqliteSaver`` and ``PostgresSaver`` that only read or forget
    (each a call of their ``Tables`` in a worker thread); writing (``put``) and claiming
    are each saver's own. Raised by every method: ``ValueError`` when a thread id breaks
    the rule of ``check_thread_id`` (before any I/O)."""

    _tables: Tables

    async def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The latest checkpoint of ``thread_id``, or the one named ``checkpoint_id`` (an
        id ``list`` gave); ``None`` when there is none."""
        check_thread_id(thread_id)
        return await anyio.to_thread.run_sync(self._tables.get, thread_id, checkpoint_id)

    async def list(self, thread_id: str) -> builtins.list[Checkpoint]:
        """Every checkpoint of ``thread_id``, oldest first."""
        check_thread_id(thread_id)
        return await anyio.to_thread.run_sync(self._tables.list, thread_id)

    async def delete(self, thread_id: str) -> None:
        """Forget ``thread_id`` (``ThreadHasForks``, and nothing deleted, while threads
        forked from it remain)."""
        check_thread_id(thread_id)
        await anyio.to_thread.run_sync(self._tables.delete, thread_id)

    async def _make_fork(
        self, thread_id: str, checkpoint_id: str, new_thread_id: str
    ) -> Checkpoint:
        return await anyio.to_thread.run_sync(
            self._tables.fork, thread_id, checkpoint_id, new_thread_id
        )

    async def threads(
        self,
        *,
        status: ThreadStatus | None = "unfinished",
        after: str | None = None,
        limit: int = 100,
    ) -> builtins.list[ThreadInfo]:
        """A page of threads with ``status`` (see ``LeasingSaver.threads``)."""
        return await anyio.to_thread.run_sync(self._tables.threads, status, after, limit)

    async def statistics(self, thread_id: str | None = None) -> SaverStatistics:
        """What the saver holds (for ``thread_id``, or all): ``stored_bytes`` counts the
        text of every row."""
        if thread_id is not None:
            check_thread_id(thread_id)
        return await anyio.to_thread.run_sync(self._tables.statistics, thread_id)

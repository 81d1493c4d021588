"""``PostgresSaver``: checkpoints in PostgreSQL, shared by every replica of a service,
with run ownership (a lease per thread) and cancel requests across replicas.

Install the extra: ``pip install 'reactcore[postgres]'`` (psycopg 3 and psycopg-pool);
this is the only module that imports them, and ``import reactcore`` does not import it.

**Driver: sync psycopg 3 in anyio worker threads, over a ``psycopg_pool.ConnectionPool``.**
Measured here: psycopg's ``AsyncConnection`` and asyncpg both fail under trio (they need
an asyncio loop); sync psycopg in worker threads works on asyncio and trio alike, the
same pattern as ``SqliteSaver``. An operation takes a connection from the pool for one
transaction and gives it back, so a live run holds no connection between operations:
any number of runs share a small pool, and a cancelled run never keeps one.

**Documents.** A checkpoint is stored as the same ``dump_checkpoint`` JSON text as in
``SqliteSaver`` (one row per checkpoint, in ``body``), so a checkpoint moves between the
two as is. A row per thread keeps its latest status, written in the same transaction as
the checkpoint (``threads()`` reads it).

**Ownership.** A run leases its thread: a row in ``leases`` with an expiry
``lease_ttl`` seconds ahead (the server's clock), renewed every ``heartbeat`` seconds
while the run lives. A lease whose holder died (or stalled) lapses after ``lease_ttl``;
the thread can then be claimed elsewhere. Claiming is one ``INSERT … ON CONFLICT DO
UPDATE … WHERE expired``: of two replicas racing, exactly one gets the row.

**Fencing.** Every claim takes a new token from a sequence (``leases.token``: it only
grows, per thread and overall, so a token is never reused, even after ``delete``). The
saver keeps the token of each claim it holds, per (thread, owner), and every write of
the claim carries it and is applied only while it is still the thread's token, in the
same statement (compare-and-set, the lease row locked ``FOR SHARE`` against a concurrent
takeover): ``put`` of the owner's checkpoints (checkpoint row and thread status),
renewals, the release. A replica that stalled past its lease (a GC pause, a frozen VM, a
partition) while another took the thread over, finished it and released it, writes
nothing when it wakes: its ``put`` raises ``LeaseLost`` (a ``ThreadBusy``), its next
renewal finds the lease lost, and its run ends with ``LeaseLost``. A ``put`` outside any
claim of this saver (a script seeding threads) has no token: it is refused with
``ThreadBusy`` while another live run leases the thread.

**Thread ids** follow the rule of every saver (``check_thread_id``: non-empty, valid
Unicode without NUL, at most ``THREAD_ID_MAX_BYTES`` = 1024 bytes in UTF-8): a
``ValueError`` before any I/O, never a driver error.

**Connections that die.** The pool this saver makes checks each connection as it is
taken out (``ConnectionPool.check_connection``: one empty query), so connections the
server terminated (``pg_terminate_backend``, a restart) are replaced, not used. A
statement whose connection is lost anyway is retried once on a fresh connection (every
statement is idempotent, or made so for the retry: a retried ``put`` skips a checkpoint
the first attempt stored). When the server cannot be reached (no connection within
``connect_timeout`` seconds, or lost again on the retry) the operation raises
``SaverUnavailable``, naming the server and the reason.

**Cancel.** ``request_cancel`` (``agent.cancel_thread``) marks the live lease; its run
sees the mark at its next renewal, within ``heartbeat`` seconds.

**Layout versions.** The tables live in the schema ``schema`` (default ``reactcore``),
with their layout version in ``<schema>.meta``; migrations run once, under an advisory
lock, when the first operation finds an older version (a newer one is refused).
"""

from __future__ import annotations

import builtins
import math
import os
import re
import socket
import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, LiteralString, TypeVar

import anyio
import anyio.to_thread
import attrs
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from . import _validate as valid
from ._checkpoint import (
    Checkpoint,
    Lease,
    Renewal,
    ThreadInfo,
    ThreadStatus,
    _check_thread,
    _page,
    check_thread_id,
    dump_checkpoint,
    hold_lease,
    load_checkpoint,
    thread_status,
)
from ._exceptions import LeaseLost, SaverUnavailable, ThreadBusy
from ._logging import get_logger

__all__ = ["POSTGRES_SCHEMA", "PostgresSaver"]

_T = TypeVar("_T")

_MIGRATIONS: tuple[tuple[LiteralString, ...], ...] = (
    (
        """CREATE TABLE {s}.checkpoints (
            id bigserial PRIMARY KEY,
            thread_id text COLLATE "C" NOT NULL,
            step integer NOT NULL,
            run_id text NOT NULL,
            created_at double precision NOT NULL,
            body text NOT NULL)""",
        "CREATE INDEX checkpoints_thread_id ON {s}.checkpoints (thread_id, id)",
        """CREATE TABLE {s}.threads (
            thread_id text COLLATE "C" PRIMARY KEY,
            status text NOT NULL,
            run_id text NOT NULL,
            step integer NOT NULL,
            updated_at double precision NOT NULL)""",
        "CREATE INDEX threads_status ON {s}.threads (status, thread_id)",
        """CREATE TABLE {s}.leases (
            thread_id text COLLATE "C" PRIMARY KEY,
            owner text NOT NULL,
            holder text NOT NULL,
            expires_at timestamptz NOT NULL,
            cancel_requested boolean NOT NULL DEFAULT false)""",
    ),
    # Version 2: the fencing token of each claim (a sequence: never reused).
    ("ALTER TABLE {s}.leases ADD COLUMN token bigserial",),
)
"""``_MIGRATIONS[n]``: the statements bringing the layout from version ``n`` to ``n + 1``."""

POSTGRES_SCHEMA = len(_MIGRATIONS)
"""The version of the PostgreSQL layout (in ``<schema>.meta``); 0 is a new schema."""

# (Pieces of ``_PUT``, inserted as they are: their ``{s}`` is the schema.)
_MINE: LiteralString = (
    "SELECT FROM {s}.leases WHERE thread_id = %(thread)s AND token = %(token)s FOR SHARE"
)
_FREE: LiteralString = (
    "SELECT WHERE NOT EXISTS (SELECT FROM {s}.leases WHERE thread_id = %(thread)s"
    " AND owner <> %(run)s AND expires_at > clock_timestamp())"
)
_NOT_STORED: LiteralString = (
    " AND NOT EXISTS (SELECT FROM {s}.checkpoints WHERE thread_id = %(thread)s"
    " AND run_id = %(run)s AND step = %(step)s)"
)
_PUT: LiteralString = (
    "WITH ok AS ({mine}),"
    " checkpoint AS (INSERT INTO {{s}}.checkpoints (thread_id, step, run_id, created_at, body)"
    " SELECT %(thread)s, %(step)s, %(run)s, %(at)s, %(body)s WHERE EXISTS (SELECT FROM ok)"
    "{again}),"
    " thread AS (INSERT INTO {{s}}.threads (thread_id, status, run_id, step, updated_at)"
    " SELECT %(thread)s, %(status)s, %(run)s, %(step)s, %(at)s WHERE EXISTS (SELECT FROM ok)"
    " ON CONFLICT (thread_id) DO UPDATE SET status = excluded.status,"
    " run_id = excluded.run_id, step = excluded.step, updated_at = excluded.updated_at)"
    " SELECT EXISTS (SELECT FROM ok), (SELECT holder FROM {{s}}.leases"
    " WHERE thread_id = %(thread)s AND expires_at > clock_timestamp())"
)

_STATEMENTS: dict[str, LiteralString] = {
    "meta": "CREATE TABLE IF NOT EXISTS {s}.meta (version integer NOT NULL)",
    "version": "SELECT version FROM {s}.meta",
    "insert_version": "INSERT INTO {s}.meta (version) VALUES (%s)",
    "set_version": "UPDATE {s}.meta SET version = %s",
    # One statement (one round trip, atomic) each: the checkpoint and the thread's status,
    # written only if the writer's claim still holds (its token is the thread's, the
    # lease row locked against a takeover meanwhile); then whether it did, and the holder.
    "put": _PUT.format(mine=_MINE, again=""),
    "put_again": _PUT.format(mine=_MINE, again=_NOT_STORED),
    # A put outside any claim: unless another live run leases the thread.
    "put_unclaimed": _PUT.format(mine=_FREE, again=""),
    "put_unclaimed_again": _PUT.format(mine=_FREE, again=_NOT_STORED),
    "latest": "SELECT body FROM {s}.checkpoints WHERE thread_id = %s ORDER BY id DESC LIMIT 1",
    "all": "SELECT body FROM {s}.checkpoints WHERE thread_id = %s ORDER BY id",
    "delete_checkpoints": "DELETE FROM {s}.checkpoints WHERE thread_id = %s",
    "delete_thread": "DELETE FROM {s}.threads WHERE thread_id = %s",
    "threads": "SELECT thread_id, status, run_id, step, updated_at FROM {s}.threads"
    " WHERE (%(status)s::text IS NULL OR status = %(status)s)"
    " AND (%(after)s::text IS NULL OR thread_id > %(after)s)"
    " ORDER BY thread_id LIMIT %(limit)s",
    "acquire": "INSERT INTO {s}.leases AS l (thread_id, owner, holder, expires_at)"
    " VALUES (%(thread)s, %(owner)s, %(holder)s,"
    " clock_timestamp() + %(ttl)s * interval '1 second')"
    " ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, holder = excluded.holder,"
    " expires_at = excluded.expires_at, cancel_requested = false, token = excluded.token"
    # (The same owner again: a retry of an acquisition whose answer was lost.)
    " WHERE l.expires_at < clock_timestamp() OR l.owner = excluded.owner RETURNING token",
    "holder": "SELECT holder FROM {s}.leases WHERE thread_id = %s",
    "renew": "UPDATE {s}.leases SET expires_at = clock_timestamp() + %s * interval '1 second'"
    " WHERE thread_id = %s AND token = %s RETURNING cancel_requested",
    "release": "DELETE FROM {s}.leases WHERE thread_id = %s AND token = %s",
    "cancel": "UPDATE {s}.leases SET cancel_requested = true"
    " WHERE thread_id = %s AND expires_at > clock_timestamp()",
}

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


_check_schema = valid.satisfies(
    "a str",
    str,
    limits=[
        (
            lambda v: _IDENTIFIER.fullmatch(v) is not None,
            "must be a plain SQL identifier (letters, digits, _)",
        )
    ],
)
_positive = valid.number(positive=True)


_log = get_logger(component="postgres")


class _ConnectionLost(Exception):
    """The connection of an operation broke (``error``): worth one retry elsewhere."""

    def __init__(self, error: psycopg.OperationalError) -> None:
        super().__init__(str(error))
        self.error = error


def _connect_args(pool: ConnectionPool) -> tuple[str, dict[str, Any]]:
    """The conninfo and the keyword arguments ``pool`` connects with."""
    conninfo, kwargs = pool.conninfo, pool.kwargs
    return (
        conninfo() if callable(conninfo) else conninfo,
        dict((kwargs() if callable(kwargs) else kwargs) or {}),
    )


def _target(pool: ConnectionPool) -> str:
    """Where ``pool`` connects, for errors: host, port and database (no password)."""
    try:
        conninfo, kwargs = _connect_args(pool)
        params: dict[str, Any] = {**conninfo_to_dict(conninfo), **kwargs}
    except psycopg.Error:
        return "the configured server"
    host = params.get("host") or params.get("hostaddr") or "localhost"
    return f"{host}:{params.get('port') or 5432} database {params.get('dbname') or '(default)'}"


@attrs.define(eq=False)
class PostgresSaver:
    """Checkpoints in PostgreSQL (see the module docstring): ``PostgresSaver(dsn)``, or
    ``PostgresSaver(pool=pool)`` with a ``psycopg_pool.ConnectionPool`` of your own.

    Nothing happens in ``__init__``: the pool opens and the layout is checked on first
    use, in a worker thread. Use ``async with PostgresSaver(dsn) as saver`` or call
    ``aclose()`` (which closes the pool this saver made; a given pool stays yours).
    ``max_connections`` sizes the pool this saver makes (in autocommit mode, each
    connection checked as it is taken out; the pool's own worker threads stop when it is
    closed). Operations that find no connection within ``connect_timeout`` seconds (the
    pool exhausted, or the server gone) fail: ``SaverUnavailable`` when the server cannot
    be reached, ``psycopg_pool.PoolTimeout`` when it can (every connection busy). A pool
    of your own may be in either mode (multi-statement operations open a transaction
    themselves); give it ``check=ConnectionPool.check_connection`` too, or a connection
    the server dropped costs the operation that finds it its one retry.

    Raised by every method: ``ValueError`` when a thread id breaks the rule of
    ``check_thread_id`` (before any I/O); ``SaverUnavailable`` when the server cannot
    be reached.
    """

    dsn: str | None = attrs.field(default=None, validator=valid.text(optional=True))
    pool: ConnectionPool | None = attrs.field(
        default=None,
        kw_only=True,
        validator=valid.instance_of(ConnectionPool, "a psycopg_pool.ConnectionPool", optional=True),
    )
    schema: str = attrs.field(default="reactcore", kw_only=True, validator=_check_schema)
    lease_ttl: float = attrs.field(default=10.0, kw_only=True, validator=_positive)
    heartbeat: float = attrs.field(default=1.0, kw_only=True, validator=_positive)
    max_connections: int = attrs.field(default=10, kw_only=True, validator=valid.integer(minimum=1))
    connect_timeout: float = attrs.field(default=30.0, kw_only=True, validator=_positive)
    _own_pool: bool = attrs.field(default=False, init=False)
    _ready: bool = attrs.field(default=False, init=False)
    _closed: bool = attrs.field(default=False, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    _sql: dict[str, sql.Composed] = attrs.field(init=False)
    _holder: str = attrs.field(init=False)
    _tokens: dict[tuple[str, str], int] = attrs.field(factory=dict, init=False)

    def __attrs_post_init__(self) -> None:
        if (self.dsn is None) == (self.pool is None):
            raise ValueError("give PostgresSaver a dsn or a pool (one of them)")
        if self.heartbeat >= self.lease_ttl:
            raise ValueError(
                f"heartbeat ({self.heartbeat}s) must be shorter than lease_ttl "
                f"({self.lease_ttl}s): a lease must be renewed before it lapses"
            )
        names = {"s": sql.Identifier(self.schema)}
        self._sql = {k: sql.SQL(v).format(**names) for k, v in _STATEMENTS.items()}
        self._holder = f"{socket.gethostname()} pid {os.getpid()}"

    async def __aenter__(self) -> PostgresSaver:
        await self._run(lambda conn: None)  # connect and migrate now, so failures show here
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the pool this saver made (idempotent); a closed saver raises
        ``anyio.ClosedResourceError``."""
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._close)

    def _close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._own_pool = (self.pool if self._own_pool else None), False
        if pool is not None:
            pool.close()

    # --- connections ---------------------------------------------------------------

    def _pool(self) -> ConnectionPool:
        """The pool, opened on first use (``SaverUnavailable`` if the server cannot be
        reached; the next operation tries again)."""
        with self._lock:
            if self._closed:
                raise anyio.ClosedResourceError("this PostgresSaver was closed")
            if self.pool is None:
                assert self.dsn is not None
                pool = ConnectionPool(
                    self.dsn,
                    min_size=1,
                    max_size=self.max_connections,
                    open=False,
                    kwargs={"autocommit": True},
                    check=ConnectionPool.check_connection,
                    name=f"reactcore-{self.schema}",
                )
                try:
                    pool.open(wait=True, timeout=self.connect_timeout)
                except PoolTimeout as exc:
                    pool.close()
                    raise self._unreachable(pool, exc) from exc
                self.pool, self._own_pool = pool, True
            return self.pool

    def _unreachable(self, pool: ConnectionPool, exc: PoolTimeout) -> Exception:
        """Why ``pool`` gave no connection: ``SaverUnavailable`` with the server's answer
        to one direct attempt, or ``exc`` itself when the server answers (the pool is
        merely exhausted)."""
        timeout = max(2, math.ceil(min(self.connect_timeout, 10.0)))
        try:
            conninfo, kwargs = _connect_args(pool)
            with psycopg.connect(conninfo, **{**kwargs, "connect_timeout": timeout}):
                pass
        except psycopg.Error as cause:
            target = _target(pool)
            reason = " ".join(str(cause).split()) or repr(cause)
            return SaverUnavailable(
                f"PostgreSQL at {target} cannot be reached: no connection within "
                f"{self.connect_timeout:g} s ({reason})",
                target=target,
            )
        return exc

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        """Bring the schema to ``POSTGRES_SCHEMA`` in one transaction; concurrent
        openers wait on the advisory lock, then find the work done."""
        with conn.transaction():
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext(%s))", (f"reactcore:{self.schema}",)
            )
            conn.execute(
                sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema))
            )
            conn.execute(self._sql["meta"])
            row = conn.execute(self._sql["version"]).fetchone()
            version = 0 if row is None else int(row[0])
            if version > POSTGRES_SCHEMA:
                raise ValueError(
                    f"checkpoint schema {self.schema!r} has layout version {version}, newer "
                    f"than this reactcore knows (up to {POSTGRES_SCHEMA}): upgrade reactcore"
                )
            if version == POSTGRES_SCHEMA:
                return
            names = {"s": sql.Identifier(self.schema)}
            for statements in _MIGRATIONS[version:]:
                for statement in statements:
                    conn.execute(sql.SQL(statement).format(**names))
            if row is None:
                conn.execute(self._sql["insert_version"], (POSTGRES_SCHEMA,))
            else:
                conn.execute(self._sql["set_version"], (POSTGRES_SCHEMA,))

    def _attempt(self, operation: Callable[[psycopg.Connection[Any]], _T], transaction: bool) -> _T:
        """Run ``operation`` once on a pooled connection (the layout migrated first, on
        first use); ``_ConnectionLost`` when the connection broke."""
        pool = self._pool()
        try:
            with pool.connection(timeout=self.connect_timeout) as conn:
                try:
                    if not self._ready:
                        self._migrate(conn)
                        self._ready = True
                    if not transaction:
                        return operation(conn)
                    with conn.transaction():
                        return operation(conn)
                except psycopg.OperationalError as exc:
                    if conn.broken or conn.closed:
                        raise _ConnectionLost(exc) from exc
                    raise
        except PoolTimeout as exc:
            raise self._unreachable(pool, exc) from exc

    def _sync(
        self,
        operation: Callable[[psycopg.Connection[Any]], _T],
        transaction: bool = True,
        again: Callable[[psycopg.Connection[Any]], _T] | None = None,
    ) -> _T:
        """Run ``operation`` on a pooled connection (in a worker thread): in a transaction,
        or (``transaction=False``, for one statement) as it comes; the pool this saver
        makes is in autocommit mode, so a single statement is a single round trip.

        When the connection breaks (the server terminated it, or restarted), the pool's
        idle connections are checked and the operation runs once more on a fresh one:
        ``again`` if given (the idempotent form of an operation that is not), else
        ``operation``. Broken again: ``SaverUnavailable``.
        """
        try:
            return self._attempt(operation, transaction)
        except _ConnectionLost as lost:
            first = lost.error
        _log.warning("postgres_connection_lost", schema=self.schema, error=repr(first))
        pool = self._pool()
        pool.check()  # drop the other connections the server closed, before retrying
        try:
            return self._attempt(again or operation, transaction)
        except _ConnectionLost as lost:
            target = _target(pool)
            raise SaverUnavailable(
                f"PostgreSQL at {target} cannot be reached: the connection broke, then "
                f"again on a fresh one ({first}; then {lost.error})".replace("\n", " "),
                target=target,
            ) from lost.error

    async def _run(
        self, operation: Callable[[psycopg.Connection[Any]], _T], transaction: bool = True
    ) -> _T:
        return await anyio.to_thread.run_sync(self._sync, operation, transaction)

    def _token(self, thread_id: str, owner: str) -> int | None:
        with self._lock:
            return self._tokens.get((thread_id, owner))

    # --- the Saver protocol ----------------------------------------------------------

    async def get(self, thread_id: str) -> Checkpoint | None:
        """The latest checkpoint of ``thread_id``, or ``None``."""
        check_thread_id(thread_id)

        def latest() -> Checkpoint | None:
            statement = self._sql["latest"]
            row = self._sync(lambda c: c.execute(statement, (thread_id,)).fetchone(), False)
            return None if row is None else load_checkpoint(row[0])

        return await anyio.to_thread.run_sync(latest)

    async def put(self, thread_id: str, checkpoint: Checkpoint) -> None:
        """Store ``checkpoint`` as the latest of ``thread_id``: one statement writing
        the checkpoint row and the thread's status, fenced by the claim of
        ``checkpoint.run_id`` when this saver holds one (see the module docstring).

        Raised by ``put``: ``ValueError`` when ``checkpoint.thread_id`` is another thread
        or the thread id breaks the rule of ``check_thread_id``; ``TypeError`` when the
        state holds a value a checkpoint cannot keep; ``LeaseLost`` when the claim of
        ``checkpoint.run_id`` was taken over (nothing is written); ``ThreadBusy`` when
        there is no such claim and another live run leases the thread.
        """
        _check_thread(thread_id, checkpoint)
        owner = checkpoint.run_id
        params = {
            "thread": thread_id,
            "step": checkpoint.step,
            "run": owner,
            "at": checkpoint.created_at,
            "status": thread_status(checkpoint),
        }

        def insert() -> None:
            body = dump_checkpoint(checkpoint)  # encoded outside the connection
            token = self._token(thread_id, owner)
            query = {**params, "body": body, "token": token}
            kind = "put" if token is not None else "put_unclaimed"
            first, again = self._sql[kind], self._sql[f"{kind}_again"]
            row = self._sync(
                lambda c: c.execute(first, query).fetchone(),
                False,
                lambda c: c.execute(again, query).fetchone(),
            )
            assert row is not None  # the statement's last SELECT gives one row
            stored, holder = row
            if stored:
                return
            if token is None:
                raise ThreadBusy(thread_id, holder or "another run")
            raise LeaseLost(thread_id, owner, holder or "it has since released the thread")

        await anyio.to_thread.run_sync(insert)

    async def delete(self, thread_id: str) -> None:
        """Forget ``thread_id``."""
        check_thread_id(thread_id)

        def forget(conn: psycopg.Connection[Any]) -> None:
            conn.execute(self._sql["delete_checkpoints"], (thread_id,))
            conn.execute(self._sql["delete_thread"], (thread_id,))

        await self._run(forget)

    async def list(self, thread_id: str) -> builtins.list[Checkpoint]:
        """Every checkpoint of ``thread_id``, oldest first."""
        check_thread_id(thread_id)

        def every() -> builtins.list[Checkpoint]:
            statement = self._sql["all"]
            rows = self._sync(lambda c: c.execute(statement, (thread_id,)).fetchall(), False)
            return [load_checkpoint(body) for (body,) in rows]

        return await anyio.to_thread.run_sync(every)

    # --- threads, ownership, cancel --------------------------------------------------

    async def threads(
        self,
        *,
        status: ThreadStatus | None = "unfinished",
        after: str | None = None,
        limit: int = 100,
    ) -> builtins.list[ThreadInfo]:
        """A page of threads with ``status`` (see ``LeasingSaver.threads``)."""
        _page((), status, after, limit)  # checks limit and after
        query = {"status": status, "after": after, "limit": limit}
        rows = await self._run(lambda c: c.execute(self._sql["threads"], query).fetchall(), False)
        return [ThreadInfo(*row) for row in rows]

    def claim(
        self,
        thread_id: str,
        *,
        owner: str,
        wait: float = 0.0,
        on_cancel: Callable[[], None] = lambda: None,
    ) -> AbstractAsyncContextManager[Lease]:
        """Lease ``thread_id`` for the block, across replicas (see ``LeasingSaver.claim``);
        the block's checkpoints (``run_id == owner``) are fenced by the lease's token."""
        check_thread_id(thread_id)
        return hold_lease(
            _RowLeases(self),
            thread_id,
            owner,
            wait=wait,
            heartbeat=self.heartbeat,
            on_cancel=on_cancel,
            lost_after=self.lease_ttl,
        )

    async def request_cancel(self, thread_id: str) -> bool:
        """Ask the run leasing ``thread_id`` (on any replica) to stop; whether a live
        lease was found. The run sees it within ``heartbeat`` seconds."""
        check_thread_id(thread_id)

        def ask(conn: psycopg.Connection[Any]) -> bool:
            return conn.execute(self._sql["cancel"], (thread_id,)).rowcount > 0

        return await self._run(ask, False)


@attrs.frozen
class _RowLeases:
    """The lease rows of a ``PostgresSaver`` as a ``LeaseBackend`` (worker-thread calls);
    the token of each lease it holds is kept in the saver, for ``put``."""

    saver: PostgresSaver

    def try_acquire(self, thread_id: str, owner: str) -> str | None:
        saver = self.saver
        query = {
            "thread": thread_id,
            "owner": owner,
            "holder": f"run {owner} ({saver._holder})",
            "ttl": saver.lease_ttl,
        }

        def acquire(conn: psycopg.Connection[Any]) -> int | str:
            row = conn.execute(saver._sql["acquire"], query).fetchone()
            if row is not None:
                return int(row[0])
            row = conn.execute(saver._sql["holder"], (thread_id,)).fetchone()
            return "another run" if row is None else str(row[0])

        got = saver._sync(acquire)
        if isinstance(got, str):
            return got
        with saver._lock:
            saver._tokens[(thread_id, owner)] = got
        return None

    def renew(self, thread_id: str, owner: str) -> Renewal:
        saver = self.saver
        token = saver._token(thread_id, owner)
        if token is None:
            return "lost"
        params = (saver.lease_ttl, thread_id, token)
        row = saver._sync(lambda c: c.execute(saver._sql["renew"], params).fetchone(), False)
        if row is None:
            return "lost"
        return "cancel" if row[0] else "held"

    def release(self, thread_id: str, owner: str) -> None:
        saver = self.saver
        with saver._lock:
            token = saver._tokens.pop((thread_id, owner), None)
        if token is not None:
            params = (thread_id, token)
            saver._sync(lambda c: c.execute(saver._sql["release"], params), False)

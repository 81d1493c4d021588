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

**Layout.** The same as ``SqliteSaver``'s (see ``reactcore.savers``): each thread's
messages in an append-only log (large texts and content-part data stored once by hash),
a record per checkpoint of what changed, a row per thread with its latest status. A
checkpoint costs what its step added, whatever the length of the history; ``put`` is one
statement (one round trip) writing all of it, fenced (below) and checked against the
thread's last record (a writer that finds the thread moved on by another replica reads
it again), the thread's row locked while it writes. ``delete`` locks that row too, then
deletes every row of the thread in one statement: a ``put`` racing it is stored before
(and deleted with the rest) or after (the thread gone, it stores its checkpoint whole, as
a new thread), never between. ``dump_checkpoint`` gives a checkpoint whole, to move
between savers.

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
statement is idempotent, or made so for the retry: a retried ``put`` finds the
checkpoint the first attempt stored, and stores nothing twice). When the server cannot
be reached (no connection within ``connect_timeout`` seconds, or lost again on the
retry) the operation raises ``SaverUnavailable``, naming the server and the reason.

**Cancel.** ``request_cancel`` (``agent.cancel_thread``) marks the live lease; its run
sees the mark at its next renewal, within ``heartbeat`` seconds.

**Layout versions.** The tables live in the schema ``schema`` (default ``reactcore``),
with their layout version in ``<schema>.meta``; migrations run once, under an advisory
lock, when the first operation finds an older version (a newer one is refused). The
upgrade from version 2 (a row of whole ``dump_checkpoint`` JSON per checkpoint) converts
every checkpoint into the layout of message logs, in the same transaction.
"""

from __future__ import annotations

import math
import os
import re
import socket
import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import attrs
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from .. import _validate as valid
from .._config import check_thread_id
from .._exceptions import LeaseLost, SaverUnavailable, ThreadBusy
from .._logging import get_logger
from ._leases import Lease, Renewal, hold_lease
from ._postgres_layout import (
    _MIGRATIONS,
    _OLD,
    _STATEMENTS,
    FORGET,
    POSTGRES_SCHEMA,
    _Connection,
    _dialect_statements,
    _put_params,
)
from ._protocol import Checkpoint, _check_thread
from ._sql import Dialect, Tables, TableSaver, Write, convert

_T = TypeVar("_T")

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
class PostgresSaver(TableSaver):
    """Checkpoints in PostgreSQL, shared by every replica of a service, with leases and
    fenced writes (the module ``reactcore.savers._postgres`` says how; the guide's page
    on checkpoints, why): ``PostgresSaver(dsn)``, or
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
    _dialect: Dialect = attrs.field(init=False)
    _layout: dict[str, sql.SQL] = attrs.field(init=False)
    _tables: Tables = attrs.field(init=False)
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
        self._dialect = Dialect("postgres", f'"{self.schema}".')
        layout = _dialect_statements(self._dialect)
        self._layout = {k: sql.SQL(v) for k, v in layout.items()}
        self._tables = Tables(self._dialect, self._transact, FORGET)
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
            for target, statements in enumerate(_MIGRATIONS[version:], version + 1):
                for statement in statements:
                    conn.execute(sql.SQL(statement).format(**names))
                if target == 3:
                    self._migrate_to_3(conn)
                if target == 4:
                    for statement in self._dialect.fork_tables():
                        conn.execute(sql.SQL(statement))
            if row is None:
                conn.execute(self._sql["insert_version"], (POSTGRES_SCHEMA,))
            else:
                conn.execute(self._sql["set_version"], (POSTGRES_SCHEMA,))

    def _migrate_to_3(self, conn: psycopg.Connection[Any]) -> None:
        """The tables of message logs and deltas, every checkpoint of the rows of whole
        checkpoints converted into them (thread by thread, each loading back exactly),
        then those rows dropped."""
        for statement in self._dialect.tables():
            conn.execute(sql.SQL(statement))
        connection = _Connection(conn, self._layout)
        convert(connection.fetch, connection.run, _OLD)
        conn.execute(
            sql.SQL("DROP TABLE {}.{}").format(sql.Identifier(self.schema), sql.Identifier(_OLD))
        )

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

    def _transact(self, work: Callable[[_Connection], _T], write: bool) -> _T:
        """``work`` in one transaction: a read sees one snapshot (repeatable read)."""

        def run(conn: psycopg.Connection[Any]) -> _T:
            if not write:
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            return work(_Connection(conn, self._layout))

        return self._sync(run)

    # --- writing (the other methods of the Saver protocol: ``TableSaver``) ------------

    async def put(self, thread_id: str, checkpoint: Checkpoint) -> None:
        """Store ``checkpoint`` as the latest of ``thread_id``: one statement writing
        its new messages, its record and the thread's status, fenced by the claim of
        ``checkpoint.run_id`` when this saver holds one (see ``LeasingSaver.claim``).

        Raised by ``put``: ``ValueError`` when ``checkpoint.thread_id`` is another thread
        or the thread id breaks the rule of ``check_thread_id``; ``TypeError`` when the
        state holds a value a checkpoint cannot keep; ``LeaseLost`` when the claim of
        ``checkpoint.run_id`` was taken over (nothing is written); ``ThreadBusy`` when
        there is no such claim and another live run leases the thread.
        """
        _check_thread(thread_id, checkpoint)
        await anyio.to_thread.run_sync(self._tables.put, thread_id, checkpoint, self._store)

    def _store(self, rows: Write) -> bool:
        """Write ``rows`` in one statement (see ``_PUT``): whether the thread was as its
        writer knew it (``False``: read it again)."""
        owner = rows.checkpoint["run"]
        thread_id = rows.checkpoint["thread"]
        token = self._token(thread_id, owner)
        params = _put_params(rows, token)
        statement = self._layout["put" if token is not None else "put_unclaimed"]
        retried = False

        def again(conn: psycopg.Connection[Any]) -> Any:
            nonlocal retried
            retried = True
            return conn.execute(statement, params).fetchone()

        try:
            row = self._sync(lambda c: c.execute(statement, params).fetchone(), False, again)
        except psycopg.errors.UniqueViolation:
            return False  # another writer stored the same record first: read it again
        assert row is not None  # the statement's last SELECT gives one row
        claimed, current, holder, already = row
        if claimed:
            return bool(current or (retried and already))
        if token is None:
            raise ThreadBusy(thread_id, holder or "another run")
        raise LeaseLost(thread_id, owner, holder or "it has since released the thread")

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
        claim = hold_lease(
            _RowLeases(self),
            thread_id,
            owner,
            wait=wait,
            heartbeat=self.heartbeat,
            on_cancel=on_cancel,
            lost_after=self.lease_ttl,
        )
        return self._tables.claimed(thread_id, claim)

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

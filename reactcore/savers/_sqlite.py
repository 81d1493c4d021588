"""``SqliteSaver``: the layout of message logs and deltas (``_sql``) in an SQLite file,
with thread ownership across the processes of one machine (a file lock per thread)."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
import attrs

from .. import _validate as valid
from .._config import check_thread_id
from .._exceptions import SaverUnavailable, ThreadBusy
from ._document import load_checkpoint
from ._leases import OUTSIDE_WRITE, WAIT_POLL, Lease, LocalLeases, Renewal, hold_lease
from ._protocol import Checkpoint, _check_thread, _info
from ._sql import FORGET, Dialect, Tables, TableSaver, Write, convert, old_table_statements

_T = TypeVar("_T")

DIALECT = Dialect("sqlite", "")

# Layouts 1 and 2 (one row per checkpoint, its whole ``dump_checkpoint`` JSON in
# ``body``): made by the first migrations, then converted by the third.
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
_OLD = "checkpoints_whole"
_SQL = {
    **DIALECT.statements(),
    **{name: DIALECT.sql(text) for name, text in old_table_statements(_OLD).items()},
    "request_cancel": "INSERT OR REPLACE INTO cancel_requests (thread_id, owner, requested_at)"
    " VALUES (:thread, :owner, :at)",
    "select_cancel": "SELECT 1 FROM cancel_requests WHERE thread_id = :thread AND owner = :owner",
    "delete_cancel": "DELETE FROM cancel_requests WHERE thread_id = :thread",
}


@attrs.frozen
class _Connection:
    """An sqlite3 connection running the statements by name (``_sql.Connection``)."""

    conn: sqlite3.Connection

    def fetch(self, name: str, params: Mapping[str, Any]) -> Sequence[Sequence[Any]]:
        return self.conn.execute(_SQL[name], params).fetchall()

    def run(self, name: str, param_sets: Sequence[Mapping[str, Any]]) -> None:
        self.conn.executemany(_SQL[name], param_sets)


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
    upsert = (
        "INSERT INTO threads (thread_id, status, run_id, step, updated_at)"
        " VALUES (:thread, :status, :run, :step, :at)"
    )
    for (body,) in conn.execute(latest).fetchall():
        info = _info(load_checkpoint(body))
        row = {"thread": info.thread_id, "status": info.status, "run": info.run_id}
        conn.execute(upsert, {**row, "step": info.step, "at": info.updated_at})


def _migrate_to_3(conn: sqlite3.Connection) -> None:
    """Version 3: message logs and deltas (see ``reactcore.savers``); every checkpoint
    of the rows of whole checkpoints converted, thread by thread, then those dropped."""
    conn.execute(f"ALTER TABLE checkpoints RENAME TO {_OLD}")
    for statement in DIALECT.tables():
        conn.execute(statement)
    convert(_Connection(conn).fetch, _Connection(conn).run, _OLD)
    conn.execute(f"DROP TABLE {_OLD}")


def _migrate_to_4(conn: sqlite3.Connection) -> None:
    """Version 4: a cancel request names the run it is for (a request for the thread
    could reach the run that claimed it next)."""
    conn.execute("ALTER TABLE cancel_requests ADD COLUMN owner TEXT")


def _migrate_to_5(conn: sqlite3.Connection) -> None:
    """Version 5: forks (``saver.fork``): the table naming each fork's origin."""
    for statement in DIALECT.fork_tables():
        conn.execute(statement)


_MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _migrate_to_1,
    _migrate_to_2,
    _migrate_to_3,
    _migrate_to_4,
    _migrate_to_5,
)
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


def _transaction(conn: sqlite3.Connection, work: Callable[[], _T], write: bool = True) -> _T:
    """Run ``work`` in one transaction: a write transaction takes the write lock at once;
    a read transaction reads one snapshot of the file, whatever other processes commit.

    On a failure the transaction is rolled back, unless SQLite did so already (it does,
    on a full disk or an I/O error): the failure is raised as it came, and a rollback
    that fails is noted on it, never raised instead of it."""
    conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        result = work()
        conn.execute("COMMIT")
    except BaseException as failure:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error as rollback:  # (the saver drops a connection left open)
                failure.add_note(f"rolling the transaction back failed too: {rollback}")
        raise
    return result


def _unavailable(path: str, error: sqlite3.Error) -> SaverUnavailable | None:
    """``SaverUnavailable`` for an error of SQLite on the file (a full disk, an I/O
    error, a file that cannot be opened or is no database, a lock held too long), with
    SQLite's reason; ``None`` for the errors of a bug (a constraint, misuse of the API)."""
    if not isinstance(error, sqlite3.OperationalError) and type(error) is not sqlite3.DatabaseError:
        return None
    reason = " ".join(str(error).split()) or repr(error)
    return SaverUnavailable(
        f"SQLite file {path} cannot be used: {reason} ({error.sqlite_errorname})", target=path
    )


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


def _write_holder(fd: int, name: str, owner: str | None) -> None:
    """Name the holder in its lock file: ``name``, the pid, and the run (``owner``)."""
    pid = os.getpid()
    run = "" if owner is None else json.dumps(owner)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{name} (pid {pid})\n{pid}\n{run}\n".encode(), 0)


@attrs.define(eq=False)
class _FileLeases:
    """Claims shared by the processes of one machine: an exclusive ``flock`` on a file
    per thread in ``directory``. The kernel drops the lock when its holder dies, so a
    killed process never keeps a thread. The file holds its holder's name, pid and run
    (emptied on release), for ``ThreadBusy`` and ``request_cancel``; cancel requests
    live in the database, each for the run the file named when it was made.

    A ``put`` outside any claim (``writing``) holds the file for the time of its write:
    refused with ``ThreadBusy`` while a run owns the thread, wherever it runs (any saver
    object, any process on the file), and a claim meanwhile finds the thread busy."""

    directory: Path
    saver: SqliteSaver
    _fds: dict[tuple[str, str], int] = attrs.field(factory=dict, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    def _path(self, thread_id: str) -> Path:
        digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()
        return self.directory / f"{digest[:40]}.lock"

    def _unusable(self, error: OSError) -> SaverUnavailable:
        """``SaverUnavailable`` for a lock file that cannot be made, locked or written."""
        path = os.fspath(self.saver.path)
        return SaverUnavailable(
            f"SQLite file {path} cannot be used: its lock files in {self.directory} cannot "
            f"be made or written ({error})",
            target=path,
        )

    def _take(self, thread_id: str) -> int | str:
        """The thread's lock file, locked (its descriptor), or who holds it."""
        import fcntl  # POSIX only, and only needed here: importing reactcore works anywhere

        try:
            self.directory.mkdir(exist_ok=True)
            fd = os.open(self._path(thread_id), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise self._unusable(exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            try:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise self._unusable(exc) from exc
                return _holder_of(fd)
            finally:
                os.close(fd)
        return fd

    def _name_holder(self, fd: int, name: str, owner: str | None) -> None:
        try:
            _write_holder(fd, name, owner)
        except OSError as exc:
            raise self._unusable(exc) from exc

    def try_acquire(self, thread_id: str, owner: str) -> str | None:
        with self._lock:
            mine = next((o for (t, o) in self._fds if t == thread_id), None)
        if mine is not None:  # held in this process: no need to ask the kernel
            return f"run {mine} (pid {os.getpid()})"
        fd = self._take(thread_id)
        if isinstance(fd, str):
            return fd
        try:
            with self._lock:
                self._fds[(thread_id, owner)] = fd
            # Requests for earlier owners go first; from the moment the file names this
            # owner, a request is for it.
            self.saver._cancel("delete_cancel", thread_id)
            self._name_holder(fd, f"run {owner}", owner)
        except BaseException:
            with self._lock:
                self._fds.pop((thread_id, owner), None)
            os.close(fd)  # closing drops the lock too
            raise
        return None

    @contextmanager
    def writing(self, thread_id: str, owner: str) -> Iterator[None]:
        """Hold ``thread_id`` for one write of a checkpoint of run ``owner``: at once when
        this saver's claim of ``owner`` holds it; else the lock file, for the write (a
        write outside any claim that holds it is waited for, up to ``busy_timeout``
        seconds); ``ThreadBusy`` naming the holder when a run holds it."""
        with self._lock:
            claimed = (thread_id, owner) in self._fds
        if claimed:
            yield
            return
        deadline = time.monotonic() + self.saver.busy_timeout
        while isinstance(fd := self._take(thread_id), str):
            if not fd.startswith(OUTSIDE_WRITE) or time.monotonic() >= deadline:
                raise ThreadBusy(thread_id, fd)
            time.sleep(WAIT_POLL)
        try:
            self._name_holder(fd, OUTSIDE_WRITE, None)
            yield
        finally:
            try:
                os.ftruncate(fd, 0)
            finally:
                os.close(fd)  # drops the lock

    def renew(self, thread_id: str, owner: str) -> Renewal:
        rows = self.saver._cancel("select_cancel", thread_id, owner)
        return "cancel" if rows else "held"

    def release(self, thread_id: str, owner: str) -> None:
        with self._lock:
            fd = self._fds.pop((thread_id, owner), None)
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
            self.saver._cancel("delete_cancel", thread_id)
        finally:
            os.close(fd)  # drops the lock

    def live_owner(self, thread_id: str) -> str | None:
        """The run a live process holds ``thread_id`` for, from its lock file (``None``:
        none, or a write outside any run)."""
        try:
            lines = self._path(thread_id).read_text("utf-8", "replace").split("\n")
        except FileNotFoundError:
            return None
        if len(lines) < 3 or not lines[1].isdigit() or not _process_alive(int(lines[1])):
            return None
        try:
            owner = json.loads(lines[2])
        except ValueError:  # none (a write outside any run), or being written
            return None
        return owner if isinstance(owner, str) else None


@attrs.define(eq=False)
class SqliteSaver(TableSaver):
    """Keeps checkpoints in the SQLite file ``path``, in the layout of every saver (see
    ``reactcore.savers``): each thread's messages in an append-only log (large texts
    and content-part data stored once by hash), a record per checkpoint of what changed,
    and a row per thread with its latest status (all of a checkpoint written in one
    transaction). A checkpoint costs what its step added, whatever the length of the
    history; reading the latest one reads the thread's log once.

    Nothing happens in ``__init__``: the file is opened (and the tables created, or an
    older layout upgraded) on first use, in a worker thread, like every SQLite call, so
    the event loop never blocks on the disk or on a lock held by another process. Use
    ``async with SqliteSaver(path)``, or call ``aclose()`` when done; a closed saver
    raises ``anyio.ClosedResourceError``.

    **One connection, guarded by a threading lock.** Runs of this process share it and
    take turns; a turn is a transaction of a few statements. The alternative, a
    connection per operation, would make our own runs contend through SQLite's file
    lock, whose busy handler sleeps and polls instead of queueing (and fails after the
    timeout under load), and would reopen the file and reread the schema each time.
    Encoding and decoding JSON happen in the worker thread, outside the lock.

    **Other processes** may read and write the same file: the journal is WAL, so readers
    see the last committed checkpoints while a writer writes (each read is one
    snapshot), and a write that finds another writer waits up to ``busy_timeout``
    seconds. A write checks that the thread's last checkpoint is still the one this
    saver knows, and reads the thread again if another process wrote meanwhile.

    **Ownership** (``claim``): one run at a time per thread, among the runs of every
    process on this machine and every saver object on the file, through a file lock per
    thread in the folder ``<path>.leases`` (POSIX ``flock``; a killed process's locks
    are dropped by the kernel at once). A ``put`` of a checkpoint whose run does not
    hold the thread through this saver takes the lock for its write: it is refused with
    ``ThreadBusy`` while a run owns the thread, so nothing lands in the middle of that
    run's history. A run polls for cancel requests every ``cancel_poll`` seconds; a
    request is for the run that owned the thread when it was made. A claim never lapses
    while its process lives, even a paused one (SIGSTOP, a long GC pause): the thread
    stays busy until it resumes or dies, so no stale owner ever writes beside a
    successor, and writes need no fencing token.

    Order is the order ``put`` was called (``checkpoint_id`` counts a thread's
    checkpoints: ``"1"``, ``"2"`` …). ``path`` may be ``":memory:"`` (one private
    database, for tests; ownership is then among this process's runs).
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
    _tables: Tables = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        if os.fspath(self.path) == ":memory:":
            self._leases = LocalLeases()
        else:
            self._leases = _FileLeases(Path(f"{os.fspath(self.path)}.leases"), self)
        self._tables = Tables(DIALECT, self._transact, (*FORGET, "delete_cancel"))

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
        """Run ``operation`` on the connection (opened on first use), holding the lock.

        SQLite's errors on the file are raised as ``SaverUnavailable`` with SQLite's
        reason (see ``_unavailable``); a connection left inside a transaction (its
        rollback failed) is closed, and the next operation opens a new one.
        """
        with self._lock:
            if self._closed:
                raise anyio.ClosedResourceError("this SqliteSaver was closed")
            path = os.fspath(self.path)
            try:
                if self._conn is None:
                    self._conn = _connect(path, self.busy_timeout)
                return operation(self._conn)
            except sqlite3.Error as error:
                if self._conn is not None and self._conn.in_transaction:
                    self._conn.close()  # (rolls back)
                    self._conn = None
                unavailable = _unavailable(path, error)
                if unavailable is None:
                    raise
                raise unavailable from error

    def _transact(self, work: Callable[[_Connection], _T], write: bool) -> _T:
        return self._locked(lambda conn: _transaction(conn, lambda: work(_Connection(conn)), write))

    def _cancel(
        self, name: str, thread_id: str, owner: str | None = None
    ) -> Sequence[Sequence[Any]]:
        """Run the cancel-request statement ``name`` for ``thread_id`` and its run
        ``owner`` (autocommit)."""
        params = {"thread": thread_id, "owner": owner, "at": time.time()}
        return self._locked(lambda conn: _Connection(conn).fetch(name, params))

    async def _run(self, operation: Callable[[sqlite3.Connection], _T]) -> _T:
        return await anyio.to_thread.run_sync(self._locked, operation)

    async def put(self, thread_id: str, checkpoint: Checkpoint) -> None:
        """Store ``checkpoint`` as the latest of ``thread_id`` (one transaction): its new
        messages appended to the thread's log, a record of what changed.

        Raised by ``put``: ``ValueError`` when ``checkpoint.thread_id`` is another thread,
        or ``thread_id`` breaks the rule of ``check_thread_id``; ``TypeError`` when the
        state holds a value a checkpoint cannot keep (see ``dump_checkpoint``);
        ``SaverUnavailable`` when the file cannot be written (a full disk, an I/O error),
        with SQLite's reason: nothing of the checkpoint is stored; ``ThreadBusy`` when
        another run than ``checkpoint.run_id`` owns the thread (through any saver on the
        file, in any process), or this saver holds no claim of ``checkpoint.run_id`` and
        that run owns it through another (nothing is stored).
        """
        _check_thread(thread_id, checkpoint)

        def store(rows: Write) -> bool:
            stored: bool = self._transact(lambda conn: self._tables.store(conn, rows), True)
            return stored

        def put() -> None:
            with self._leases.writing(thread_id, checkpoint.run_id):
                self._tables.put(thread_id, checkpoint, store)

        await anyio.to_thread.run_sync(put)

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
            claim = self._leases.claim(thread_id, owner, wait, on_cancel)
        else:
            claim = hold_lease(
                self._leases,
                thread_id,
                owner,
                wait=wait,
                heartbeat=self.cancel_poll,
                on_cancel=on_cancel,
            )
        return self._tables.claimed(thread_id, claim)

    async def request_cancel(self, thread_id: str) -> bool:
        """Ask the run owning ``thread_id`` (in any process on this machine) to stop;
        whether a live one owns it. The run sees it within ``cancel_poll`` seconds."""
        check_thread_id(thread_id)
        leases = self._leases
        if isinstance(leases, LocalLeases):
            await anyio.lowlevel.checkpoint()
            return leases.request_cancel(thread_id)

        def ask() -> bool:
            owner = leases.live_owner(thread_id)
            if owner is None:
                return False
            # For that run: if it released the thread meanwhile, the next owner is not it.
            self._cancel("request_cancel", thread_id, owner)
            return True

        return await anyio.to_thread.run_sync(ask)

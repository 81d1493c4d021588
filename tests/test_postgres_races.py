"""``PostgresSaver.delete`` racing ``put`` on the real server, interleaved on purpose: a
session of the test holds a lock that stops one of the two mid-way, the other runs into
it, then the lock is let go. Whichever goes first, the thread ends whole or gone (never a
checkpoint record whose segments and messages were deleted under it), and a ``put``
after a ``delete`` recreates the thread whole. A ``fork`` racing a ``delete`` of its
parent either finds no checkpoint or makes the delete refuse: never a fork without its
parent."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import psycopg
import pytest

from reactcore import (
    Checkpoint,
    OverAllState,
    ThreadHasForks,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    dump_checkpoint,
)
from reactcore.postgres import PostgresSaver
from tests import pg
from tests.test_savers import two_writers

pytestmark = pytest.mark.anyio

BIG = "x" * 2048  # a tool result long enough to be stored as a blob


@pytest.fixture
async def savers(tmp_path: Path) -> AsyncIterator[tuple[PostgresSaver, PostgresSaver]]:
    """Two savers on one fresh schema, as two replicas have."""
    async with two_writers("postgres", tmp_path) as pair:
        yield pair


def checkpoint(steps: int, *, big: bool = False) -> Checkpoint:
    """The thread ``t`` after ``steps`` user messages (the last one answered by a tool
    result of ``BIG``, when ``big``)."""
    messages: list[Any] = [UserMessage(f"m{n}") for n in range(steps)]
    if big:
        messages.append(ToolResponseMessage((ToolResponse("c1", "fetch", BIG),)))
    return Checkpoint("t", OverAllState({"messages": messages}), "model", steps, "r")


@contextmanager
def blocker() -> Iterator[psycopg.Connection[Any]]:
    """A session of the test in an open transaction (rolled back at the end): the locks
    it takes hold the saver's statements that need them."""
    with psycopg.connect(pg.DSN) as conn:
        try:
            yield conn
        finally:
            conn.rollback()


def blocked_by(pid: int) -> list[int]:
    """The backends waiting for a lock that backend ``pid`` holds."""
    with psycopg.connect(pg.DSN, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))", (pid,)
        ).fetchall()
    return [int(row[0]) for row in rows]


async def until(condition: Callable[[], bool]) -> None:
    """Wait until ``condition()`` (asked of the server, in a worker thread) holds."""
    while not await anyio.to_thread.run_sync(condition):  # noqa: ASYNC110 (the server's state, no event)
        await anyio.sleep(0.01)


Call = tuple[str, Callable[[], Any]]


def hold_delete(lock: psycopg.Connection[Any], schema: str) -> None:
    """Lock a row that a ``delete`` of thread ``t`` must delete: it waits mid-way."""
    lock.execute(f'SELECT FROM "{schema}".segments WHERE thread_id = %s FOR KEY SHARE', ("t",))


async def race(
    take_lock: Callable[[psycopg.Connection[Any]], Any], held: Call, other: Call
) -> dict[str, BaseException | None]:
    """Run ``held`` until it waits for the lock the test took (``take_lock``), then
    ``other`` until it finishes or waits for ``held``; then let the lock go. What each
    raised (``None``: nothing), by name."""
    done: dict[str, BaseException | None] = {}

    async def run(name: str, call: Callable[[], Any]) -> None:
        try:
            await call()
        except Exception as exc:  # reported to the test
            done[name] = exc
        else:
            done[name] = None

    with anyio.fail_after(30), blocker() as lock:
        holder = lock.info.backend_pid
        take_lock(lock)
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, *held)
            await until(lambda: bool(blocked_by(holder)))  # held mid-way by the lock
            [stopped] = blocked_by(holder)
            tg.start_soon(run, *other)
            # The other one either finishes, or waits for the one held.
            await until(lambda: other[0] in done or bool(blocked_by(stopped)))
            lock.rollback()  # let go
    return done


async def check_whole(saver: PostgresSaver) -> list[Checkpoint]:
    """The thread reads back whole: every checkpoint of ``list``, the latest by ``get``
    and by id, each self-contained."""
    listed = await saver.list("t")
    latest = await saver.get("t")
    if not listed:
        assert latest is None
        return listed
    assert latest == listed[-1]
    for stored in listed:
        assert stored.checkpoint_id is not None
        assert await saver.get("t", checkpoint_id=stored.checkpoint_id) == stored
        dump_checkpoint(stored)
    return listed


@pytest.mark.parametrize("first", ["delete", "put"])
async def test_delete_racing_put_leaves_the_thread_whole_or_gone(
    savers: tuple[PostgresSaver, PostgresSaver], first: str
) -> None:
    """``delete`` on one replica and ``put`` of the next checkpoint on another, each
    stopped mid-way by a lock the test holds while the other runs into it.

    ``first="delete"``: the delete is held (a row of the thread's log locked), the put
    runs; ``first="put"``: the put is held (its blob's key taken by an uncommitted
    insert), the delete runs. Then the lock goes. Either way the thread is whole
    afterwards (the put's checkpoint stored whole, from a snapshot) or gone, and a put
    after the delete recreates it whole. (Before: ``delete`` was five statements, and a
    put between them left a record whose segments and messages were gone.)"""
    a, b = savers
    for steps in range(1, 4):
        await a.put("t", checkpoint(steps))
    assert await b.get("t") == checkpoint(3)  # b knows the thread as it is
    following = checkpoint(4, big=True)
    schema = a.schema

    def take_lock(lock: psycopg.Connection[Any]) -> None:
        if first == "delete":
            hold_delete(lock, schema)
        else:  # the key of the put's blob, taken
            digest = hashlib.sha256(BIG.encode()).hexdigest()
            lock.execute(
                f'INSERT INTO "{schema}".blobs (thread_id, hash, body) VALUES (%s, %s, %s)',
                ("t", digest, json.dumps(BIG)),
            )

    deleting: Call = ("delete", lambda: a.delete("t"))
    putting: Call = ("put", lambda: b.put("t", following))
    done = await race(
        take_lock, *((deleting, putting) if first == "delete" else (putting, deleting))
    )
    assert done == {"delete": None, "put": None}
    listed = await check_whole(b)
    assert listed in ([], [following])
    await b.put("t", checkpoint(5))  # a put after the delete: the thread recreated whole
    assert [c.step for c in await check_whole(a)] in ([5], [4, 5])


async def test_a_put_after_a_delete_recreates_the_thread_whole(
    savers: tuple[PostgresSaver, PostgresSaver],
) -> None:
    """A replica that knows the thread as it was before another deleted it stores its
    next checkpoint as a new thread (whole, from a snapshot), not as a delta onto records
    that are gone."""
    a, b = savers
    for steps in range(1, 4):
        await a.put("t", checkpoint(steps))
    assert await a.get("t") == checkpoint(3)
    await b.delete("t")
    await a.put("t", checkpoint(4))
    assert await check_whole(b) == [checkpoint(4)]


@pytest.mark.parametrize("first", ["delete", "fork"])
async def test_delete_racing_fork_leaves_no_fork_without_its_parent(
    savers: tuple[PostgresSaver, PostgresSaver], first: str
) -> None:
    """``delete`` of a thread on one replica and ``fork`` of it on another, each stopped
    mid-way by a lock the test holds while the other runs into it.

    ``first="delete"``: the delete is held (a row of the thread's log locked) after it
    locked the thread and found no fork; the fork waits for the thread's row, then finds
    no checkpoint (``ValueError``), and stores nothing. ``first="fork"``: the fork is
    held (its ``forks`` key taken by an uncommitted insert) after it locked the parent;
    the delete waits, then finds the fork (``ThreadHasForks``), and deletes nothing."""
    a, b = savers
    for steps in range(1, 4):
        await a.put("t", checkpoint(steps))
    schema = a.schema

    def take_lock(lock: psycopg.Connection[Any]) -> None:
        if first == "delete":
            hold_delete(lock, schema)
        else:  # the key of the fork's row, taken
            lock.execute(
                f'INSERT INTO "{schema}".forks (thread_id, parent, seq, segment)'
                " VALUES (%s, %s, 1, 1)",
                ("f", "elsewhere"),
            )

    deleting: Call = ("delete", lambda: a.delete("t"))
    forking: Call = ("fork", lambda: b.fork("t", "2", "f"))
    done = await race(
        take_lock, *((deleting, forking) if first == "delete" else (forking, deleting))
    )
    if first == "delete":
        assert done["delete"] is None
        assert isinstance(done["fork"], ValueError)
        assert "names no checkpoint" in str(done["fork"])
        assert await b.list("t") == [] and await b.get("f") is None
        assert await b.threads(status=None) == []
    else:
        assert done["fork"] is None
        assert isinstance(done["delete"], ThreadHasForks) and done["delete"].forks == ("f",)
        assert [c.state for c in await b.list("f")] == [c.state for c in (await a.list("t"))[:2]]

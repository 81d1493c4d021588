"""``PostgresSaver`` over the real server (``REACTCORE_PG_DSN``): the Saver protocol, the
layout and its version, the same documents as ``SqliteSaver``, leases that lapse after
their TTL, a zombie run's writes refused, and the acceptance runs across processes
(replicas killed mid-batch, two replicas racing for one thread, 100 runs on one pool)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import psycopg
import pytest

from reactcore import (
    Checkpoint,
    OverAllState,
    SqliteSaver,
    ThreadBusy,
    UserMessage,
    dump_checkpoint,
    load_checkpoint,
)
from reactcore.postgres import POSTGRES_SCHEMA, PostgresSaver
from tests import pg

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent / "fixtures"
WORKER = Path(__file__).parent / "scripts" / "replica_worker.py"
REPO = Path(__file__).parents[1]


@pytest.fixture
def schema() -> Iterator[str]:
    """A schema of this test's own on the real server, dropped afterwards."""
    with pg.fresh_schema() as name:
        yield name


@pytest.fixture
async def saver(schema: str) -> AsyncIterator[PostgresSaver]:
    async with PostgresSaver(
        pg.DSN, schema=schema, lease_ttl=1.0, heartbeat=0.05, max_connections=4
    ) as opened:
        yield opened


def checkpoint(step: int, thread_id: str = "t", run_id: str = "run-t") -> Checkpoint:
    state = OverAllState({"messages": [UserMessage(f"step {step}")], "n": step})
    return Checkpoint(thread_id, state, "model", step, run_id, created_at=float(step))


async def test_put_get_list_delete(saver: PostgresSaver) -> None:
    """The Saver protocol: latest, all in put order, threads kept apart, delete."""
    assert await saver.get("t") is None
    for step in range(3):
        await saver.put("t", checkpoint(step))
    await saver.put("u", checkpoint(0, "u"))
    assert await saver.get("t") == checkpoint(2)
    assert [c.step for c in await saver.list("t")] == [0, 1, 2]
    await saver.delete("t")
    assert await saver.get("t") is None
    assert await saver.list("t") == []
    assert [c.thread_id for c in await saver.list("u")] == ["u"]
    assert [i.thread_id for i in await saver.threads()] == ["u"]
    with pytest.raises(ValueError, match="under thread 'u'"):
        await saver.put("u", checkpoint(1, "t"))


async def test_a_refused_value_stores_nothing(saver: PostgresSaver) -> None:
    """A put whose state cannot be checkpointed raises ``TypeError`` and writes no row."""
    bad = Checkpoint("t", OverAllState({"when": object()}), "model", 0, "r")
    with pytest.raises(TypeError, match="state key 'when'"):
        await saver.put("t", bad)
    assert await saver.list("t") == []
    assert await saver.threads(status=None) == []


async def test_layout_version_and_a_newer_one_refused(saver: PostgresSaver, schema: str) -> None:
    """The layout version is recorded in ``<schema>.meta``; a saver finding a newer one
    refuses to touch the schema."""
    await saver.put("t", checkpoint(0))
    with psycopg.connect(pg.DSN, autocommit=True) as conn:
        assert conn.execute(f'SELECT version FROM "{schema}".meta').fetchall() == [
            (POSTGRES_SCHEMA,)
        ]
        conn.execute(f'UPDATE "{schema}".meta SET version = 99')
    with pytest.raises(ValueError, match="layout version 99, newer"):
        async with PostgresSaver(pg.DSN, schema=schema):
            pass  # pragma: no cover


async def test_options_are_checked() -> None:
    """Misuse is a ``ValueError`` at construction: no dsn and no pool, a schema that is
    not an identifier, a heartbeat not shorter than the TTL."""
    with pytest.raises(ValueError, match="a dsn or a pool"):
        PostgresSaver()
    with pytest.raises(ValueError, match="plain SQL identifier"):
        PostgresSaver(pg.DSN, schema='x"; DROP TABLE y; --')
    with pytest.raises(ValueError, match="heartbeat"):
        PostgresSaver(pg.DSN, lease_ttl=1.0, heartbeat=1.0)


async def test_checkpoints_move_between_sqlite_and_postgres(
    saver: PostgresSaver, tmp_path: Path
) -> None:
    """The same documents: a checkpoint written by ``SqliteSaver`` loads in
    ``PostgresSaver`` and back, and the stored JSON text is identical in both; the v1
    fixture file loads and round-trips too."""
    fixture = load_checkpoint((FIXTURES / "checkpoint_v1.json").read_text())
    db = tmp_path / "cp.db"
    async with SqliteSaver(db) as sqlite_saver:
        await sqlite_saver.put(fixture.thread_id, fixture)
        from_sqlite = await sqlite_saver.get(fixture.thread_id)
        assert from_sqlite is not None
        await saver.put(fixture.thread_id, from_sqlite)
        from_postgres = await saver.get(fixture.thread_id)
        assert from_postgres == fixture
        back = attrs_evolve_thread(from_postgres, "back")
        await sqlite_saver.put("back", back)
        assert await sqlite_saver.get("back") == back
    with sqlite3.connect(db) as conn:
        sqlite_body = conn.execute("SELECT body FROM checkpoints ORDER BY id LIMIT 1").fetchone()
    with psycopg.connect(pg.DSN) as pconn:
        pg_body = pconn.execute(
            f'SELECT body FROM "{saver.schema}".checkpoints ORDER BY id LIMIT 1'
        ).fetchone()
    assert sqlite_body is not None and pg_body is not None
    assert sqlite_body[0] == pg_body[0] == dump_checkpoint(fixture)


def attrs_evolve_thread(stored: Checkpoint, thread_id: str) -> Checkpoint:
    import attrs

    return attrs.evolve(stored, thread_id=thread_id)


def leave_lease(schema: str, thread_id: str, owner: str, ttl: float) -> None:
    """A lease row as a process that then died would leave it (nobody renews it)."""
    with psycopg.connect(pg.DSN, autocommit=True) as conn:
        conn.execute(
            f'INSERT INTO "{schema}".leases (thread_id, owner, holder, expires_at) VALUES '
            "(%s, %s, %s, clock_timestamp() + %s * interval '1 second')",
            (thread_id, owner, f"run {owner} (gone pid 1)", ttl),
        )


async def test_a_lease_whose_holder_died_lapses_after_its_ttl(saver: PostgresSaver) -> None:
    """A lease nobody renews (its holder died) keeps the thread busy, naming the holder,
    until its TTL passes; then the thread can be claimed, and a cancel request reaches
    the new owner's lease."""
    await saver.put("t", checkpoint(0))
    leave_lease(saver.schema, "t", "dead-run", 1.0)
    started = anyio.current_time()
    with pytest.raises(ThreadBusy) as busy:
        async with saver.claim("t", owner="me"):
            pytest.fail("claimed a live lease")  # pragma: no cover
    assert busy.value.holder == "run dead-run (gone pid 1)"
    assert str(busy.value).startswith("thread 't' is busy: run dead-run (gone pid 1) owns it")
    async with saver.claim("t", owner="me", wait=10):
        waited = anyio.current_time() - started
        assert await saver.request_cancel("t") is True
    assert 0.3 < waited < 5
    assert await saver.request_cancel("t") is False  # released: nobody to cancel


async def test_a_run_whose_lease_was_taken_cannot_write(saver: PostgresSaver) -> None:
    """``put`` of a run that no longer owns its thread (another live run leases it) fails
    with ``ThreadBusy`` and writes nothing: a zombie never overwrites its successor."""
    leave_lease(saver.schema, "t", "successor", 30.0)
    with pytest.raises(ThreadBusy, match="run successor"):
        await saver.put("t", checkpoint(0, run_id="zombie"))
    assert await saver.list("t") == []
    await saver.put("t", checkpoint(0, run_id="successor"))  # the owner writes
    assert [c.run_id for c in await saver.list("t")] == ["successor"]

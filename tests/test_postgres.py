"""``PostgresSaver`` over the real server (``REACTCORE_PG_DSN``): the Saver protocol, the
layout and its version, the same documents as ``SqliteSaver``, leases that lapse after
their TTL, a zombie run's writes refused, and the acceptance runs across processes
(replicas killed mid-batch, two replicas racing for one thread, 100 runs on one pool)."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import attrs
import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool
from structlog.testing import capture_logs

from reactcore import (
    AssistantMessage,
    Checkpoint,
    LeaseLost,
    OverAllState,
    ReactAgent,
    RunCancelled,
    RunnableConfig,
    SaverUnavailable,
    SqliteSaver,
    ThreadBusy,
    ToolCallStarted,
    ToolResponseMessage,
    UserMessage,
    dump_checkpoint,
    load_checkpoint,
    tool,
)
from reactcore.postgres import _MIGRATIONS, POSTGRES_SCHEMA, PostgresSaver, _RowLeases
from reactcore.savers._postgres_layout import _put_params
from reactcore.savers._sql import write
from reactcore.testing import ScriptedChatModel
from tests import pg
from tests.helpers import asks

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
    """The same layout: a checkpoint written by ``SqliteSaver`` loads in
    ``PostgresSaver`` and back, and the rows stored (records, messages, blobs) are the
    same text in both; the v1 fixture file loads and round-trips too."""
    fixture = load_checkpoint((FIXTURES / "checkpoint_v1.json").read_text())
    db = tmp_path / "cp.db"
    async with SqliteSaver(db) as sqlite_saver:
        await sqlite_saver.put(fixture.thread_id, fixture)
        from_sqlite = await sqlite_saver.get(fixture.thread_id)
        assert from_sqlite is not None
        await saver.put(fixture.thread_id, from_sqlite)
        from_postgres = await saver.get(fixture.thread_id)
        assert from_postgres == fixture
        assert dump_checkpoint(from_postgres) == dump_checkpoint(fixture)
        back = attrs_evolve_thread(from_postgres, "back")
        await sqlite_saver.put("back", back)
        assert await sqlite_saver.get("back") == back
    queries = [
        "SELECT seq, snapshot, body FROM {s}checkpoints WHERE thread_id = 'thread-42'",
        "SELECT segment, position, body FROM {s}messages WHERE thread_id = 'thread-42'",
        "SELECT hash, body FROM {s}blobs WHERE thread_id = 'thread-42'",
    ]
    with sqlite3.connect(db) as conn:
        in_sqlite = [conn.execute(q.format(s="")).fetchall() for q in queries]
    with psycopg.connect(pg.DSN) as pconn:
        in_postgres = [
            pconn.execute(q.format(s=f'"{saver.schema}".')).fetchall()  # type: ignore[call-overload]
            for q in queries
        ]

    def plain(tables: list[list[Any]]) -> list[list[tuple[Any, ...]]]:
        return [
            sorted(tuple(int(v) if type(v) is bool else v for v in r) for r in t) for t in tables
        ]

    assert plain(in_sqlite) == plain(in_postgres)
    assert len(in_sqlite[0]) == 1 and len(in_sqlite[1]) == 5


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


# --- acceptance: replicas in processes ------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A saver spec for the replica script: an SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:{tmp_path / 'shared.db'}"
    else:
        with pg.fresh_schema() as name:
            yield f"postgres:{name}"


@asynccontextmanager
async def open_shared(spec: str) -> AsyncIterator[Any]:
    kind, _, where = spec.partition(":")
    if kind == "sqlite":
        async with SqliteSaver(where) as sqlite_saver:
            yield sqlite_saver
    else:
        async with PostgresSaver(pg.DSN, schema=where) as pg_saver:
            yield pg_saver


async def seed(spec: str, threads: list[str], pending: bool = False) -> None:
    """Unfinished threads, as a replica that died before running them would leave them:
    a question each (``pending``: and the model's batch of calls, not yet run)."""
    async with open_shared(spec) as target:
        for thread in threads:
            messages: list[Any] = [UserMessage(f"go {thread}")]
            if pending:
                messages.append(
                    asks(
                        *[(f"{thread}-c{n}", "work", {"thread": thread, "n": n}) for n in range(4)]
                    )
                )
            state = OverAllState({"messages": messages})
            next_step = "tools" if pending else "model"
            await target.put(thread, Checkpoint(thread, state, next_step, 0, "seed"))


def start_worker(
    backend: str,
    spec: str,
    marks: Path,
    *args: str,
    tool_seconds: float = 0.02,
    slow: str = "",
    wait: float = 0.0,
) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "REPLICA_TOOL_SECONDS": str(tool_seconds),
        "REPLICA_SLOW_CALLS": slow,
        "REPLICA_WAIT": str(wait),
    }
    return subprocess.Popen(
        [sys.executable, str(WORKER), backend, spec, str(marks), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def read_marks(path: Path) -> list[tuple[str, str, str, int]]:
    if not path.exists():
        return []
    rows = [line.split() for line in path.read_text().splitlines()]
    return [(what, thread, detail, int(pid)) for what, thread, detail, pid in rows]


def stop(processes: list[subprocess.Popen[str]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def wait_ready(process: subprocess.Popen[str]) -> None:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line == "ready\n", process.stderr.read() if process.stderr else line


RUNS = 200


def test_replicas_resume_the_runs_of_a_killed_replica(shared: str, tmp_path: Path) -> None:
    """Three replica processes (asyncio, trio, asyncio) share one database and resume
    200 unfinished runs, each a parallel batch of 4 tool calls. One replica is killed
    with SIGKILL mid-batch; the survivors resume its runs once its leases lapse (at once
    for SQLite's file locks, after the 1.5 s TTL on PostgreSQL). Every run finishes
    exactly once; a tool call whose response the killed replica had checkpointed never
    runs again; only its calls in flight at the kill run twice (at-least-once)."""
    threads = [f"r{i:03d}" for i in range(RUNS)]
    anyio.run(seed, shared, threads)
    marks = tmp_path / "marks.txt"
    workers = [
        start_worker(b, shared, marks, "serve", "10") for b in ("asyncio", "trio", "asyncio")
    ]
    try:
        for worker in workers:
            wait_ready(worker)
        victim = workers[1]
        deadline = time.monotonic() + 60
        while sum(1 for m in read_marks(marks) if m[0] == "start" and m[3] == victim.pid) < 40:
            assert victim.poll() is None, victim.communicate()
            assert time.monotonic() < deadline, "the victim never got going"
            time.sleep(0.005)
        victim.send_signal(signal.SIGKILL)
        assert victim.wait(10) == -signal.SIGKILL
        for survivor in (workers[0], workers[2]):
            out, err = survivor.communicate(timeout=120)
            assert survivor.returncode == 0, err
            assert out.splitlines()[-1] == "served"
    finally:
        stop(workers)
    rows = read_marks(marks)
    victim_runs = {detail for what, _, detail, pid in rows if what == "run" and pid == victim.pid}
    history = anyio.run(histories, shared, threads)
    # Every run finished exactly once, with its answer: one final checkpoint per thread.
    # (The victim may have finished a run and died before writing its "finished" mark.)
    ends = Counter(c.thread_id for cps in history.values() for c in cps if c.next == "end")
    assert ends == Counter(threads)
    assert all(cps[-1].next == "end" for cps in history.values())
    assert all(cps[-1].state["messages"][-1].text == f"done {t}" for t, cps in history.items())
    finished = Counter(thread for what, thread, *_ in rows if what == "finished")
    assert max(finished.values()) == 1
    # Executions of each call; the ones the victim had checkpointed; those it started.
    runs_of = Counter(detail for what, _, detail, _ in rows if what == "start")
    victim_started = {d for what, _, d, pid in rows if what == "start" and pid == victim.pid}
    checkpointed_by_victim = {
        r.id
        for cps in history.values()
        for c in cps
        if c.run_id in victim_runs
        for m in c.state["messages"]
        if isinstance(m, ToolResponseMessage)
        for r in m.responses
    }
    calls = {f"{t}-c{n}" for t in threads for n in range(4)}
    assert set(runs_of) == calls
    twice = {call for call, count in runs_of.items() if count > 1}
    assert all(runs_of[call] == 2 for call in twice)
    in_flight = victim_started - checkpointed_by_victim
    assert twice <= in_flight  # only what was in flight at the kill ran again
    assert in_flight <= twice  # and it did run again (its result had not been saved)
    resumed = {t for t, cps in history.items() if cps[-1].run_id not in victim_runs} & {
        thread for what, thread, detail, pid in rows if what == "run" and detail in victim_runs
    }
    assert resumed, "the kill hit no run of the victim"


async def histories(spec: str, threads: list[str]) -> dict[str, list[Checkpoint]]:
    async with open_shared(spec) as source:
        return {thread: await source.list(thread) for thread in threads}


def test_two_replicas_racing_for_one_thread(shared: str, tmp_path: Path) -> None:
    """Two processes (asyncio and trio) resume the same unfinished thread at the same
    moment: exactly one runs it, the other gets ``ThreadBusy`` naming the thread; its
    pending calls ran once each."""
    anyio.run(seed, shared, ["race"], True)
    marks, go = tmp_path / "marks.txt", tmp_path / "go"
    racers = [
        start_worker(b, shared, marks, "race", str(go), "race", tool_seconds=0.5)
        for b in ("asyncio", "trio")
    ]
    try:
        for racer in racers:
            wait_ready(racer)
        go.touch()
        outcomes = []
        for racer in racers:
            out, err = racer.communicate(timeout=60)
            assert racer.returncode == 0, err
            outcomes.append(out.strip())
    finally:
        stop(racers)
    assert sorted(o.split(" ", 1)[0] for o in outcomes) == ["busy", "ran"]
    busy = next(o for o in outcomes if o.startswith("busy"))
    assert busy.startswith("busy thread 'race' is busy: run ")
    starts = Counter(d for what, _, d, _ in read_marks(marks) if what == "start")
    assert starts == Counter(f"race-c{n}" for n in range(4))


def wait_for_marks(
    marks: Path, enough: Callable[[list[tuple[str, str, str, int]]], bool], *alive: Any
) -> None:
    """Wait (polling the marks file another process appends to) until ``enough``."""
    deadline = time.monotonic() + 60
    while not enough(read_marks(marks)):
        for process in alive:
            assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, read_marks(marks)
        time.sleep(0.005)


@contextmanager
def paused(process: subprocess.Popen[str]) -> Iterator[None]:
    """``process`` stopped (SIGSTOP) for the block, then continued (SIGCONT)."""
    process.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        process.send_signal(signal.SIGCONT)


@attrs.frozen
class Pause:
    """What ``pause_while_another_resumes`` saw: each replica's pid and output (after
    ``ready``), the thread's checkpoints when the second one had exited, the marks."""

    first: int
    first_out: str
    second: int
    second_out: str
    history: list[Checkpoint]
    marks: list[tuple[str, str, str, int]]


def pause_while_another_resumes(spec: str, tmp_path: Path, backend: str, wait: float) -> Pause:
    """A thread with a pending batch of 4 calls (1 s each); replica A (on ``backend``)
    resumes it and, once its 4 calls started, is paused (SIGSTOP) while replica B (the
    other backend) resumes the same thread, waiting up to ``wait`` s for it, until B has
    exited; then A is continued (SIGCONT) until it exits."""
    anyio.run(seed, spec, ["race"], True)
    marks, go = tmp_path / "marks.txt", tmp_path / "go"
    other = "trio" if backend == "asyncio" else "asyncio"
    first = start_worker(backend, spec, marks, "race", str(go), "race", tool_seconds=1.0)
    workers = [first]
    try:
        wait_ready(first)
        go.touch()
        wait_for_marks(marks, lambda rows: sum(r[0] == "start" for r in rows) == 4, first)
        with paused(first):
            second = start_worker(other, spec, marks, "race", str(go), "race", wait=wait)
            workers.append(second)
            second_out, err = second.communicate(timeout=60)
            assert second.returncode == 0, err
            history = anyio.run(histories, spec, ["race"])["race"]
        first_out, err = first.communicate(timeout=60)
        assert first.returncode == 0, err
    finally:
        stop(workers)
    assert second_out.startswith("ready\n")
    return Pause(first.pid, first_out, second.pid, second_out[6:], history, read_marks(marks))


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_paused_replica_cannot_overwrite_the_thread_its_successor_finished(
    schema: str, tmp_path: Path, backend: str
) -> None:
    """Issue 18, with real processes and signals: replica A (on ``backend``) resumes a
    thread's batch and is paused with SIGSTOP mid-batch, past its 1.5 s lease; replica B
    (the other backend) waits for the lease to lapse, takes the thread over, finishes it
    and releases it; then A gets SIGCONT. A writes nothing over the finished thread: it
    ends with ``LeaseLost`` naming the thread; the thread stays finished, B's final
    checkpoint last, no checkpoint of A's after B's; A starts no call and asks no model
    after it resumes; the model was asked once in all, and a recovery pass finds nothing
    to resume (nothing runs twice)."""
    spec = f"postgres:{schema}"
    seen = pause_while_another_resumes(spec, tmp_path, backend, wait=30)
    assert seen.second_out.strip() == "ran"
    [stale_run] = [d for what, _, d, pid in seen.marks if what == "run" and pid == seen.first]
    assert seen.first_out.startswith(
        f"lost run {stale_run} lost thread 'race': another owner took it over"
    )
    after = anyio.run(histories, spec, ["race"])["race"]
    assert after == seen.history  # not one write of A's once B had finished
    assert after[-1].next == "end" and after[-1].run_id != stale_run
    runs = [c.run_id for c in after]
    assert stale_run not in runs[runs.index(after[-1].run_id) :]
    asked = [(what, pid) for what, *_, pid in seen.marks if what == "ask"]
    assert asked == [("ask", seen.second)]
    started = [pid for what, *_, pid in seen.marks if what == "start"]
    assert started.count(seen.first) == 4  # all before the pause
    assert anyio.run(unfinished_threads, spec) == []


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_paused_sqlite_holder_keeps_its_thread(tmp_path: Path, backend: str) -> None:
    """SQLite's claims are ``flock``s, which the kernel keeps while their process lives,
    even stopped: with replica A (on ``backend``) paused with SIGSTOP mid-batch, replica
    B (the other backend) cannot take the thread over (``ThreadBusy`` naming A's run,
    after waiting 1 s), so there is no stale owner to fence; after SIGCONT A finishes the
    run itself, each call run once."""
    spec = f"sqlite:{tmp_path / 'shared.db'}"
    seen = pause_while_another_resumes(spec, tmp_path, backend, wait=1.0)
    [holder_run] = [d for what, _, d, pid in seen.marks if what == "run" and pid == seen.first]
    assert seen.second_out.startswith(
        f"busy thread 'race' is busy: run {holder_run} (pid {seen.first}) owns it"
    )
    assert seen.first_out.strip() == "ran"
    starts = Counter(d for what, _, d, _ in seen.marks if what == "start")
    assert starts == Counter(f"race-c{n}" for n in range(4))
    assert anyio.run(histories, spec, ["race"])["race"][-1].next == "end"


async def unfinished_threads(spec: str) -> list[str]:
    async with open_shared(spec) as source:
        return [info.thread_id for info in await source.threads()]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_cancel_thread_from_another_process(shared: str, tmp_path: Path, backend: str) -> None:
    """``agent.cancel_thread`` in this process stops the run another process owns,
    within a bounded delay: that run ends as cancelled, keeping its two finished calls
    (in its ``RunCancelled`` and in the checkpoint); the two slow ones are not kept."""
    anyio.run(seed, shared, ["race"], True)
    marks, go = tmp_path / "marks.txt", tmp_path / "go"
    owner = start_worker(backend, shared, marks, "race", str(go), "race", slow="2,3")
    try:
        wait_ready(owner)
        go.touch()
        deadline = time.monotonic() + 30
        wanted = {("end", "race-c0"), ("end", "race-c1")}
        wanted |= {("start", "race-c2"), ("start", "race-c3")}
        while not wanted <= {(what, d) for what, _, d, _ in read_marks(marks)}:
            assert owner.poll() is None, owner.communicate()
            assert time.monotonic() < deadline, "the owner never ran its batch"
            time.sleep(0.01)
        asked = time.monotonic()
        assert anyio.run(cancel_thread, shared, "race", backend=backend) is True
        out, err = owner.communicate(timeout=30)
        assert time.monotonic() - asked < 10
    finally:
        stop([owner])
    assert owner.returncode == 0, err
    assert out.strip() == "cancelled race-c0,race-c1"
    latest = anyio.run(histories, shared, ["race"])["race"][-1]
    last = latest.state["messages"][-1]
    assert isinstance(last, ToolResponseMessage)
    assert [r.id for r in last.responses] == ["race-c0", "race-c1"]
    assert latest.next == "tools"  # resumable: only the two slow calls are missing


async def cancel_thread(spec: str, thread: str) -> bool:
    async with open_shared(spec) as target:
        return await ReactAgent("admin", ScriptedChatModel([]), saver=target).cancel_thread(thread)


# --- acceptance: many runs on one pool ------------------------------------------------


@pytest.fixture
async def small_pool(schema: str) -> AsyncIterator[PostgresSaver]:
    async with PostgresSaver(
        pg.DSN, schema=schema, lease_ttl=5.0, heartbeat=0.5, max_connections=4
    ) as opened:
        yield opened


async def test_100_concurrent_runs_share_a_small_pool(small_pool: PostgresSaver) -> None:
    """100 runs at once on a pool of 4 connections: all finish (no run holds a connection
    between operations, so none waits forever); then 100 runs cancelled mid-call return
    every connection and leave no lease behind."""
    saver = small_pool
    release = anyio.Event()

    @tool
    async def hold(n: int) -> str:
        """Wait for the test (the second round) or answer at once (the first)."""
        if n < 0:
            await release.wait()
        return f"held {n}"

    def reply(request: Any) -> Any:
        first = request.messages[0].text
        if isinstance(request.messages[-1], UserMessage):
            n = int(first.split()[1])
            return asks((f"c{n}", "hold", {"n": n}), (f"d{n}", "hold", {"n": n}))
        return AssistantMessage(f"answer {first}")

    agent = ReactAgent(
        "many",
        ScriptedChatModel([reply] * 1000),
        tools=[hold],
        parallel_tool_execution=True,
        max_parallel_tools=200,  # the node's limit is shared by the agent's runs
        saver=saver,
    )
    texts: list[str] = []

    async def one(n: int) -> None:
        texts.append((await agent.invoke(f"go {n}", RunnableConfig(thread_id=f"t{n}"))).text)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for n in range(100):
                tg.start_soon(one, n)
    assert sorted(texts) == sorted(f"answer go {n}" for n in range(100))

    started = 0
    all_started = anyio.Event()

    async def cancelled(n: int) -> None:
        nonlocal started
        config = RunnableConfig(thread_id=f"c{n}")
        async with agent.start(f"go {-n - 1}", config) as run, run.events() as events:
            async for event in events:
                if isinstance(event, ToolCallStarted):
                    started += 1
                    if started == 100:
                        all_started.set()
                    break
            if run.done:
                await run.result()  # it failed: say why
            await all_started.wait()
            await run.cancel()
            with pytest.raises(RunCancelled):
                await run.result()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for n in range(100):
                tg.start_soon(cancelled, n)
    assert saver.pool is not None
    stats = saver.pool.get_stats()
    assert stats.get("requests_waiting", 0) == 0
    assert stats["pool_available"] == stats["pool_size"]
    with psycopg.connect(pg.DSN) as conn:
        assert conn.execute(f'SELECT count(*) FROM "{saver.schema}".leases').fetchone() == (0,)
    assert len(await saver.threads(limit=1000)) == 100  # the cancelled ones, resumable


def take_over(schema: str, thread_id: str, thief: str) -> None:
    """What another replica's claim does to a lapsed lease, in one statement: a new
    owner and a new token (without waiting for the TTL, or racing the old keeper)."""
    with psycopg.connect(pg.DSN, autocommit=True) as conn:
        conn.execute(
            f'UPDATE "{schema}".leases SET owner = %s, holder = %s, token = '
            f"nextval(pg_get_serial_sequence('\"{schema}\".leases', 'token'))"
            " WHERE thread_id = %s",
            (thief, f"run {thief} (elsewhere)", thread_id),
        )


async def test_a_run_whose_lease_is_taken_over_ends_with_lease_lost(saver: PostgresSaver) -> None:
    """When another replica takes a run's lease over (its renewals came too late), the
    run stops at its next renewal and ends with ``LeaseLost`` naming the thread, not as
    cancelled: it must not go on beside the new owner, nor be resumed by its caller."""
    entered = anyio.Event()

    async def stuck(request: Any) -> AssistantMessage:
        entered.set()
        await anyio.sleep(60)
        raise AssertionError("not cancelled")  # pragma: no cover

    agent = ReactAgent("a", ScriptedChatModel([stuck]), saver=saver)
    with anyio.fail_after(10):
        async with agent.start("hi", RunnableConfig(thread_id="t")) as run:
            await entered.wait()
            await anyio.to_thread.run_sync(take_over, saver.schema, "t", "thief")
            with pytest.raises(LeaseLost) as lost:
                await run.result()
            assert await run.status() == "failed"
    assert lost.value.thread_id == "t"
    assert lost.value.owner == run.run_id
    assert str(lost.value).startswith(f"run {run.run_id} lost thread 't': another owner took")
    assert isinstance(lost.value, ThreadBusy)


async def test_a_stale_owner_writes_nothing_after_a_takeover(
    saver: PostgresSaver, schema: str
) -> None:
    """Fencing at the saver (issue 18): run A holds the lease and stalls (it stops
    renewing) past its TTL; replica B claims the thread, finishes it and releases it.
    Every write of A is refused by its stale token: ``put`` raises ``LeaseLost`` naming
    the thread and B (while B holds the thread) or the release (after), its renewal
    finds the lease lost, its release leaves B's lease alone; the thread stays finished,
    B's checkpoint last. A released or expired lease is no free pass for a stale token."""
    stalled = _RowLeases(saver)
    assert stalled.try_acquire("t", "run-A") is None  # A's claim, with no keeper: it stalls
    await saver.put("t", checkpoint(0, run_id="run-A"))  # A writes while it holds the thread
    with psycopg.connect(pg.DSN, autocommit=True) as conn:  # A's TTL passes
        conn.execute(f'UPDATE "{schema}".leases SET expires_at = clock_timestamp()')
    async with PostgresSaver(pg.DSN, schema=schema, lease_ttl=5.0, heartbeat=0.05) as other:
        async with other.claim("t", owner="run-B"):
            with pytest.raises(
                LeaseLost,
                match=r"run run-A lost thread 't': another owner took "
                r"it over \(run run-B \(",
            ):
                await saver.put("t", checkpoint(1, run_id="run-A"))
            assert await anyio.to_thread.run_sync(stalled.renew, "t", "run-A") == "lost"
            done = Checkpoint("t", OverAllState({"n": 2}), "end", 2, "run-B", created_at=2.0)
            await other.put("t", done)
        with pytest.raises(LeaseLost, match="it has since released the thread"):
            await saver.put("t", checkpoint(3, run_id="run-A"))
        async with other.claim("t", owner="run-C"):
            await anyio.to_thread.run_sync(stalled.release, "t", "run-A")  # not C's lease
            with pytest.raises(ThreadBusy, match="run run-C"):
                async with saver.claim("t", owner="run-D"):
                    pytest.fail("C's lease was released by A")  # pragma: no cover
    assert [(c.run_id, c.step) for c in await saver.list("t")] == [("run-A", 0), ("run-B", 2)]
    assert await saver.get("t") == done
    [info] = await saver.threads(status=None)
    assert (info.status, info.run_id) == ("finished", "run-B")


async def test_a_retried_put_stores_its_checkpoint_once(saver: PostgresSaver) -> None:
    """A ``put`` whose connection broke after the server stored it runs its statement
    again: the retry finds that very checkpoint stored (same record, run and step) and
    stores nothing twice; the thread goes on from it."""
    async with saver.claim("t", owner="run-t"):
        await saver.put("t", checkpoint(0))
        first, retry = await anyio.to_thread.run_sync(retry_put, saver, checkpoint(1))
        holder = "run run-t (" + saver._holder + ")"
        assert first == (True, True, holder, False)  # stored (its answer lost)
        assert retry == (True, False, holder, True)  # the thread moved on: by this very put
        await saver.put("t", checkpoint(2))
    assert [c.step for c in await saver.list("t")] == [0, 1, 2]


def retry_put(saver: PostgresSaver, stored: Checkpoint) -> tuple[Any, Any]:
    """The statement of ``put(stored)`` run twice: its first attempt, then its retry."""
    rows = write(saver._tables.take_head(stored.thread_id), stored)
    params = _put_params(rows, saver._token(stored.thread_id, stored.run_id))
    statement = saver._layout["put"]
    return tuple(  # type: ignore[return-value]
        saver._sync(lambda c: c.execute(statement, params).fetchone(), False) for _ in range(2)
    )


async def test_a_version_1_layout_is_upgraded(schema: str) -> None:
    """A schema at layout version 1 (no fencing tokens) is brought to the current version
    on first use; its lease rows get a token, and claims work on it."""
    with psycopg.connect(pg.DSN, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        for statement in _MIGRATIONS[0]:
            conn.execute(statement.replace("{s}", f'"{schema}"'))
        conn.execute(f'CREATE TABLE "{schema}".meta (version integer NOT NULL)')
        conn.execute(f'INSERT INTO "{schema}".meta VALUES (1)')
    leave_lease(schema, "old", "gone-run", -1.0)
    async with PostgresSaver(pg.DSN, schema=schema) as saver:
        with psycopg.connect(pg.DSN, autocommit=True) as conn:
            version = conn.execute(f'SELECT version FROM "{schema}".meta').fetchall()
            assert version == [(POSTGRES_SCHEMA,)]
            [(token,)] = conn.execute(f'SELECT token FROM "{schema}".leases').fetchall()
            assert isinstance(token, int)
        async with saver.claim("old", owner="new-run") as lease:
            await saver.put("old", checkpoint(0, "old", "new-run"))
            assert saver._token("old", "new-run") not in (None, token)
    assert lease.lost is None
    assert [c.run_id for c in await saver_list(schema, "old")] == ["new-run"]
    assert POSTGRES_SCHEMA == 4


async def saver_list(schema: str, thread_id: str) -> list[Checkpoint]:
    async with PostgresSaver(pg.DSN, schema=schema) as saver:
        return await saver.list(thread_id)


async def test_a_pool_of_your_own(schema: str) -> None:
    """``PostgresSaver(pool=...)`` works on a pool the caller made (not in autocommit
    mode) and leaves it open when the saver closes: the pool is the caller's."""
    from psycopg_pool import ConnectionPool

    pool = ConnectionPool(pg.DSN, min_size=1, max_size=2, open=False)
    await anyio.to_thread.run_sync(pool.open)
    try:
        async with PostgresSaver(pool=pool, schema=schema) as saver:
            await saver.put("t", checkpoint(0))
            await saver.put("t", checkpoint(1))
            assert [c.step for c in await saver.list("t")] == [0, 1]
        assert not pool.closed
        async with PostgresSaver(pool=pool, schema=schema) as again:
            assert await again.get("t") == checkpoint(1)
    finally:
        await anyio.to_thread.run_sync(pool.close)


# --- connections that die, a server that is gone --------------------------------------


def terminate_backends(application: str) -> int:
    """Terminate every server process of connections named ``application``; how many."""
    with psycopg.connect(pg.DSN, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = %s",
            (application,),
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("pool_kind", ["own", "yours"])
async def test_runs_survive_terminated_backends(schema: str, pool_kind: str) -> None:
    """Issue 18: 20 concurrent runs of two tool steps each; while all 20 wait in a tool,
    every server process of the saver's pool is terminated (``pg_terminate_backend``),
    once per step. Every run finishes. The saver's own pool (``own``) checks connections
    as they are taken out (the pool counts the lost ones); a pool of yours without that
    check (``yours``) gets there through the one retry of a statement whose connection
    broke (logged as ``postgres_connection_lost``)."""
    runs = 20
    application = f"rc_{uuid.uuid4().hex[:12]}"
    dsn = make_conninfo(pg.DSN, application_name=application)
    pool = None
    if pool_kind == "yours":
        pool = ConnectionPool(dsn, min_size=4, max_size=10, open=False)
        await anyio.to_thread.run_sync(pool.open)
    options: dict[str, Any] = {"schema": schema, "lease_ttl": 5.0, "heartbeat": 0.2}
    saver = PostgresSaver(pool=pool, **options) if pool else PostgresSaver(dsn, **options)
    go_on = [anyio.Event(), anyio.Event()]
    waiting = [0, 0]
    all_waiting = [anyio.Event(), anyio.Event()]

    @tool
    async def hold(n: int, step: int) -> str:
        """Wait in step ``step`` until the test has terminated the connections."""
        waiting[step] += 1
        if waiting[step] == runs:
            all_waiting[step].set()
        await go_on[step].wait()
        return f"held {n}"

    def reply(request: Any) -> AssistantMessage:
        n = int(request.messages[0].text.split()[1])
        step = sum(isinstance(m, ToolResponseMessage) for m in request.messages)
        if step < 2:
            return asks((f"c{n}-{step}", "hold", {"n": n, "step": step}))
        return AssistantMessage(f"answer {n}")

    agent = ReactAgent("a", ScriptedChatModel([reply] * 100), tools=[hold], saver=saver)
    texts: list[str] = []

    async def one(n: int) -> None:
        texts.append((await agent.invoke(f"go {n}", RunnableConfig(thread_id=f"t{n}"))).text)

    try:
        with capture_logs() as logs, anyio.fail_after(60):
            async with saver, anyio.create_task_group() as tg:
                for n in range(runs):
                    tg.start_soon(one, n)
                for step in range(2):
                    await all_waiting[step].wait()
                    assert await anyio.to_thread.run_sync(terminate_backends, application) >= 1
                    go_on[step].set()
                if pool is None:
                    assert saver.pool is not None
                    lost = saver.pool.get_stats().get("connections_lost", 0)
    finally:
        if pool is not None:
            await anyio.to_thread.run_sync(pool.close)
    assert sorted(texts) == sorted(f"answer {n}" for n in range(runs))
    if pool is None:
        assert lost >= 1
    else:
        assert any(e["event"] == "postgres_connection_lost" for e in logs)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_server_that_does_not_answer_is_saver_unavailable() -> None:
    """A DSN to a closed port: the first operation fails within ``connect_timeout`` with
    ``SaverUnavailable`` naming the server and the driver's reason (not a raw driver
    error, not ``PoolTimeout``), and so does a run on it; a bad thread id is a
    ``ValueError`` at once, before any I/O."""
    port = closed_port()
    saver = PostgresSaver(f"postgresql://postgres@127.0.0.1:{port}/test", connect_timeout=1.0)
    try:
        with anyio.fail_after(1):
            with pytest.raises(ValueError, match="thread id must be a non-empty str"):
                await saver.get("")
        started = anyio.current_time()
        with pytest.raises(SaverUnavailable) as gone:
            await saver.get("t")
        assert anyio.current_time() - started < 10
        assert gone.value.target == f"127.0.0.1:{port} database test"
        assert str(gone.value).startswith(
            f"PostgreSQL at 127.0.0.1:{port} database test cannot be reached: no connection "
            "within 1 s ("
        )
        assert "refused" in str(gone.value)
        agent = ReactAgent("a", ScriptedChatModel(["never"]), saver=saver)
        with pytest.raises(SaverUnavailable, match="cannot be reached"):
            await agent.invoke("hi", RunnableConfig(thread_id="t"))
    finally:
        await saver.aclose()


async def test_a_dropped_database_is_saver_unavailable(schema: str) -> None:
    """A saver whose database is dropped under it (its connections terminated): the next
    operation fails within about ``connect_timeout`` with ``SaverUnavailable`` saying
    that the database does not exist."""
    name = f"rc_gone_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg.DSN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        dsn = make_conninfo(pg.DSN, dbname=name)
        async with PostgresSaver(dsn, schema=schema, connect_timeout=2.0) as saver:
            await saver.put("t", checkpoint(0))
            with psycopg.connect(pg.DSN, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            started = anyio.current_time()
            with pytest.raises(SaverUnavailable, match=f'database "{name}" does not exist'):
                await saver.get("t")
            assert anyio.current_time() - started < 15
    finally:
        with psycopg.connect(pg.DSN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

"""Thread ownership: one live run per thread. A second run on a thread whose run is alive
fails at once with ``ThreadBusy`` naming the thread (or waits, when asked); the claim is
released when the run ends however it ends; SQLite claims hold across processes and die
with their process; ``cancel_thread`` stops the owning run, keeping its finished calls."""

from __future__ import annotations

import math
import os
import random
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from reactcore import (
    AgentResult,
    AssistantMessage,
    Checkpoint,
    MemorySaver,
    ModelRequest,
    ReactAgent,
    RunCancelled,
    RunnableConfig,
    SqliteSaver,
    ThreadBusy,
    ToolCallFinished,
    ToolCallStarted,
    ToolResponseMessage,
    UserMessage,
    check_thread_id,
    tool,
)
from reactcore._checkpoint import LeasingSaver, Saver
from reactcore.testing import ScriptedChatModel
from tests import pg
from tests.helpers import asks
from tests.test_savers import two_writers

pytestmark = pytest.mark.anyio

REPO = Path(__file__).parents[1]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def saver(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[LeasingSaver]:
    """Each saver in turn (SQLite on a fresh file, PostgreSQL in a fresh schema of the
    real server; closed, and the schema dropped, afterwards)."""
    if request.param == "memory":
        yield MemorySaver()
    elif request.param == "sqlite":
        async with SqliteSaver(tmp_path / "cp.db", cancel_poll=0.02) as sqlite_saver:
            yield sqlite_saver
    else:
        from reactcore.postgres import PostgresSaver

        with pg.fresh_schema() as schema:
            async with PostgresSaver(
                pg.DSN, schema=schema, lease_ttl=2.0, heartbeat=0.05, max_connections=4
            ) as pg_saver:
                yield pg_saver


class Gate:
    """A model reply that waits until the test opens the gate, then answers ``text``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.entered = anyio.Event()
        self.opened = anyio.Event()

    async def __call__(self, request: ModelRequest) -> AssistantMessage:
        self.entered.set()
        await self.opened.wait()
        return AssistantMessage(self.text)


async def test_a_second_invoke_on_a_busy_thread_fails_at_once(saver: LeasingSaver) -> None:
    """Two concurrent invokes on one thread: exactly one runs; the other raises
    ``ThreadBusy`` at once (while the first still runs), naming the thread and the owner.
    The saved history holds the one turn that ran, and nothing of the refused one."""
    gate = Gate("the answer")
    agent = ReactAgent("a", ScriptedChatModel([gate]), saver=saver)
    outcomes: list[AgentResult | ThreadBusy] = []
    refused = anyio.Event()

    async def invoke(text: str) -> None:
        try:
            outcomes.append(await agent.invoke(text, RunnableConfig(thread_id="t-1")))
        except ThreadBusy as exc:
            outcomes.append(exc)
            refused.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(invoke, "first")
            tg.start_soon(invoke, "second")
            await gate.entered.wait()
            await refused.wait()  # refused while the other run is still in its model call
            assert len(outcomes) == 1
            gate.opened.set()
    busy, result = outcomes
    assert isinstance(busy, ThreadBusy)
    assert isinstance(result, AgentResult)
    assert busy.thread_id == "t-1"
    assert str(busy).startswith("thread 't-1' is busy: run ")
    assert "pass RunnableConfig(wait_for_thread=seconds) to wait" in str(busy)
    latest = await saver.get("t-1")
    assert latest is not None
    texts = [m.text for m in latest.state["messages"]]
    assert len(texts) == 2 and texts[1] == "the answer" and texts[0] in ("first", "second")


async def test_the_thread_is_free_again_after_the_run_ends(saver: LeasingSaver) -> None:
    """Once a run has ended (its result seen, even inside ``start``'s block), the next run
    on the thread starts and sees the earlier turn."""
    agent = ReactAgent("a", ScriptedChatModel(["one", "two"]), saver=saver)
    config = RunnableConfig(thread_id="t")
    async with agent.start("hi", config) as run:
        assert (await run.result()).text == "one"
        second = await agent.invoke("again", config)  # the first block is still open
    assert second.text == "two"
    assert [m.text for m in second.messages] == ["hi", "one", "again", "two"]


async def test_the_claim_is_released_after_a_cancel(saver: LeasingSaver) -> None:
    """A run cancelled mid-call releases its thread (the release is shielded): the
    cancelled run can be resumed at once."""
    gate = Gate("never")
    agent = ReactAgent("a", ScriptedChatModel([gate, "resumed"]), saver=saver)
    config = RunnableConfig(thread_id="t")
    async with agent.start("hi", config) as run:
        await gate.entered.wait()
        await run.cancel()
        with pytest.raises(RunCancelled):
            await run.result()
    with anyio.fail_after(10):
        result = await agent.invoke(None, config)
    assert result.text == "resumed"


async def test_the_claim_is_released_after_leaving_the_block_early(saver: LeasingSaver) -> None:
    """Leaving ``start``'s block while the run waits cancels it from outside; the thread
    is free when the block is left."""
    gate = Gate("never")
    agent = ReactAgent("a", ScriptedChatModel([gate, "resumed"]), saver=saver)
    config = RunnableConfig(thread_id="t")
    async with agent.start("hi", config):
        await gate.entered.wait()
    assert (await agent.invoke(None, config)).text == "resumed"


async def test_the_claim_is_released_after_a_failure(saver: LeasingSaver) -> None:
    """A run that fails (the model raises) releases its thread: the next run resumes."""
    agent = ReactAgent("a", ScriptedChatModel([RuntimeError("model down"), "back"]), saver=saver)
    config = RunnableConfig(thread_id="t")
    with pytest.raises(RuntimeError, match="model down"):
        await agent.invoke("hi", config)
    assert (await agent.invoke(None, config)).text == "back"


async def test_wait_for_thread_waits_for_the_owner(saver: LeasingSaver) -> None:
    """With ``wait_for_thread``, the second run waits for the first to end, then runs
    after it: both turns are in the history, in order."""
    gate = Gate("first answer")
    agent = ReactAgent("a", ScriptedChatModel([gate, "second answer"]), saver=saver)
    results: list[AgentResult] = []

    async def second() -> None:
        config = RunnableConfig(thread_id="t", wait_for_thread=math.inf)
        results.append(await agent.invoke("second", config))

    with anyio.fail_after(10):
        async with (
            anyio.create_task_group() as tg,
            agent.start("first", RunnableConfig(thread_id="t")) as run,
        ):
            await gate.entered.wait()
            tg.start_soon(second)
            await anyio.sleep(0.1)  # the second run polls meanwhile
            assert results == []
            gate.opened.set()
            await run.result()
    assert [m.text for m in results[0].messages] == [
        "first",
        "first answer",
        "second",
        "second answer",
    ]


async def test_wait_for_thread_gives_up_after_its_delay(saver: LeasingSaver) -> None:
    """A run that waits a bounded time for a busy thread raises ``ThreadBusy`` after it."""
    gate = Gate("never")
    agent = ReactAgent("a", ScriptedChatModel([gate]), saver=saver)
    async with agent.start("first", RunnableConfig(thread_id="t")) as run:
        await gate.entered.wait()
        started = anyio.current_time()
        with pytest.raises(ThreadBusy, match="thread 't' is busy"):
            await agent.invoke("second", RunnableConfig(thread_id="t", wait_for_thread=0.2))
        assert anyio.current_time() - started >= 0.2
        await run.cancel()


async def test_runs_on_other_threads_or_without_a_thread_do_not_wait(
    saver: LeasingSaver,
) -> None:
    """Ownership is per thread: runs on another thread, and runs without a thread id (no
    claim at all), go on while a thread is owned."""
    gate = Gate("never")
    agent = ReactAgent("a", ScriptedChatModel([gate, "other", "none", "none again"]), saver=saver)
    async with agent.start("first", RunnableConfig(thread_id="t")) as run:
        await gate.entered.wait()
        assert (await agent.invoke("x", RunnableConfig(thread_id="u"))).text == "other"
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.invoke, "y")
            tg.start_soon(agent.invoke, "z")
        await run.cancel()


async def test_cancel_thread_stops_the_owning_run_keeping_finished_calls(
    saver: LeasingSaver,
) -> None:
    """``agent.cancel_thread`` (here from another agent object on the same saver) ends the
    owning run as cancelled; the call that had finished is in the checkpoint and is not
    run again on resume; only the cancelled call runs again."""
    ran: list[str] = []
    release = anyio.Event()

    @tool
    async def step(name: str) -> str:
        """Do one step (``slow`` waits until the test releases it)."""
        ran.append(name)
        if name == "slow":
            await release.wait()
        return f"{name} done"

    script: list[Any] = [
        asks(("c1", "step", {"name": "fast"}), ("c2", "step", {"name": "slow"})),
        "all done",
    ]
    model = ScriptedChatModel(script)
    agent = ReactAgent("a", model, tools=[step], parallel_tool_execution=True, saver=saver)
    other = ReactAgent("a", ScriptedChatModel([]), saver=saver)
    config = RunnableConfig(thread_id="t")
    assert await other.cancel_thread("t") is False  # nobody owns it yet
    with anyio.fail_after(10):
        async with agent.start("go", config) as run:
            async with run.events() as events:
                seen: set[tuple[type, str]] = set()
                async for event in events:
                    if isinstance(event, ToolCallStarted | ToolCallFinished):
                        seen.add((type(event), event.call_id))
                    if {(ToolCallFinished, "c1"), (ToolCallStarted, "c2")} <= seen:
                        break
            assert await _answered(saver) == ["c1"]
            assert await other.cancel_thread("t") is True
            with pytest.raises(RunCancelled) as cancelled:
                await run.result()
        last = cancelled.value.messages[-1]
        assert isinstance(last, ToolResponseMessage)
        assert [(r.id, r.response_data) for r in last.responses] == [("c1", "fast done")]
        release.set()
        result = await agent.invoke(None, config)
    assert result.text == "all done"
    assert sorted(ran) == ["fast", "slow", "slow"]


async def _answered(saver: Saver) -> list[str]:
    latest = await saver.get("t")
    last = latest.state["messages"][-1] if latest is not None else None
    return [r.id for r in last.responses] if isinstance(last, ToolResponseMessage) else []


async def test_threads_lists_unfinished_threads_in_pages(saver: LeasingSaver) -> None:
    """``threads()`` lists threads by status from their latest checkpoint, ordered by id,
    a page at a time (``after`` the last id of the previous page)."""
    agent = ReactAgent("a", ScriptedChatModel(["done"]), saver=saver)
    await agent.invoke("hi", RunnableConfig(thread_id="finished"))
    for name in ["u3", "u1", "u2"]:
        state = {"messages": [UserMessage("hi")]}
        await saver.put(name, _checkpoint(name, state))
    first = await saver.threads(limit=2)
    assert [(i.thread_id, i.status) for i in first] == [("u1", "unfinished"), ("u2", "unfinished")]
    rest = await saver.threads(after=first[-1].thread_id, limit=2)
    assert [i.thread_id for i in rest] == ["u3"]
    assert [i.thread_id for i in await saver.threads(status="finished")] == ["finished"]
    assert len(await saver.threads(status=None)) == 4
    with pytest.raises(ValueError, match="limit must be at least 1"):
        await saver.threads(limit=0)


def _checkpoint(thread_id: str, values: dict[str, Any]) -> Checkpoint:
    from reactcore import OverAllState

    return Checkpoint(thread_id, OverAllState(values), "model", 0, "r0")


class PlainSaver:
    """A user's saver with only the four ``Saver`` methods (no ``claim``)."""

    def __init__(self) -> None:
        self.inner = MemorySaver()
        self.get = self.inner.get
        self.put = self.inner.put
        self.list = self.inner.list
        self.delete = self.inner.delete


async def test_a_saver_without_claim_gets_ownership_in_this_process() -> None:
    """A saver that does not implement ``claim`` still has one live run per thread among
    the runs of this process, shared by every agent using that saver object."""
    plain: Any = PlainSaver()
    gate = Gate("never")
    first = ReactAgent("a", ScriptedChatModel([gate]), saver=plain)
    second = ReactAgent("b", ScriptedChatModel(["b answer"]), saver=plain)
    async with first.start("hi", RunnableConfig(thread_id="t")) as run:
        await gate.entered.wait()
        with pytest.raises(ThreadBusy, match="thread 't' is busy"):
            await second.invoke("hi", RunnableConfig(thread_id="t"))
        assert await second.cancel_thread("t") is True
        with pytest.raises(RunCancelled):
            await run.result()
    assert (await second.invoke("hi", RunnableConfig(thread_id="t2"))).text == "b answer"


def _step(step: int, run_id: str) -> Checkpoint:
    from reactcore import OverAllState

    state = OverAllState({"messages": [UserMessage(f"{run_id} {n}") for n in range(step)]})
    return Checkpoint("t", state, "model", step, run_id)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_no_saver_writes_into_a_thread_another_run_owns(tmp_path: Path, kind: str) -> None:
    """While run A owns thread ``t`` through one saver, a ``put`` of another run's
    checkpoint, through that saver or another one on the same store (another process,
    another replica), is refused with ``ThreadBusy`` naming A, and stores nothing: A's
    history goes on unbroken. Once A released the thread, the same ``put`` goes through,
    after A's last checkpoint. (Before, a second ``SqliteSaver`` wrote its checkpoint into
    the middle of A's history.)"""
    async with two_writers(kind, tmp_path) as (a, b):
        async with a.claim("t", owner="run-A"):
            await a.put("t", _step(1, "run-A"))
            for other in (b, a):
                with pytest.raises(ThreadBusy) as busy:
                    await other.put("t", _step(5, "run-B"))
                assert busy.value.thread_id == "t"
                assert busy.value.holder.startswith("run run-A")
            await a.put("t", _step(2, "run-A"))
            assert [(c.run_id, c.step) for c in await b.list("t")] == [("run-A", 1), ("run-A", 2)]
        await b.put("t", _step(5, "run-B"))
        assert [c.step for c in await a.list("t")] == [1, 2, 5]
        assert await a.get("t") == _step(5, "run-B")


HOLDER = """
import sys, time
import anyio
from reactcore import SqliteSaver

async def main(path):
    async with SqliteSaver(path) as saver:
        async with saver.claim("shared", owner="holder-run"):
            print("held", flush=True)
            await anyio.sleep(600)

anyio.run(main, sys.argv[1])
"""


async def test_sqlite_claims_hold_across_processes_and_die_with_the_holder(
    tmp_path: Path,
) -> None:
    """A thread claimed by another process is busy here (the error names the holder's
    run and pid); once that process is killed with SIGKILL, the thread is free at once
    (a file lock: the kernel drops it with its process)."""
    path = tmp_path / "cp.db"
    process = await anyio.open_process([sys.executable, "-c", HOLDER, str(path)], cwd=REPO)
    try:
        assert process.stdout is not None
        with anyio.fail_after(30):
            line = await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 100)
        assert line == b"held"
        async with SqliteSaver(path) as saver:
            with pytest.raises(ThreadBusy) as busy:
                async with saver.claim("shared", owner="me"):
                    pytest.fail("claimed a thread another process holds")
            assert busy.value.thread_id == "shared"
            assert busy.value.holder == f"run holder-run (pid {process.pid})"
            os.kill(process.pid, signal.SIGKILL)
            assert await process.wait() == -signal.SIGKILL
            with anyio.fail_after(5):
                async with saver.claim("shared", owner="me"):
                    assert await saver.request_cancel("shared") is True
            assert await saver.request_cancel("shared") is False
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.aclose()


async def test_a_cancel_request_racing_a_release_never_cancels_the_next_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``SqliteSaver.request_cancel`` finds run A owning the thread; before its request
    is written, A releases the thread and run B claims it (the test makes them, at that
    very point). The request was for A: B polls for cancel requests again and again and
    is never cancelled. (Before, the request was for the thread, and B took it.)"""
    from reactcore.savers._sqlite import _FileLeases

    async with SqliteSaver(tmp_path / "cp.db", cancel_poll=0.01) as saver:
        cancelled: list[str] = []
        owns = {"A": anyio.Event(), "B": anyio.Event()}
        leave = {"A": anyio.Event(), "B": anyio.Event()}
        a_left, b_polled = anyio.Event(), anyio.Event()
        polls_after_request: list[str] = []

        async def own(owner: str) -> None:
            def stop() -> None:
                cancelled.append(owner)

            async with saver.claim("t", owner=owner, wait=10, on_cancel=stop):
                owns[owner].set()
                await leave[owner].wait()
            if owner == "A":
                a_left.set()

        async def swap() -> None:  # A leaves, B claims the thread
            leave["A"].set()
            await a_left.wait()
            tg.start_soon(own, "B")
            await owns["B"].wait()

        real_cancel, real_renew = SqliteSaver._cancel, _FileLeases.renew

        def cancel(self: SqliteSaver, name: str, thread_id: str, *args: Any) -> Any:
            if name == "request_cancel":  # the request is about to be written
                anyio.from_thread.run(swap)
            return real_cancel(self, name, thread_id, *args)

        def renew(self: _FileLeases, thread_id: str, owner: str) -> Any:
            verdict = real_renew(self, thread_id, owner)
            if owner == "B" and requested:
                polls_after_request.append(verdict)
                if len(polls_after_request) == 3:
                    anyio.from_thread.run_sync(b_polled.set)
            return verdict

        monkeypatch.setattr(SqliteSaver, "_cancel", cancel)
        monkeypatch.setattr(_FileLeases, "renew", renew)
        requested = False
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(own, "A")
                await owns["A"].wait()
                assert await saver.request_cancel("t") is True  # A owned it, when asked
                requested = True
                await b_polled.wait()  # B looked for cancel requests three times since
                leave["B"].set()
    assert cancelled == []
    assert polls_after_request[:3] == ["held"] * 3


async def test_cancelled_while_waiting_leaves_no_claim(saver: LeasingSaver) -> None:
    """A run cancelled while it waits for a busy thread never owns it: once the owner
    ends, the thread is free."""
    gate = Gate("first")
    agent = ReactAgent("a", ScriptedChatModel([gate, "third"]), saver=saver)
    waiting = RunnableConfig(thread_id="t", wait_for_thread=math.inf)
    async with agent.start("one", RunnableConfig(thread_id="t")) as run:
        await gate.entered.wait()
        with anyio.move_on_after(0.1):
            await agent.invoke("two", waiting)
        gate.opened.set()
        await run.result()
    assert (await agent.invoke("three", RunnableConfig(thread_id="t"))).text == "third"


async def test_the_replicas_example_recovers_orphaned_runs(saver: LeasingSaver) -> None:
    """``examples/replicas.py``: replica B resumes the three runs replica A left
    unfinished (each ends with its answer, the call that had finished before the
    "crash" answered once) and skips the one still alive in A (``ThreadBusy``)."""
    sys.path.insert(0, str(REPO / "examples"))
    try:
        import replicas
    finally:
        sys.path.remove(str(REPO / "examples"))
    recovery = await replicas.demo(saver)
    assert recovery == replicas.Recovery(("order-1", "order-2", "order-3"), ("order-4",))
    for thread_id in recovery.resumed:
        latest = await saver.get(thread_id)
        assert latest is not None and latest.next == "end"
        messages = latest.state["messages"]
        assert messages[-1].text == f"{thread_id}: both items found"
        batches = [m for m in messages if isinstance(m, ToolResponseMessage)]
        answers = [r.id for m in batches for r in m.responses]
        assert answers == [f"{thread_id}-0", f"{thread_id}-1"]
    assert [i.thread_id for i in await saver.threads()] == ["order-4"]


async def test_misuse_is_a_value_error() -> None:
    """``cancel_thread`` needs a saver, and ``wait_for_thread`` cannot be negative: both
    are ``ValueError``s saying so."""
    agent = ReactAgent("a", ScriptedChatModel([]))
    with pytest.raises(ValueError, match="cancel_thread needs a saver"):
        await agent.cancel_thread("t")
    with pytest.raises(ValueError, match="wait_for_thread"):
        RunnableConfig(thread_id="t", wait_for_thread=-1)


# --- thread ids ---------------------------------------------------------------------------

RULE = (
    r"a thread id must be a non-empty str of valid Unicode \(no lone surrogates\), without "
    r"NUL characters, of at most 1024 bytes in UTF-8"
)


def _incompressible(size: int) -> str:
    """``size`` bytes of UTF-8 that no compression shrinks: random 3-byte characters."""
    draw = random.Random(size)
    chars = [
        chr(draw.choice([draw.randrange(0x800, 0xD800), draw.randrange(0xE000, 0xFFFE)]))
        for _ in range(size // 3)
    ]
    return "".join(chars) + "x" * (size % 3)


BAD_IDS = {
    "empty": ("", "got an empty string"),
    "NUL": ("a\x00b", "has a NUL at index 1"),
    "lone surrogate": ("ab\ud800", "has a lone surrogate at index 2"),
    "1025 ASCII bytes": ("x" * 1025, "has 1025 bytes"),
    "513 two-byte characters": ("é" * 513, "has 1026 bytes"),
    "10 kB incompressible": (_incompressible(10_016), "has 10016 bytes"),
}


@pytest.mark.parametrize("case", list(BAD_IDS))
async def test_every_saver_checks_thread_ids_before_any_io(saver: LeasingSaver, case: str) -> None:
    """Issue 18: one rule for thread ids in every saver (non-empty, valid Unicode without
    NUL, at most 1024 bytes in UTF-8): each method refuses a breaking id with a
    ``ValueError`` naming the rule and the problem (never a driver's ``DataError``,
    ``UnicodeEncodeError`` or an index-size error), and stores nothing; so does a run."""
    bad, problem = BAD_IDS[case]
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: saver.get(bad),
        lambda: saver.put(bad, _checkpoint(bad, {"n": 1})),
        lambda: saver.list(bad),
        lambda: saver.delete(bad),
        lambda: saver.request_cancel(bad),
        lambda: saver.threads(after=bad),
        lambda: ReactAgent("a", ScriptedChatModel(["no"]), saver=saver).invoke(
            "hi", RunnableConfig(thread_id=bad)
        ),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=RULE) as refused:
            await call()
        assert problem in str(refused.value)
        assert len(str(refused.value)) < 300  # a 10 kB id is not echoed whole
    with pytest.raises(ValueError, match=RULE):
        async with saver.claim(bad, owner="r"):
            pytest.fail("claimed a bad thread id")  # pragma: no cover
    assert await saver.threads(status=None) == []


async def test_the_longest_thread_id_works_in_every_saver(saver: LeasingSaver) -> None:
    """A thread id of exactly 1024 bytes of incompressible UTF-8 (the longest the rule
    allows, which PostgreSQL indexes) works end to end: a run, its checkpoint, the
    thread's listing, its deletion."""
    longest = _incompressible(1024)
    assert len(longest.encode()) == 1024
    agent = ReactAgent("a", ScriptedChatModel(["answer"]), saver=saver)
    assert (await agent.invoke("hi", RunnableConfig(thread_id=longest))).text == "answer"
    latest = await saver.get(longest)
    assert latest is not None and latest.thread_id == longest
    assert [i.thread_id for i in await saver.threads(status="finished")] == [longest]
    await saver.delete(longest)
    assert await saver.list(longest) == []


async def test_a_saver_of_your_own_gets_the_thread_id_rule() -> None:
    """A run on a saver that only has the four ``Saver`` methods checks the thread id
    too, before the saver is called at all; ``check_thread_id`` is public for such
    savers, and names a wrong type a ``TypeError``."""
    plain: Any = PlainSaver()
    touched: list[str] = []

    async def get(thread_id: str) -> Any:
        touched.append(thread_id)
        return None

    plain.get = get
    agent = ReactAgent("a", ScriptedChatModel(["no"]), saver=plain)
    with pytest.raises(ValueError, match=RULE):
        await agent.invoke("hi", RunnableConfig(thread_id="a\x00"))
    with pytest.raises(ValueError, match=RULE):
        await agent.cancel_thread("")
    assert touched == []
    assert check_thread_id("t-1") == "t-1"
    with pytest.raises(TypeError, match=RULE):
        check_thread_id(42)  # type: ignore[arg-type]

"""How many tool calls run at once: ``max_parallel_tools`` bounds one batch (one run), a
``tool_limiter`` the caller passes caps every run of the node together, per-resource
limiters add their own bound — in a fixed order, each taken once, never deadlocking."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from reactcore import (
    AgentToolNode,
    AssistantMessage,
    ReactAgent,
    Tool,
    ToolResponseMessage,
    tool,
)
from reactcore.models.scripted import ScriptedChatModel
from tests.helpers import answers, asks, call, calls_state
from tests.helpers import response_texts as texts

pytestmark = pytest.mark.anyio


class InFlight:
    """Counts the calls running at once, overall and per run (the ``run`` argument)."""

    def __init__(self) -> None:
        self.now: dict[str, int] = {}
        self.most: dict[str, int] = {}
        self.total = 0
        self.most_total = 0

    def enter(self, run: str) -> None:
        self.now[run] = self.now.get(run, 0) + 1
        self.most[run] = max(self.most.get(run, 0), self.now[run])
        self.total += 1
        self.most_total = max(self.most_total, self.total)

    def leave(self, run: str) -> None:
        self.now[run] -= 1
        self.total -= 1

    def holding(self, gate: anyio.Event) -> Tool:
        """A tool ``hold(run)`` that stays in flight until ``gate`` is set; answers ``run``."""

        async def hold(run: str) -> str:
            self.enter(run)
            try:
                await gate.wait()
            finally:
                self.leave(run)
            return run

        return Tool.from_function(hold)

    def passing(self, name: str, answer: str, limiter: Any = None) -> Tool:
        """A tool ``name(run)`` in flight across one checkpoint; answers ``answer``."""

        async def passing(run: str) -> str:
            self.enter(run)
            await anyio.lowlevel.checkpoint()
            self.leave(run)
            return answer

        return Tool.from_function(passing, name=name, limiter=limiter)


def batch(run: str, n: int, name: str = "hold") -> Any:
    return calls_state(*(call(f"{run}-{i}", name, run=run) for i in range(n)))


async def test_max_parallel_tools_bounds_each_batch_not_the_agent() -> None:
    """Two runs of one node, three calls each, ``max_parallel_tools=2``: each batch has at
    most 2 calls in flight and both batches run at the same time (4 at once) — the limit
    is per batch, not shared by every run of the agent."""
    flight = InFlight()
    gate = anyio.Event()
    hold = flight.holding(gate)

    node = AgentToolNode([hold], parallel_tool_execution=True, max_parallel_tools=2)
    results: dict[str, Any] = {}

    async def one(run: str) -> None:
        results[run] = await node(batch(run, 3))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "a")
            tg.start_soon(one, "b")
            await anyio.wait_all_tasks_blocked()
            assert flight.now == {"a": 2, "b": 2}
            gate.set()
    assert flight.most == {"a": 2, "b": 2} and flight.most_total == 4
    assert texts(results["a"]) == ["a"] * 3 and texts(results["b"]) == ["b"] * 3


@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "sequential"])
async def test_tool_limiter_caps_every_run_of_the_agent_together(parallel: bool) -> None:
    """``ReactAgent(tool_limiter=CapacityLimiter(3))``: four concurrent runs of one agent,
    two calls each, never have more than 3 calls in flight together, in both modes; every
    run still gets its answers."""
    flight = InFlight()
    gate = anyio.Event()
    hold = flight.holding(gate)

    def reply(request: Any) -> Any:
        last = request.messages[-1]
        if isinstance(last, ToolResponseMessage):
            return AssistantMessage("done")
        run = last.text
        return asks((f"{run}1", "hold", {"run": run}), (f"{run}2", "hold", {"run": run}))

    cap = anyio.CapacityLimiter(3)
    agent = ReactAgent(
        "a",
        ScriptedChatModel([reply] * 8),
        tools=[hold],
        parallel_tool_execution=parallel,
        max_parallel_tools=5,
        tool_limiter=cap,
    )
    answers: list[str] = []

    async def one(run: str) -> None:
        answers.append((await agent.invoke(run)).text)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for run in "wxyz":
                tg.start_soon(one, run)
            await anyio.wait_all_tasks_blocked()
            assert flight.total == 3 and cap.borrowed_tokens == 3
            gate.set()
    assert flight.most_total == 3
    assert answers == ["done"] * 4
    assert cap.borrowed_tokens == 0


@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "sequential"])
async def test_cap_that_is_also_a_tools_own_limiter_is_taken_once(parallel: bool) -> None:
    """The same one-token limiter passed as ``tool_limiter`` and ``@tool(limiter=)``: each
    call takes it once (a second acquire by the same task would raise RuntimeError, or wait
    for itself), so the calls run one at a time and all answer."""
    shared = anyio.CapacityLimiter(1)
    flight = InFlight()
    db = flight.passing("db", "row", limiter=shared)
    node = AgentToolNode(
        [db], parallel_tool_execution=parallel, max_parallel_tools=4, tool_limiter=shared
    )
    with anyio.fail_after(5):
        update = await node(batch("r", 4, "db"))
    assert texts(update) == ["row"] * 4
    assert flight.most_total == 1 and shared.borrowed_tokens == 0


async def test_per_batch_limits_resource_limiters_and_a_cap_never_deadlock() -> None:
    """Twenty concurrent batches mixing tools with a resource limiter (2) and plain tools,
    ``max_parallel_tools=2`` per batch and a cap of 3 over all: every call answers, the cap
    and the per-batch limit are never exceeded, every limiter is free at the end."""
    resource = anyio.CapacityLimiter(2)
    cap = anyio.CapacityLimiter(3)
    flight = InFlight()
    slow = flight.passing("slow", "s", limiter=resource)
    fast = flight.passing("fast", "f")
    node = AgentToolNode(
        [slow, fast], parallel_tool_execution=True, max_parallel_tools=2, tool_limiter=cap
    )
    results: list[list[str]] = []

    async def one(run: int) -> None:
        calls = [call(f"{run}-{i}", "slow" if i % 2 else "fast", run=str(run)) for i in range(4)]
        results.append(texts(await node(calls_state(*calls))))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for run in range(20):
                tg.start_soon(one, run)
    assert results == [["f", "s", "f", "s"]] * 20
    assert flight.most_total <= 3 and max(flight.most.values()) <= 2
    assert (cap.borrowed_tokens, resource.borrowed_tokens) == (0, 0)


async def test_waiting_for_the_cap_never_counts_against_the_timeout() -> None:
    """A call queued behind a busy cap for longer than its 50 ms timeout still runs and
    answers once the cap frees: the clock starts when the call runs."""
    cap = anyio.CapacityLimiter(1)
    gate = anyio.Event()

    @tool
    async def hog() -> str:
        await gate.wait()
        return "hogged"

    @tool(timeout=0.05)
    async def quick() -> str:
        return "quick"

    node = AgentToolNode([hog, quick], tool_limiter=cap)
    results: dict[str, Any] = {}

    async def one(name: str) -> None:
        results[name] = await node(calls_state(call(name, name)))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "hog")
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(one, "quick")
            await anyio.wait_all_tasks_blocked()
            await anyio.sleep(0.1)  # twice quick's timeout, spent in the queue
            assert "quick" not in results
            gate.set()
    assert texts(results["hog"]) == ["hogged"]
    assert texts(results["quick"]) == ["quick"]


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"max_tool_threads": 0}, ValueError, "max_tool_threads must be at least 1, got 0"),
        ({"max_parallel_tools": 0}, ValueError, "max_parallel_tools must be at least 1, got 0"),
        ({"tool_limiter": 5}, TypeError, "tool_limiter must be an anyio.CapacityLimiter"),
    ],
)
def test_limit_options_are_checked_when_the_agent_is_built(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    """A bad limit is a misuse error naming the option, raised by ``ReactAgent(...)``."""

    @tool
    def noop() -> None:
        return None

    with pytest.raises(error, match=message.replace("(", r"\(")):
        ReactAgent("a", ScriptedChatModel([]), tools=[noop], **options)


async def test_a_cap_that_is_one_tools_limiter_in_a_mixed_batch_never_deadlocks() -> None:
    """One batch (``max_parallel_tools=1``) mixes a tool whose own limiter is the shared
    one-token cap with plain tools: each call takes the cap at the same place in its order
    (after the batch slot), so no call holds the cap while waiting for the batch slot held
    by a call waiting for the cap. Every call answers."""
    shared = anyio.CapacityLimiter(1)
    flight = InFlight()
    db = flight.passing("db", "row", limiter=shared)
    free = flight.passing("free", "free")
    node = AgentToolNode(
        [db, free], parallel_tool_execution=True, max_parallel_tools=1, tool_limiter=shared
    )
    calls = [call(str(i), "db" if i % 2 else "free", run="r") for i in range(6)]
    with anyio.fail_after(5):
        update = await node(calls_state(*calls))
    assert texts(update) == ["free", "row"] * 3
    assert shared.borrowed_tokens == 0


@pytest.mark.usefixtures("scheduler_backend")
@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "sequential"])
async def test_one_limiter_shared_by_a_parent_and_its_subagent_never_deadlocks(
    parallel: bool,
) -> None:
    """One ``CapacityLimiter(1)`` as the ``tool_limiter`` of a parent and of the agent it
    calls through ``as_tool()``: the sub-agent's call holds the slot and lends it to the
    child's two calls, which take turns on it — the run finishes (before, the child's
    calls waited for the slot their caller held until the timeout). The parent's other
    call waits for the limiter, so at most one call works at a time over both agents."""
    shared = anyio.CapacityLimiter(1)
    flight = InFlight()
    leaf = flight.passing("leaf", "leaf")
    child_model = ScriptedChatModel(
        [asks(("k1", "leaf", {"run": "child"}), ("k2", "leaf", {"run": "child"})), answers]
    )
    child = ReactAgent(
        "helper", child_model, tools=[leaf], parallel_tool_execution=True, tool_limiter=shared
    )
    parent_model = ScriptedChatModel(
        [asks(("c1", "helper", {"input": "go"}), ("c2", "leaf", {"run": "parent"})), answers]
    )
    parent = ReactAgent(
        "boss",
        parent_model,
        tools=[child.as_tool(), leaf],
        parallel_tool_execution=parallel,
        tool_limiter=shared,
    )
    with anyio.fail_after(30):  # the calls' own timeout is 300 s: a deadlock fails here
        result = await parent.invoke("start")
    assert result.text == "leaf | leaf | leaf"
    assert flight.most_total == 1 and shared.borrowed_tokens == 0

"""What runs a batch: reactcore's ``AgentToolNode`` (sequential, or parallel under k) and
the seed baseline (``SeedToolNode``), each alone or inside an agent turn.

``Executor.prepare`` builds everything one run needs outside the timing and gives a
``Setup``: ``run()`` answers the batch (the responses in call order), ``settle()`` waits,
after the measurement, for work the run left behind (the seed's timed-out or abandoned
calls keep running in its pool).

With ``agent``, a run is a whole turn on ``ScriptedChatModel`` (a reply with the N calls,
then ``"done"``): for reactcore a ``ReactAgent.invoke``; for the seed, which has no agent
loop here, reactcore's ``AgentLlmNode``, then ``SeedToolNode``, then ``AgentLlmNode``
again — the same model work without the loop's hooks, events and checkpoints.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

import anyio
import anyio.to_thread
import attrs

from .. import _backends
from .._agent import ReactAgent
from .._config import RunnableConfig
from .._llm_node import AgentLlmNode
from .._messages import AssistantMessage, ToolResponse, ToolResponseMessage, UserMessage
from .._state import MESSAGES, OverAllState
from .._tool_node import AgentToolNode
from .._tools import Tool
from ..models.scripted import ScriptedChatModel
from .seed_baseline import SeedToolNode
from .workloads import Probe, Timing, Workload

FINAL_TEXT = "done"
SEQUENTIAL = "reactcore seq"
ANYIO = "reactcore par k=N, anyio"  # before the backend seam: the same batch on anyio
Engine = Literal["reactcore", "seed"]


@attrs.frozen
class Case:
    """One batch to run: the workload, N, its timing, and whether inside an agent turn."""

    workload: Workload
    n: int
    timing: Timing
    agent: bool = False


@attrs.frozen
class Setup:
    """One prepared run; see the module docstring. ``probe`` hears from its tools."""

    run: Callable[[], Awaitable[Sequence[ToolResponse]]]
    settle: Callable[[], Awaitable[None]]
    probe: Probe = attrs.field(factory=Probe)


@attrs.frozen
class Options:
    """How an executor runs the batch."""

    tools: Sequence[Tool]
    parallel: bool
    k: int
    timeout: float
    seed_pool: concurrent.futures.ThreadPoolExecutor
    portable: bool = False  # reactcore on anyio's backend, not the loop's native one


def _responses(messages: Sequence[Any]) -> Sequence[ToolResponse]:
    found = [m for m in messages if isinstance(m, ToolResponseMessage)]
    return found[-1].responses if found else ()


def _start_state(case: Case) -> OverAllState:
    calls = case.workload.calls(case.n)
    return OverAllState({MESSAGES: [UserMessage("go"), AssistantMessage("", calls)]})


def _script(case: Case) -> ScriptedChatModel:
    return ScriptedChatModel([AssistantMessage("", case.workload.calls(case.n)), FINAL_TEXT])


async def _nothing() -> None:
    await anyio.lowlevel.checkpoint()


def _on_backend(
    run: Callable[[], Awaitable[Sequence[ToolResponse]]], portable: bool
) -> Callable[[], Awaitable[Sequence[ToolResponse]]]:
    """``run`` on anyio's portable backend if ``portable`` (what releases before the
    backend seam ran), else as it is (the loop's native backend)."""
    if not portable:
        return run

    async def on_anyio() -> Sequence[ToolResponse]:
        with _backends.using(_backends.PORTABLE):
            return await run()

    return on_anyio


# --- reactcore ------------------------------------------------------------------------


def _reactcore_node(case: Case, opts: Options) -> Setup:
    node = AgentToolNode(
        opts.tools,
        parallel_tool_execution=opts.parallel,
        max_parallel_tools=opts.k,
        tool_execution_timeout=opts.timeout,
    )
    state = _start_state(case)

    async def run() -> Sequence[ToolResponse]:
        update = await node(state)
        return _responses(update[MESSAGES])

    return Setup(_on_backend(run, opts.portable), _nothing)


def _reactcore_agent(case: Case, opts: Options) -> Setup:
    agent = ReactAgent(
        "bench",
        _script(case),
        tools=opts.tools,
        parallel_tool_execution=opts.parallel,
        max_parallel_tools=opts.k,
        tool_execution_timeout=opts.timeout,
    )

    async def run() -> Sequence[ToolResponse]:
        result = await agent.invoke("go")
        if result.text != FINAL_TEXT:
            raise AssertionError(f"the agent turn ended with {result.text!r}")
        return _responses(result.messages)

    return Setup(_on_backend(run, opts.portable), _nothing)


# --- the seed baseline ------------------------------------------------------------------


@attrs.define(eq=False)
class _SeedDriver:
    """Drives ``SeedToolNode.apply`` from the event loop, in one worker thread."""

    node: SeedToolNode
    ended: threading.Event = attrs.field(factory=threading.Event)

    def _apply(self, state: OverAllState) -> dict[str, Any]:
        try:
            return self.node.apply(state)
        finally:
            self.ended.set()

    async def act(self, state: OverAllState) -> dict[str, Any]:
        # Cancelling abandons the thread: the seed's join() cannot be interrupted.
        return await anyio.to_thread.run_sync(self._apply, state, abandon_on_cancel=True)

    async def settle(self) -> None:
        await anyio.to_thread.run_sync(self.ended.wait)
        await anyio.to_thread.run_sync(self.node.wait_idle)


def _seed_driver(opts: Options) -> _SeedDriver:
    return _SeedDriver(SeedToolNode(opts.tools, opts.k, opts.timeout, executor=opts.seed_pool))


def _seed_node(case: Case, opts: Options) -> Setup:
    driver = _seed_driver(opts)
    state = _start_state(case)

    async def run() -> Sequence[ToolResponse]:
        update = await driver.act(state)
        return _responses([update[MESSAGES]])

    return Setup(run, driver.settle)


def _seed_agent(case: Case, opts: Options) -> Setup:
    driver = _seed_driver(opts)
    llm = AgentLlmNode(_script(case), agent_name="bench", tools=opts.tools)

    async def run() -> Sequence[ToolResponse]:
        config = RunnableConfig()
        state = OverAllState({MESSAGES: [UserMessage("go")]})
        state = state.merge(await llm(state, config))
        state = state.merge(await driver.act(state))
        state = state.merge(await llm(state, config))
        if state[MESSAGES][-1].text != FINAL_TEXT:
            raise AssertionError(f"the seed's turn ended with {state[MESSAGES][-1]!r}")
        return _responses(state[MESSAGES])

    return Setup(run, driver.settle)


_PREPARE: Mapping[tuple[Engine, bool], Callable[[Case, Options], Setup]] = {
    ("reactcore", False): _reactcore_node,
    ("reactcore", True): _reactcore_agent,
    ("seed", False): _seed_node,
    ("seed", True): _seed_agent,
}


# --- the executors compared -------------------------------------------------------------


@attrs.frozen
class Executor:
    """A way to run a batch, with its limit ``k`` for N calls under ``--max-parallel``."""

    name: str
    engine: Engine
    parallel: bool
    k_of: Callable[[int, int], int]
    portable: bool = False

    def k(self, n: int, max_parallel: int) -> int:
        return self.k_of(n, max_parallel)

    def concurrency(self, n: int, max_parallel: int, pool_size: int) -> int:
        """How many calls can run at once (the seed is also capped by its pool)."""
        cap = pool_size if self.engine == "seed" else n
        return max(1, min(n, self.k(n, max_parallel), cap))

    def prepare(
        self,
        case: Case,
        max_parallel: int,
        seed_pool: concurrent.futures.ThreadPoolExecutor,
    ) -> Setup:
        """Everything one run of ``case`` needs, built now (outside the timing)."""
        probe = Probe()
        tools = case.workload.tools(case.timing, probe)
        k = self.k(case.n, max_parallel)
        opts = Options(tools, self.parallel, k, case.timing.timeout, seed_pool, self.portable)
        setup = _PREPARE[self.engine, case.agent](case, opts)

        async def settle() -> None:
            probe.released.set()  # holding calls left running may now end
            await setup.settle()

        return Setup(setup.run, settle, probe)


EXECUTORS: tuple[Executor, ...] = (
    Executor(SEQUENTIAL, "reactcore", False, lambda n, k: 1),
    Executor("reactcore par", "reactcore", True, lambda n, k: k),
    Executor("reactcore par k=N", "reactcore", True, lambda n, k: n),
    Executor(ANYIO, "reactcore", True, lambda n, k: n, portable=True),
    Executor("seed baseline", "seed", True, lambda n, k: k),
)


def executors_for(n: int, max_parallel: int) -> list[Executor]:
    """The executors to compare at N: "k=N" on the native backend is left out when N
    equals ``--max-parallel`` (it is "reactcore par" then)."""
    return [e for e in EXECUTORS if not (e.name.endswith("k=N") and n == max_parallel)]

"""Benchmark: reactcore's tool execution against LangGraph, pydantic-ai and the OpenAI
Agents SDK, on asyncio only (the peers are asyncio-only; ``--backend`` is accepted and
ignored). Two tables, one run.

**Node level**: one batch of N tool calls (one assistant message) runs through each
executor alone:

- ``reactcore-par``: ``AgentToolNode(parallel_tool_execution=True, max_parallel_tools=N)``;
- ``reactcore-seq``: ``AgentToolNode()``, sequential (sync tools inline);
- ``langgraph``: ``ToolNode([...]).ainvoke({"messages": [AIMessage(tool_calls=...)]})``,
  which gathers the calls of the message; sync tools go to the loop's default executor
  (``min(32, cpus + 4)`` threads);
- ``langgraph-graph``: the same ``ToolNode`` as the one node of a compiled ``StateGraph``
  (``MessagesState``), as an application would run it;
- ``gather``: ``asyncio.gather`` of the bare coroutines (the floor); sync tools each in a
  thread of a dedicated ``ThreadPoolExecutor(N)``.

Columns: median wall time over the repeats, µs per call, ratio to ``gather``
(``×gather``) and, for ``reactcore-par``, ratio to ``langgraph`` (``rc/lg``). A run whose
ideal makespan exceeds the budget is skipped and listed as such.

**Agent level**: pydantic-ai and the Agents SDK have no tool executor to call alone, so
each framework's whole agent runs one turn, over a fake model and no network: the model's
first answer asks for N tool calls, its second is the final text. The same agent (same
tools, same fake model) also runs a turn whose first answer is the final text (no tool
call); the cost of the batch is the difference, and µs per call is that over N:

- ``reactcore-agent``: ``ReactAgent(parallel_tool_execution=True, max_parallel_tools=N)``
  over ``reactcore.testing.ScriptedChatModel``, ``invoke`` not streamed (the peers' runs do
  not stream either); sync tools on worker threads (``max(40, N)``);
- ``pydantic-ai``: ``pydantic_ai.Agent.run`` over ``FunctionModel`` (an async function
  returning ``ModelResponse(parts=[ToolCallPart, ...])`` then ``[TextPart]``, each with its
  usage so the test model does not estimate it); tools in the default ``parallel`` mode;
  sync tools on anyio worker threads (its default limiter: 40);
- ``openai-agents``: ``agents.Runner.run`` over a subclass of ``agents.models.interface.
  Model`` whose ``get_response`` returns ``ModelResponse(output=[ResponseFunctionToolCall,
  ...])`` then a ``ResponseOutputMessage``; tracing disabled (by default it exports spans
  over the network); sync tools through ``asyncio.to_thread`` (the loop's default
  executor, ``min(32, cpus + 4)`` threads).

The difference holds the N tool calls plus what one more loop iteration costs (the second
model request with N results in its history, one more step of the loop): that is what a
batch costs an agent, the same for every framework; amortised over N it weighs most at
N = 10. Each agent is built once per case and warmed up by one unmeasured run; the fake
answers are built before the clock starts. Per repeat the two runs are adjacent, and the
figure is the median of the paired differences (``batch ms``); ``run ms`` and ``empty ms``
are the medians of each. ``rc/peer`` is ``reactcore-agent``'s µs per call over the peer's.

Workloads: ``io`` (async tools awaiting ``asyncio.sleep(50 ms)``), ``overhead`` (async
no-ops: µs per call is the executor's own cost), ``blocking`` (sync tools
``time.sleep(50 ms)``: mostly measures each framework's thread pool). Each tool is defined
once per framework, in its own way (``reactcore.tool``, ``langchain_core.tools.tool``,
``pydantic_ai.Tool``, ``agents.function_tool``), around the same body. Every run counts
its answers (non-error responses; at agent level, also the final text); a case that lost
any is reported as such, not timed.

    python benchmarks/peers/bench_peers.py [--quick] [--repeat R] [--json PATH]
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import agents  # the OpenAI Agents SDK (openai-agents)
import anyio
import attrs
import pydantic_ai
from agents.models.interface import Model as AgentsModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool as lc_tool
from langgraph._internal._constants import CONFIG_KEY_RUNTIME
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

import reactcore
from reactcore import (
    AgentToolNode,
    AssistantMessage,
    OverAllState,
    ReactAgent,
    RunnableConfig,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)
from reactcore.testing import ScriptedChatModel

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import fmt, parse  # benchmarks/_common.py, shared with the other scripts

LATENCY = 0.05
Run = Callable[[], Awaitable[int]]  # one timed run; returns how many calls were answered


# --- the tool bodies, one per workload ---------------------------------------------------


async def io(i: int) -> str:
    """Wait 50 ms on the event loop."""
    await asyncio.sleep(LATENCY)
    return "ok"


async def overhead(i: int) -> str:
    """Do nothing."""
    return "ok"


def blocking(i: int) -> str:
    """Block its thread for 50 ms."""
    time.sleep(LATENCY)
    return "ok"


@attrs.frozen
class Workload:
    body: Callable[[int], Any]
    latency: float  # seconds one call takes alone
    sizes: tuple[int, ...]

    @property
    def name(self) -> str:
        return self.body.__name__

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.body)


@attrs.frozen
class Plan:
    io_sizes: tuple[int, ...]
    overhead_sizes: tuple[int, ...]
    blocking_sizes: tuple[int, ...]
    repeat: int
    budget: float  # seconds: a run whose ideal makespan exceeds this is skipped

    def workloads(self) -> list[Workload]:
        return [
            Workload(io, LATENCY, self.io_sizes),
            Workload(overhead, 0.0, self.overhead_sizes),
            Workload(blocking, LATENCY, self.blocking_sizes),
        ]


FULL = Plan((10, 100, 1_000), (10, 100, 1_000), (10, 100), repeat=5, budget=10)
QUICK = Plan((10, 100), (10, 100), (10,), repeat=3, budget=1)


# --- executors: each prepares (outside the timing) a run of N calls ----------------------


def reactcore_run(parallel: bool) -> Callable[[Workload, int], Run]:
    """A real ``AgentToolNode``: parallel with ``max_parallel_tools=N``, or sequential."""

    def prepare(w: Workload, n: int) -> Run:
        node = AgentToolNode(
            [reactcore.tool(w.body)], parallel_tool_execution=parallel, max_parallel_tools=n
        )
        calls = [ToolCall(f"c{i}", w.name, json.dumps({"i": i})) for i in range(n)]
        state = OverAllState({"messages": [UserMessage("go"), AssistantMessage("", calls)]})

        async def run() -> int:
            out = await node(state)
            return sum(not r.is_error for m in out["messages"] for r in m.responses)

        return run

    return prepare


def langgraph_run(in_graph: bool) -> Callable[[Workload, int], Run]:
    """The prebuilt ``ToolNode``: alone, or as the one node of a compiled ``StateGraph``.

    Alone, ``ainvoke`` needs the runtime a graph would give it (langgraph 1.2 raises
    "Missing required config key 'N/A' for 'tools'" without one): a default ``Runtime``.
    """

    def prepare(w: Workload, n: int) -> Run:
        node = ToolNode([lc_tool(w.body)])
        calls = [
            {"name": w.name, "args": {"i": i}, "id": f"c{i}", "type": "tool_call"} for i in range(n)
        ]
        state = {"messages": [AIMessage(content="", tool_calls=calls)]}
        if in_graph:
            builder = StateGraph(MessagesState)
            builder.add_node("tools", node)
            builder.add_edge(START, "tools")
            runnable: Any = builder.compile()
            config: dict[str, Any] = {}
        else:
            runnable, config = node, {"configurable": {CONFIG_KEY_RUNTIME: Runtime()}}

        async def run() -> int:
            out = await runnable.ainvoke(state, config)
            answers = [m for m in out["messages"] if isinstance(m, ToolMessage)]
            return sum(m.status != "error" for m in answers)

        return run

    return prepare


def gather_run(w: Workload, n: int) -> Run:
    """The floor: the bare coroutines gathered; sync bodies on a fresh pool of N threads."""

    async def run() -> int:
        if w.is_async:
            results = await asyncio.gather(*(w.body(i) for i in range(n)))
        else:
            loop = asyncio.get_running_loop()
            with ThreadPoolExecutor(n) as pool:
                results = await asyncio.gather(
                    *(loop.run_in_executor(pool, w.body, i) for i in range(n))
                )
        return sum(r == "ok" for r in results)

    return run


@attrs.frozen
class Executor:
    name: str
    prepare: Callable[[Workload, int], Run]
    sequential: bool = False

    def ideal(self, w: Workload, n: int) -> float:
        return (n if self.sequential else 1) * w.latency


EXECUTORS = (
    Executor("gather", gather_run),
    Executor("langgraph", langgraph_run(in_graph=False)),
    Executor("langgraph-graph", langgraph_run(in_graph=True)),
    Executor("reactcore-par", reactcore_run(parallel=True)),
    Executor("reactcore-seq", reactcore_run(parallel=False), sequential=True),
)


# --- agent level: a whole turn of each framework's agent, over a fake model --------------
#
# Each setup builds (outside the timing) one agent for the case, with a model that answers
# its first request with N tool calls (none when N is 0) and its second with FINAL. ``arm``
# prepares one run (outside the timing): the fake model's answers are built afresh.

FINAL = "done"
NO_STREAM = RunnableConfig(metadata={"_stream_": False})  # the peers' runs do not stream
Arm = Callable[[], Run]
AgentSetup = Callable[[Workload, int, int], Arm]  # (workload, N, runs) -> arm


def reactcore_agent(w: Workload, n: int, runs: int) -> Arm:
    """``ReactAgent.invoke`` over a ``ScriptedChatModel`` holding the answers of every run,
    parallel tools with ``max_parallel_tools=N``, not streamed."""
    calls = [ToolCall(f"c{i}", w.name, json.dumps({"i": i})) for i in range(n)]
    turn = [AssistantMessage("", calls)] if n else []
    model = ScriptedChatModel([*turn, AssistantMessage(FINAL)] * runs)
    agent = ReactAgent(
        "bench",
        model,
        tools=[reactcore.tool(w.body)],
        parallel_tool_execution=True,
        max_parallel_tools=max(n, 1),
    )

    async def run() -> int:
        result = await agent.invoke("go", NO_STREAM)
        if result.text != FINAL:
            return -1
        return sum(
            not r.is_error
            for m in result.messages
            if isinstance(m, ToolResponseMessage)
            for r in m.responses
        )

    return lambda: run


def pydantic_ai_agent(w: Workload, n: int, runs: int) -> Arm:
    """``pydantic_ai.Agent.run`` over a ``FunctionModel`` (its default parallel tool mode).

    The answers carry their usage, so ``FunctionModel`` does not estimate it by walking
    every message (a cost of the test model, not of the agent)."""
    answers: list[ModelResponse] = []

    async def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return answers.pop(0)

    agent = pydantic_ai.Agent(
        FunctionModel(answer), tools=[pydantic_ai.Tool(w.body, takes_ctx=False)]
    )

    def usage() -> RequestUsage:
        return RequestUsage(input_tokens=1, output_tokens=1)

    async def run() -> int:
        result = await agent.run("go")
        if result.output != FINAL:
            return -1
        return sum(
            isinstance(p, ToolReturnPart) and p.content == "ok"
            for m in result.new_messages()
            for p in m.parts
        )

    def arm() -> Run:
        calls = [ToolCallPart(w.name, {"i": i}, tool_call_id=f"c{i}") for i in range(n)]
        turn = [ModelResponse(parts=calls, usage=usage())] if n else []
        answers[:] = [*turn, ModelResponse(parts=[TextPart(FINAL)], usage=usage())]
        return run

    return arm


class FakeAgentsModel(AgentsModel):
    """The Agents SDK's ``Model`` interface answering from a list; no network."""

    def __init__(self) -> None:
        self.answers: list[agents.ModelResponse] = []

    async def get_response(self, *args: Any, **kwargs: Any) -> agents.ModelResponse:
        return self.answers.pop(0)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("Runner.run does not stream")


def openai_agents_agent(w: Workload, n: int, runs: int) -> Arm:
    """``agents.Runner.run`` over a fake ``Model``, tracing disabled (the default would
    export spans over the network); sync tools go to ``asyncio.to_thread``."""
    model = FakeAgentsModel()
    agent = agents.Agent(name="bench", model=model, tools=[agents.function_tool(w.body)])
    config = agents.RunConfig(tracing_disabled=True)

    def answer(output: list[Any]) -> agents.ModelResponse:
        return agents.ModelResponse(output=output, usage=agents.Usage(), response_id=None)

    async def run() -> int:
        result = await agents.Runner.run(agent, "go", run_config=config)
        if result.final_output != FINAL:
            return -1
        return sum(
            isinstance(item, agents.ToolCallOutputItem) and item.output == "ok"
            for item in result.new_items
        )

    def arm() -> Run:
        calls = [
            ResponseFunctionToolCall(
                id=f"c{i}",
                call_id=f"c{i}",
                type="function_call",
                name=w.name,
                arguments=json.dumps({"i": i}),
            )
            for i in range(n)
        ]
        text = ResponseOutputText(text=FINAL, type="output_text", annotations=[])
        final = ResponseOutputMessage(
            id="m", type="message", role="assistant", status="completed", content=[text]
        )
        model.answers[:] = [*([answer(calls)] if n else []), answer([final])]
        return run

    return arm


@attrs.frozen
class AgentExecutor:
    name: str
    setup: AgentSetup


AGENTS = (
    AgentExecutor("reactcore-agent", reactcore_agent),
    AgentExecutor("pydantic-ai", pydantic_ai_agent),
    AgentExecutor("openai-agents", openai_agents_agent),
)


# --- measuring ---------------------------------------------------------------------------


@attrs.frozen
class Row:
    workload: str
    n: int
    executor: str
    median_s: float | None  # None: skipped or lost answers (see note)
    vs_gather: float | None = None
    rc_vs_lg: float | None = None
    note: str = ""

    @property
    def median_ms(self) -> float | None:
        return None if self.median_s is None else self.median_s * 1e3

    @property
    def us_per_call(self) -> float | None:
        return None if self.median_s is None else self.median_s / self.n * 1e6


async def _time(run: Run) -> tuple[float, int]:
    gc.collect()
    start = time.perf_counter()
    answered = await run()
    return time.perf_counter() - start, answered


async def measure_case(w: Workload, n: int, plan: Plan) -> list[Row]:
    """All executors on one (workload, N), repeats interleaved so drift hits them alike."""
    runnable = [ex for ex in EXECUTORS if ex.ideal(w, n) <= plan.budget]
    samples: dict[str, list[float]] = {ex.name: [] for ex in runnable}
    fewest: dict[str, int] = {ex.name: n for ex in runnable}
    for _ in range(plan.repeat):
        for ex in runnable:
            elapsed, answered = await _time(ex.prepare(w, n))
            samples[ex.name].append(elapsed)
            fewest[ex.name] = min(fewest[ex.name], answered)
    medians = {name: statistics.median(s) for name, s in samples.items() if fewest[name] == n}
    rows = []
    for ex in EXECUTORS:
        m = medians.get(ex.name)
        if ex.name not in samples:
            note = f"skipped: ideal {ex.ideal(w, n):g} s > budget {plan.budget:g} s"
        elif m is None:
            note = f"LOST ANSWERS: {fewest[ex.name]}/{n} answered in the worst repeat"
        else:
            note = ""
        lg = medians.get("langgraph")
        rows.append(
            Row(
                w.name,
                n,
                ex.name,
                m,
                vs_gather=_ratio(m, medians.get("gather")),
                rc_vs_lg=_ratio(m, lg) if ex.name == "reactcore-par" else None,
                note=note,
            )
        )
    return rows


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


@attrs.frozen
class AgentRow:
    workload: str
    n: int
    executor: str
    run_s: float | None  # median of the runs with N calls
    empty_s: float | None  # median of the same agent's runs with none
    batch_s: float | None  # median of the paired differences: what the N calls cost
    rc_vs_peer: float | None = None  # reactcore-agent's µs/call over this peer's
    note: str = ""

    @property
    def us_per_call(self) -> float | None:
        return None if self.batch_s is None else self.batch_s / self.n * 1e6


def _ms(value: float | None) -> float | None:
    return None if value is None else value * 1e3


async def measure_agents(w: Workload, n: int, plan: Plan) -> list[AgentRow]:
    """Every agent on one (workload, N): per repeat, a run with N calls then a run of the
    same framework with none, adjacent; executors interleaved so drift hits them alike.
    One warm-up run of each first (schemas and caches built on first use)."""
    runs = plan.repeat + 1
    arms = {ex.name: (ex.setup(w, n, runs), ex.setup(w, 0, runs)) for ex in AGENTS}
    full: dict[str, list[float]] = {ex.name: [] for ex in AGENTS}
    empty: dict[str, list[float]] = {ex.name: [] for ex in AGENTS}
    wrong: dict[str, str] = {}
    for i in range(runs):
        for ex in AGENTS:
            with_calls, without = arms[ex.name]
            t_full, answered = await _time(with_calls())
            t_empty, answered_empty = await _time(without())
            if answered != n or answered_empty != 0:
                wrong[ex.name] = f"LOST ANSWERS: {answered}/{n} (empty run: {answered_empty})"
            if i:  # the first run of each is the warm-up
                full[ex.name].append(t_full)
                empty[ex.name].append(t_empty)
    per_call: dict[str, float] = {}
    rows = []
    for ex in AGENTS:
        if ex.name in wrong:
            rows.append(AgentRow(w.name, n, ex.name, None, None, None, note=wrong[ex.name]))
            continue
        diffs = [a - b for a, b in zip(full[ex.name], empty[ex.name], strict=True)]
        row = AgentRow(
            w.name,
            n,
            ex.name,
            statistics.median(full[ex.name]),
            statistics.median(empty[ex.name]),
            statistics.median(diffs),
        )
        per_call[ex.name] = row.batch_s / n  # type: ignore[operator]
        rows.append(row)
    rc = per_call.get("reactcore-agent")
    return [
        attrs.evolve(r, rc_vs_peer=_ratio(rc, per_call.get(r.executor)))
        if r.executor != "reactcore-agent"
        else r
        for r in rows
    ]


async def run_all(plan: Plan) -> tuple[list[Row], list[AgentRow]]:
    rows: list[Row] = []
    agent_rows: list[AgentRow] = []
    for w in plan.workloads():
        for n in w.sizes:
            rows += await measure_case(w, n, plan)
            agent_rows += await measure_agents(w, n, plan)
    return rows, agent_rows


# --- reporting ---------------------------------------------------------------------------


def print_table(rows: Sequence[Row]) -> None:
    head = (
        f"{'workload':<9} {'N':>5} {'executor':<15} {'median ms':>10} {'µs/call':>9} "
        f"{'×gather':>8} {'rc/lg':>6}  note"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r.workload:<9} {r.n:>5} {r.executor:<15} {fmt(r.median_ms, '.2f'):>10} "
            f"{fmt(r.us_per_call, '.2f'):>9} {fmt(r.vs_gather, '.2f'):>8} "
            f"{fmt(r.rc_vs_lg, '.2f'):>6}  {r.note}".rstrip()
        )


def print_agent_table(rows: Sequence[AgentRow]) -> None:
    head = (
        f"{'workload':<9} {'N':>5} {'executor':<15} {'run ms':>9} {'empty ms':>9} "
        f"{'batch ms':>9} {'µs/call':>9} {'rc/peer':>8}  note"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r.workload:<9} {r.n:>5} {r.executor:<15} {fmt(_ms(r.run_s), '.2f'):>9} "
            f"{fmt(_ms(r.empty_s), '.2f'):>9} {fmt(_ms(r.batch_s), '.2f'):>9} "
            f"{fmt(r.us_per_call, '.2f'):>9} {fmt(r.rc_vs_peer, '.2f'):>8}  {r.note}".rstrip()
        )


def versions() -> str:
    from importlib.metadata import version

    names = (
        "reactcore",
        "langgraph",
        "langgraph-prebuilt",
        "langchain-core",
        "pydantic-ai-slim",
        "openai-agents",
        "anyio",
    )
    found = ", ".join(f"{name} {version(name)}" for name in names)
    return f"python {sys.version.split()[0]}, {found}; asyncio"


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    print(versions())
    print(f"median of {plan.repeat}; latency {LATENCY * 1e3:g} ms; budget {plan.budget:g} s")
    print()
    agents.set_tracing_disabled(True)  # the Agents SDK exports spans over the network
    rows, agent_rows = anyio.run(run_all, plan, backend="asyncio")
    print("node level: one batch of N calls through the tool executor alone")
    print_table(rows)
    print()
    print(
        "agent level: (a turn with N calls - the same agent's turn with none) / N, "
        "median of paired differences"
    )
    print_agent_table(agent_rows)
    if args.json:
        data = [
            {"section": section} | attrs.asdict(r) | {"us_per_call": r.us_per_call}
            for section, part in (("node", rows), ("agent", agent_rows))
            for r in part
        ]
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)


if __name__ == "__main__":
    main()

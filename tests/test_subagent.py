"""Subagents (``agent.as_tool()``): a child agent run inside a tool call of its parent —
cancelled with the call (one call, the whole parent, the call's timeout) with its own
tools' cleanup done first; its events in the parent's stream tagged with their path; its
spans under the call's span; its usage in the parent's; its input typed; its pauses for
approval pausing the parent and its decisions given through the parent; and, with a
saver, resumed where it was after the parent's process was killed mid-child."""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from pathlib import Path
from typing import Any, TypedDict

import anyio
import attrs
import pytest

from reactcore import (
    Approve,
    AssistantMessage,
    Edit,
    HumanInTheLoopHook,
    Interrupt,
    MemorySaver,
    ModelCallFinished,
    ModelRequest,
    ReactAgent,
    Reject,
    Resume,
    RunCancelled,
    RunFinished,
    RunInterrupted,
    RunnableConfig,
    SqliteSaver,
    SubagentEvent,
    SummarizationHook,
    ToolCall,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallRequest,
    ToolCallResponse,
    ToolCallStarted,
    ToolCallTimedOut,
    ToolContext,
    ToolHandler,
    ToolResponseMessage,
    Usage,
    UserMessage,
    event_from_json,
    to_json,
    tool,
)
from reactcore._approval import outer_call, unscoped
from reactcore._config import THREAD_ID_MAX_BYTES, check_thread_id
from reactcore._subagent import child_thread_id
from reactcore.testing import ScriptedChatModel
from tests.helpers import answers, asks, kill_when, live_tasks, start_script
from tests.test_otel import Traces

pytestmark = pytest.mark.anyio

WAIT = 60  # seconds: the bound of every wait here (a loaded 2-core machine)
SCRIPT = Path(__file__).parent / "scripts" / "crash_subagent.py"


def two_jobs(request: ModelRequest) -> AssistantMessage:
    """A child's model: for task ``t``, two calls of ``work`` (``t-1``, ``t-2``); then the
    answers joined with `` + ``."""
    last = request.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return AssistantMessage(" + ".join(r.response_data for r in last.responses))
    task = last.text
    return asks(
        (f"{task}-1", "work", {"job": f"{task}-1"}), (f"{task}-2", "work", {"job": f"{task}-2"})
    )


class Work:
    """The child's tool: says it entered, waits for ``release``, records its cleanup."""

    def __init__(self) -> None:
        self.entered: defaultdict[str, anyio.Event] = defaultdict(anyio.Event)
        self.release = anyio.Event()
        self.stopped: list[str] = []

        @tool
        async def work(job: str) -> str:
            """Work on a job until released."""
            self.entered[job].set()
            try:
                await self.release.wait()
            finally:
                self.stopped.append(job)
            return f"{job} done"

        self.tool = work


def worker(work: Work, **options: Any) -> ReactAgent:
    """A child agent running two ``work`` calls in parallel per task."""
    model = ScriptedChatModel([two_jobs] * 12)
    return ReactAgent("worker", model, tools=[work.tool], parallel_tool_execution=True, **options)


def three_tasks_parent(child: ReactAgent, **options: Any) -> ReactAgent:
    calls = [(f"c{i}", "worker", {"input": task}) for i, task in enumerate("abc", 1)]
    model = ScriptedChatModel([asks(*calls), answers])
    return ReactAgent(
        "boss", model, tools=[child.as_tool()], parallel_tool_execution=True, **options
    )


async def all_children_working(event: Any, work: Work, seen: set[str], n: int) -> bool:
    """Count the children's ``work`` calls started; True once ``n`` have entered."""
    if isinstance(event, SubagentEvent) and isinstance(event.event, ToolCallStarted):
        seen.add(event.event.call_id)
        if len(seen) == n:
            for job in seen:
                await work.entered[job].wait()
            return True
    return False


# --- cancellation ---------------------------------------------------------------------


async def test_cancel_tool_stops_one_child_and_its_tools_while_the_others_finish() -> None:
    """Three children in parallel, each running two tools: ``cancel_tool`` on one stops
    that child and both its tools, whose ``finally`` has run by the parent's
    ``ToolCallCancelled``; the other two children are still working then, and finish."""
    work = Work()
    parent = three_tasks_parent(worker(work))
    seen: set[str] = set()
    with anyio.fail_after(WAIT):
        async with parent.start("go") as run, run.events() as events:
            async for event in events:
                if await all_children_working(event, work, seen, 6):
                    assert await run.cancel_tool("c2", "not needed") is True
                if isinstance(event, ToolCallCancelled):
                    assert (event.call_id, event.reason) == ("c2", "not needed")
                    assert sorted(work.stopped) == ["b-1", "b-2"]
                    work.release.set()
            result = await run.result()
    assert result.text == (
        "a-1 done + a-2 done | Error: Tool execution was cancelled by the caller: not needed"
        " | c-1 done + c-2 done"
    )
    assert sorted(work.stopped) == ["a-1", "a-2", "b-1", "b-2", "c-1", "c-2"]


async def test_cancelling_the_parent_cancels_every_child_and_leaves_no_task() -> None:
    """``run.cancel()`` on the parent while three children work: the parent raises
    ``RunCancelled``, every child tool's cleanup has run, and no task is left."""
    work = Work()
    parent = three_tasks_parent(worker(work))
    before = live_tasks()
    seen: set[str] = set()
    with anyio.fail_after(WAIT):
        async with parent.start("go") as run, run.events() as events:
            async for event in events:
                if await all_children_working(event, work, seen, 6):
                    assert await run.cancel() is True
            with pytest.raises(RunCancelled):
                await run.result()
    assert sorted(work.stopped) == ["a-1", "a-2", "b-1", "b-2", "c-1", "c-2"]
    assert live_tasks() == before


@pytest.mark.parametrize("where", ["parent", "as_tool"])
async def test_the_calls_timeout_bounds_the_child(where: str) -> None:
    """The parent's ``tool_execution_timeout`` (or ``as_tool(timeout=)``) stops the child
    run and its tools: the parent gets the timeout answer, the tools' cleanup ran."""
    work = Work()
    child = worker(work)
    subagent = child.as_tool(timeout=0.3) if where == "as_tool" else child.as_tool()
    model = ScriptedChatModel([asks(("c1", "worker", {"input": "a"})), answers])
    limit = 300.0 if where == "as_tool" else 0.3
    parent = ReactAgent("boss", model, tools=[subagent], tool_execution_timeout=limit)
    with anyio.fail_after(WAIT):
        async with parent.start("go") as run, run.events() as events:
            ends = [e async for e in events if isinstance(e, ToolCallTimedOut | ToolCallFinished)]
            result = await run.result()
    assert ends == [ToolCallTimedOut("c1", "worker", 0.3)]
    assert result.text == "Error: Tool execution timed out after 0.3s (tool 'worker')"
    assert sorted(work.stopped) == ["a-1", "a-2"]


# --- events, spans, usage ---------------------------------------------------------------


@tool
async def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


def nested_agents(**top_options: Any) -> tuple[ReactAgent, ReactAgent, ReactAgent]:
    """top → c1: ``planner`` (mid) → m1: ``weather`` (leaf) → w1: ``lookup``."""
    leaf = ReactAgent(
        "weather",
        ScriptedChatModel([asks(("w1", "lookup", {"city": "Oslo"})), "Oslo is sunny"]),
        tools=[lookup],
    )
    mid = ReactAgent(
        "planner",
        ScriptedChatModel([asks(("m1", "weather", {"input": "Oslo?"})), "Go to Oslo"]),
        tools=[leaf.as_tool()],
    )
    top = ReactAgent(
        "top",
        ScriptedChatModel([asks(("c1", "planner", {"input": "Where to?"})), answers]),
        tools=[mid.as_tool()],
        **top_options,
    )
    return top, mid, leaf


async def test_child_events_reach_the_parent_tagged_with_their_path() -> None:
    """Two levels deep: the parent's stream has the mid agent's events under path
    ``[c1 → planner run]`` and the leaf's under ``[c1 → planner run, m1 → weather run]``,
    each child's events between the ``ToolCallStarted`` and ``ToolCallFinished`` of the
    call that runs it, ending with its ``RunFinished``; every one survives JSON."""
    top, _, _ = nested_agents()
    with anyio.fail_after(WAIT):
        async with top.stream("go") as stream:
            events = [e async for e in stream]
    tops = [e for e in events if not isinstance(e, SubagentEvent)]
    assert isinstance(tops[-1], RunFinished) and tops[-1].result.text == "Go to Oslo"
    started = events.index(ToolCallStarted("c1", "planner", '{"input": "Where to?"}'))
    finished = next(i for i, e in enumerate(events) if isinstance(e, ToolCallFinished))
    nested = [e for e in events if isinstance(e, SubagentEvent)]
    assert nested == events[started + 1 : finished]
    mid_runs = {e.path[0] for e in nested}
    assert len(mid_runs) == 1
    (mid_run,) = mid_runs
    assert (mid_run.call_id, mid_run.agent) == ("c1", "planner")
    mid_events = [e.event for e in nested if len(e.path) == 1]
    leaf_events = [e for e in nested if len(e.path) == 2]
    assert {e.path[1].call_id for e in leaf_events} == {"m1"}
    assert {e.path[1].agent for e in leaf_events} == {"weather"}
    assert len({e.path[1].run_id for e in leaf_events}) == 1
    assert isinstance(mid_events[-1], RunFinished)
    assert mid_events[-1].result.text == "Go to Oslo"
    assert isinstance(leaf_events[-1].event, RunFinished)
    assert leaf_events[-1].event.result.text == "Oslo is sunny"
    # The leaf's events come between the mid agent's start and end of call m1.
    m1_start = nested.index(
        SubagentEvent((mid_run,), ToolCallStarted("m1", "weather", '{"input": "Oslo?"}'))
    )
    m1_end = next(
        i
        for i, e in enumerate(nested)
        if e.path == (mid_run,) and isinstance(e.event, ToolCallFinished)
    )
    assert [e for e in nested[m1_start + 1 : m1_end]] == leaf_events
    assert ToolCallStarted("w1", "lookup", '{"city": "Oslo"}') in [e.event for e in leaf_events]
    for event in events:
        data = json.loads(json.dumps(to_json(event)))
        assert event_from_json(data) == event
    assert to_json(leaf_events[0])["path"] == [
        {"call_id": "c1", "agent": "planner", "run_id": mid_run.run_id},
        {"call_id": "m1", "agent": "weather", "run_id": leaf_events[0].path[1].run_id},
    ]


async def test_child_spans_nest_under_the_calls_span() -> None:
    """With tracing on the parent only: each child's ``invoke_agent`` span is a child of
    the ``execute_tool`` span of the call that ran it, its own spans under it."""
    traces = Traces()
    try:
        top, _, _ = nested_agents(tracer_provider=traces.provider)
        with anyio.fail_after(WAIT):
            await top.invoke("go")
        top_run = traces.named("invoke_agent top")
        assert [s.name for s in traces.children(top_run)] == [
            "chat",
            "execute_tool planner",
            "chat",
        ]
        planner_call = traces.named("execute_tool planner")
        (mid_run,) = traces.children(planner_call)
        assert mid_run.name == "invoke_agent planner"
        assert [s.name for s in traces.children(mid_run)] == [
            "chat",
            "execute_tool weather",
            "chat",
        ]
        (leaf_run,) = traces.children(traces.named("execute_tool weather"))
        assert leaf_run.name == "invoke_agent weather"
        assert [s.name for s in traces.children(leaf_run)] == [
            "chat",
            "execute_tool lookup",
            "chat",
        ]
        assert traces.opened.open == {}
    finally:
        traces.provider.shutdown()


@attrs.frozen
class Verdict:
    ok: bool
    reason: str


async def test_usage_adds_up_and_structured_output_is_the_json_answer() -> None:
    """The child's usage is added to the parent's (the parent's own ``ModelCallFinished``
    still report its own calls only); a child with ``output_type`` answers with the JSON
    of its output."""
    child = ReactAgent(
        "judge",
        ScriptedChatModel(['{"ok": true, "reason": "fine"}'], usage=Usage(1, 2, 3)),
        output_type=Verdict,
    )
    model = ScriptedChatModel(
        [asks(("c1", "judge", {"input": "ok?"})), answers], usage=Usage(10, 20, 30)
    )
    parent = ReactAgent("boss", model, tools=[child.as_tool()])
    with anyio.fail_after(WAIT):
        async with parent.stream("go") as stream:
            events = [e async for e in stream]
    result = events[-1].result
    assert json.loads(result.text) == {"ok": True, "reason": "fine"}
    assert result.usage == Usage(21, 42, 63)
    own = [e.usage for e in events if isinstance(e, ModelCallFinished)]
    assert own == [Usage(10, 20, 30), Usage(10, 20, 30)]
    (child_finished,) = [
        e.event
        for e in events
        if isinstance(e, SubagentEvent) and isinstance(e.event, ModelCallFinished)
    ]
    assert child_finished.usage == Usage(1, 2, 3)


# --- input ------------------------------------------------------------------------------


@attrs.frozen
class Trip:
    city: str
    nights: int


@dataclasses.dataclass
class Stay:
    hotel: str
    nights: int = 1


class Visit(TypedDict):
    city: str
    days: int


@pytest.mark.parametrize(
    ("input_type", "arguments", "task"),
    [
        (None, {"input": "plan Oslo"}, "plan Oslo"),
        (Trip, {"city": "Oslo", "nights": 2}, '{"city": "Oslo", "nights": 2}'),
        (Stay, {"hotel": "Grand"}, '{"hotel": "Grand", "nights": 1}'),
        (Visit, {"city": "Oslo", "days": 3}, '{"city": "Oslo", "days": 3}'),
    ],
)
async def test_the_input_is_the_tools_parameters_and_the_childs_first_message(
    input_type: Any, arguments: dict[str, Any], task: str
) -> None:
    """By default the tool takes one ``input`` string, the child's first message; with
    ``input=`` a class with fields, the tool's parameters are its fields and the child's
    first message is the value's JSON. Arguments that do not fit answer the model with
    the error, and the child never runs."""
    model = ScriptedChatModel(["planned"])
    child = ReactAgent("planner", model)
    subagent = child.as_tool(input=input_type, description="Plan a trip.")
    assert subagent.description == "Plan a trip."
    assert subagent.parameters["type"] == "object"
    assert set(subagent.parameters["required"]) <= set(arguments)
    assert set(subagent.parameters["properties"]) >= set(arguments)
    bad = {k: 5 if isinstance(v, str) else "5" for k, v in arguments.items()}
    calls = asks(("good", "planner", arguments), ("bad", "planner", bad))
    parent = ReactAgent("boss", ScriptedChatModel([calls, answers]), tools=[subagent])
    with anyio.fail_after(WAIT):
        result = await parent.invoke("go")
    good, wrong = result.text.split(" | ")
    assert good == "planned"
    assert wrong.startswith("Error: invalid arguments for tool 'planner': expected ")
    (request,) = model.requests
    assert list(request.messages) == [UserMessage(task)]


def test_as_tool_refuses_bad_options_naming_them() -> None:
    """``as_tool`` checks its options where they are given: the type of each, an input
    without fields, and an agent name no provider takes as a tool name."""
    agent = ReactAgent("helper", ScriptedChatModel([]))
    assert agent.as_tool().name == "helper"
    assert "helper" in agent.as_tool().description
    with pytest.raises(TypeError, match="as_tool: name must be"):
        agent.as_tool(name=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="as_tool: description must be"):
        agent.as_tool(description=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="as_tool: input must be a type"):
        agent.as_tool(input="Trip")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a class with fields"):
        agent.as_tool(input=int)
    with pytest.raises(TypeError, match="timeout must be a number"):
        agent.as_tool(timeout="5s")  # type: ignore[arg-type]
    spaced = ReactAgent("my helper", ScriptedChatModel([]))
    with pytest.raises(ValueError, match=r"tool name 'my helper'.*as_tool\(name=\.\.\.\)"):
        spaced.as_tool()
    assert spaced.as_tool(name="my_helper").name == "my_helper"


# --- approval ----------------------------------------------------------------------------


class Mail:
    """A ``send_email`` tool that records what it sent, and a mailer agent asking for it."""

    def __init__(self) -> None:
        self.sent: list[str] = []

        @tool
        def send_email(to: str) -> str:
            """Send an email."""
            self.sent.append(to)
            return f"sent to {to}"

        self.tool = send_email

    def mailer(self, *, saver: Any = None) -> ReactAgent:
        def final(request: ModelRequest) -> AssistantMessage:
            return AssistantMessage(f"mailer: {answers(request).text}")

        model = ScriptedChatModel([asks(("m1", "send_email", {"to": "ana"})), final])
        return ReactAgent(
            "mailer",
            model,
            tools=[self.tool],
            hooks=[HumanInTheLoopHook(["send_email"])],
            saver=saver if saver is not None else MemorySaver(),
        )


async def test_approval_inside_a_child_pauses_the_parent_and_resumes_through_it() -> None:
    """A child paused for approval pauses its parent: the parent's result is interrupted
    with the child's call listed as ``c1/m1`` (its sibling call answered and kept), the
    last event ``RunInterrupted`` after the child's own. A bad edit is refused while the
    run stays paused; approving through the parent runs the child's call, once, and both
    runs finish; the sibling does not run again."""
    mail = Mail()
    notes: list[str] = []

    @tool
    def note(text: str) -> str:
        """Take a note."""
        notes.append(text)
        return "noted"

    calls = asks(("c1", "mailer", {"input": "mail ana"}), ("c2", "note", {"text": "hi"}))
    model = ScriptedChatModel([calls, answers])
    parent = ReactAgent("boss", model, tools=[mail.mailer().as_tool(), note], saver=MemorySaver())
    with anyio.fail_after(WAIT):
        async with parent.start("go", RunnableConfig(thread_id="t")) as run:
            async with run.events() as events:
                first = [e async for e in events]
            paused = await run.result()
            assert await run.status() == "interrupted"
            waiting = ToolCall("c1/m1", "send_email", '{"to": "ana"}')
            assert paused.interrupt.calls == (waiting,)
            assert isinstance(first[-1], RunInterrupted) and first[-1].calls == (waiting,)
            child_pause = [e for e in first if isinstance(e, SubagentEvent)][-1]
            assert isinstance(child_pause.event, RunInterrupted)
            assert child_pause.event.calls == (ToolCall("m1", "send_email", '{"to": "ana"}'),)
            ended = [e.call_id for e in first if isinstance(e, ToolCallFinished)]
            assert ended == ["c2"]  # the paused call has no end in this leg
            assert (mail.sent, notes) == ([], ["hi"])
            with pytest.raises(ValueError, match="invalid arguments for tool 'send_email'"):
                await run.resume(Resume({"c1/m1": Edit({"to": 5})}))
            assert await run.status() == "interrupted"
            await run.resume(Resume({"c1/m1": Approve()}))
            result = await run.result()
    assert result.status == "finished"
    assert result.text == "mailer: sent to ana | noted"
    assert (mail.sent, notes) == (["ana"], ["hi"])


async def test_a_rejection_reaches_the_child_through_invoke() -> None:
    """Resumed with ``agent.invoke(Resume(...), config)`` (a new run of the thread): the
    rejection reaches the child, whose model reads it; the call never runs. Calls left
    out of the ``Resume`` pause again."""
    mail = Mail()
    model = ScriptedChatModel([asks(("c1", "mailer", {"input": "mail ana"})), answers])
    parent = ReactAgent("boss", model, tools=[mail.mailer().as_tool()], saver=MemorySaver())
    config = RunnableConfig(thread_id="t")
    with anyio.fail_after(WAIT):
        paused = await parent.invoke("go", config)
        again = await parent.invoke(Resume({}), config)
        assert again.status == "interrupted"
        assert again.interrupt.calls == paused.interrupt.calls
        result = await parent.invoke(Resume({"c1/m1": Reject("not today")}), config)
    assert result.text == "mailer: not today"
    assert mail.sent == []


async def test_approval_two_levels_down() -> None:
    """A grandchild's pause is listed as ``c1/x1/m1`` at the top, and an edit given
    there reaches it (checked against the grandchild's tool first)."""
    mail = Mail()
    mid = ReactAgent(
        "office",
        ScriptedChatModel([asks(("x1", "mailer", {"input": "mail ana"})), answers]),
        tools=[mail.mailer().as_tool()],
    )
    model = ScriptedChatModel([asks(("c1", "office", {"input": "deal with mail"})), answers])
    top = ReactAgent("boss", model, tools=[mid.as_tool()], saver=MemorySaver())
    config = RunnableConfig(thread_id="t")
    with anyio.fail_after(WAIT):
        paused = await top.invoke("go", config)
        assert [c.id for c in paused.interrupt.calls] == ["c1/x1/m1"]
        with pytest.raises(ValueError, match="invalid arguments for tool 'send_email'"):
            await top.invoke(Resume({"c1/x1/m1": Edit('{"to": 1}')}), config)
        result = await top.invoke(Resume({"c1/x1/m1": Edit({"to": "bo"})}), config)
    assert result.text == "mailer: sent to bo"
    assert mail.sent == ["bo"]


async def test_a_child_cannot_pause_a_parent_without_checkpoints() -> None:
    """A child that pauses while its parent keeps no checkpoints: the parent's model is
    told why (give the parent a saver and a thread), and the run goes on."""
    mail = Mail()
    model = ScriptedChatModel([asks(("c1", "mailer", {"input": "mail ana"})), answers])
    parent = ReactAgent("boss", model, tools=[mail.mailer().as_tool()])
    with anyio.fail_after(WAIT):
        result = await parent.invoke("go")
    assert result.status == "finished"
    assert "keeps no checkpoints to pause in" in result.text
    assert mail.sent == []


# --- what subagents are built on, open to any tool ---------------------------------------


async def test_any_tool_may_pause_the_run_and_read_its_decisions() -> None:
    """A plain tool answering ``ToolCallResponse(interrupt=...)`` pauses the run (its
    call scoped under the call's id) and runs again on resume, its ``context.decisions``
    the decisions for it with the scope taken off; an empty interrupt is refused."""
    runs: list[Any] = []

    @tool
    async def pay(amount: int, context: ToolContext) -> Any:
        """Pay, once a human confirmed."""
        runs.append(context.decisions)
        if context.decisions is None:
            confirm = ToolCall("ok", "confirm_payment", json.dumps({"amount": amount}))
            return ToolCallResponse("asking", interrupt=Interrupt((confirm,)))
        approved = isinstance(context.decisions.decisions.get("ok"), Approve)
        return f"paid {amount}" if approved else "not paid"

    model = ScriptedChatModel([asks(("c1", "pay", {"amount": 5})), answers])
    agent = ReactAgent("payer", model, tools=[pay], saver=MemorySaver())
    config = RunnableConfig(thread_id="t")
    paused = await agent.invoke("pay 5", config)
    assert [c.id for c in paused.interrupt.calls] == ["c1/ok"]
    result = await agent.invoke(Resume({"c1/ok": Approve()}), config)
    assert result.text == "paid 5"
    assert runs == [None, Resume({"ok": Approve()})]
    with pytest.raises(ValueError, match="must hold at least one call"):
        ToolCallResponse("x", interrupt=Interrupt(()))


def test_decisions_go_to_the_call_they_wait_inside() -> None:
    """``c1/a1`` is ``a1`` inside ``c1``; should a call's own id hold the separator, the
    longest call id that prefixes the decision's wins; a call's own decision stays its."""
    own = ["a", "a/b", "c"]
    assert outer_call("a/b/m1", own) == "a/b"
    assert outer_call("a/m1", own) == "a"
    assert outer_call("z/m1", own) is None
    decisions = {"a/b/m1": Approve(), "a/m2": Reject("no"), "c": Approve()}
    assert unscoped(decisions, own) == {
        "a/b": Resume({"m1": Approve()}),
        "a": Resume({"m2": Reject("no")}),
    }


async def test_usage_added_by_parallel_calls_is_summed() -> None:
    """``context.add_usage`` from several calls of one batch, run in parallel, and several
    times in one call: every amount counts in the run's usage (none replaces another)."""

    @tool
    async def spend(context: ToolContext) -> str:
        """Spend tokens elsewhere."""
        context.add_usage(Usage(1, 2, 3))
        context.add_usage(Usage(1, 0, 1))
        return "spent"

    calls = asks(*((f"c{i}", "spend", {}) for i in range(3)))
    model = ScriptedChatModel([calls, answers], usage=Usage(10, 10, 20))
    agent = ReactAgent("spender", model, tools=[spend], parallel_tool_execution=True)
    result = await agent.invoke("go")
    assert result.usage == Usage(20 + 6, 20 + 6, 40 + 12)


# --- checkpoints ---------------------------------------------------------------------------


def test_the_child_thread_id_is_derived_and_always_valid() -> None:
    """``<parent>/<position>/<call id>``; hashed when that would break the thread-id rule
    (too long, a NUL in the call id), the same input giving the same id."""
    assert child_thread_id("t", 3, "c1") == "t/3/c1"
    long = child_thread_id("t" * THREAD_ID_MAX_BYTES, 3, "c1")
    assert check_thread_id(long) == long
    assert long.startswith("t" * 200 + "/") and long == child_thread_id("t" * 1024, 3, "c1")
    assert long != child_thread_id("t" * 1024, 4, "c1")
    odd = child_thread_id("t", 1, "c\x00\ud800")
    assert check_thread_id(odd) == odd


class StopAfterTheCall:
    """A tool interceptor that lets the call run (the child, to its end), then stops the
    parent there: ``returned`` is set and the answer is never given back."""

    def __init__(self) -> None:
        self.returned = anyio.Event()

    async def wrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> Any:
        await handler(request)
        self.returned.set()
        await anyio.sleep_forever()


async def test_a_child_that_finished_before_the_parent_recorded_it_is_not_run_again() -> None:
    """If the parent stopped after its child finished but before it recorded the answer,
    the resumed call answers with the child's checkpointed result: the child's model is
    not asked again."""
    saver = MemorySaver()
    child_model = ScriptedChatModel(["the child's answer"], usage=Usage(1, 1, 2))
    child = ReactAgent("helper", child_model)
    model = ScriptedChatModel([asks(("c1", "helper", {"input": "do it"})), answers])
    stop = StopAfterTheCall()
    first = ReactAgent("boss", model, tools=[child.as_tool()], saver=saver, interceptors=[stop])
    config = RunnableConfig(thread_id="t")
    with anyio.fail_after(WAIT):
        async with first.start("go", config) as run:
            await stop.returned.wait()
            await run.cancel()
    finished = await saver.get(child_thread_id("t", 1, "c1"))
    assert finished is not None and finished.next == "end"
    parent = ReactAgent("boss", model, tools=[child.as_tool()], saver=saver)
    result = await parent.invoke(None, config)
    assert result.text == "the child's answer"
    assert len(child_model.requests) == 1
    assert result.usage == Usage(1, 1, 2)


class PerMessage:
    """A token counter giving 100 per message: summarisation triggers on the count."""

    def count(self, messages: Any, tools: Any = ()) -> int:
        return 100 * len(messages)


class TwoTurns:
    """A parent (``lead``) whose model calls its child (``researcher``) once a turn, always
    as ``c1``, for ``tasks`` in turn, and answers with the child's answer; summarisation
    shrinks its history before the second turn's call, which then sits at the position of
    the first's (2): both map to the child thread ``t/2/c1``. The child answers
    ``answer <n> to <task>``, ``n`` counting its runs."""

    def __init__(self, *tasks: str) -> None:
        self.saver = MemorySaver()
        self.runs = 0
        self.child_model = ScriptedChatModel([self.research] * 2)
        self.tasks = iter(tasks)
        self.model = ScriptedChatModel([self.lead] * 4)
        self.summariser = ScriptedChatModel(["the user asked; task A was answered"])
        hook = SummarizationHook(450, keep_last=1, model=self.summariser, counter=PerMessage())
        child = ReactAgent("researcher", self.child_model)
        self.options: dict[str, Any] = {
            "tools": [child.as_tool()],
            "saver": self.saver,
            "hooks": [hook],
        }

    def research(self, request: ModelRequest) -> AssistantMessage:
        self.runs += 1
        return AssistantMessage(f"answer {self.runs} to {request.messages[-1].text}")

    def lead(self, request: ModelRequest) -> AssistantMessage:
        last = request.messages[-1]
        if isinstance(last, ToolResponseMessage):
            return AssistantMessage(last.responses[0].response_data)
        return asks(("c1", "researcher", {"input": next(self.tasks)}))

    def parent(self, **options: Any) -> ReactAgent:
        return ReactAgent("lead", self.model, **self.options, **options)

    async def first_turn(self) -> str:
        first = [UserMessage("context"), UserMessage("first")]
        return (await self.parent().invoke(first, RunnableConfig(thread_id="t"))).text


@pytest.mark.usefixtures("scheduler_backend")
@pytest.mark.parametrize("again", ["task B", "task A"], ids=["another-task", "the-same-task"])
async def test_a_position_repeated_after_summarisation_gets_its_own_child(again: str) -> None:
    """The second turn's call lands on the first turn's finished child thread
    (``TwoTurns``). It runs a child of its own — for another task, and for the same task
    asked again word for word — and gets its answer (the first call's finished child is
    not reused: its thread is replaced by the second call's run)."""
    turns = TwoTurns("task A", again)
    first = await turns.first_turn()
    second = await turns.parent().invoke("second", RunnableConfig(thread_id="t"))
    assert len(turns.summariser.requests) == 1  # the history was shrunk before the call
    assert (first, second.text) == ("answer 1 to task A", f"answer 2 to {again}")
    assert [r.messages[-1].text for r in turns.child_model.requests] == ["task A", again]
    child_thread = await turns.saver.get(child_thread_id("t", 2, "c1"))
    assert child_thread is not None
    assert [m.text for m in child_thread.state["messages"]] == [again, second.text]


class StopBeforeTheCall:
    """A tool interceptor that stops the parent as a call is about to run (``reached``)."""

    def __init__(self) -> None:
        self.reached = anyio.Event()

    async def wrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> Any:
        self.reached.set()
        await anyio.sleep_forever()


async def test_a_resumed_call_reuses_a_child_thread_only_for_its_own_task() -> None:
    """The second turn's call lands on the first turn's finished child thread
    (``TwoTurns``), and the parent stops before it runs; resumed, the call finds a child
    thread it could have started, but of another task: it starts its own child and gets
    its own answer."""
    turns = TwoTurns("task A", "task B")
    await turns.first_turn()
    config = RunnableConfig(thread_id="t")
    stop = StopBeforeTheCall()
    with anyio.fail_after(WAIT):
        async with turns.parent(interceptors=[stop]).start("second", config) as run:
            await stop.reached.wait()
            await run.cancel()
    stale = await turns.saver.get(child_thread_id("t", 2, "c1"))
    assert stale is not None and stale.state["messages"][0].text == "task A"
    result = await turns.parent().invoke(None, config)
    assert result.text == "answer 2 to task B"


async def child_finished_calls(db: Path) -> list[str]:
    """The ids the child's latest checkpoint records as answered."""
    async with SqliteSaver(db) as saver:
        latest = await saver.get(child_thread_id("t", 1, "c1"))
    if latest is None:
        return []
    last = latest.state["messages"][-1]
    return [r.id for r in last.responses] if isinstance(last, ToolResponseMessage) else []


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sigkill_mid_child_then_resume_runs_no_finished_child_tool_twice(
    tmp_path: Path, backend: str
) -> None:
    """Kill the parent's process once its child has checkpointed two of its three calls;
    another process resumes the parent, which resumes the child where it was: the third
    call runs, the two finished ones do not run again, and both runs finish."""
    db, marks = tmp_path / "runs.db", tmp_path / "marks.txt"
    first = start_script(SCRIPT, backend, str(db), str(marks), "first")
    kill_when(
        first,
        lambda: db.exists() and sorted(anyio.run(child_finished_calls, db)) == ["k0", "k1"],
        "the child checkpointed 2 calls",
    )
    assert sorted(marks.read_text().split()) == ["0", "1"]

    second = start_script(SCRIPT, backend, str(db), str(marks), "resume")
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    assert json.loads(out) == {"text": "the child says: all three done", "model_calls": 2}
    assert sorted(marks.read_text().split()) == ["0", "1", "2"]

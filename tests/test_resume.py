"""Checkpoints through the agent: continuing a conversation, resuming a cancelled run
without running finished calls again, refusing input that would drop pending work, and
pausing for human approval."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from reactcore import (
    Approve,
    AssistantMessage,
    Edit,
    MemorySaver,
    ModelRequest,
    ReactAgent,
    Reject,
    Resume,
    RunCancelled,
    RunInterrupted,
    RunnableConfig,
    ToolCallFinished,
    ToolContext,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from reactcore.hooks import HumanInTheLoopHook
from reactcore.models.scripted import ScriptedChatModel
from tests.helpers import asks

pytestmark = pytest.mark.anyio


@tool
async def quick(x: int) -> int:
    """Answer at once."""
    return x


async def test_finished_conversation_continues_with_new_input() -> None:
    """A later invoke on the same thread sees the earlier turns."""
    model = ScriptedChatModel(["first answer", "second answer"])
    agent = ReactAgent("a", model, saver=MemorySaver())
    config = RunnableConfig(thread_id="t1")
    await agent.invoke("one", config)
    result = await agent.invoke("two", RunnableConfig(thread_id="t1"))
    assert result.text == "second answer"
    assert model.requests[1].messages == (
        UserMessage("one"),
        AssistantMessage("first answer"),
        UserMessage("two"),
    )


async def test_nothing_to_resume_is_a_value_error() -> None:
    """invoke(None) without a saver, without a checkpoint, or after a finished run."""
    agent = ReactAgent("a", ScriptedChatModel(["x"]))
    with pytest.raises(ValueError, match="without a saver"):
        await agent.invoke(None)
    agent = ReactAgent("a", ScriptedChatModel(["x"]), saver=MemorySaver())
    with pytest.raises(ValueError, match="no checkpoint"):
        await agent.invoke(None, RunnableConfig(thread_id="empty"))
    await agent.invoke("hi", RunnableConfig(thread_id="done"))
    with pytest.raises(ValueError, match="finished"):
        await agent.invoke(None, RunnableConfig(thread_id="done"))


def turn_model(plan: list[list[str]]) -> ScriptedChatModel:
    """A model whose answer depends only on how many tool turns the conversation has had,
    so asking it again after a cancel gives the same answer."""

    def reply(request: ModelRequest) -> AssistantMessage:
        turns = sum(isinstance(m, ToolResponseMessage) for m in request.messages)
        if turns >= len(plan):
            return AssistantMessage("all done")
        return asks(*((f"t{turns}-{n}", n, {}) for n in plan[turns]))

    return ScriptedChatModel([reply] * 50)


def recording_tools(done: Counter[str]) -> list[Any]:
    """Tools a … e; in parallel, later ones finish first (fewer checkpoints to pass)."""

    def make(name: str) -> Any:
        @tool(name=name)
        async def run(ctx: ToolContext) -> str:
            for _ in range(6 - "abcde".index(name)):
                await anyio.lowlevel.checkpoint()
            done[ctx.call.id] += 1
            ctx.update["log"] = [ctx.call.id]
            return f"{name} ok"

        return run

    return [make(n) for n in ("a", "b", "c", "d", "e")]


PLAN = [["a", "b", "c"], ["d", "e"]]


async def test_new_input_on_unfinished_thread_names_the_pending_calls() -> None:
    """After a cancel mid-batch, new input is refused with the pending calls named."""
    done: Counter[str] = Counter()

    @tool
    async def hang() -> str:
        await anyio.sleep(30)
        return "x"

    model = ScriptedChatModel([asks(("h1", "hang", {})), "done"])
    agent = ReactAgent("a", model, tools=[hang, *recording_tools(done)], saver=MemorySaver())
    config = RunnableConfig(thread_id="t")
    async with agent.start("go", config) as run, run.events() as events:
        async for event in events:
            if type(event).__name__ == "ToolCallStarted":
                await run.cancel()
    with pytest.raises(ValueError, match=r"hang \(h1\)"):
        await agent.invoke("something else", RunnableConfig(thread_id="t"))


@pytest.mark.parametrize("parallel", [False, True])
async def test_unfinished_cancel_closes_the_stopped_batch_and_takes_the_new_input(
    parallel: bool,
) -> None:
    """With ``RunnableConfig(unfinished="cancel")`` new input on a thread whose run was
    cancelled mid-batch goes on: the finished call keeps its answer and its state update
    (applied now, in call order), the unfinished call is answered as cancelled, and the
    model's next request holds the whole batch, answered, then the new input. Without it
    the same input is refused; a finished thread takes new input as always."""
    done: Counter[str] = Counter()

    @tool
    async def hang() -> str:
        await anyio.sleep(30)
        return "x"

    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> AssistantMessage:
        seen.append(request)
        return AssistantMessage("fine")

    model = ScriptedChatModel([asks(("a1", "a", {}), ("h1", "hang", {})), answer, "again"])
    agent = ReactAgent(
        "a",
        model,
        tools=[hang, *recording_tools(done)],
        saver=MemorySaver(),
        parallel_tool_execution=parallel,
    )
    async with agent.start("go", RunnableConfig(thread_id="t")) as run, run.events() as events:
        async for event in events:
            if isinstance(event, ToolCallFinished) and event.call_id == "a1":
                await run.cancel()
    assert done["a1"] == 1
    with pytest.raises(ValueError, match=r"hang \(h1\)"):
        await agent.invoke("next", RunnableConfig(thread_id="t"))
    result = await agent.invoke("next", {"thread_id": "t", "unfinished": "cancel"})
    assert result.text == "fine"
    answered = seen[0].messages[-2]
    assert isinstance(answered, ToolResponseMessage)
    assert [(r.id, r.response_data, r.is_error) for r in answered.responses] == [
        ("a1", "a ok", False),
        (
            "h1",
            "Error: Tool execution was cancelled by the caller: the run ended before "
            "this call finished",
            True,
        ),
    ]
    assert seen[0].messages[-1] == UserMessage("next")
    assert result.state.data["log"] == ["a1"]
    assert done["a1"] == 1  # the finished call did not run again
    again = await agent.invoke("more", {"thread_id": "t", "unfinished": "cancel"})
    assert again.text == "again"  # a finished thread is not unfinished: nothing to close
    with pytest.raises(ValueError, match="unfinished"):
        RunnableConfig(unfinished="drop")  # type: ignore[arg-type]


async def uninterrupted_state(parallel: bool) -> dict[str, Any]:
    done: Counter[str] = Counter()
    agent = ReactAgent(
        "a", turn_model(PLAN), tools=recording_tools(done), parallel_tool_execution=parallel
    )
    return dict((await agent.invoke("go")).state.data)


@pytest.mark.parametrize("parallel", [False, True])
async def test_cancel_at_every_event_then_resume(parallel: bool) -> None:
    """For a run with 2 tool turns and 5 tools, cancel at every event index in turn, then
    resume: the final state equals the uninterrupted run's, and no call ran twice. The
    tools' `log` update is REPLACE and parallel calls finish out of order, so the state is
    right only if a resumed batch applies every call's update in call order."""
    expected = await uninterrupted_state(parallel)
    index = 0
    while True:
        done: Counter[str] = Counter()
        agent = ReactAgent(
            "a",
            turn_model(PLAN),
            tools=recording_tools(done),
            parallel_tool_execution=parallel,
            saver=MemorySaver(),
        )
        config = RunnableConfig(thread_id="t")
        seen = 0
        async with agent.start("go", config) as run, run.events() as events:
            async for _ in events:
                if seen == index:
                    run.cancel_nowait()  # at exactly this event
                seen += 1
        try:
            final = await run.result()
        except RunCancelled:
            final = await agent.invoke(None, RunnableConfig(thread_id="t"))
        assert dict(final.state.data) == expected, f"cancelled at event {index}"
        assert set(done.values()) == {1}, f"cancelled at event {index}: {done}"
        assert len(done) == 5
        if index >= seen:
            break
        index += 1
    assert index > 20  # every event of the run was a cancel point


# --- human in the loop ----------------------------------------------------------------


@tool
async def send_email(to: str) -> str:
    """Send an email."""
    return f"sent to {to}"


def hitl_agent(model: ScriptedChatModel) -> ReactAgent:
    return ReactAgent(
        "a",
        model,
        tools=[send_email, quick],
        hooks=[HumanInTheLoopHook({"send_email": True})],
        saver=MemorySaver(),
    )


async def test_approval_needs_a_saver() -> None:
    """Without a saver the hook is refused at construction."""
    with pytest.raises(ValueError, match="saver"):
        ReactAgent("a", ScriptedChatModel([]), hooks=[HumanInTheLoopHook({"x": True})])


async def test_interrupt_then_approve_runs_all_calls_once() -> None:
    """A listed tool pauses the run before any call of the batch runs; approving runs it
    and the calls that needed no approval, once."""
    model = ScriptedChatModel(
        [asks(("m", "send_email", {"to": "ada"}), ("q", "quick", {"x": 1})), "sent"]
    )
    agent = hitl_agent(model)
    config = RunnableConfig(thread_id="h")
    async with agent.start("mail ada", config) as run, run.events() as events:
        last = [e async for e in events][-1]
        result = await run.result()
    assert isinstance(last, RunInterrupted)
    assert result.status == "interrupted"
    assert [c.id for c in result.interrupt.calls] == ["m"]
    assert not any(isinstance(m, ToolResponseMessage) for m in result.messages)
    result = await agent.invoke(Resume({"m": Approve()}), RunnableConfig(thread_id="h"))
    assert result.status == "finished"
    assert [r.response_data for r in result.messages[2].responses] == ["sent to ada", "1"]
    assert result.text == "sent"


async def test_edit_reject_and_left_out_calls() -> None:
    """Edited arguments are checked and replace the call in the history; a rejection
    answers the model with an error; calls left out interrupt again."""
    model = ScriptedChatModel(
        [
            asks(
                ("e1", "send_email", {"to": "ada"}),
                ("e2", "send_email", {"to": "bob"}),
                ("e3", "send_email", {"to": "eve"}),
            ),
            "done",
        ]
    )
    agent = hitl_agent(model)
    await agent.invoke("mail", RunnableConfig(thread_id="h"))
    with pytest.raises(ValueError, match=r"arguments\.to"):
        await agent.invoke(Resume({"e1": Edit({"to": 5})}), RunnableConfig(thread_id="h"))
    with pytest.raises(ValueError, match="no pending call"):
        await agent.invoke(Resume({"zz": Approve()}), RunnableConfig(thread_id="h"))
    again = await agent.invoke(
        Resume({"e1": Edit({"to": "ada@x"}), "e2": Reject("not bob")}),
        RunnableConfig(thread_id="h"),
    )
    assert again.status == "interrupted"
    assert [c.id for c in again.interrupt.calls] == ["e3"]
    result = await agent.invoke(Resume({"e3": Approve()}), RunnableConfig(thread_id="h"))
    responses = result.messages[2].responses
    assert [(r.id, r.response_data, r.is_error) for r in responses] == [
        ("e1", "sent to ada@x", False),
        ("e2", "not bob", True),
        ("e3", "sent to eve", False),
    ]
    assert json.loads(result.messages[1].tool_calls[0].arguments) == {"to": "ada@x"}


async def test_tool_call_finished_after_its_checkpoint() -> None:
    """With a saver, ToolCallFinished is sent after that call's checkpoint is written."""
    saver = MemorySaver()
    model = ScriptedChatModel([asks(("q", "quick", {"x": 1})), "done"])
    agent = ReactAgent("a", model, tools=[quick], saver=saver)
    config = RunnableConfig(thread_id="c")
    async with agent.start("go", config) as run, run.events() as events:
        async for event in events:
            if isinstance(event, ToolCallFinished):
                latest = await saver.get("c")
                assert latest is not None
                partial = latest.state["messages"][-1]
                assert isinstance(partial, ToolResponseMessage)
                assert [r.id for r in partial.responses] == ["q"]
                break

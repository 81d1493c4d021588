"""Managing a long context: ``SummarizationHook`` rewrites the older conversation in the
state (and so in checkpoints and after a resume, across a SIGKILL), never parting a tool
call from its answer, and leaves the history whole when its model call fails;
``ContextEditingInterceptor`` changes only what the model is sent (checked on the
scripted model's requests and on a loopback server's request bodies), never the state.

Async tests run on asyncio and trio."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from reactcore import (
    AssistantMessage,
    ContextEditingInterceptor,
    MemorySaver,
    Message,
    ModelCallFinished,
    ModelCallStarted,
    ModelHTTPError,
    OpenAIChatModel,
    OverAllState,
    ReactAgent,
    RunnableConfig,
    SqliteSaver,
    SummarizationHook,
    SystemMessage,
    ToolResponse,
    ToolResponseMessage,
    Usage,
    UserMessage,
    tool,
)
from reactcore.hooks._summarization import SUMMARY_PREFIX
from reactcore.testing import (
    HTTPReply,
    ScriptedChatModel,
    SSEReply,
    serve_openai_compatible,
)
from tests.helpers import asks, kill_when
from tests.test_crash_resume import run_script
from tests.test_otel import Traces, attributes

pytestmark = pytest.mark.anyio

SCRIPT = Path(__file__).parent / "scripts" / "summary_crash_agent.py"


@tool
def fetch(n: int) -> str:
    """Fetch item n (a long report)."""
    return f"report {n}: " + "figures " * 100


def turns(count: int, per_turn: int = 1) -> list[AssistantMessage]:
    """``count`` model answers, each asking for ``per_turn`` fetches (unique ids)."""
    return [
        asks(*((f"c{t}_{i}", "fetch", {"n": t * 10 + i}) for i in range(per_turn)))
        for t in range(count)
    ]


def paired(messages: Sequence[Message]) -> bool:
    """Every assistant message with calls is followed by the answers to exactly its calls,
    and every tool-results message follows the assistant message that called."""
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage) and message.tool_calls:
            after = messages[index + 1] if index + 1 < len(messages) else None
            ids = [c.id for c in message.tool_calls]
            if not isinstance(after, ToolResponseMessage):
                return False
            if [r.id for r in after.responses] != ids:
                return False
        if isinstance(message, ToolResponseMessage):
            before = messages[index - 1] if index > 0 else None
            if not isinstance(before, AssistantMessage) or not before.tool_calls:
                return False
    return True


def summaries(messages: Sequence[Message]) -> list[str]:
    return [
        m.text for m in messages if isinstance(m, UserMessage) and m.text.startswith(SUMMARY_PREFIX)
    ]


# --- SummarizationHook --------------------------------------------------------------------


@pytest.mark.parametrize("keep_last", [1, 2, 3, 4, 5])
async def test_a_summary_never_parts_a_tool_call_from_its_answer(keep_last: int) -> None:
    """Turns of three parallel calls, summarised whenever the request passes the trigger,
    wherever ``keep_last`` would cut: every request the model got, and the final state,
    has each call followed by its answers, the system prompt first, and one summary."""
    summariser = ScriptedChatModel([f"summary {i}" for i in range(20)])
    model = ScriptedChatModel([*turns(6, per_turn=3), "all fetched"])
    hook = SummarizationHook(trigger_tokens=900, keep_last=keep_last, model=summariser)
    agent = ReactAgent(
        "a", model, tools=[fetch], system_prompt="Fetch.", hooks=[hook], max_iterations=None
    )
    result = await agent.invoke("fetch everything")
    assert result.text == "all fetched"
    assert summariser.requests, "the conversation never passed the trigger"
    for request in model.requests:
        assert paired(request.messages)
        assert request.system_message == SystemMessage("Fetch.")
        assert len(summaries(request.messages)) <= 1
    assert paired(result.messages)
    assert summaries(result.messages) == [
        SUMMARY_PREFIX + f"summary {len(summariser.requests) - 1}"
    ]
    assert result.messages[0] == UserMessage(summaries(result.messages)[0])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=12),
    st.integers(1, 30),
    st.booleans(),
)
def test_the_kept_part_never_starts_with_tool_results(
    batches: list[int], keep_last: int, pending: bool
) -> None:
    """For any conversation of user turns and batches of 1-3 parallel calls, the split
    keeps at least ``keep_last`` messages and never starts the kept part with tool
    results: the older part ends on a whole exchange, so both halves stay paired."""
    messages: list[Message] = []
    for turn, size in enumerate(batches):
        if size == 0:
            messages.append(UserMessage(f"question {turn}"))
            continue
        calls = turns(1, per_turn=size)[0]
        messages.append(
            attrs.evolve(
                calls, tool_calls=[attrs.evolve(c, id=f"{turn}_{c.id}") for c in calls.tool_calls]
            )
        )
        if not (pending and turn == len(batches) - 1):
            messages.append(
                ToolResponseMessage(
                    [ToolResponse(f"{turn}_{c.id}", c.name, "r") for c in calls.tool_calls]
                )
            )
    cut = SummarizationHook(trigger_tokens=1, keep_last=keep_last).split(messages)
    assert 0 <= cut <= max(len(messages) - keep_last, 0)
    assert cut == 0 or not isinstance(messages[cut], ToolResponseMessage)
    assert paired(messages[:cut])


async def test_the_summary_is_in_the_state_checkpoint_events_and_usage() -> None:
    """The summary replaces the older messages in the state and in the checkpoint; its
    call is announced by ModelCallStarted/Finished with purpose "summary" before the turn
    it precedes; the summariser reads the older part and its usage joins the total."""
    summariser = ScriptedChatModel(["they fetched 0 and 1"], usage=Usage(50, 7, 57))
    model = ScriptedChatModel([*turns(3), "done"])  # no usage: nothing corrects the counts
    hook = SummarizationHook(trigger_tokens=500, keep_last=2, model=summariser)
    saver = MemorySaver()
    agent = ReactAgent("a", model, tools=[fetch], hooks=[hook], saver=saver)
    config = RunnableConfig(thread_id="t")
    async with agent.stream("fetch", config) as stream:
        events = [e async for e in stream]
    calls = [
        (type(e).__name__, e.purpose)
        for e in events
        if isinstance(e, ModelCallStarted | ModelCallFinished)
    ]
    assert ("ModelCallStarted", "summary") in calls
    at = calls.index(("ModelCallStarted", "summary"))
    assert calls[at : at + 3] == [
        ("ModelCallStarted", "summary"),
        ("ModelCallFinished", "summary"),
        ("ModelCallStarted", "agent"),
    ]
    started = [e for e in events if isinstance(e, ModelCallStarted)]
    summary = next(i for i, e in enumerate(started) if e.purpose == "summary")
    assert started[summary].iteration == started[summary + 1].iteration  # the turn it precedes
    (asked,) = summariser.requests
    assert asked.purpose == "summary" and not asked.tools
    assert "[user] fetch" in asked.messages[0].text
    assert "[tool result of fetch] report 0:" in asked.messages[0].text
    checkpoint = await saver.get("t")
    assert checkpoint is not None
    stored = checkpoint.state["messages"]
    assert stored[0] == UserMessage(SUMMARY_PREFIX + "they fetched 0 and 1")
    assert not any(m == UserMessage("fetch") for m in stored)
    result = events[-1].result  # type: ignore[attr-defined]
    assert stored == result.messages
    assert result.usage == Usage(50, 7, 57)


async def test_a_failed_summary_leaves_the_history_whole_and_the_run_goes_on() -> None:
    """A summariser that fails (HTTP 500): the history is untouched, ``summary_failed`` is
    logged, no ModelCallFinished follows its ModelCallStarted, and the run finishes."""
    summariser = ScriptedChatModel([ModelHTTPError("boom", status_code=500)] * 5)
    model = ScriptedChatModel([*turns(3), "done"])
    hook = SummarizationHook(trigger_tokens=300, keep_last=2, model=summariser)
    agent = ReactAgent("a", model, tools=[fetch], hooks=[hook])
    with capture_logs() as logs:
        async with agent.stream("fetch") as stream:
            events = [e async for e in stream]
    result = events[-1].result  # type: ignore[attr-defined]
    assert result.text == "done"
    assert len(result.messages) == 1 + 3 * 2 + 1
    assert result.messages[0] == UserMessage("fetch")
    assert summaries(result.messages) == []
    assert [len(r.messages) for r in model.requests] == [1, 3, 5, 7]
    failed = [entry for entry in logs if entry["event"] == "summary_failed"]
    assert len(failed) == len(summariser.requests) > 0
    assert failed[0]["error"] == "ModelHTTPError"
    purposes = [
        (type(e).__name__, e.purpose)
        for e in events
        if isinstance(e, ModelCallStarted | ModelCallFinished)
    ]
    assert ("ModelCallFinished", "summary") not in purposes
    assert purposes.count(("ModelCallStarted", "summary")) == len(summariser.requests)


async def test_the_agents_model_summarises_by_default() -> None:
    """Without ``model``, the agent's own model is asked (its next script item), outside
    the interceptors; the agent's turns go on after it."""
    seen: list[str] = []

    class Watch:
        async def wrap_model_call(self, request: Any, handler: Any) -> Any:
            seen.append(request.purpose)
            return await handler(request)

    model = ScriptedChatModel([*turns(2), "short summary", "done"])
    hook = SummarizationHook(trigger_tokens=450, keep_last=2)
    agent = ReactAgent("a", model, tools=[fetch], hooks=[hook], interceptors=[Watch()])
    result = await agent.invoke("fetch")
    assert result.text == "done"
    assert [r.purpose for r in model.requests] == ["agent", "agent", "summary", "agent"]
    assert seen == ["agent", "agent", "agent"]
    assert model.requests[3].messages[0] == UserMessage(SUMMARY_PREFIX + "short summary")


async def test_nothing_happens_mid_batch_or_below_the_trigger() -> None:
    """With calls of the last answer unanswered, or a request under the trigger, the hook
    returns nothing and asks no model; system messages of the older part are kept."""
    summariser = ScriptedChatModel(["s"])
    hook = SummarizationHook(trigger_tokens=10, keep_last=1, model=summariser)
    config = RunnableConfig()
    pending = OverAllState({"messages": [UserMessage("x" * 400), *turns(1)]})
    assert await hook.before_model(pending, config) is None
    small = OverAllState({"messages": [UserMessage("hi")]})
    assert await SummarizationHook(trigger_tokens=1000).before_model(small, config) is None
    assert summariser.requests == []
    history = [SystemMessage("rules"), UserMessage("x" * 400), AssistantMessage("ok")]
    update = await hook.before_model(OverAllState({"messages": history}), config)
    after = OverAllState({"messages": history}).merge(update)["messages"]
    assert after == [SystemMessage("rules"), UserMessage(SUMMARY_PREFIX + "s"), history[-1]]


def test_the_prompt_must_hold_the_messages_placeholder() -> None:
    """A prompt without ``{messages}``, or with another placeholder, is refused at
    construction, naming the parameter."""
    with pytest.raises(ValueError, match=r"^SummarizationHook\.prompt must hold \{messages\}"):
        SummarizationHook(trigger_tokens=10, prompt="Summarise.")
    with pytest.raises(ValueError, match=r"^SummarizationHook\.prompt"):
        SummarizationHook(trigger_tokens=10, prompt="{messages} for {user}")
    assert SummarizationHook(trigger_tokens=10, prompt="{{json}} {messages}").prompt


async def test_the_summary_call_has_a_span_of_its_own() -> None:
    """Traced, the summary is a ``chat`` span of the run with ``reactcore.model.purpose``
    "summary"; the agent's turns say "agent"."""
    traces = Traces()
    try:
        summariser = ScriptedChatModel(["s"])
        hook = SummarizationHook(trigger_tokens=450, keep_last=2, model=summariser)
        model = ScriptedChatModel([*turns(2), "done"])
        agent = ReactAgent("a", model, tools=[fetch], hooks=[hook], tracer_provider=traces.provider)
        await agent.invoke("fetch")
        chats = [s for s in traces.spans if s.name.startswith("chat")]
        purposes = [attributes(s)["reactcore.model.purpose"] for s in chats]
        assert sorted(purposes) == ["agent", "agent", "agent", "summary"]
        run = traces.named("invoke_agent a")
        assert all(s.parent is not None for s in chats)
        assert {s.parent.span_id for s in chats} == {run.context.span_id}  # type: ignore[union-attr]
        assert traces.opened.open == {}
    finally:
        traces.provider.shutdown()


async def finished_summary(db: Path) -> list[Message] | None:
    """The latest checkpoint's messages once they begin with a summary (read here)."""
    async with SqliteSaver(db) as saver:
        latest = await saver.get("t")
    messages = list(latest.state["messages"]) if latest is not None else []
    return messages if summaries(messages[:1]) else None


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_summary_survives_sigkill_and_the_resumed_run_sees_it(
    tmp_path: Path, backend: str
) -> None:
    """A process summarises twice, then is killed with SIGKILL inside a tool call; the
    SQLite checkpoint holds the summarised history, and a second process resumes from it:
    its model is sent that history (summary first, calls paired), not the original."""
    db, marks = tmp_path / "runs.db", tmp_path / "marks.txt"
    first = run_script(backend, db, marks, "first", SCRIPT)
    kill_when(first, lambda: marks.exists() and "hanging" in marks.read_text(), "hung")
    stored = anyio.run(finished_summary, db)
    assert stored is not None
    assert stored[0] == UserMessage(SUMMARY_PREFIX + "SUMMARY-2")
    assert paired(stored[:-1]) and [c.id for c in stored[-1].tool_calls] == ["h"]  # type: ignore[union-attr]

    second = run_script(backend, db, marks, "resume", SCRIPT)
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    report = json.loads(out)
    assert report["text"] == "finished" and report["summary_calls"] == 0
    (sent,) = report["requests"]
    expected = [
        ["UserMessage", SUMMARY_PREFIX + "SUMMARY-2"],
        ["assistant", "w2"],
        ["tool", "w2"],
        ["assistant", "h"],
        ["tool", "h"],
    ]
    assert sent == expected
    assert report["messages"] == [*expected, ["assistant", "finished"]]


# --- ContextEditingInterceptor ------------------------------------------------------------

PLACEHOLDER = "[cleared]"


def results_sent(messages: Sequence[Message]) -> list[str]:
    return [
        r.response_data for m in messages if isinstance(m, ToolResponseMessage) for r in m.responses
    ]


async def test_editing_changes_what_the_model_receives_not_the_state() -> None:
    """Past the trigger, the model is sent every tool result but the last three as the
    placeholder (calls and their order unchanged); the state keeps them all whole, and a
    request under the trigger is sent as it is."""
    editor = ContextEditingInterceptor(trigger_tokens=600, placeholder=PLACEHOLDER)
    model = ScriptedChatModel([*turns(6), "done"])
    agent = ReactAgent("a", model, tools=[fetch], interceptors=[editor], saver=MemorySaver())
    config = RunnableConfig(thread_id="t")
    result = await agent.invoke("fetch", config)
    whole = results_sent(result.messages)
    assert len(whole) == 6 and PLACEHOLDER not in whole
    first = results_sent(model.requests[1].messages)
    assert first == whole[:1]  # one result: under the trigger
    last = model.requests[-1]
    assert results_sent(last.messages) == [PLACEHOLDER] * 3 + whole[3:]
    assert paired(last.messages)
    assert [type(m) for m in last.messages] == [type(m) for m in result.messages[:-1]]
    checkpoint = await agent.saver.get("t")  # type: ignore[union-attr]
    assert checkpoint is not None and results_sent(checkpoint.state["messages"]) == whole


async def test_editing_keeps_excluded_tools_and_clears_parts() -> None:
    """Results of ``exclude_tools`` are sent whole; a cleared result loses its parts too;
    ``keep_last_results=0`` clears every other result."""

    @tool
    def note(text: str) -> str:
        """Keep a note."""
        return "noted: " + text

    editor = ContextEditingInterceptor(
        trigger_tokens=200, keep_last_results=0, placeholder=PLACEHOLDER, exclude_tools={"note"}
    )
    script = [*turns(2), asks(("n", "note", {"text": "remember me"})), *turns(1), "done"]
    model = ScriptedChatModel(script)
    agent = ReactAgent("a", model, tools=[fetch, note], interceptors=[editor])
    result = await agent.invoke("go")
    sent = results_sent(model.requests[-1].messages)
    assert sent == [PLACEHOLDER, PLACEHOLDER, "noted: remember me", PLACEHOLDER]
    assert results_sent(result.messages)[2:] == [
        "noted: remember me",
        results_sent(result.messages)[3],
    ]


async def test_editing_is_what_an_http_server_receives() -> None:
    """Over HTTP to an OpenAI-compatible server: the body of the last request carries the
    placeholder as the content of the old tool messages, and the last result whole."""
    editor = ContextEditingInterceptor(
        trigger_tokens=500, keep_last_results=1, placeholder=PLACEHOLDER
    )
    replies = [SSEReply.of(m) for m in turns(3)] + [SSEReply.of("done")]
    with serve_openai_compatible(replies) as server:
        model = OpenAIChatModel("test-model", base_url=server.base_url, api_key="sk-test")
        agent = ReactAgent("a", model, tools=[fetch], interceptors=[editor])
        result = await agent.invoke("fetch")
    assert result.text == "done"
    tool_messages = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages[:2]] == [PLACEHOLDER, PLACEHOLDER]
    assert tool_messages[2]["content"] == results_sent(result.messages)[2]
    assert PLACEHOLDER not in json.dumps([str(m) for m in result.messages])


async def test_summary_over_http_is_one_whole_request_marked_by_nothing_on_the_wire() -> None:
    """The summary call to an OpenAI-compatible server is a non-streamed request with the
    transcript and no tools; the agent's next request starts with the summary."""
    replies: list[Any] = [SSEReply.of(m) for m in turns(2)]
    replies += [HTTPReply.completion("the summary"), SSEReply.of("done")]
    with serve_openai_compatible(replies) as server:
        model = OpenAIChatModel("test-model", base_url=server.base_url, api_key="sk-test")
        hook = SummarizationHook(trigger_tokens=450, keep_last=2)
        agent = ReactAgent("a", model, tools=[fetch], hooks=[hook])
        result = await agent.invoke("fetch")
    assert result.text == "done"
    summary_body, after = server.requests[2], server.requests[3]
    assert summary_body.get("stream") in (None, False) and "tools" not in summary_body
    assert "[tool result of fetch] report 0:" in summary_body["messages"][0]["content"]
    assert after["messages"][0] == {
        "role": "user",
        "content": SUMMARY_PREFIX + "the summary",
    }

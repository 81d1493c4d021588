"""The core's seam for reactcore.temporal, on both backends (no Temporal needed):
``AgentToolNode(local_limits=False)`` applies neither per-call deadlines nor the tools'
own limiters, because the calls run elsewhere (as activities) and are limited there; and
what ``TemporalAgent`` refuses to take into a workflow, at construction."""

from __future__ import annotations

import anyio
import pytest

from reactcore import AgentToolNode, AssistantMessage, MemorySaver, ReactAgent, ToolCall, tool
from reactcore._state import OverAllState
from reactcore.hooks import (
    HumanInTheLoopHook,
    LargeResultEviction,
    ModelCallLimitHook,
    PIIRedactionHook,
    SummarizationHook,
    ToolCallLimitHook,
)
from reactcore.interceptors import (
    ContextEditingInterceptor,
    ModelFallbackInterceptor,
    ModelRetryInterceptor,
    ToolRetryInterceptor,
    ToolSelectionInterceptor,
)
from reactcore.testing import ScriptedChatModel


@pytest.mark.anyio
async def test_without_local_limits_no_deadline_and_no_tool_limiter() -> None:
    """Two calls of a tool with timeout=0.01 and a limiter of 1: with local_limits=False
    both run at once (the limiter is not taken) and both answer after 0.1 s (no deadline),
    while with the default the second waits for the first and both time out."""
    running = 0
    peak = 0

    @tool(timeout=0.01, limiter=anyio.CapacityLimiter(1))
    async def slow(i: int) -> int:
        """Take 0.1 s."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        try:
            await anyio.sleep(0.1)
        finally:
            running -= 1
        return i

    calls = [ToolCall("a", "slow", '{"i": 1}'), ToolCall("b", "slow", '{"i": 2}')]
    state = OverAllState({"messages": [AssistantMessage("", calls)]})
    remote = AgentToolNode([slow], parallel_tool_execution=True, local_limits=False)
    update = await remote(state)
    assert [r.response_data for r in update["messages"][-1].responses] == ["1", "2"]
    assert peak == 2

    peak = 0
    local = AgentToolNode([slow], parallel_tool_execution=True)
    update = await local(state)
    texts = [r.response_data for r in update["messages"][-1].responses]
    assert texts == ["Error: Tool execution timed out after 0.01s (tool 'slow')"] * 2
    assert peak == 1


@pytest.mark.parametrize(
    ("field", "refused", "why"),
    [
        ("hooks", SummarizationHook(trigger_tokens=1000), "asks a model for the summary"),
        ("interceptors", ToolSelectionInterceptor(ScriptedChatModel([])), "a ChatModel"),
        ("interceptors", ModelFallbackInterceptor([ScriptedChatModel([])]), "other models"),
    ],
)
def test_temporal_agent_refuses_hooks_and_interceptors_that_call_a_model(
    field: str, refused: object, why: str
) -> None:
    """A hook or interceptor that calls a model itself (model-backed summarisation, tool
    selection by a model, fallback models) is refused when the TemporalAgent is built —
    not when a run reaches it: ValueError naming the parameter, where it is in the list,
    its type and why."""
    pytest.importorskip("temporalio")
    from reactcore.temporal import TemporalAgent

    kept = {"hooks": [ModelCallLimitHook(run_limit=3)], "interceptors": [ModelRetryInterceptor()]}
    kept[field].append(refused)
    agent = ReactAgent("a", ScriptedChatModel(["hi"]), **kept)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot run in a Temporal workflow") as caught:
        TemporalAgent(agent)
    message = str(caught.value)
    assert message.startswith("TemporalAgent.agent: agent 'a' has")
    assert f"agent.{field}[1] ({type(refused).__name__}): " in message
    assert why in message


def test_temporal_agent_takes_the_hooks_and_interceptors_a_workflow_can_run() -> None:
    """Limits, approval, redaction, eviction, retries, context editing and tool selection
    by a function build a TemporalAgent as they are."""
    pytest.importorskip("temporalio")
    from reactcore.temporal import TemporalAgent

    @tool
    async def look() -> str:
        """Look."""
        return "seen"

    agent = ReactAgent(
        "a",
        ScriptedChatModel(["hi"]),
        tools=[look],
        hooks=[
            ModelCallLimitHook(run_limit=3),
            ToolCallLimitHook(run_limit=3),
            HumanInTheLoopHook({"look": True}),
            PIIRedactionHook(),
            LargeResultEviction(),
        ],
        interceptors=[
            ModelRetryInterceptor(),
            ToolRetryInterceptor(),
            ContextEditingInterceptor(trigger_tokens=1000),
            ToolSelectionInterceptor(lambda request: ["look"]),
        ],
        saver=MemorySaver(),
    )
    assert TemporalAgent(agent).agent is agent

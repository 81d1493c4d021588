"""The core's seam for reactcore.temporal, on both backends (no Temporal needed):
``AgentToolNode(local_limits=False)`` applies neither per-call deadlines nor the tools'
own limiters, because the calls run elsewhere (as activities) and are limited there."""

from __future__ import annotations

import anyio
import pytest

from reactcore import AgentToolNode, AssistantMessage, ToolCall, tool
from reactcore._state import OverAllState


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

"""Capping tool calls per thread and per run, for one tool or for all."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from .._config import RunnableConfig
from .._exceptions import CallLimitExceeded
from .._messages import AssistantMessage, ToolCall, ToolResponse, ToolResponseMessage
from .._state import MESSAGES, OverAllState
from ._limits import Counter, exceeded, limit_field


def _blocked(calls: list[ToolCall], text: str) -> ToolResponseMessage:
    return ToolResponseMessage([ToolResponse(c.id, c.name, f"Error: {text}", True) for c in calls])


@attrs.frozen
class ToolCallLimitHook:
    """Checks the calls of each model answer against ``thread_limit`` / ``run_limit``,
    counting calls of ``tool_name`` (or of every tool when ``None``).

    Calls past the limit are answered with an error response and never run:
    ``exit_behavior="continue"`` (default) lets the model go on with the others' results;
    ``"end"`` answers every call of the turn that way and ends the run with ``Tool call
    limits exceeded: …``; ``"error"`` raises ``CallLimitExceeded``.
    """

    thread_limit: int | None = limit_field()
    run_limit: int | None = limit_field()
    tool_name: str | None = None
    exit_behavior: Literal["continue", "end", "error"] = "continue"
    name: str = attrs.field(
        default=attrs.Factory(
            lambda self: f"tool_call_limit:{self.tool_name or '*'}", takes_self=True
        )
    )
    can_jump_to: tuple[str, ...] = ("model", "tools", "end")

    @property
    def _count(self) -> Counter:
        return Counter(f"_tool_call_count_{self.tool_name or '*'}_")

    async def after_model(self, state: OverAllState, config: RunnableConfig) -> Any:
        messages = state.get(MESSAGES) or ()
        last = messages[-1] if messages else None
        if not isinstance(last, AssistantMessage) or not last.tool_calls:
            return None
        counted = [c for c in last.tool_calls if self.tool_name in (None, c.name)]
        thread, run = self._count.thread(state), self._count.run(config)
        allowed = 0
        while allowed < len(counted) and not exceeded(
            thread, self.thread_limit, run, self.run_limit, allowed + 1
        ):
            allowed += 1
        update: dict[str, Any] = self._count.add(state, config, allowed)
        if allowed == len(counted):
            return update
        over = exceeded(thread, self.thread_limit, run, self.run_limit, allowed + 1)
        text = f"Tool call limits exceeded: {', '.join(over)}"
        if self.exit_behavior == "error":
            raise CallLimitExceeded(text)
        if self.exit_behavior == "end":
            update[MESSAGES] = [_blocked(list(last.tool_calls), text), AssistantMessage(text)]
            update["jump_to"] = "end"
            return update
        blocked = counted[allowed:]
        update[MESSAGES] = [_blocked(blocked, text)]
        update["jump_to"] = "model" if len(blocked) == len(last.tool_calls) else "tools"
        return update

"""Capping tool calls per thread and per run, for one tool or for all."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import attrs

from .. import _validate as valid
from .._batch import pending_calls
from .._config import RunnableConfig
from .._exceptions import CallLimitExceeded
from .._messages import AssistantMessage, ToolCall, ToolResponse, ToolResponseMessage
from .._state import MESSAGES, OverAllState, Remove
from .._tool_node import resolved_names
from ._limits import Counter, exceeded, exit_field, jumps_field, limit_field, name_field


def _answer(
    assistant: AssistantMessage,
    partial: ToolResponseMessage | None,
    blocked: Sequence[ToolCall],
    text: str,
) -> list[Any]:
    """Messages replacing ``partial`` (answers other hooks gave) by one partial answer that
    also holds an error response for each ``blocked`` call, in call order."""
    by_id = {r.id: r for r in partial.responses} if partial is not None else {}
    by_id.update((c.id, ToolResponse(c.id, c.name, f"Error: {text}", True)) for c in blocked)
    responses = [by_id[c.id] for c in assistant.tool_calls if c.id in by_id]
    messages: list[Any] = [Remove(partial)] if partial is not None else []
    messages.append(ToolResponseMessage(responses))
    return messages


@attrs.frozen
class ToolCallLimitHook:
    """Checks the calls of each model answer against ``thread_limit`` / ``run_limit``,
    counting calls of ``tool_name`` (or of every tool when ``None``) — of the tool that will
    run, after resolution, whatever name the model wrote (a ``tool_resolver`` may map
    several names to one tool).

    Calls past the limit are answered with an error response and never run:
    ``exit_behavior="continue"`` (default) lets the model go on with the others' results;
    ``"end"`` answers every call of the turn that way and ends the run with ``Tool call
    limits exceeded: …``; ``"error"`` raises ``CallLimitExceeded``.

    Only calls no earlier hook answered are looked at, and the hook jumps only when it must
    (every call answered, or ``"end"``), so several limit hooks compose.
    """

    thread_limit: int | None = limit_field()
    run_limit: int | None = limit_field()
    tool_name: str | None = attrs.field(
        default=None, validator=valid.text(non_empty=True, optional=True)
    )
    exit_behavior: Literal["continue", "end", "error"] = exit_field(
        "continue", "continue", "end", "error"
    )
    name: str = name_field(
        attrs.Factory(lambda self: f"tool_call_limit:{self.tool_name or '*'}", takes_self=True)
    )
    can_jump_to: tuple[str, ...] = jumps_field("model", "end")

    @property
    def _count(self) -> Counter:
        return Counter(f"_tool_call_count_{self.tool_name or '*'}_")

    async def before_agent(self, state: OverAllState, config: RunnableConfig) -> Any:
        self._count.start_run(config)

    def _text(self, thread: int, run: int, allowed: int, asked: int) -> str:
        """What the model and the caller read, with the real counts: after the ``allowed``
        calls of the turn (``"continue"``), or before the turn, none of which runs."""
        calls = f"{self.tool_name!r} calls" if self.tool_name else "calls"
        if self.exit_behavior == "continue":
            used = (thread + allowed, run + allowed)
            over = exceeded(used[0], self.thread_limit, used[1], self.run_limit, 1)
            rest = f"{asked - allowed} of the {asked} {calls} of this turn not run"
        else:
            over = exceeded(thread, self.thread_limit, run, self.run_limit, asked)
            rest = f"this turn asked for {asked} more {calls}, none was run"
        return f"Tool call limits exceeded: {', '.join(over)}; {rest}"

    async def after_model(self, state: OverAllState, config: RunnableConfig) -> Any:
        try:
            assistant, partial = pending_calls(state)
        except ValueError:
            return None  # no tool calls in the model's answer
        answered = {r.id for r in partial.responses} if partial is not None else set()
        open_calls = [c for c in assistant.tool_calls if c.id not in answered]
        names = resolved_names(assistant, config) if self.tool_name is not None else {}
        counted = [c for c in open_calls if self.tool_name in (None, names.get(c.id))]
        thread, run = self._count.thread(state), self._count.run(config)
        allowed = 0
        while allowed < len(counted) and not exceeded(
            thread, self.thread_limit, run, self.run_limit, allowed + 1
        ):
            allowed += 1
        if allowed == len(counted):
            return self._count.add(state, config, allowed) if allowed else None
        text = self._text(thread, run, allowed, len(counted))
        if self.exit_behavior == "error":
            raise CallLimitExceeded(text)
        if self.exit_behavior == "end":  # nothing of this turn runs, so nothing is counted
            messages = _answer(assistant, partial, open_calls, text)
            return {MESSAGES: [*messages, AssistantMessage(text)], "jump_to": "end"}
        blocked = counted[allowed:]
        update: dict[str, Any] = self._count.add(state, config, allowed)
        update[MESSAGES] = _answer(assistant, partial, blocked, text)
        if len(answered) + len(blocked) == len(assistant.tool_calls):
            update["jump_to"] = "model"  # nothing left to run: the model answers next
        return update

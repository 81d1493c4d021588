"""Capping model calls per thread (conversation) and per run."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from .._config import RunnableConfig
from .._exceptions import CallLimitExceeded
from .._messages import AssistantMessage
from .._run_context import set_run_count
from .._state import MESSAGES, OverAllState
from ._limits import Counter, exceeded, exit_field, jumps_field, limit_field, name_field

_COUNT = Counter("_model_call_count_")
_RUN_LIMITS = "_model_call_run_limits_"


def count_nested_call(config: RunnableConfig) -> None:
    """Count one model call made inside a tool call (an MCP server's sampling) against
    the run's ``run_limit`` of every ``ModelCallLimitHook`` of the agent, as the next
    turn's check will see it; ``CallLimitExceeded`` (and nothing counted) when it would
    pass one. Such calls are not counted per thread: the state is the loop's."""
    limits: dict[str, int | None] = config.context.get(_RUN_LIMITS) or {}
    done = _COUNT.run(config)
    over = [f"run limit ({done}/{n})" for n in limits.values() if n is not None and done >= n]
    if over:
        raise CallLimitExceeded(f"Model call limits exceeded: {', '.join(over)}")
    set_run_count(config.context, _COUNT.key, done + 1)


@attrs.frozen
class ModelCallLimitHook:
    """Stops the run before a model call that would pass ``thread_limit`` (calls in the
    conversation so far, kept in the state) or ``run_limit`` (calls in this run).

    ``exit_behavior="end"`` ends the run with the assistant message ``Model call limits
    exceeded: …`` as its final text; ``"error"`` raises ``CallLimitExceeded``.

    A call is counted in ``before_model``, as it is let through: a hook that jumps after
    the model (``ToolCallLimitHook``) then cannot make it go uncounted.
    """

    thread_limit: int | None = limit_field()
    run_limit: int | None = limit_field()
    exit_behavior: Literal["end", "error"] = exit_field("end", "end", "error")
    name: str = name_field("model_call_limit")
    can_jump_to: tuple[str, ...] = jumps_field("end")

    async def before_agent(self, state: OverAllState, config: RunnableConfig) -> Any:
        _COUNT.start_run(config)
        # Where a model call made inside a tool call finds the limit (``count_nested_call``).
        config.context.setdefault(_RUN_LIMITS, {})[self.name] = self.run_limit

    async def before_model(self, state: OverAllState, config: RunnableConfig) -> Any:
        over = exceeded(
            _COUNT.thread(state), self.thread_limit, _COUNT.run(config), self.run_limit, 1
        )
        if not over:
            return _COUNT.add(state, config, 1)
        text = f"Model call limits exceeded: {', '.join(over)}"
        if self.exit_behavior == "error":
            raise CallLimitExceeded(text)
        return {MESSAGES: [AssistantMessage(text)], "jump_to": "end"}

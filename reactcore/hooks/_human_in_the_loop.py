"""Pausing a run for a human to approve, edit or reject tool calls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .._config import RunnableConfig
from .._loop import APPROVED, unanswered
from .._state import OverAllState


@attrs.frozen
class ApprovalPolicy:
    """How calls of one tool are reviewed: ``description`` is shown to the reviewer."""

    description: str = "Tool execution requires approval"


def _policies(value: Mapping[str, ApprovalPolicy | bool]) -> dict[str, ApprovalPolicy]:
    return {
        name: p if isinstance(p, ApprovalPolicy) else ApprovalPolicy()
        for name, p in value.items()
        if p
    }


@attrs.frozen
class HumanInTheLoopHook:
    """Before calls to the tools in ``approve_on`` run, the run stops with status
    ``"interrupted"`` and the calls waiting (``RunInterrupted``; ``AgentResult.interrupt``).

    The caller resumes with ``agent.invoke(Resume({call_id: Approve() | Edit(arguments) |
    Reject(message)}), config)``. Calls of the batch that need no approval run once, with
    the approved ones; calls left out of the ``Resume`` interrupt again. Resuming needs
    checkpoints: the agent must have a saver.
    """

    approve_on: Mapping[str, ApprovalPolicy] = attrs.field(converter=_policies)
    name: str = "human_in_the_loop"
    requires_saver: bool = True

    async def before_tools(self, state: OverAllState, config: RunnableConfig) -> Any:
        approved = set(state.get(APPROVED) or ())
        waiting = [
            c for c in unanswered(state) if c.name in self.approve_on and c.id not in approved
        ]
        return {"interrupt": waiting} if waiting else None

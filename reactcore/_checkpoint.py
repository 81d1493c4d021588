"""Checkpoints: the state of a conversation saved after every step, and the savers that
keep them (in memory, or in SQLite)."""

from __future__ import annotations

from typing import Any, Literal, Protocol

import attrs

from ._messages import ToolCall
from ._state import OverAllState

NextStep = Literal["model", "tools", "end"]


@attrs.frozen
class Checkpoint:
    """The conversation ``thread_id`` after step number ``step`` of run ``run_id``.

    ``next`` is where the loop goes on from (``"end"``: the run finished); ``interrupt``
    holds the tool calls waiting for a human, when the run paused for approval.
    """

    thread_id: str
    state: OverAllState
    next: NextStep
    step: int
    run_id: str
    model_calls: int = 0
    interrupt: tuple[ToolCall, ...] | None = None
    created_at: float = 0.0
    metadata: dict[str, Any] = attrs.field(factory=dict, hash=False)


class Saver(Protocol):
    """Where checkpoints live. Every method is async (a saver may do I/O)."""

    async def get(self, thread_id: str) -> Checkpoint | None:
        """The latest checkpoint of ``thread_id``, or ``None``."""
        ...

    async def put(self, thread_id: str, checkpoint: Checkpoint) -> None:
        """Store ``checkpoint`` as the latest of ``thread_id``."""
        ...

    async def list(self, thread_id: str) -> list[Checkpoint]:
        """Every checkpoint of ``thread_id``, oldest first."""
        ...

    async def delete(self, thread_id: str) -> None:
        """Forget ``thread_id``."""
        ...

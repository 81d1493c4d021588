"""``AgentResult``: what a finished (or interrupted) run gives back."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from ._messages import Message
from ._state import MESSAGES, OverAllState
from .models.base import Usage

TOKEN_USAGE = "_TOKEN_USAGE_"


@attrs.frozen
class AgentResult:
    """The final state, the final text, the structured output (when ``output_type`` is
    set), and counters. ``status`` is ``"interrupted"`` when a hook paused the run for a
    human, with what is pending in ``interrupt``. ``finish_reason`` is how the model's
    last answer ended (``"length"``: the text was cut at the token limit)."""

    state: OverAllState
    text: str = ""
    output: Any = None
    model_calls: int = 0
    status: Literal["finished", "interrupted"] = "finished"
    interrupt: Any = None
    finish_reason: str | None = None

    @property
    def messages(self) -> list[Message]:
        """The whole conversation."""
        return list(self.state.get(MESSAGES) or ())

    @property
    def usage(self) -> Usage:
        """Token usage summed over every model call of the conversation."""
        usage: Usage | None = self.state.get(TOKEN_USAGE)
        return usage if usage is not None else Usage()

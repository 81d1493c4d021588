"""Human approval of tool calls: the decisions a caller resumes a paused run with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ._messages import ToolCall


@attrs.frozen
class Approve:
    """Run the call as the model asked."""


@attrs.frozen
class Edit:
    """Run the call with these arguments instead (a JSON string or a mapping); they are
    checked like the model's and replace the call's arguments in the history."""

    arguments: str | Mapping[str, Any]


@attrs.frozen
class Reject:
    """Do not run the call; the model gets ``message`` as an error response."""

    message: str = "The user rejected this tool call."


Decision = Approve | Edit | Reject


def _decisions(value: Mapping[str, Decision]) -> dict[str, Decision]:
    out = dict(value)
    for call_id, decision in out.items():
        if not isinstance(decision, Approve | Edit | Reject):
            raise TypeError(f"the decision for call {call_id!r} must be Approve, Edit or Reject")
    return out


@attrs.frozen
class Resume:
    """Input that resumes a run paused for approval: a decision per pending call id.

    ``agent.invoke(Resume({"call_1": Approve(), "call_2": Reject("no")}), config)``.
    """

    decisions: Mapping[str, Decision] = attrs.field(converter=_decisions)


@attrs.frozen
class Interrupt:
    """Why a run paused: the tool calls waiting for a decision, in call order."""

    calls: tuple[ToolCall, ...]

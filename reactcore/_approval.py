"""Human approval of tool calls: the decisions a caller resumes a paused run with."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import attrs

from . import _validate as valid
from ._messages import ToolCall


@attrs.frozen
class Approve:
    """Run the call as the model asked."""


@attrs.frozen
class Edit:
    """Run the call with these arguments instead (a JSON string or a mapping); they are
    checked like the model's and replace the call's arguments in the history."""

    arguments: str | Mapping[str, Any] = attrs.field(
        validator=valid.instance_of((str, Mapping), "a JSON str or a mapping")
    )


@attrs.frozen
class Reject:
    """Do not run the call; the model gets ``message`` as an error response."""

    message: str = attrs.field(default="The user rejected this tool call.", validator=valid.text())


Decision = Approve | Edit | Reject


def _decisions(value: Mapping[str, Decision]) -> dict[str, Decision]:
    if not isinstance(value, Mapping):
        return valid.leave(value)  # refused by the validator, naming the parameter
    out = dict(value)
    for call_id, decision in out.items():
        if not isinstance(decision, Approve | Edit | Reject):
            raise TypeError(
                f"Resume.decisions: the decision for call {call_id!r} must be Approve, Edit or "
                f"Reject, got {valid.got(decision)}"
            )
    return out


@attrs.frozen
class Resume:
    """Input that resumes a run paused for approval: a decision per pending call id.

    ``agent.invoke(Resume({"call_1": Approve(), "call_2": Reject("no")}), config)``.
    """

    decisions: Mapping[str, Decision] = attrs.field(converter=_decisions, validator=valid.mapping())


@attrs.frozen
class Interrupt:
    """Why a run paused: the tool calls waiting for a decision, in call order."""

    calls: tuple[ToolCall, ...]


SCOPE = "/"
"""Between a call's id and the id of a call it paused for (``ToolCallResponse.interrupt``):
``c1/a1`` is call ``a1`` of the subagent that call ``c1`` runs."""


def scoped(call_id: str, inner: ToolCall) -> ToolCall:
    """``inner``, waiting inside call ``call_id``, as the run above lists it."""
    return attrs.evolve(inner, id=f"{call_id}{SCOPE}{inner.id}")


def outer_call(call_id: str, own: Collection[str]) -> str | None:
    """The call of ``own`` that ``call_id`` waits inside (``c1`` for ``c1/a1``), or
    ``None``; the longest such id, should one call's id hold the separator itself."""
    found = [o for o in own if call_id.startswith(f"{o}{SCOPE}")]
    return max(found, key=len) if found else None


def unscoped(decisions: Mapping[str, Decision], own: Collection[str]) -> dict[str, Resume]:
    """The decisions for calls waiting inside the calls ``own`` (``c1/a1``), as a ``Resume``
    per call (``{"c1": Resume({"a1": ...})}``); the decisions for ``own`` are left out."""
    found: dict[str, dict[str, Decision]] = {}
    for call_id, decision in decisions.items():
        outer = None if call_id in own else outer_call(call_id, own)
        if outer is not None:
            found.setdefault(outer, {})[call_id.removeprefix(f"{outer}{SCOPE}")] = decision
    return {outer: Resume(inner) for outer, inner in found.items()}

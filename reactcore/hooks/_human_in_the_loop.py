"""Pausing a run for a human to approve, edit or reject tool calls."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import attrs

from .. import _validate as valid
from .._batch import pending_calls
from .._config import RunnableConfig
from .._loop import APPROVED, unanswered
from .._messages import AssistantMessage
from .._state import OverAllState
from .._tool_node import resolved_names, resolved_tools
from ._limits import name_field


@attrs.frozen
class ApprovalPolicy:
    """How calls of one tool are reviewed: ``description`` is shown to the reviewer."""

    description: str = attrs.field(
        default="Tool execution requires approval", validator=valid.text()
    )


_EXPECTED = (
    "HumanInTheLoopHook.approve_on must be tool names (a list, tuple or set of str) or a "
    "mapping of tool name to ApprovalPolicy or bool"
)


def _policy(name: Any, policy: Any) -> ApprovalPolicy | None:
    if not isinstance(name, str):
        raise TypeError(f"{_EXPECTED}; got the key {name!r}")
    if isinstance(policy, ApprovalPolicy):
        return policy
    if isinstance(policy, bool):
        return ApprovalPolicy() if policy else None
    raise TypeError(f"{_EXPECTED}; got {policy!r} for {name!r}")


def _policies(value: Any) -> dict[str, ApprovalPolicy]:
    """``approve_on`` as a name → policy map: names get the default policy, ``False``
    leaves a tool out; anything else is a ``TypeError`` saying what was expected."""
    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, list | tuple | set | frozenset):
        pairs = [(name, True) for name in value]
    else:
        raise TypeError(f"{_EXPECTED}; got {type(value).__name__} {value!r}")
    policies = {name: _policy(name, policy) for name, policy in pairs}
    return {name: p for name, p in policies.items() if p is not None}


@attrs.frozen
class HumanInTheLoopHook:
    """Before calls to the tools in ``approve_on`` run, the run stops with status
    ``"interrupted"`` and the calls waiting (``RunInterrupted``; ``AgentResult.interrupt``).

    ``approve_on`` is a list of tool names (each with the default ``ApprovalPolicy``) or a
    map ``{name: ApprovalPolicy(...) | True | False}``. A call is matched by the tool that
    will run it, after resolution: with a ``tool_resolver`` that maps ``send-email`` to
    the ``send_email`` tool, a call of ``send-email`` waits like one of ``send_email``.
    The agent checks the names against its tools at construction (``check_tools``): a
    name it has no tool for is a ``ValueError``. Tools that only arrive at run time (a
    ``tool_resolver``; dynamic tools an interceptor adds) cannot be checked then: with a
    resolver the agent skips the check, and ``check_tool_names=False`` skips it for
    dynamic tools.

    ``approve_destructive=True`` also stops before every call of a tool that marks itself
    destructive (``Tool.annotations``, a ``ToolAnnotations`` with ``destructive=True`` and
    not ``read_only``: an MCP server's ``destructiveHint``), whatever its name — tools a
    server adds at run time included. Tools without annotations are not covered by it
    (MCP's default presumes an unannotated tool destructive; name those in
    ``approve_on``).

    The caller resumes with ``agent.invoke(Resume({call_id: Approve() | Edit(arguments) |
    Reject(message)}), config)``. Calls of the batch that need no approval run once, with
    the approved ones; calls left out of the ``Resume`` interrupt again. Resuming needs
    checkpoints: the agent must have a saver.
    """

    approve_on: Mapping[str, ApprovalPolicy] = attrs.field(
        factory=dict, converter=_policies, validator=valid.mapping()
    )
    name: str = name_field("human_in_the_loop")
    requires_saver: bool = attrs.field(default=True, validator=valid.boolean())
    check_tool_names: bool = attrs.field(default=True, validator=valid.boolean())
    approve_destructive: bool = attrs.field(default=False, kw_only=True, validator=valid.boolean())

    def check_tools(self, names: Collection[str]) -> None:
        """Raise ``ValueError`` when ``approve_on`` names a tool not in ``names``."""
        unknown = sorted(set(self.approve_on) - set(names))
        if unknown and self.check_tool_names:
            have = ", ".join(sorted(names)) or "none"
            raise ValueError(
                f"hook {self.name!r}: approve_on names tools the agent does not have: "
                f"{', '.join(unknown)} (the agent's tools: {have})"
            )

    async def before_tools(self, state: OverAllState, config: RunnableConfig) -> Any:
        """Pause for the calls whose tool — the one that will run, after the resolver, not
        the name the model wrote — is in ``approve_on`` (or marks itself destructive, with
        ``approve_destructive``) and not yet approved."""
        calls = unanswered(state)
        if not calls:
            return None
        approved = set(state.get(APPROVED) or ())
        assistant = pending_calls(state)[0]
        names = resolved_names(assistant, config)
        destructive = self._destructive(assistant, config) if self.approve_destructive else ()
        waiting = [
            c
            for c in calls
            if (names[c.id] in self.approve_on or c.name in destructive) and c.id not in approved
        ]
        return {"interrupt": waiting} if waiting else None

    @staticmethod
    def _destructive(assistant: AssistantMessage, config: RunnableConfig) -> set[str]:
        """The names called in ``assistant`` whose resolved tool marks itself destructive."""
        found = resolved_tools(assistant, config)
        return {
            name
            for name, tool in found.items()
            if tool is not None and tool.annotations is not None
            if tool.annotations.marks_destructive
        }

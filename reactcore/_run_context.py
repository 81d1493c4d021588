"""What the two nodes share through the run's context, so that neither imports the other:
they meet only in the loop.

``DYNAMIC_TOOLS`` is where the LLM node leaves the tools a model interceptor added for
the run (``ModelRequest.dynamic_tools``) and where the tool node finds them again;
``dynamic_tools`` reads it. The state keys both nodes read (``messages``) are
``reactcore._state``'s.

``CALLER`` is what a tool running an agent (``agent.as_tool()``) needs of the run that
called it: the run, to pass the subagent's events up, and the calling agent's saver.

``RUN_COUNTS`` holds what hooks count per run (name → ``int``: the limit hooks' run
counts), JSON-native and apart from the rest of the context, so that a run going on in
another process (Temporal's continue-as-new) takes its counts along; ``run_count`` and
``set_run_count`` read and write it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import attrs

from ._tools import Tool, index_tools

if TYPE_CHECKING:
    from ._checkpoint import Saver
    from ._run import AgentRun

DYNAMIC_TOOLS = "dynamic_tools"
CALLER = "_caller_"
RUN_COUNTS = "_run_counts_"


@attrs.frozen
class Caller:
    """The run a tool call belongs to (``run``) and its agent's saver (``saver``)."""

    run: AgentRun
    saver: Saver | None


def dynamic_tools(context: Mapping[str, Any]) -> Mapping[str, Tool]:
    """The run's dynamic tools (``context["dynamic_tools"]``: a list or a name → tool map)."""
    found = context.get(DYNAMIC_TOOLS)
    if not found:
        return {}
    if isinstance(found, Mapping):
        return found
    return MappingProxyType(index_tools([("the run's dynamic tools", found)]))


def run_count(context: Mapping[str, Any], name: str) -> int:
    """The run's count ``name`` (0 until set)."""
    counts: Mapping[str, int] = context.get(RUN_COUNTS) or {}
    return counts.get(name, 0)


def set_run_count(context: dict[str, Any], name: str, value: int | None) -> None:
    """Set the run's count ``name`` (``None``: forget it). The counts are replaced, never
    changed in place: a copy of a context (each run works in one) never shares them."""
    counts = {k: v for k, v in (context.get(RUN_COUNTS) or {}).items() if k != name}
    if value is not None:
        counts[name] = value
    context[RUN_COUNTS] = counts

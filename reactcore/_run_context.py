"""What the two nodes share through the run's context, so that neither imports the other:
they meet only in the loop.

``DYNAMIC_TOOLS`` is where the LLM node leaves the tools a model interceptor added for
the run (``ModelRequest.dynamic_tools``) and where the tool node finds them again;
``dynamic_tools`` reads it. The state keys both nodes read (``messages``) are
``reactcore._state``'s.

``CALLER`` is what a tool running an agent (``agent.as_tool()``) needs of the run that
called it: the run, to pass the subagent's events up, and the calling agent's saver.
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

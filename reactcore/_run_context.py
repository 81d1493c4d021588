"""What the two nodes share through the run's context, so that neither imports the other:
they meet only in the loop.

``DYNAMIC_TOOLS`` is where the LLM node leaves the tools a model interceptor added for
the run (``ModelRequest.dynamic_tools``) and where the tool node finds them again;
``dynamic_tools`` reads it. The state keys both nodes read (``messages``) are
``reactcore._state``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ._tools import Tool, index_tools

DYNAMIC_TOOLS = "dynamic_tools"


def dynamic_tools(context: Mapping[str, Any]) -> Mapping[str, Tool]:
    """The run's dynamic tools (``context["dynamic_tools"]``: a list or a name → tool map)."""
    found = context.get(DYNAMIC_TOOLS)
    if not found:
        return {}
    if isinstance(found, Mapping):
        return found
    return MappingProxyType(index_tools([("the run's dynamic tools", found)]))

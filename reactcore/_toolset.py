"""Toolsets: tools that come from elsewhere (an MCP server) and may change during a run.

A toolset is given to ``ReactAgent(tools=[...])`` beside plain tools. It is not made into
``Tool`` values at construction: it is a model interceptor (``wrap_model_call`` adds its
current tools to each model request as dynamic tools) and a resolver (``resolve(name)``
finds one of its tools by name, which is what a run resumed from a checkpoint needs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ._interceptors import ModelHandler
    from ._tool_node import ToolResolver
    from ._tools import Tool
    from .models.base import ModelRequest, ModelResponse


@runtime_checkable
class Toolset(Protocol):
    """A source of tools: adds them to model requests and resolves them by name."""

    async def wrap_model_call(
        self, request: ModelRequest, handler: ModelHandler
    ) -> ModelResponse: ...

    def resolve(self, name: str) -> Tool | None: ...


def chain_resolvers(resolvers: Sequence[ToolResolver]) -> ToolResolver | None:
    """One resolver asking each of ``resolvers`` in turn (``None`` if there are none)."""
    if not resolvers:
        return None
    if len(resolvers) == 1:
        return resolvers[0]

    def resolve(name: str) -> Tool | None:
        for resolver in resolvers:
            found = resolver(name)
            if found is not None:
                return found
        return None

    return resolve

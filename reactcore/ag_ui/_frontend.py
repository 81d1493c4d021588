"""Frontend tools: the tools a client declares in ``RunAgentInput.tools``, which the model
may call and the client runs (AG-UI's way).

``FrontendTools`` is one hook the app adds to the agent it serves. Its model interceptor
shows the model the request's client tools (as the run's dynamic tools, read from the
run's context); its ``before_tools`` ends the run when the model's answer calls one of
them, before any call of that answer runs. The client's next request carries the
results as ``tool`` messages (``reactcore.ag_ui._messages`` turns them into the answer of
those calls; a server tool of the same answer, which did not run, is answered with an
error asking the model to call it again).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .._exceptions import RequestRefused
from .._loop import unanswered
from .._tools import Tool

if TYPE_CHECKING:
    from ag_ui import core

    from .._config import RunnableConfig
    from .._interceptors import ModelHandler
    from .._state import OverAllState
    from ..models.base import ModelRequest, ModelResponse

CLIENT_TOOLS = "ag_ui_client_tools"
"""The run's context key holding the client's tools (name → ``Tool``)."""


async def _client_side(**arguments: Any) -> str:
    # Never reached through the app: the hook ends the run before a client tool's call runs.
    return "Error: this tool runs in the client; the client answers its calls."


def client_tools(
    declared: Sequence[core.Tool] | None, taken: Mapping[str, object]
) -> dict[str, Tool]:
    """The client's declared tools as tools of the run; 422 when one has no usable name or
    schema, or the name of a tool the agent has (``taken``)."""
    tools: dict[str, Tool] = {}
    for spec in declared or ():
        if spec.name in taken or spec.name in tools:
            raise RequestRefused(
                422, "bad_tools", f"tool {spec.name!r} is declared twice or is the agent's own"
            )
        parameters = spec.parameters if spec.parameters is not None else {"type": "object"}
        if not isinstance(parameters, Mapping):
            raise RequestRefused(
                422, "bad_tools", f"tool {spec.name!r}: parameters must be an object"
            )
        try:
            tool = Tool(spec.name, spec.description, dict(parameters), _client_side, is_async=True)
        except (TypeError, ValueError) as exc:
            raise RequestRefused(422, "bad_tools", f"tool {spec.name!r}: {exc}") from exc
        tools[spec.name] = tool
    return tools


@attrs.frozen
class FrontendTools:
    """The hook (and model interceptor) behind the client's tools; see the module docstring."""

    name: str = "ag_ui_frontend_tools"
    order: int = -1_000_000  # before any hook that would pause or run the same calls
    can_jump_to: tuple[str, ...] = ("end",)

    @property
    def interceptors(self) -> tuple[FrontendTools, ...]:
        return (self,)

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        """Show the model the run's client tools, beside the agent's own."""
        tools: Mapping[str, Tool] = request.context.get(CLIENT_TOOLS) or {}
        if not tools or request.purpose != "agent":
            return await handler(request)
        known = set(request.tools)
        names = (*request.tools, *(n for n in tools if n not in known))
        dynamic = (*request.dynamic_tools, *tools.values())
        return await handler(attrs.evolve(request, tools=names, dynamic_tools=dynamic))

    async def before_tools(
        self, state: OverAllState, config: RunnableConfig
    ) -> dict[str, Any] | None:
        """End the run when the pending calls include a client tool's."""
        tools = config.context.get(CLIENT_TOOLS) or {}
        if tools and any(c.name in tools for c in unanswered(state)):
            return {"jump_to": "end"}
        return None


def pending_client_calls(state: Mapping[str, Any] | None, tools: Mapping[str, Tool]) -> list[str]:
    """The ids of the client tools' calls the run stopped at (``pendingToolCallIds``)."""
    if not tools or state is None:
        return []
    return [c.id for c in unanswered(state) if c.name in tools]

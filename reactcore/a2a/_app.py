"""``a2a_app``: an agent served over A2A — its agent card at the well-known path, and the
SDK's JSON-RPC endpoint (A2A 1.0 methods and the v0.3 names) at the app's root, answered
by ``RunHandler``.

Before the SDK sees a request, this app does what the shared serving layer does for every
protocol: ``authorize`` names the principal (401 without one) and counts the request in
its rate (429), the body is read within ``Limits.max_body_bytes`` (413), each answered as
plain HTTP; then the SDK's call context carries the principal as its user, and the
request's task group for a streamed run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import attrs
from a2a.server.routes import (
    DefaultServerCallContextBuilder,
    create_agent_card_routes,
)
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill

from .._agent import ReactAgent
from .._config import RunnableConfig
from .._exceptions import RequestRefused
from .._logging import get_logger
from .._validate import got
from ..savers import MemorySaver
from ..serving._app import Served
from ..serving._body import read_body
from ..serving._response import internal_error, refusal
from ._handler import GROUP, Principal, RunHandler
from ._tasks import Tasks

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.types import Message, Receive, Scope, Send

    from ..savers import Saver

SCOPE_KEY = "reactcore.a2a"
"""The ASGI scope key holding ``(principal, task group)`` for the context builder."""

_log = get_logger(component="a2a")


def skills(agent: ReactAgent, description: str) -> list[AgentSkill]:
    """The card's skills: one per tool of the agent (its name and description), or one
    naming the agent itself when it has none."""
    node = agent.tool_node
    found = []
    if node is not None:
        config = RunnableConfig()
        for name in node.tool_names:
            tool = node.resolve(name, config)
            if tool is not None:
                text = tool.description or f"The {name} tool."
                found.append(AgentSkill(id=name, name=name, description=text, tags=["tool"]))
    if not found:
        found.append(
            AgentSkill(id=agent.name, name=agent.name, description=description, tags=["agent"])
        )
    return found


def agent_card(
    agent: ReactAgent, url: str, name: str | None, description: str | None, version: str
) -> AgentCard:
    """The agent card: name, description (``description``, else the system prompt),
    skills, the JSON-RPC interface at ``url`` (A2A 1.0 and 0.3), streaming."""
    text = description or agent.system_prompt or f"The {agent.name} agent."
    interfaces = [
        AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=v)
        for v in ("1.0", "0.3")
    ]
    return AgentCard(
        name=name or agent.name,
        description=text,
        version=version,
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=skills(agent, text),
    )


class _ContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, its user the principal ``authorize`` named and its state
    holding the request's task group."""

    def build(self, request: Request) -> Any:
        context = super().build(request)
        _, group = request.scope[SCOPE_KEY]
        context.state[GROUP] = group
        return context

    def build_user(self, request: Request) -> Any:
        principal, _ = request.scope[SCOPE_KEY]
        return Principal(principal)


@attrs.define(eq=False)
class _Endpoint:
    """The JSON-RPC endpoint (an ASGI app): checks, then the SDK's dispatcher."""

    served: Served
    dispatcher: JsonRpcDispatcher

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from starlette.requests import Request

        request = Request(scope, receive)
        try:
            principal = await self.served.principal(request)
            body = await read_body(request, self.served.limits.max_body_bytes)
        except RequestRefused as exc:
            await refusal(exc)(scope, receive, send)
            return
        except Exception as exc:
            _log.error("a2a_request_failed", error=type(exc).__name__)
            await internal_error()(scope, receive, send)
            return
        given = False

        async def replay() -> Message:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        # The task group a streamed run lives in: it ends with the response, cancelling
        # a run still going then (the client left).
        async with anyio.create_task_group() as group:
            scope[SCOPE_KEY] = (principal, group)
            response = await self.dispatcher.handle_requests(Request(scope, replay))
            await response(scope, replay, send)
            group.cancel_scope.cancel()


def a2a_app(
    agent: object,
    *,
    authorize: object,
    url: str,
    saver: Saver | None = None,
    limits: object = None,
    name: str | None = None,
    description: str | None = None,
    version: str = "1.0.0",
) -> Starlette:
    """An ASGI app serving ``agent`` over A2A (see ``reactcore.a2a``).

    Args:
        agent: The ``ReactAgent`` to serve; one agent serves every request.
        authorize: ``authorize(request) -> principal`` (sync or async): who the client is;
            tasks are scoped to it (another principal's task is "task not found").
        url: The URL clients reach this app at (its root: the JSON-RPC endpoint), as the
            agent card announces it.
        saver: Where tasks live (replaces the agent's saver); the agent's own when
            ``None``, else a new ``MemorySaver``. Replicas over one saver serve the same
            tasks.
        limits: ``reactcore.serving.Limits`` (body size, parts per message as
            ``max_messages``, request rate per principal); the defaults when ``None``.
        name: The card's name (default: the agent's).
        description: The card's description (default: the agent's system prompt).
        version: The card's version of the agent.
    """
    from starlette.applications import Starlette
    from starlette.routing import Route

    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise TypeError(f"url must be an http(s) URL (a str), got {got(url)}")
    for label, value in (("name", name), ("description", description)):
        if value is not None and (not isinstance(value, str) or not value):
            raise TypeError(f"{label} must be a non-empty str or None, got {got(value)}")
    if not isinstance(version, str) or not version:
        raise TypeError(f"version must be a non-empty str, got {got(version)}")
    if saver is None and isinstance(agent, ReactAgent) and agent.saver is None:
        saver = MemorySaver()
    served = Served.of(agent, authorize=authorize, saver=saver, limits=limits)
    assert served.agent.saver is not None
    handler = RunHandler(served, Tasks(served.agent, served.agent.saver))
    dispatcher = JsonRpcDispatcher(handler, _ContextBuilder(), enable_v0_3_compat=True)
    card = agent_card(served.agent, url, name, description, version)
    routes = [
        *create_agent_card_routes(card),
        Route("/", _Endpoint(served, dispatcher), methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    app.state.served = served
    app.state.card = card
    return app

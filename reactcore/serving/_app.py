"""``Served``: an agent behind a protocol app — who may call it (``authorize``), within
which bounds (``Limits``), the runs it is streaming — and the steering endpoints every
protocol app mounts next to its stream.

Steering endpoints (JSON; each authorized, each counted in the principal's request rate;
a run another principal started is 404 on every one):

- ``GET  runs/{run_id}``: ``{"runId", "threadId", "status", "pending": [calls]}``
- ``POST runs/{run_id}/cancel``: cancel the run → ``{"cancelled": bool}``
- ``POST runs/{run_id}/calls/{call_id}/cancel`` (``{"reason": …}`` optional): cancel one
  running tool call; the run goes on → ``{"cancelled": bool}``
- ``POST runs/{run_id}/decisions`` (``{"decisions": {"<call id>": {"type": "approve"}}}``;
  ``edit`` with ``arguments``, ``reject`` with ``reason``): answer a pause for approval;
  the paused stream goes on with the next leg → ``{"resumed": true}``
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import attrs

from .._agent import ReactAgent
from .._approval import Resume
from .._config import RunnableConfig
from .._exceptions import RequestRefused, ThreadBusy
from .._validate import got
from ._body import decisions_from_json, read_json
from ._limits import Limits, RequestRate, check_limits
from ._live import LiveRun, LiveRuns
from ._principals import Authorize, check_authorize, client_id, principal_of, scoped_thread_id
from ._response import guarded

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from .._input import AgentInput
    from ..savers import Saver


@attrs.define(eq=False)
class Served:
    """What a protocol app knows of the agent it serves; made by ``Served.of``."""

    agent: ReactAgent
    authorize: Authorize
    limits: Limits
    keep_running: bool
    runs: LiveRuns
    rate: RequestRate

    @classmethod
    def of(
        cls,
        agent: object,
        *,
        authorize: object,
        saver: Saver | None = None,
        limits: object = None,
        keep_running: object = False,
    ) -> Served:
        """Check every argument (a ``TypeError`` naming the wrong one); ``saver`` replaces
        the agent's own (on a copy of the agent)."""
        if not isinstance(agent, ReactAgent):
            raise TypeError(f"agent must be a ReactAgent, got {got(agent)}")
        if saver is not None:
            agent = attrs.evolve(agent, saver=saver)
        checked = check_limits(Limits() if limits is None else limits)
        if not isinstance(keep_running, bool):
            raise TypeError(f"keep_running must be a bool, got {got(keep_running)}")
        return cls(
            agent,
            check_authorize(authorize),
            checked,
            keep_running,
            LiveRuns(checked.max_live_runs),
            RequestRate(checked),
        )

    async def principal(self, request: Request) -> str:
        """Who sends ``request`` (401 if nobody), counted in their request rate (429)."""
        principal = await principal_of(self.authorize, request)
        self.rate.take(principal)
        return principal

    async def starting(self, request: Request) -> str:
        """``principal``, for a request that starts a stream: also 503 when no run can
        start (``max_live_runs``), before the stream's answer begins."""
        principal = await self.principal(request)
        self.runs.check_room()
        return principal

    def thread_id(self, principal: str, thread_id: object) -> str | None:
        """The saver's thread for a client's ``thread_id`` (``None`` without a saver, where
        nothing is kept between requests anyway)."""
        if thread_id is None or self.agent.saver is None:
            return None
        return scoped_thread_id(principal, client_id(thread_id, "threadId"))

    def config(self, principal: str, thread_id: object, **context: Any) -> RunnableConfig:
        """A run's config: its scoped thread, and ``context`` for the run's tools. New
        input on a thread whose last run was cancelled (its client left, or stopped it)
        goes on from it, the calls it left answered as cancelled (``unfinished``)."""
        return RunnableConfig(
            thread_id=self.thread_id(principal, thread_id),
            metadata={"principal": principal},
            context=dict(context),
            unfinished="cancel",
        )

    @asynccontextmanager
    async def running(
        self,
        principal: str,
        input: AgentInput | Resume | None,
        config: RunnableConfig,
        thread_id: str | None = None,
        run_id: str | None = None,
    ) -> AsyncIterator[LiveRun]:
        """Start a run and list it for the steering endpoints while the block runs (503
        when ``max_live_runs`` are streaming, 409 when another run owns the thread)."""
        with self.runs.slot():
            try:
                started = self.agent.start(input, config)
                run = await started.__aenter__()
            except ThreadBusy as exc:
                raise RequestRefused(
                    409, "thread_busy", "another run of this thread is live"
                ) from exc
            try:
                live = LiveRun(principal, run, run_id or run.run_id, thread_id)
                with self.runs.listed(live):
                    yield live
            except BaseException as exc:
                if not await started.__aexit__(type(exc), exc, exc.__traceback__):
                    raise
            else:
                await started.__aexit__(None, None, None)

    def steering_routes(self) -> list[BaseRoute]:
        """The steering endpoints (see the module docstring), to mount beside a stream."""
        from starlette.routing import Route

        return [
            Route("/runs/{run_id}", guarded(self._status), methods=["GET"]),
            Route("/runs/{run_id}/cancel", guarded(self._cancel), methods=["POST"]),
            Route(
                "/runs/{run_id}/calls/{call_id:path}/cancel",
                guarded(self._cancel_call),
                methods=["POST"],
            ),
            Route("/runs/{run_id}/decisions", guarded(self._decide), methods=["POST"]),
        ]

    async def _find(self, request: Request) -> tuple[LiveRun, Mapping[str, Any]]:
        principal = await self.principal(request)
        live = self.runs.find(principal, client_id(request.path_params["run_id"], "run id"))
        body = (
            await read_json(request, self.limits.max_body_bytes)
            if request.method == "POST"
            else None
        )
        if body is not None and not isinstance(body, Mapping):
            raise RequestRefused(400, "bad_request", "the request body must be a JSON object")
        return live, body or {}

    async def _status(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        live, _ = await self._find(request)
        pending = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in live.pending()]
        status = live.run.status_nowait()
        body = {
            "runId": live.run.run_id,
            "threadId": live.thread_id,
            "status": status,
            "pending": pending,
        }
        return JSONResponse(body)

    async def _cancel(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        live, _ = await self._find(request)
        return JSONResponse({"cancelled": await live.run.cancel()})

    async def _cancel_call(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        live, body = await self._find(request)
        call_id = client_id(request.path_params["call_id"], "call id")
        reason = body.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise RequestRefused(400, "bad_request", "'reason' must be a string")
        return JSONResponse({"cancelled": await live.run.cancel_tool(call_id, reason)})

    async def _decide(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        live, body = await self._find(request)
        await live.decide(decisions_from_json(body.get("decisions")))
        return JSONResponse({"resumed": True})

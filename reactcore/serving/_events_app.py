"""``events_app``: an agent served with reactcore's own events (their JSON form, as
``reactcore.to_json`` writes them) over server-sent events, with the steering endpoints
beside the stream. The protocol apps (``reactcore.ag_ui``, ``reactcore.ai_sdk``) are the
same stream in other words; this one is for clients written against reactcore itself (a
Python service's own frontend, the run viewer).

``POST /`` with ``{"input": "…", "threadId": "…"}`` (or ``{"threadId": "…", "decisions":
{…}}`` to resume a thread paused for approval, from its checkpoint) answers
``event: run_started`` (``{"runId", "threadId"}``: steer the run by this id), then
``event: <type>`` / ``data: <to_json(event)>`` per event, then ``event: end``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._approval import Resume
from .._events import Event
from .._exceptions import RequestRefused
from .._shapes import event_tag, to_json
from ._body import decisions_from_json, read_json
from ._live import relay
from ._response import EventStreamResponse, Write, guarded

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request

    from ..savers import Saver
    from ._app import Served


def sse(event: str, data: Any) -> bytes:
    """One server-sent event: ``event: <event>`` and its data as one line of JSON."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _input(body: Mapping[str, Any]) -> str | Resume:
    if "decisions" in body:
        if body.get("threadId") is None:
            raise RequestRefused(422, "bad_request", "resuming needs the paused run's threadId")
        return decisions_from_json(body["decisions"])
    text = body.get("input")
    if not isinstance(text, str) or not text:
        raise RequestRefused(422, "bad_request", "'input' must be a non-empty string")
    return text


def _endpoint(served: Served) -> Any:
    async def start(request: Request) -> EventStreamResponse:
        principal = await served.starting(request)
        body = await read_json(request, served.limits.max_body_bytes)
        if not isinstance(body, Mapping):
            raise RequestRefused(400, "bad_request", "the request body must be a JSON object")
        input = _input(body)
        thread_id = body.get("threadId")
        config = served.config(principal, thread_id)

        async def produce(write: Write) -> None:
            async def emit(event: Event) -> None:
                await write(sse(event_tag(type(event)), to_json(event)))

            try:
                async with served.running(principal, input, config, thread_id) as live:
                    await write(sse("run_started", {"runId": live.run_id, "threadId": thread_id}))
                    await relay(live, emit, served.limits.pause_timeout)
            except RequestRefused as exc:
                await write(sse("error", {"code": exc.code, "message": exc.message}))
            await write(sse("end", {}))

        return EventStreamResponse(produce, keep_running=served.keep_running)

    return guarded(start)


def events_app(
    agent: object,
    *,
    authorize: object,
    saver: Saver | None = None,
    limits: object = None,
    keep_running: object = False,
) -> Starlette:
    """An ASGI app streaming ``agent``'s runs as reactcore's JSON events (see the module
    docstring), steered through ``runs/…`` beside it.

    Args:
        agent: The ``ReactAgent`` to serve; one agent serves every request.
        authorize: ``authorize(request) -> principal`` (sync or async): who the client is;
            threads and runs are scoped to it (``reactcore.serving``).
        saver: Replaces the agent's saver (threads persist between requests only with one).
        limits: ``reactcore.serving.Limits``; the defaults when ``None``.
        keep_running: Let a run go on to its end when its client leaves (its events are
            dropped); by default the run is cancelled then, its finished calls kept.
    """
    from starlette.applications import Starlette
    from starlette.routing import Route

    from ._app import Served

    served = Served.of(
        agent, authorize=authorize, saver=saver, limits=limits, keep_running=keep_running
    )
    routes = [Route("/", _endpoint(served), methods=["POST"]), *served.steering_routes()]
    app = Starlette(routes=routes)
    app.state.served = served
    return app

"""``viewer_app``: the live run viewer, an ASGI app an operator mounts beside a served app.

It sees every run of that app, whoever started it: it is an operator's tool, behind its
own ``authorize`` (give it to operators only). Endpoints, under the viewer's root:

- ``GET /``: the page (self-contained: its style and script inline, a
  Content-Security-Policy that lets it load nothing and talk only to its own origin);
- ``GET api/runs``: ``{"runs": [...]}``, live runs then the last finished ones, each
  ``{"key", "principal", "runId", "threadId", "status", "live", "started"}``;
- ``GET api/runs/{key}/timeline``: server-sent ``event: snapshot`` with ``{...the run,
  "pending": [calls waiting for a decision], "timeline": Timeline.to_json()}`` as the run
  goes (at most ``SNAPSHOTS_PER_SECOND``, and at least one a second while it runs, so
  open bars grow), then ``event: end`` after the last one;
- ``POST api/runs/{key}/calls/{call_id}/cancel`` (``{"reason": …}`` optional),
  ``POST api/runs/{key}/cancel``, ``POST api/runs/{key}/decisions`` (``{"decisions":
  {…}}`` as the served app's own steering endpoint takes them): the same run-handle
  methods the API has; 409 once the run ended. They take JSON only
  (``content-type: application/json``, 415 else), so a plain HTML form of another site
  cannot post to them.

The viewer must be served in the same event loop as the app (mount both in one ASGI app,
or serve both from one process's loop).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio

from .._exceptions import RequestRefused
from ..serving._body import decisions_from_json, read_json
from ..serving._events_app import sse
from ..serving._principals import check_authorize, client_id, principal_of
from ..serving._response import EventStreamResponse, Write, guarded
from ._live import Recorder, Recording
from ._page import asset, script_json

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from ..serving._app import Served

SNAPSHOTS_PER_SECOND = 5
"""At most this many timeline snapshots a second go to one page."""

_MAX_BODY = 256 * 1024

_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; connect-src 'self'"
)


def _page(base: str) -> str:
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>reactcore live runs</title>
<style>
{asset("timeline.css")}{asset("viewer.css")}</style>
</head>
<body>
<div id="viewer"></div>
<script>
{asset("timeline.js")}{asset("viewer.js")}
ReactcoreViewer.start(document.getElementById("viewer"), {script_json(base)});
</script>
</body>
</html>
"""


def _served(app: object) -> Served:
    from ..serving._app import Served

    state = getattr(app, "state", None)
    served = getattr(state, "served", None)
    if not isinstance(served, Served):
        raise TypeError(
            "app must be an app made by events_app, ag_ui_app or ai_sdk_app (one with "
            f"app.state.served), got {type(app).__name__}"
        )
    return served


def viewer_app(app: object, *, authorize: object) -> Starlette:
    """The live viewer of ``app``'s runs (see the module docstring); from now on ``app``
    records its runs' timelines for it (nothing is recorded for an app without a viewer).

    Args:
        app: An app made by ``events_app``, ``ag_ui_app`` or ``ai_sdk_app``.
        authorize: ``authorize(request) -> principal`` (sync or async) for the viewer
            itself, as in ``reactcore.serving``: ``None`` (or ``RequestRefused(401)``)
            turns a request away. Whoever it lets in sees and steers every principal's
            runs of ``app``.

    ``ValueError`` when ``app`` has a viewer already.
    """
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse, JSONResponse
    from starlette.routing import Route

    served = _served(app)
    check = check_authorize(authorize)
    if served.runs.watcher is not None:
        raise ValueError("app has a viewer already: make one viewer per app")
    recorder = Recorder()
    served.runs.watcher = recorder

    async def recording(request: Request) -> Recording:
        await principal_of(check, request)
        return recorder.find(str(request.path_params["key"]))

    async def body(request: Request) -> Mapping[str, Any]:
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            raise RequestRefused(415, "json_only", "send the body as application/json")
        value = await read_json(request, _MAX_BODY)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise RequestRefused(400, "bad_request", "the request body must be a JSON object")
        return value

    async def page(request: Request) -> Response:
        await principal_of(check, request)
        base = request.scope.get("root_path", "").rstrip("/") + "/"
        headers = {"content-security-policy": _CSP, "cache-control": "no-store"}
        return HTMLResponse(_page(base), headers=headers)

    async def runs(request: Request) -> Response:
        await principal_of(check, request)
        return JSONResponse({"runs": [r.summary() for r in recorder.recordings()]})

    async def timeline(request: Request) -> EventStreamResponse:
        seen = await recording(request)

        async def produce(write: Write) -> None:
            while True:
                ended = seen.live is None
                await write(sse("snapshot", seen.snapshot()))
                if ended:
                    await write(sse("end", {}))
                    return
                await seen.changed(1.0)
                await anyio.sleep(1 / SNAPSHOTS_PER_SECOND)

        return EventStreamResponse(produce, heartbeat=15.0)

    async def cancel_call(request: Request) -> Response:
        seen, given = await recording(request), await body(request)
        call_id = client_id(request.path_params["call_id"], "call id")
        reason = given.get("reason", "an operator cancelled it in the run viewer")
        if not isinstance(reason, str):
            raise RequestRefused(400, "bad_request", "'reason' must be a string")
        return JSONResponse({"cancelled": await seen.steer().run.cancel_tool(call_id, reason)})

    async def cancel(request: Request) -> Response:
        seen, _ = await recording(request), await body(request)
        return JSONResponse({"cancelled": await seen.steer().run.cancel()})

    async def decide(request: Request) -> Response:
        seen, given = await recording(request), await body(request)
        await seen.steer().decide(decisions_from_json(given.get("decisions")))
        return JSONResponse({"resumed": True})

    routes = [
        Route("/", guarded(page), methods=["GET"]),
        Route("/api/runs", guarded(runs), methods=["GET"]),
        Route("/api/runs/{key}/timeline", guarded(timeline), methods=["GET"]),
        Route("/api/runs/{key}/cancel", guarded(cancel), methods=["POST"]),
        Route(
            "/api/runs/{key}/calls/{call_id:path}/cancel", guarded(cancel_call), methods=["POST"]
        ),
        Route("/api/runs/{key}/decisions", guarded(decide), methods=["POST"]),
    ]
    viewer = Starlette(routes=routes)
    viewer.state.recorder = recorder
    return viewer

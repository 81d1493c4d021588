"""Answers of a served agent: ``EventStreamResponse`` streams a run as server-sent events
and ends the run when the client leaves (unless the service keeps runs running);
``guarded`` turns any failure of a handler into a JSON error without a stack or a key."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from .._exceptions import RequestRefused
from .._logging import get_logger

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import Receive, Scope, Send

Write = Callable[[bytes], Awaitable[None]]
"""Sends one chunk of the stream (after the client left: nothing, and no error)."""

_log = get_logger(component="serving")


def refusal(exc: RequestRefused) -> Response:
    """The JSON answer for a refused request: its status, code and message only."""
    from starlette.responses import JSONResponse

    headers = {}
    if exc.status == 429:
        headers["retry-after"] = "1"
    body = {"error": {"code": exc.code, "message": exc.message}}
    return JSONResponse(body, status_code=exc.status, headers=headers)


def internal_error() -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse(
        {"error": {"code": "internal", "message": "internal error"}}, status_code=500
    )


def guarded(handler: Callable[[Request], Awaitable[Any]]) -> Callable[[Request], Awaitable[Any]]:
    """``handler`` answering every failure as JSON: ``RequestRefused`` as itself, anything
    else as a bare 500 (the error is logged here, never sent)."""

    async def endpoint(request: Request) -> Any:
        try:
            return await handler(request)
        except RequestRefused as exc:
            return refusal(exc)
        except Exception as exc:
            _log.error("request_failed", path=request.url.path, error=type(exc).__name__)
            _log.debug("request_failed_detail", path=request.url.path, error=repr(exc))
            return internal_error()

    return endpoint


@attrs.define(eq=False)
class EventStreamResponse:
    """A ``text/event-stream`` answer written by ``produce(write)``.

    While ``produce`` runs, the client's leaving is watched: ``produce`` is cancelled then
    (so the run it streams is cancelled, its finished tool calls kept), unless
    ``keep_running`` — then it goes on to its end and its writes go nowhere. A comment
    line goes out after ``heartbeat`` seconds without a write, so proxies keep an idle
    stream (a long tool call) open.
    """

    produce: Callable[[Write], Awaitable[None]]
    headers: Mapping[str, str] = attrs.field(factory=dict)
    keep_running: bool = False
    heartbeat: float = 15.0
    client_left: bool = attrs.field(default=False, init=False)
    _last_write: float = attrs.field(default=0.0, init=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
        ]
        headers += [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in self.headers.items()
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})

        async def write(chunk: bytes) -> None:
            if self.client_left:
                return
            self._last_write = anyio.current_time()
            try:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except OSError:
                self._gone(group)

        async with anyio.create_task_group() as group:
            group.start_soon(self._watch, receive, group)
            group.start_soon(self._beat, write)
            await self.produce(write)
            group.cancel_scope.cancel()
        if not self.client_left:
            with suppress(OSError):  # the client left as the stream ended: nothing is lost
                await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _gone(self, group: anyio.abc.TaskGroup) -> None:
        self.client_left = True
        if not self.keep_running:
            group.cancel_scope.cancel()

    async def _watch(self, receive: Receive, group: anyio.abc.TaskGroup) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self._gone(group)
                return

    async def _beat(self, write: Write) -> None:
        if not math.isfinite(self.heartbeat):
            return
        self._last_write = anyio.current_time()
        while True:
            await anyio.sleep_until(self._last_write + self.heartbeat)
            if anyio.current_time() >= self._last_write + self.heartbeat:
                await write(b": keep-alive\n\n")

"""Serving an ASGI app on 127.0.0.1 inside the test's own event loop, on either backend
(uvicorn on asyncio, hypercorn's trio worker on trio), and reading server-sent events."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import httpx
import sniffio


async def _hypercorn_trio(app: Any, stop: anyio.Event, *, task_status: Any) -> None:
    from hypercorn.config import Config
    from hypercorn.trio import serve

    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.graceful_timeout = 1.0
    config.accesslog = None
    async with anyio.create_task_group() as tg:
        urls = await tg.start(partial(serve, app, config, shutdown_trigger=stop.wait))
        task_status.started(urls[0])


@asynccontextmanager
async def serve_app(app: Any) -> AsyncIterator[str]:
    """``app`` served on a free loopback port while the block runs; gives its base URL.
    The listening socket is bound before the block starts, so clients connect at once."""
    async with anyio.create_task_group() as tg:
        if sniffio.current_async_library() == "trio":
            stop = anyio.Event()
            url = await tg.start(_hypercorn_trio, app, stop)
            try:
                yield url
            finally:
                stop.set()
            return
        import uvicorn

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(512)
        config = uvicorn.Config(
            app, log_level="warning", timeout_graceful_shutdown=1, lifespan="off"
        )
        server = uvicorn.Server(config)
        tg.start_soon(server.serve, [sock])
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        finally:
            server.should_exit = True


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, Any]]:
    """``(event, data)`` for each server-sent event of ``response`` (data parsed as JSON;
    ``event`` is ``"message"`` when the server names none)."""
    event, data = "message", []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                text = "\n".join(data)
                yield event, (text if text == "[DONE]" else json.loads(text))
            event, data = "message", []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))

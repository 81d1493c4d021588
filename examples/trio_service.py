"""The service of ``asyncio_service.py``, unchanged, on trio: hypercorn's trio worker
serves the same Starlette app, and reactcore runs the agents on trio.

    python examples/trio_service.py      # then the curl commands of asyncio_service.py
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import trio
from asyncio_service import create_app  # this file's directory is on sys.path
from hypercorn.config import Config
from hypercorn.trio import serve
from starlette.applications import Starlette


async def serve_app(
    app: Starlette,
    port: int = 8000,
    *,
    shutdown_trigger: Callable[[], Awaitable[None]],
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on 127.0.0.1 until ``shutdown_trigger`` returns; ``port=0`` picks a
    free port. ``await nursery.start(serve_app, ...)`` gives the server's URL."""
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    async with trio.open_nursery() as nursery:
        asgi: Any = app  # hypercorn's ASGI types are narrower than Starlette's
        start = partial(serve, asgi, config, shutdown_trigger=shutdown_trigger)
        urls: list[str] = await nursery.start(start)
        task_status.started(urls[0])


async def until_interrupted() -> None:
    """Return at the first Ctrl-C or SIGTERM."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            return


if __name__ == "__main__":
    trio.run(partial(serve_app, create_app(), shutdown_trigger=until_interrupted))

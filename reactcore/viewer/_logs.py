"""``logs_app``: the event logs of a folder, and the threads of a SQLite saver, as pages,
for ``reactcore view`` (local development): ``GET /`` lists the folder's ``*.jsonl``
files, newest first, and the saver's threads (``saver.threads(status=None)``, a page of
``THREADS_PAGE`` at a time, the next after ``?after=<last id>``); ``GET /runs/{name}``
draws an event log with the timeline page, ``GET /threads/{id}`` a thread from its
checkpoints (``timeline_of_thread``). Both are read again on each request, so a reload
shows a run still going on.

Only files listed in the folder are read (a name with a path in it is 404), and only
requests naming the loopback host are answered (400 otherwise), so a web page the
developer visits cannot reach the logs through a rebound DNS name. There is no
``authorize``: it is meant for 127.0.0.1 only.
"""

from __future__ import annotations

import html
import os
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from ._log import EventLogError
from ._page import timeline_html
from ._thread import ThreadNotFound, timeline_of_thread
from ._timeline import timeline_of_file

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from ..savers import ThreadInfo

THREADS_PAGE = 100
"""How many threads the listing shows at a time."""

_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")


def _logs(folder: Path) -> list[Path]:
    found = [p for p in folder.glob("*.jsonl") if p.is_file()]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _threads(path: Path, threads: list[ThreadInfo], more: bool) -> str:
    rows = "".join(
        f'<tr><td><a href="threads/{quote(i.thread_id, safe="")}">'
        f"{html.escape(i.thread_id)}</a></td><td>{i.status}</td><td>{i.step}</td>"
        f"<td>{_when(i.updated_at)}</td></tr>"
        for i in threads
    )
    body = (
        f"<table><tr><th>thread</th><th>status</th><th>steps</th><th>updated</th></tr>"
        f"{rows}</table>"
        if threads
        else "<p>no threads here</p>"
    )
    if more:
        body += f'<p><a href="?after={quote(threads[-1].thread_id, safe="")}">more threads</a></p>'
    return f"<h1>Threads in {html.escape(str(path))}</h1>\n{body}\n"


def _logs_section(folder: Path, logs: list[Path]) -> str:
    rows = "".join(
        f'<tr><td><a href="runs/{quote(p.name)}">{html.escape(p.name)}</a></td>'
        f"<td>{p.stat().st_size:,} bytes</td>"
        f"<td>{_when(p.stat().st_mtime)}</td></tr>"
        for p in logs
    )
    body = (
        f"<table><tr><th>event log</th><th>size</th><th>written</th></tr>{rows}</table>"
        if logs
        else "<p>no event logs (<code>*.jsonl</code>) here yet</p>"
    )
    return f"<h1>Event logs in {html.escape(str(folder))}</h1>\n{body}\n"


def _listing(sections: str) -> str:
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<title>reactcore event logs</title>
<style>
body {{ font: 14px/1.5 system-ui, sans-serif; margin: 16px; color: #212529; }}
td, th {{ padding: 2px 12px 2px 0; text-align: left; }}
th {{ color: #868e96; font-weight: 500; }}
</style>
</head>
<body>
{sections}</body>
</html>
"""


def logs_app(
    folder: str | os.PathLike[str] | None = None, *, sqlite: str | os.PathLike[str] | None = None
) -> Starlette:
    """The event logs of ``folder`` and the threads of the SQLite saver at ``sqlite`` as
    pages (either or both; see the module docstring). The saver is opened for each
    request and closed after it, so another process may write the file meanwhile."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.responses import HTMLResponse, PlainTextResponse
    from starlette.routing import Route

    from ..savers import SqliteSaver

    if folder is None and sqlite is None:
        raise ValueError("logs_app needs a folder, a sqlite saver's path, or both")
    for name, value in (("folder", folder), ("sqlite", sqlite)):
        if value is not None and not isinstance(value, str | os.PathLike):
            raise TypeError(f"{name} must be a path, got {type(value).__name__}")
    root = None if folder is None else Path(folder)
    if root is not None and not root.is_dir():
        raise ValueError(f"folder must be a folder: {str(root)!r} is not one")
    database = None if sqlite is None else Path(sqlite)
    if database is not None and not database.is_file():
        raise ValueError(f"sqlite must be a SQLite saver's file: {str(database)!r} is not a file")
    headers = {"content-security-policy": _CSP, "cache-control": "no-store"}

    async def listing(request: Request) -> Response:
        sections = ""
        if database is not None:
            after = request.query_params.get("after") or None
            try:
                async with SqliteSaver(database) as saver:
                    page = await saver.threads(status=None, after=after, limit=THREADS_PAGE + 1)
            except ValueError as exc:
                return PlainTextResponse(f"after: {exc}", status_code=400)
            except sqlite3.Error as exc:
                return PlainTextResponse(f"{database.name}: {exc}", status_code=422)
            more = len(page) > THREADS_PAGE
            sections += _threads(database, page[:THREADS_PAGE], more)
        if root is not None:
            sections += _logs_section(root, _logs(root))
        return HTMLResponse(_listing(sections), headers=headers)

    async def run(request: Request) -> Response:
        name = request.path_params["name"]
        found = {} if root is None else {p.name: p for p in _logs(root)}
        if name not in found:
            return PlainTextResponse("no such event log", status_code=404)
        try:
            timeline = timeline_of_file(found[name])
        except (EventLogError, OSError) as exc:
            return PlainTextResponse(f"{name}: {exc}", status_code=422)
        page = timeline_html(timeline, title=f"reactcore run: {name}")
        return HTMLResponse(page, headers=headers)

    async def thread(request: Request) -> Response:
        thread_id = request.path_params["thread_id"]
        if database is None:
            return PlainTextResponse("no such thread", status_code=404)
        try:
            async with SqliteSaver(database) as saver:
                timeline = await timeline_of_thread(saver, thread_id)
        except (ThreadNotFound, ValueError):
            return PlainTextResponse("no such thread", status_code=404)
        except sqlite3.Error as exc:
            return PlainTextResponse(f"{database.name}: {exc}", status_code=422)
        page = timeline_html(timeline, title=f"reactcore thread: {thread_id}")
        return HTMLResponse(page, headers=headers)

    routes = [
        Route("/", listing),
        Route("/runs/{name}", run),
        Route("/threads/{thread_id:path}", thread),
    ]
    trusted = Middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK_HOSTS))
    return Starlette(routes=routes, middleware=[trusted])

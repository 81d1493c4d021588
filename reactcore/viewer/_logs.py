"""``logs_app``: the event logs of a folder as pages, for ``reactcore view`` (local
development): ``GET /`` lists the folder's ``*.jsonl`` files, newest first; ``GET
/runs/{name}`` draws one with the timeline page (read again on each request, so a reload
shows a log still being written).

Only files listed in the folder are read (a name with a path in it is 404), and only
requests naming the loopback host are answered (400 otherwise), so a web page the
developer visits cannot reach the logs through a rebound DNS name. There is no
``authorize``: it is meant for 127.0.0.1 only.
"""

from __future__ import annotations

import html
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from ._log import EventLogError
from ._page import timeline_html
from ._timeline import timeline_of_file

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")


def _logs(folder: Path) -> list[Path]:
    found = [p for p in folder.glob("*.jsonl") if p.is_file()]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def _listing(folder: Path, logs: list[Path]) -> str:
    rows = "".join(
        f'<tr><td><a href="runs/{quote(p.name)}">{html.escape(p.name)}</a></td>'
        f"<td>{p.stat().st_size:,} bytes</td>"
        f"<td>{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(p.stat().st_mtime))}</td></tr>"
        for p in logs
    )
    body = (
        f"<table><tr><th>event log</th><th>size</th><th>written</th></tr>{rows}</table>"
        if logs
        else "<p>no event logs (<code>*.jsonl</code>) here yet</p>"
    )
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
<h1>Event logs in {html.escape(str(folder))}</h1>
{body}
</body>
</html>
"""


def logs_app(folder: str | os.PathLike[str]) -> Starlette:
    """The event logs of ``folder`` as pages (see the module docstring)."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.responses import HTMLResponse, PlainTextResponse
    from starlette.routing import Route

    if not isinstance(folder, str | os.PathLike):
        raise TypeError(f"folder must be a path, got {type(folder).__name__}")
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"folder must be a folder: {str(root)!r} is not one")
    headers = {"content-security-policy": _CSP, "cache-control": "no-store"}

    async def listing(request: Request) -> Response:
        return HTMLResponse(_listing(root, _logs(root)), headers=headers)

    async def run(request: Request) -> Response:
        name = request.path_params["name"]
        found = {p.name: p for p in _logs(root)}
        if name not in found:
            return PlainTextResponse("no such event log", status_code=404)
        try:
            timeline = timeline_of_file(found[name])
        except (EventLogError, OSError) as exc:
            return PlainTextResponse(f"{name}: {exc}", status_code=422)
        page = timeline_html(timeline, title=f"reactcore run: {name}")
        return HTMLResponse(page, headers=headers)

    routes = [Route("/", listing), Route("/runs/{name}", run)]
    trusted = Middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK_HOSTS))
    return Starlette(routes=routes, middleware=[trusted])

"""Starting the test MCP servers (tests/mcp_servers) and reading what they logged."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from helpers import calls_state

from reactcore import AgentToolNode, ToolResponse, ToolResponseMessage
from reactcore.mcp import MCPToolset

SERVER = Path(__file__).parent / "mcp_servers" / "tools_server.py"
ODD_SERVER = Path(__file__).parent / "mcp_servers" / "odd_server.py"
# Tool names of the test server, in the order it lists them.
SERVER_TOOLS = [
    *("echo", "add", "lookup", "fail", "picture", "work", "peak", "block", "grow", "pid"),
    "where",
]


def stdio_toolset(log: Path, **options: Any) -> MCPToolset:
    """A toolset on a new subprocess of the test server, logging to ``log``."""
    return MCPToolset.stdio(sys.executable, [str(SERVER), "stdio", str(log)], **options)


def toolset_maker(transport: str, script: Path, url: str) -> Callable[..., MCPToolset]:
    """Make toolsets on ``script``'s server over ``transport``: "stdio" (a new process per
    toolset) or "http" (the server already at ``url``); options are passed on."""

    def make(**options: Any) -> MCPToolset:
        if transport == "stdio":
            return MCPToolset.stdio(sys.executable, [str(script), "stdio"], **options)
        return MCPToolset.streamable_http(url, **options)

    return make


@contextmanager
def http_server(kind: str, log: Path, script: Path = SERVER) -> Iterator[str]:
    """The test server (or ``script``) in a subprocess over ``kind`` ("http" or "sse");
    yields its URL."""
    proc = subprocess.Popen(
        [sys.executable, str(script), kind, str(log)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "PORT <n>", once the socket listens
        assert line.startswith("PORT "), f"the test server did not start: {line!r}"
        path = "/mcp" if kind == "http" else "/sse"
        yield f"http://127.0.0.1:{int(line.split()[1])}{path}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def records(log: Path, **match: Any) -> list[dict[str, Any]]:
    """The server's log records with every field of ``match``."""
    if not log.exists():
        return []
    found = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]
    return [r for r in found if all(r.get(k) == v for k, v in match.items())]


async def logged(log: Path, count: int = 1, **match: Any) -> dict[str, Any]:
    """Wait until the server logged ``count`` records matching ``match``; the last one.

    The server is another process and only writes a file, so this polls (briefly).
    """
    with anyio.fail_after(15):
        while len(found := records(log, **match)) < count:  # noqa: ASYNC110
            await anyio.sleep(0.02)
    return found[count - 1]


def responses(result_messages: list[Any]) -> list[ToolResponse]:
    """The tool responses of a run's messages, in order."""
    return [r for m in result_messages if isinstance(m, ToolResponseMessage) for r in m.responses]


async def run_calls(node: AgentToolNode, *calls: Any) -> list[ToolResponse]:
    """The responses of ``node`` to one batch of ``calls``."""
    update = await node(calls_state(*calls))
    message = update["messages"][-1]
    assert isinstance(message, ToolResponseMessage)
    return list(message.responses)

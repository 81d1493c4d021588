"""What MCP servers list, not taken on trust: tools whose input schema cannot be used,
names providers reject, and results past the client's size limit.

The server is ``tests/mcp_servers/odd_server.py`` (the SDK's ``MCPServer``, listing tools
as a server not built on the Python SDK may: ``"properties": 5``, a dangling ``$ref``,
names with a space, a slash, an accent, empty, 70 characters long), over stdio (a new
process per toolset) and streamable HTTP (one process for the module).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from helpers import asks, call
from mcp_support import ODD_SERVER, http_server, responses, run_calls, toolset_maker

from reactcore import AgentToolNode, ReactAgent, Tool, tool
from reactcore.mcp import MCPToolset
from reactcore.mcp._names import safe_names
from reactcore.testing import ScriptedChatModel

pytestmark = pytest.mark.anyio

SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
LONG = "l" * 70


def hashed(base: str, name: str) -> str:
    """The documented safe form of a changed name: ``base``, ``_``, 8 hex digits of the
    SHA-256 of the server's name."""
    return f"{base}_{hashlib.sha256(name.encode()).hexdigest()[:8]}"


# The server's names → what the model sees (the rule of reactcore.mcp._names, spelled out).
EXPECTED_NAMES = {
    "echo": "echo",
    "my tool": hashed("my_tool", "my tool"),
    "files/read": hashed("files_read", "files/read"),
    "café": hashed("cafe", "café"),
    "": hashed("tool", ""),
    LONG: hashed("l" * 55, LONG),
    "a b": hashed("a_b", "a b"),
    "a_b": "a_b",
    "big": "big",
}


@pytest.fixture(scope="module")
def odd_http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The odd server over streamable HTTP, for the module."""
    with http_server("http", tmp_path_factory.mktemp("odd") / "log", ODD_SERVER) as url:
        yield url


@pytest.fixture(params=["stdio", "http"])
def odd_toolset(request: pytest.FixtureRequest, odd_http_url: str) -> Any:
    """Make a toolset on the odd server over the test's transport (options passed on)."""
    return toolset_maker(request.param, ODD_SERVER, odd_http_url)


def reached(answer: Any) -> tuple[str, dict[str, Any]]:
    """Which server tool a call reached, and with what (the odd server says)."""
    said = json.loads(answer.response_data)
    return said["tool"], said["arguments"]


# --- unusable schemas -------------------------------------------------------------------


async def test_a_tool_with_an_unusable_schema_is_left_out_and_the_others_kept(
    odd_toolset: Any,
) -> None:
    """One tool with ``"properties": 5`` (which the SDK refuses, and with it the whole
    listing) and one with a ``$ref`` to nothing no longer keep the server from
    connecting: both are left out, each logged once however often the tools are listed,
    and the server's other tools answer."""
    toolset = odd_toolset()
    with structlog.testing.capture_logs() as logs:
        for _ in range(2):  # two connections: two listings
            async with toolset:
                assert sorted(toolset.tool_names.values()) == sorted(EXPECTED_NAMES)
                node = AgentToolNode(tool_resolver=toolset.resolve)
                (echo,) = await run_calls(node, call("1", "echo", x="hi"))
                assert reached(echo) == ("echo", {"x": "hi"})
    skipped = {e["tool"]: e["reason"] for e in logs if e["event"] == "mcp_tool_skipped"}
    assert skipped == {
        "bad_properties": "inputSchema.properties: Input should be a valid dictionary",
        "dangling_ref": "its input schema refers to '#/$defs/missing', which it does not define",
    }
    assert len([e for e in logs if e["event"] == "mcp_tool_skipped"]) == 2
    assert all(e["log_level"] == "warning" for e in logs if e["event"] == "mcp_tool_skipped")


# --- names ------------------------------------------------------------------------------


async def test_names_providers_reject_are_mapped_and_calls_reach_the_right_tool(
    odd_toolset: Any,
) -> None:
    """Names with a space, a slash, an accent, empty or 70 characters long reach the model
    as names providers accept, unique, the same on the next connection (a new process for
    stdio); a call of each safe name reaches the server's tool of that name, ``a b`` and
    ``a_b`` apart."""
    toolset = odd_toolset()
    async with toolset:
        first = dict(toolset.tool_names)
        node = AgentToolNode(tool_resolver=toolset.resolve)
        answers = await run_calls(
            node, *(call(str(i), name, x=name) for i, name in enumerate(first) if name != "big")
        )
    async with toolset:
        second = dict(toolset.tool_names)
    assert first == second == {safe: remote for remote, safe in EXPECTED_NAMES.items()}
    assert all(0 < len(n) <= 64 and set(n) <= set(SAFE) for n in first)
    assert [reached(a) for a in answers] == [
        (remote, {"x": safe}) for safe, remote in first.items() if safe != "big"
    ]


async def test_the_model_sees_safe_names_and_its_call_reaches_the_tool(
    odd_toolset: Any,
) -> None:
    """Through an agent run: the model is offered the safe names only, and its call of
    ``my tool``'s safe name runs the server's ``my tool``."""
    safe = EXPECTED_NAMES["my tool"]
    model = ScriptedChatModel([asks(("c1", safe, {"x": "via the agent"})), "done"])
    async with odd_toolset() as toolset:
        result = await ReactAgent("odd", model, tools=[toolset]).invoke("go")
    offered = [s.name for s in model.requests[0].visible_tool_specs()]
    assert offered == list(EXPECTED_NAMES.values())
    (answer,) = responses(result.messages)
    assert (answer.name, reached(answer)) == (safe, ("my tool", {"x": "via the agent"}))


def test_safe_names_rule() -> None:
    """Safe names are kept; a changed name always carries its hash (so a server tool
    really called like another's safe form is no clash: that one is hashed again); at
    most 64 characters; unique."""
    clash = hashed("my_tool", "my tool")
    names = safe_names(["ok-name_1", "my tool", clash, "日本語", "x" * 64, "x" * 65])
    assert names["ok-name_1"] == "ok-name_1"
    assert names[clash] == clash
    assert names["my tool"] != clash
    assert names["my tool"].startswith("my_tool_")
    assert names["日本語"] == hashed("_", "日本語")
    assert names["x" * 64] == "x" * 64
    assert names["x" * 65] == hashed("x" * 55, "x" * 65)
    assert len(set(names.values())) == len(names)
    assert all(0 < len(n) <= 64 and set(n) <= set(SAFE) for n in names.values())


def test_a_prefix_providers_reject_is_refused() -> None:
    """``prefix`` becomes part of every name: one with other characters is a ValueError
    at construction, not a renamed tool."""
    with pytest.raises(ValueError, match=r"prefix 'fs\.' would make tool names providers"):
        MCPToolset.stdio("server", prefix="fs.")


def test_local_tool_names_providers_reject_are_refused() -> None:
    """A local tool's name is its author's choice, so one providers reject is a
    ValueError at definition (``@tool``, ``Tool.from_schema``), saying the rule — not a
    SyntaxError from the argument reader, nor a model call the provider refuses."""

    def f(x: int) -> int:
        """Double."""
        return 2 * x

    for name in ("my tool", "a/b", "café", "x" * 65):
        with pytest.raises(ValueError, match="is not one model providers accept"):
            tool(name=name)(f)
    with pytest.raises(ValueError, match=r"'a\.b' is not one model providers accept"):
        Tool.from_schema("a.b", "", {"type": "object"}, f, check=lambda a: None)
    assert tool(name="x" * 64)(f).name == "x" * 64


# --- results past the limit -------------------------------------------------------------

BIG = 1_100_000  # bytes of text: past the SDK's 1 MiB event limit over streamable HTTP


async def test_a_result_past_the_limit_says_so_and_a_raised_limit_takes_it(
    odd_http_url: str,
) -> None:
    """Over streamable HTTP, a result of more than 1 MiB (the SDK's default limit on one
    server-sent event) answers the model that it is past ``max_result_bytes`` — not that
    the server closed the connection — and the session goes on (no reconnection); with
    ``max_result_bytes`` raised, the same result arrives whole."""
    async with MCPToolset.streamable_http(odd_http_url) as toolset:
        node = AgentToolNode(tool_resolver=toolset.resolve)
        too_big, small = await run_calls(node, call("1", "big", size=BIG), call("2", "big", size=3))
        assert toolset.listings == 1
    assert too_big.response_data == (
        "Error: MCPError: MCP server 'odd-tools' answered with a result of more than "
        "1048576 bytes, the client's limit (max_result_bytes) (tool 'big')"
    )
    assert small.response_data == "xxx"
    async with MCPToolset.streamable_http(odd_http_url, max_result_bytes=4 << 20) as toolset:
        node = AgentToolNode(tool_resolver=toolset.resolve)
        (whole,) = await run_calls(node, call("1", "big", size=BIG))
    assert (len(whole.response_data), whole.is_error) == (BIG, False)


async def test_stdio_has_no_result_limit(tmp_path: Path) -> None:
    """Over stdio the SDK sets no such limit: the same result arrives whole."""
    async with MCPToolset.stdio(sys.executable, [str(ODD_SERVER), "stdio"]) as toolset:
        node = AgentToolNode(tool_resolver=toolset.resolve)
        (whole,) = await run_calls(node, call("1", "big", size=BIG))
    assert (len(whole.response_data), whole.is_error) == (BIG, False)

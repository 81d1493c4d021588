"""Bearer-protected MCP servers over streamable HTTP: the token provider hook of
``MCPToolset.streamable_http(url, auth=...)``, asked again after a 401, and secrets kept
out of errors and logs."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
import structlog
from helpers import call
from mcp_support import http_server, records
from test_mcp import run_calls

from reactcore import AgentToolNode
from reactcore.mcp import MCPError, MCPToolset

pytestmark = pytest.mark.anyio

BEARER = Path(__file__).parent / "mcp_servers" / "bearer_server.py"
_ids = itertools.count()


@pytest.fixture(scope="module")
def bearer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The bearer-protected server for the module: its URL and its request log."""
    log = tmp_path_factory.mktemp("bearer") / "log"
    with http_server("http", log, BEARER) as url:
        yield url, log


def tokens(log: Path, suffix: str) -> list[tuple[str, bool]]:
    """The tokens ending ``suffix`` the server saw, in order, and whether each got in."""
    return [(r["token"], r["allowed"]) for r in records(log) if (r["token"] or "").endswith(suffix)]


async def echo(toolset: MCPToolset, text: str) -> object:
    """Call the server's ``echo`` through a tool node; its answer."""
    async with toolset:
        (answer,) = await run_calls(
            AgentToolNode(tool_resolver=toolset.resolve), call("1", "echo", text=text)
        )
    return answer.response_data


async def test_an_expired_token_is_refreshed_after_a_401(bearer: tuple[str, Path]) -> None:
    """An async provider whose first token has expired: the server answers 401, the
    provider is asked again once, the request goes again with the new token and the
    call succeeds; later requests keep the new token without asking again."""
    url, log = bearer
    tag = f"-{next(_ids)}-refresh"
    given = iter([f"expired{tag}", f"fresh{tag}"])
    asked = 0

    async def provider() -> str:
        nonlocal asked
        asked += 1
        return next(given)

    assert await echo(MCPToolset.streamable_http(url, auth=provider), "hi") == "hi"
    assert asked == 2
    seen = tokens(log, tag)
    assert seen[0] == (f"expired{tag}", False)
    assert len(seen) > 2  # initialize, initialized, list, call …
    assert seen[1:] == [(f"fresh{tag}", True)] * (len(seen) - 1)


async def test_a_token_expiring_mid_session_is_refreshed(bearer: tuple[str, Path]) -> None:
    """A token that expires during the session: the next call's request is answered 401,
    the provider is asked again and the call succeeds with the new token."""
    url, log = bearer
    tag = f"-{next(_ids)}-mid"
    given = iter([f"fresh-1{tag}", f"fresh-2{tag}"])
    toolset = MCPToolset.streamable_http(url, auth=lambda: next(given))
    node = AgentToolNode(tool_resolver=toolset.resolve)
    async with toolset:
        (revoked,) = await run_calls(node, call("1", "revoke", token=f"fresh-1{tag}"))
        (echoed,) = await run_calls(node, call("2", "echo", text="again"))
    assert (revoked.response_data, echoed.response_data) == ("revoked", "again")
    seen = tokens(log, tag)
    assert (f"fresh-1{tag}", False) in seen
    assert seen[-1] == (f"fresh-2{tag}", True)


async def test_a_provider_failing_mid_session_fails_the_call(bearer: tuple[str, Path]) -> None:
    """A token that expires mid-session and a provider that then fails: the call answers
    an error (the SDK drops the connection) promptly, not a hang, and the warning logged
    names the server and the provider's failure, without its message."""
    url, _ = bearer
    tag = f"-{next(_ids)}-midfail"
    asked = 0

    def provider() -> str:
        nonlocal asked
        asked += 1
        if asked > 1:
            raise PermissionError("vault locked for secret-42")
        return f"fresh{tag}"

    toolset = MCPToolset.streamable_http(url, auth=provider)
    node = AgentToolNode(tool_resolver=toolset.resolve)
    with structlog.testing.capture_logs() as logs, anyio.fail_after(20):
        async with toolset:
            await run_calls(node, call("1", "revoke", token=f"fresh{tag}"))
            (echoed,) = await run_calls(node, call("2", "echo", text="again"))
    assert echoed.is_error
    assert "MCP server 'test-bearer' closed the connection during the call" in (
        echoed.response_data
    )
    failures = [r["error"] for r in logs if r["event"] == "mcp_connection_failed"]
    assert failures == [f"MCPError: the token provider of MCP server {url} failed: PermissionError"]
    assert "secret-42" not in str(logs) and tag not in str(logs)


async def test_a_sync_provider_is_asked_once(bearer: tuple[str, Path]) -> None:
    """A plain function is a provider too; a token that works is kept for every request."""
    url, log = bearer
    tag = f"-{next(_ids)}-sync"
    asked: list[int] = []

    def provider() -> str:
        asked.append(1)
        return f"fresh{tag}"

    assert await echo(MCPToolset.streamable_http(url, auth=provider), "yo") == "yo"
    assert len(asked) == 1
    assert all(allowed for _, allowed in tokens(log, tag))


async def test_a_provider_that_keeps_giving_a_rejected_token_fails_clearly(
    bearer: tuple[str, Path],
) -> None:
    """A provider whose token is refused even after asking again: the toolset fails with
    an MCPError naming the server, and neither the error nor any log has the token."""
    url, log = bearer
    tag = f"-{next(_ids)}-secret-abc123"
    with structlog.testing.capture_logs() as logs, pytest.raises(MCPError) as failed:
        async with MCPToolset.streamable_http(url, auth=lambda: f"expired{tag}"):
            pass
    assert failed.value.server == url
    assert url in str(failed.value)
    assert "401" in str(failed.value)
    assert tag not in repr(failed.value) and tag not in str(logs)
    assert tokens(log, tag) == [(f"expired{tag}", False)] * 2


async def test_a_failing_provider_fails_clearly(bearer: tuple[str, Path]) -> None:
    """A provider that raises: an MCPError naming the server and the provider's failure
    (its type, not its message, which might hold a secret)."""
    url, _ = bearer

    def provider() -> str:
        raise RuntimeError("vault said no to secret-xyz")

    with structlog.testing.capture_logs() as logs, pytest.raises(MCPError) as failed:
        async with MCPToolset.streamable_http(url, auth=provider):
            pass
    assert failed.value.server == url
    assert f"the token provider of MCP server {url} failed: RuntimeError" in str(failed.value)
    assert "secret-xyz" not in str(failed.value) and "secret-xyz" not in str(logs)


async def test_an_httpx_auth_is_used_as_given(bearer: tuple[str, Path]) -> None:
    """An ``httpx2.Auth`` (the SDK's ``OAuthClientProvider`` is one) is passed through."""
    url, log = bearer
    tag = f"-{next(_ids)}-given"

    class Fixed(httpx2.Auth):
        def auth_flow(self, request: httpx2.Request) -> Iterator[httpx2.Request]:
            request.headers["Authorization"] = f"Bearer fresh{tag}"
            yield request

    assert await echo(MCPToolset.streamable_http(url, auth=Fixed()), "ok") == "ok"
    assert tokens(log, tag)


def test_bad_auth_is_refused() -> None:
    """``auth`` that is neither a provider nor an ``httpx2.Auth`` is a TypeError naming it;
    ``auth`` with a caller's ``http_client`` is a ValueError (the client has its own)."""
    with pytest.raises(TypeError, match=r"^auth must be a token provider"):
        MCPToolset.streamable_http("http://x/mcp", auth="token")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^give auth or http_client \(with its auth\), not both$"):
        MCPToolset.streamable_http(
            "http://x/mcp", auth=lambda: "t", http_client=httpx2.AsyncClient()
        )

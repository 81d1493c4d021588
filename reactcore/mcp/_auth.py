"""Bearer tokens for MCP servers over HTTP: a token provider hook, asked again after a 401.

``MCPToolset.streamable_http(url, auth=provider)`` takes either a token provider (a sync or
async callable returning the token) or an ``httpx2.Auth`` (such as the SDK's
``OAuthClientProvider``, which runs the whole OAuth 2.1 flow), used as given. A provider is
asked once and its token kept; when the server answers 401, it is asked again (its token
has expired) and the request sent once more. The token is never put in an error, a log
record or a repr.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from typing import Any

import anyio
import httpx2

from .._exceptions import MCPError

TokenProvider = Callable[[], "str | Awaitable[str]"]
"""Gives the bearer token of a server: a sync or async callable taking no arguments."""


class BearerAuth(httpx2.Auth):
    """Adds ``Authorization: Bearer <token>`` from ``provider``; on 401, asks it again once.

    Requests in flight at once share one token and, after a 401, one new asking (the first
    request to see the 401 asks; the others take its token).
    """

    def __init__(self, provider: TokenProvider, label: str) -> None:
        self._provider = provider
        self._label = label
        self._token: str | None = None
        self._lock = anyio.Lock()

    def __repr__(self) -> str:
        return f"BearerAuth({self._label!r})"

    def sync_auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, Any, None]:
        raise RuntimeError("BearerAuth works with httpx2.AsyncClient only")

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        token = await self._current(stale=None)
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            token = await self._current(stale=token)
            request.headers["Authorization"] = f"Bearer {token}"
            response = yield request
            if response.status_code == 401:
                raise MCPError(
                    f"MCP server {self._label} refused the token of its token provider "
                    "(401 Unauthorized), also when asked again",
                    server=self._label,
                )

    async def _current(self, *, stale: str | None) -> str:
        """The token to send: the kept one, unless none is kept or it is ``stale``."""
        async with self._lock:
            if self._token is None or self._token == stale:
                self._token = None
                self._token = await self._ask()
            return self._token

    async def _ask(self) -> str:
        try:
            token = self._provider()
            if inspect.isawaitable(token):
                token = await token
        except Exception as exc:
            raise MCPError(
                f"the token provider of MCP server {self._label} failed: {type(exc).__name__}",
                server=self._label,
            ) from None
        if not isinstance(token, str) or not token:
            raise MCPError(
                f"the token provider of MCP server {self._label} gave "
                f"{type(token).__name__ if not isinstance(token, str) else 'an empty str'}, "
                "not a token (a non-empty str)",
                server=self._label,
            )
        return token


def http_auth(auth: httpx2.Auth | TokenProvider | None, label: str) -> httpx2.Auth | None:
    """``auth`` as an ``httpx2.Auth``: a token provider wrapped in ``BearerAuth``."""
    if auth is None or isinstance(auth, httpx2.Auth):
        return auth
    if callable(auth):
        return BearerAuth(auth, label)
    raise TypeError(
        f"auth must be a token provider (a callable returning a str) or an httpx2.Auth, "
        f"not {type(auth).__name__}"
    )

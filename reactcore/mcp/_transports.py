"""How an ``MCPToolset`` reaches its server: stdio (a subprocess), streamable HTTP, SSE.

Each transport is a frozen value whose ``open()`` is an async context manager giving the
SDK's stream pair; leaving it closes the connection (and stops the subprocess).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol, TextIO

import attrs
import httpx2
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import DEFAULT_MAX_SSE_EVENT_SIZE, streamable_http_client

from .. import _validate as valid

# The SDK's own defaults: 30 s to connect or write, 300 s between reads of a stream.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
MAX_RESULT_BYTES = DEFAULT_MAX_SSE_EVENT_SIZE
"""The SDK's default limit on one server-sent event over streamable HTTP (1 MiB), which
carries one whole result."""


class Transport(Protocol):
    """What a toolset needs of a transport: a label for messages, and a way to connect."""

    @property
    def label(self) -> str: ...

    def open(self) -> AbstractAsyncContextManager[tuple[Any, Any]]: ...


def _strings(value: Sequence[str]) -> tuple[str, ...]:
    return stdio_args(value) if valid.ITERABLE.accepts(value) else valid.leave(value)


def _text_map(value: Mapping[str, str] | None) -> dict[str, str] | None:
    return dict(value) if isinstance(value, Mapping) else valid.leave(value)


_TEXT_MAP = valid.satisfies(
    "a mapping of str to str",
    Mapping,
    test=lambda v: all(isinstance(k, str) and isinstance(x, str) for k, x in v.items()),
    optional=True,
)


@attrs.frozen
class StdioTransport:
    """A server run as a subprocess, spoken to on its stdin and stdout.

    ``env`` is added to the few variables the SDK passes on (``HOME``, ``PATH``, …), not to
    the whole environment; the server's stderr goes to ``errlog`` (this process's stderr).
    """

    command: str = attrs.field(validator=valid.text(non_empty=True))
    args: tuple[str, ...] = attrs.field(
        default=(),
        converter=_strings,
        validator=valid.each(valid.text()),
    )
    env: dict[str, str] | None = attrs.field(default=None, converter=_text_map, validator=_TEXT_MAP)
    cwd: str | os.PathLike[str] | None = attrs.field(
        default=None,
        validator=valid.instance_of((str, os.PathLike), "a str or an os.PathLike", optional=True),
    )
    errlog: TextIO = attrs.field(
        default=sys.stderr,
        eq=False,
        repr=False,
        validator=valid.has_methods("write", what="a text file (with write)"),
    )

    @property
    def label(self) -> str:
        return " ".join([os.path.basename(self.command), *self.args])

    @asynccontextmanager
    async def open(self) -> AsyncIterator[tuple[Any, Any]]:
        params = StdioServerParameters(
            command=self.command,
            args=list(self.args),
            env=self.env,
            cwd=None if self.cwd is None else os.fspath(self.cwd),
        )
        async with stdio_client(params, errlog=self.errlog) as streams:
            yield streams


@attrs.frozen
class StreamableHTTPTransport:
    """A server at ``url`` over streamable HTTP.

    ``http_client`` (an ``httpx2.AsyncClient``, the SDK's HTTP client) is used as given and
    left open; without one, a client with ``headers`` is made per connection and closed.
    ``auth`` (an ``httpx2.Auth``, see ``_auth``) signs the requests of the client made here;
    ``headers`` and ``auth`` with an ``http_client`` are a ``ValueError`` (it has its own).
    ``max_result_bytes`` is the most one server-sent event may hold (the SDK's
    ``max_sse_event_size``; ``None`` for no limit): a result streamed in a larger one
    fails its call with ``MCPError`` saying so.
    """

    url: str = attrs.field(validator=valid.text(non_empty=True))
    headers: dict[str, str] | None = attrs.field(
        default=None, converter=_text_map, validator=_TEXT_MAP
    )
    http_client: httpx2.AsyncClient | None = attrs.field(
        default=None,
        eq=False,
        repr=False,
        validator=valid.instance_of(httpx2.AsyncClient, "an httpx2.AsyncClient", optional=True),
    )
    max_result_bytes: int | None = attrs.field(
        default=MAX_RESULT_BYTES, kw_only=True, validator=valid.integer(minimum=1, optional=True)
    )
    auth: httpx2.Auth | None = attrs.field(
        default=None,
        kw_only=True,
        eq=False,
        repr=False,
        validator=valid.instance_of(httpx2.Auth, "an httpx2.Auth", optional=True),
    )

    def __attrs_post_init__(self) -> None:
        for given, what in ((self.headers, "headers"), (self.auth, "auth")):
            if given is not None and self.http_client is not None:
                raise ValueError(f"give {what} or http_client (with its {what}), not both")

    @property
    def label(self) -> str:
        return self.url

    @asynccontextmanager
    async def open(self) -> AsyncIterator[tuple[Any, Any]]:
        limit = self.max_result_bytes
        if self.http_client is not None:
            async with streamable_http_client(
                self.url, http_client=self.http_client, max_sse_event_size=limit
            ) as streams:
                yield streams
            return
        client = httpx2.AsyncClient(headers=self.headers, timeout=_HTTP_TIMEOUT, auth=self.auth)
        async with (
            client,
            streamable_http_client(
                self.url, http_client=client, max_sse_event_size=limit
            ) as streams,
        ):
            yield streams


@attrs.frozen
class SSETransport:
    """A legacy server at ``url`` speaking the HTTP+SSE transport (one GET stream, POSTs).

    The SDK's client reads events of at most 1 MiB on this transport, with no option to
    change it: past it, the SDK drops the connection (the call answers that the server
    closed it) and the next call connects again.
    """

    url: str = attrs.field(validator=valid.text(non_empty=True))
    headers: dict[str, str] | None = attrs.field(
        default=None, converter=_text_map, validator=_TEXT_MAP
    )
    timeout: float = attrs.field(default=30.0, validator=valid.number(positive=True))
    read_timeout: float = attrs.field(default=300.0, validator=valid.number(positive=True))

    @property
    def label(self) -> str:
        return self.url

    @asynccontextmanager
    async def open(self) -> AsyncIterator[tuple[Any, Any]]:
        async with sse_client(
            self.url, self.headers, timeout=self.timeout, sse_read_timeout=self.read_timeout
        ) as streams:
            yield streams


def stdio_args(args: Sequence[str]) -> tuple[str, ...]:
    """``args`` as a tuple, refusing a lone string (which would be split into letters)."""
    if isinstance(args, str):
        raise TypeError("args must be a sequence of strings, not one string")
    return tuple(args)

"""``MCPToolset``: the tools of one MCP server, as reactcore tools, for as long as it is open.

``async with MCPToolset.stdio(...) as toolset`` connects (starting the subprocess for stdio),
lists the server's tools and keeps the session in a task group the ``async with`` owns; on
leaving, the session is closed and the subprocess stopped, and nothing it started is left.

Each listed tool becomes a plain ``Tool`` (its name with the optional prefix, the server's
description and input schema) whose function calls the session, with the toolset's limiter,
so the agent's scheduler applies unchanged: ``max_parallel_tools``, the per-call timeout,
interceptors, ``run.cancel_tool``. A call stopped by a timeout or a cancel is cancelled on
the server too: the SDK sends ``notifications/cancelled`` for its request id.

The toolset is a model interceptor (it adds its current tools to each model request) and a
resolver, so ``ReactAgent(tools=[toolset, my_tool])`` is all it takes. When the server says
its tool list changed, the tools are listed again. When the server goes away (a crash, a
closed connection), the call in flight answers the model with an error naming the server,
and the next model call or tool call reconnects (for stdio: starts the process again), or
raises ``MCPError`` when it cannot.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from contextlib import AsyncExitStack, suppress
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import anyio
import anyio.abc
import anyio.lowlevel
import attrs
import httpx2
import mcp.types as mt
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError as SDKError

from .._exceptions import MCPError
from .._interceptors import ToolCallResponse
from .._tools import Tool
from ._results import schema_check, to_response
from ._transports import SSETransport, StdioTransport, StreamableHTTPTransport, Transport

if TYPE_CHECKING:
    from .._interceptors import ModelHandler
    from ..models.base import ModelRequest, ModelResponse

_log = structlog.get_logger("reactcore.mcp")
_MAX_PAGES = 100
# Failures of the connection itself (not of the call): the session is given up.
_TRANSPORT_ERRORS = (
    httpx2.TransportError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    OSError,
)


def _names(value: Collection[str] | None) -> frozenset[str] | None:
    if isinstance(value, str):
        raise TypeError("give tool names as a collection of strings, not one string")
    return None if value is None else frozenset(value)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, SDKError):
        return exc.error.message
    if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        return _reason(exc.exceptions[0])
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _WatchedStream:
    """The transport's read stream, setting ``down`` when it ends (the server went away)."""

    def __init__(self, inner: Any, down: anyio.Event) -> None:
        self._inner = inner
        self._down = down

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._down.set()
            raise

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._down.set()
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


@attrs.define(eq=False)
class _Connection:
    """One live session; ``down`` is set when it ended or must end."""

    session: ClientSession
    down: anyio.Event
    server: str


@attrs.define(eq=False)
class MCPToolset:
    """The tools of one MCP server; make one with ``stdio``, ``streamable_http`` or ``sse``.

    ``prefix`` is put before every tool name (to avoid clashes between servers); ``allow``
    (if given) and ``deny`` filter the server's tool names (without the prefix).
    ``max_concurrency`` is how many calls of this server run at once (a shared
    ``limiter`` may be given instead); ``timeout`` overrides the agent's per-call timeout
    for these tools; ``connect_timeout`` bounds the handshake and the first listing.
    """

    transport: Transport
    name: str | None = attrs.field(default=None, kw_only=True)
    prefix: str = attrs.field(default="", kw_only=True)
    allow: frozenset[str] | None = attrs.field(default=None, kw_only=True, converter=_names)
    deny: frozenset[str] = attrs.field(default=frozenset(), kw_only=True, converter=_names)
    max_concurrency: int = attrs.field(default=8, kw_only=True, validator=attrs.validators.ge(1))
    limiter: anyio.CapacityLimiter | None = attrs.field(default=None, kw_only=True)
    timeout: float | None = attrs.field(default=None, kw_only=True)
    connect_timeout: float = attrs.field(default=30.0, kw_only=True)

    _group: anyio.abc.TaskGroup | None = attrs.field(default=None, init=False)
    _conn: _Connection | None = attrs.field(default=None, init=False)
    _tools: Mapping[str, Tool] = attrs.field(factory=dict, init=False)
    _lock: anyio.Lock | None = attrs.field(default=None, init=False)
    _listings: int = attrs.field(default=0, init=False)
    _listed: anyio.Event | None = attrs.field(default=None, init=False)
    _server: str | None = attrs.field(default=None, init=False)
    _limiter: anyio.CapacityLimiter | None = attrs.field(default=None, init=False)

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> MCPToolset:
        """A server run as a subprocess (``command`` and ``args``), over its stdin/stdout.

        ``env`` is added to the few variables the SDK passes on (``HOME``, ``PATH``, …).
        """
        return cls(StdioTransport(command, args, env, cwd), **options)

    @classmethod
    def streamable_http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        **options: Any,
    ) -> MCPToolset:
        """A server at ``url`` over streamable HTTP; ``http_client`` is an ``httpx2`` client
        (the SDK's), used as given and left open; else one with ``headers`` is made."""
        if headers is not None and http_client is not None:
            raise ValueError("give headers or http_client (with its headers), not both")
        return cls(StreamableHTTPTransport(url, headers, http_client), **options)

    @classmethod
    def sse(
        cls, url: str, *, headers: Mapping[str, str] | None = None, **options: Any
    ) -> MCPToolset:
        """A legacy server at ``url`` over the HTTP+SSE transport."""
        return cls(SSETransport(url, headers), **options)

    # --- the async context ---------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._group is not None:
            raise RuntimeError(f"MCPToolset {self.server_name} is already open")
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        self._lock = anyio.Lock()
        self._listed = anyio.Event()
        # Made here, not at construction: a limiter belongs to one event loop.
        self._limiter = self.limiter or anyio.CapacityLimiter(self.max_concurrency)
        try:
            await self._connect()
        except BaseException:
            self._group = None
            group.cancel_scope.cancel()
            await group.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        group, self._group = self._group, None
        assert group is not None, "the toolset is not open"
        if self._conn is not None:
            self._conn.down.set()
        self._conn = None
        try:
            return await group.__aexit__(exc_type, exc, tb)
        finally:
            self._tools = {}  # after the group: no listing is left to fill them again

    # --- what the agent uses -------------------------------------------------------------

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The server's tools as last listed (prefixed and filtered); empty when closed."""
        return tuple(self._tools.values())

    @property
    def server_name(self) -> str:
        """The name given, else the one the server gave, else the transport's label."""
        return self.name or self._server or self.transport.label

    @property
    def session(self) -> ClientSession:
        """The SDK's session of the live connection, for what the toolset leaves to it
        (resources, prompts); ``RuntimeError`` when there is none."""
        if self._conn is None or self._conn.down.is_set():
            raise RuntimeError(f"MCPToolset {self.server_name} has no live connection")
        return self._conn.session

    @property
    def listings(self) -> int:
        """How many times the tools were listed (once per connection, once per change)."""
        return self._listings

    async def wait_for_listing(self, count: int) -> None:
        """Wait until the tools were listed ``count`` times in all (see ``listings``)."""
        while self._listings < count:
            if self._listed is None:
                raise RuntimeError(f"MCPToolset {self.server_name} is not open")
            await self._listed.wait()

    def resolve(self, name: str) -> Tool | None:
        """The tool called ``name`` (with the prefix), if the server has it now."""
        return self._tools.get(name)

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        """Add the server's current tools to the request (reconnecting first if needed)."""
        await self._connection()
        tools = self.tools
        if not tools:
            return await handler(request)
        known = set(request.tools)
        names = (*request.tools, *(t.name for t in tools if t.name not in known))
        dynamic = (*request.dynamic_tools, *tools)
        return await handler(attrs.evolve(request, tools=names, dynamic_tools=dynamic))

    # --- the connection ------------------------------------------------------------------

    async def _connection(self) -> _Connection:
        conn = self._conn
        if conn is not None and not conn.down.is_set():
            return conn
        return await self._connect()

    async def _connect(self) -> _Connection:
        """A live connection: the current one, or a new one (a new process for stdio)."""
        if self._group is None or self._lock is None:
            raise RuntimeError(
                f"MCPToolset {self.server_name} is not open: use it inside `async with toolset:`"
            )
        async with self._lock:
            conn = self._conn
            if conn is not None and not conn.down.is_set():
                return conn
            try:
                conn = await self._group.start(self._serve)
                assert isinstance(conn, _Connection)
            except Exception as exc:
                raise MCPError(
                    f"cannot connect to MCP server '{self.server_name}': {_reason(exc)}",
                    server=self.server_name,
                ) from exc
            self._conn = conn
            self._server = conn.server
            return conn

    async def _serve(self, *, task_status: anyio.abc.TaskStatus[_Connection]) -> None:
        """Own one session: connect, list, hand it over, then keep it until it is down."""
        down = anyio.Event()
        changes, changed = anyio.create_memory_object_stream[None](1)
        started = False
        try:
            async with AsyncExitStack() as stack:
                stack.enter_context(changes)
                stack.enter_context(changed)
                read, write = await stack.enter_async_context(self.transport.open())
                session = ClientSession(
                    _WatchedStream(read, down),
                    write,
                    message_handler=lambda message: self._on_message(changes, message),
                )
                await stack.enter_async_context(session)
                with anyio.fail_after(self.connect_timeout):
                    info = await session.initialize()
                    conn = _Connection(session, down, self.name or info.server_info.name)
                    await self._list(conn)
                task_status.started(conn)
                started = True
                async with anyio.create_task_group() as group:
                    group.start_soon(self._relist_on_change, conn, changed)
                    await down.wait()
                    group.cancel_scope.cancel()
        except Exception as exc:
            if not started:
                raise
            _log.warning("mcp_connection_failed", server=self.server_name, error=_reason(exc))
        finally:
            down.set()

    async def _on_message(self, changes: MemoryObjectSendStream[None], message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            with suppress(anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                changes.send_nowait(None)
        await anyio.lowlevel.checkpoint()

    async def _relist_on_change(
        self, conn: _Connection, changed: MemoryObjectReceiveStream[None]
    ) -> None:
        async for _ in changed:
            try:
                await self._list(conn)
            except Exception as exc:
                _log.warning("mcp_list_failed", server=conn.server, error=_reason(exc))

    async def _list(self, conn: _Connection) -> None:
        """List the server's tools (every page) and make them the toolset's tools."""
        found: list[mt.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await conn.session.list_tools(params=params)
            found.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        wanted = [t for t in found if self._wanted(t.name)]
        self._tools = {t.name: t for t in (self._tool(spec) for spec in wanted)}
        self._listings += 1
        listed, self._listed = self._listed, anyio.Event()
        if listed is not None:
            listed.set()

    def _wanted(self, name: str) -> bool:
        return (self.allow is None or name in self.allow) and name not in self.deny

    def _tool(self, spec: mt.Tool) -> Tool:
        remote = spec.name
        name = self.prefix + remote

        async def call(**arguments: Any) -> ToolCallResponse:
            return await self._call(remote, arguments)

        return Tool.from_schema(
            name,
            spec.description or spec.title or "",
            dict(spec.input_schema),
            call,
            check=schema_check(spec.input_schema, name),
            timeout=self.timeout,
            limiter=self._limiter,
        )

    async def _call(self, remote: str, arguments: dict[str, Any]) -> ToolCallResponse:
        """Call ``remote`` on the server; a failure of the server raises ``MCPError``."""
        conn = await self._connection()
        try:
            result = await conn.session.call_tool(remote, arguments)
        except SDKError as exc:
            if exc.error.code == mt.CONNECTION_CLOSED:
                conn.down.set()  # the next call or model turn connects again
                message = f"MCP server '{conn.server}' closed the connection during the call"
            else:
                message = f"MCP server '{conn.server}' answered with an error: {_reason(exc)}"
            raise MCPError(message, server=conn.server) from exc
        except _TRANSPORT_ERRORS as exc:
            conn.down.set()
            message = f"MCP server '{conn.server}' could not be reached: {_reason(exc)}"
            raise MCPError(message, server=conn.server) from exc
        except Exception as exc:
            message = f"MCP server '{conn.server}' failed during the call: {_reason(exc)}"
            raise MCPError(message, server=conn.server) from exc
        return to_response(result)

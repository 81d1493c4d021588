"""``MCPToolset``: the tools of one MCP server, as reactcore tools, for as long as it is open.

``async with MCPToolset.stdio(...) as toolset`` connects (starting the subprocess for stdio),
lists the server's tools and keeps the session in a task group the ``async with`` owns; on
leaving, the session is closed and the subprocess stopped, and nothing it started is left.

Each listed tool becomes a plain ``Tool`` (its name with the optional prefix, the server's
description and input schema) whose function calls the session, with the toolset's limiter,
so the agent's scheduler applies unchanged: ``max_parallel_tools``, the per-call timeout,
interceptors, ``run.cancel_tool``. A call stopped by a timeout or a cancel is cancelled on
the server too: the SDK sends ``notifications/cancelled`` for its request id.

What a server lists is not taken on trust. A tool whose input schema cannot be used (one
the SDK refuses, such as ``"properties": 5``; one that is not valid JSON Schema; one with a
``$ref`` to nothing) is left out and logged once (``mcp_tool_skipped``), and the server's
other tools are kept. A name providers reject (a space, ``/``, non-ASCII, empty, over 64
characters) reaches the model as a safe, unique and stable name (``reactcore.mcp._names``:
``my tool`` → ``my_tool_`` and 8 hex digits of its hash), logged once
(``mcp_tool_renamed``); a call of that name goes to the server's tool by its own name, and
``tool_names`` maps the one to the other.

The toolset is a model interceptor (it adds its current tools to each model request) and a
resolver, so ``ReactAgent(tools=[toolset, my_tool])`` is all it takes. When the server says
its tool list changed, the tools are listed again. When the server goes away (a crash, a
closed connection), the call in flight answers the model with an error naming the server,
and the next model call or tool call reconnects (for stdio: starts the process again), or
raises ``MCPError`` when it cannot.

A tool keeps what the server says of it: its annotations (``readOnlyHint``,
``destructiveHint`` …) as ``Tool.annotations``, read by the approval hook and the retry
interceptor; and its ``outputSchema``: the SDK checks the ``structuredContent`` of each
result against it (a mismatch answers the model with an error saying where), and the
checked value is the response's ``data``.

Beside tools, the toolset reads the server's resources and prompts as reactcore values
(``list_resources``, ``list_resource_templates``, ``read_resource``, ``list_prompts``,
``get_prompt``; see ``_resources`` and ``_prompts``), follows a resource's updates
(``subscribe``), and with ``resource_tool=True`` lets the model read resources itself.

A server may ask the client during a call: for its model (``sampling``, off unless
enabled; see ``_sampling``) and for its user's input (elicitation, which pauses the run;
see ``_elicitation``). Each request is answered in the task of the call it came during
(see ``_inflight``), so the call's run, limits, events, span and cancel scope apply.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, suppress
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

from .. import _validate as valid
from .._exceptions import MCPError
from .._interceptors import ToolCallResponse
from .._tools import Tool, ToolContext
from ..models.base import ChatModel
from ._auth import TokenProvider, http_auth
from ._elicitation import ElicitationPolicy, Elicitor, check_decisions, waiting_for
from ._inflight import Calls, Paused
from ._names import check_prefix, name_set, safe_names
from ._prompts import Prompt, PromptResult, prompt_arguments, to_prompt, to_result
from ._requests import Connection, asking, every_page, one_error, reason
from ._resources import (
    Resource,
    ResourceContents,
    ResourceTemplate,
    resource_tool,
    to_contents,
    to_resource,
    to_template,
)
from ._results import schema_check, schema_problem, to_annotations, to_response
from ._sampling import PURPOSE as SAMPLING
from ._sampling import SAMPLING_CHOICE, Sampler, SamplingPolicy
from ._screen import Screen, ScreenedWrite, WatchedStream
from ._subscriptions import Subscriptions, ask
from ._transports import (
    MAX_RESULT_BYTES,
    SSETransport,
    StdioTransport,
    StreamableHTTPTransport,
    Transport,
)

if TYPE_CHECKING:
    from .._interceptors import ModelHandler
    from ..models.base import ModelRequest, ModelResponse

_log = structlog.get_logger("reactcore.mcp")


_CONTEXT = "__reactcore_tool_context__"  # the keyword the call's ToolContext comes as


@attrs.define(eq=False)
class MCPToolset:
    """The tools of one MCP server; make one with ``stdio``, ``streamable_http`` or ``sse``.

    ``prefix`` is put before every tool name (to avoid clashes between servers; letters,
    digits, ``_`` and ``-``); ``allow`` (if given) and ``deny`` filter the server's tool
    names (without the prefix). The model sees each tool under a name providers accept
    (see the module docstring); ``tool_names`` says which server tool each one is.
    ``max_concurrency`` is how many calls of this server run at once (a shared
    ``limiter`` may be given instead); ``timeout`` overrides the agent's per-call timeout
    for these tools; ``connect_timeout`` bounds the handshake and the first listing.
    ``resource_tool`` adds a tool ``read_resource`` (after the prefix) through which the
    model reads the server's resources. ``sampling`` (``True``: the agent's model; or a
    ``ChatModel``) lets the server ask the model during a call, each request first put to
    ``sampling_policy``; off by default (see ``_sampling``). A server asking the user for
    input (elicitation) pauses the run, else ``elicitation_policy`` answers, else the
    request is declined (see ``_elicitation``).
    """

    transport: Transport = attrs.field(
        validator=valid.has_methods("open", what="a transport (with open and label)")
    )
    name: str | None = attrs.field(
        default=None, kw_only=True, validator=valid.text(non_empty=True, optional=True)
    )
    prefix: str = attrs.field(default="", kw_only=True, validator=[valid.text(), check_prefix])
    allow: frozenset[str] | None = attrs.field(
        default=None,
        kw_only=True,
        converter=name_set,
        validator=valid.each(valid.text(), names=True, optional=True),
    )
    deny: frozenset[str] = attrs.field(
        default=frozenset(),
        kw_only=True,
        converter=name_set,
        validator=valid.NAMES,
    )
    max_concurrency: int = attrs.field(default=8, kw_only=True, validator=valid.integer(minimum=1))
    limiter: anyio.CapacityLimiter | None = attrs.field(
        default=None,
        kw_only=True,
        validator=valid.instance_of(
            anyio.CapacityLimiter, "an anyio.CapacityLimiter", optional=True
        ),
    )
    timeout: float | None = attrs.field(
        default=None, kw_only=True, validator=valid.number(positive=True, optional=True)
    )
    connect_timeout: float = attrs.field(
        default=30.0, kw_only=True, validator=valid.number(positive=True)
    )
    resource_tool: bool = attrs.field(default=False, kw_only=True, validator=valid.boolean())
    sampling: bool | ChatModel = attrs.field(default=False, kw_only=True, validator=SAMPLING_CHOICE)
    sampling_policy: SamplingPolicy | None = attrs.field(
        default=None, kw_only=True, validator=valid.function(optional=True)
    )
    elicitation_policy: ElicitationPolicy | None = attrs.field(
        default=None, kw_only=True, validator=valid.function(optional=True)
    )

    _group: anyio.abc.TaskGroup | None = attrs.field(default=None, init=False)
    _conn: Connection | None = attrs.field(default=None, init=False)
    _tools: Mapping[str, Tool] = attrs.field(factory=dict, init=False)
    _remote: Mapping[str, str] = attrs.field(factory=dict, init=False)
    _logged: set[tuple[str, str]] = attrs.field(factory=set, init=False)
    _lock: anyio.Lock | None = attrs.field(default=None, init=False)
    _listings: int = attrs.field(default=0, init=False)
    _listed: anyio.Event | None = attrs.field(default=None, init=False)
    _server: str | None = attrs.field(default=None, init=False)
    _limiter: anyio.CapacityLimiter | None = attrs.field(default=None, init=False)
    _subscriptions: Subscriptions = attrs.field(factory=Subscriptions, init=False)
    _calls: Calls = attrs.field(factory=Calls, init=False)

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
        max_result_bytes: int | None = MAX_RESULT_BYTES,
        auth: httpx2.Auth | TokenProvider | None = None,
        **options: Any,
    ) -> MCPToolset:
        """A server at ``url`` over streamable HTTP; ``http_client`` is an ``httpx2`` client
        (the SDK's), used as given and left open; else one with ``headers`` and ``auth`` (a
        token provider, asked again after a 401, or an ``httpx2.Auth``) is made.

        ``max_result_bytes`` (1 MiB, the SDK's default; ``None`` for no limit) bounds one
        server-sent event, which carries a whole result: a larger result fails its call
        with an ``MCPError`` that says so, and the session goes on.
        """
        transport = StreamableHTTPTransport(
            url, headers, http_client, max_result_bytes=max_result_bytes, auth=http_auth(auth, url)
        )
        return cls(transport, **options)

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
        self._subscriptions.close()
        if self._conn is not None:
            self._conn.down.set()
        self._conn = None
        try:
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                return await group.__aexit__(exc_type, exc, tb)
            if exc is not None:
                # The block's own error is not handed to the group, which would raise it
                # inside an ExceptionGroup: the session is stopped and it leaves as itself.
                group.cancel_scope.cancel()
            try:
                await group.__aexit__(None, None, None)
            except BaseExceptionGroup as errors:
                failure = one_error(errors, exc)
            else:
                return None
        finally:
            # After the group: no listing is left to fill them again.
            self._tools, self._remote = {}, {}
        raise failure  # outside the handler: its own context, not the group's

    # --- what the agent uses -------------------------------------------------------------

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The server's tools as last listed (prefixed and filtered); empty when closed."""
        return tuple(self._tools.values())

    @property
    def tool_names(self) -> Mapping[str, str]:
        """The name the model sees of each tool → the server's name for it (they differ
        when the server's is not one providers accept: see ``reactcore.mcp._names``)."""
        return dict(self._remote)

    @property
    def server_name(self) -> str:
        """The name given, else the one the server gave, else the transport's label."""
        return self.name or self._server or self.transport.label

    @property
    def session(self) -> ClientSession:
        """The SDK's session of the live connection, for what the toolset leaves to it
        (completions, logging levels …); ``RuntimeError`` when there is none."""
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
        if not tools or request.purpose == SAMPLING:  # a server's own request: no tools
            return await handler(request)
        known = set(request.tools)
        names = (*request.tools, *(t.name for t in tools if t.name not in known))
        dynamic = (*request.dynamic_tools, *tools)
        return await handler(attrs.evolve(request, tools=names, dynamic_tools=dynamic))

    # --- resources and prompts -----------------------------------------------------------

    async def list_resources(self) -> tuple[Resource, ...]:
        """The resources the server lists (every page)."""
        conn = await self._connection()
        with asking(conn, "resources/list"):
            found = await every_page(self._pages(conn.session.list_resources), "resources")
            return tuple(to_resource(r) for r in found)

    async def list_resource_templates(self) -> tuple[ResourceTemplate, ...]:
        """The resource templates the server lists (every page)."""
        conn = await self._connection()
        with asking(conn, "resources/templates/list"):
            listing = self._pages(conn.session.list_resource_templates)
            found = await every_page(listing, "resource_templates")
            return tuple(to_template(t) for t in found)

    async def read_resource(self, uri: str) -> tuple[ResourceContents, ...]:
        """What the resource at ``uri`` holds (one item per content the server gives), each
        as a content part: text, an image, or a file for any other blob."""
        valid.text(non_empty=True).spec.check("read_resource uri", uri)
        conn = await self._connection()
        with asking(conn, "resources/read"):
            result = await conn.session.read_resource(uri)
            return to_contents(result, conn.server)

    @asynccontextmanager
    async def subscribe(self, uri: str) -> AsyncIterator[MemoryObjectReceiveStream[str]]:
        """``async with toolset.subscribe(uri) as updates: async for uri in updates:``
        gets ``uri`` each time the server says the resource changed (read it again to see
        how). Updates arriving while the reader is behind coalesce into one; the stream
        ends when the toolset closes. The server is asked (``resources/subscribe``) when the
        first reader of ``uri`` comes, again after a reconnection, and told when the last
        one leaves. ``MCPError`` when the server does not offer subscriptions."""
        valid.text(non_empty=True).spec.check("subscribe uri", uri)
        conn = await self._connection()
        capabilities = conn.session.server_capabilities
        resources = capabilities.resources if capabilities is not None else None
        if resources is None or not resources.subscribe:
            raise MCPError(
                f"MCP server '{conn.server}' does not offer resource subscriptions",
                server=conn.server,
            )
        first = uri not in self._subscriptions.uris
        send, receive = self._subscriptions.add(uri)
        try:
            if first:
                await ask(conn, uri, subscribe=True)
            with receive:
                yield receive
        finally:
            # The connection now: after a reconnection the new session holds the subscription.
            now = self._conn
            last = self._subscriptions.remove(uri, send)
            if last and now is not None and not now.down.is_set():
                with (
                    anyio.CancelScope(shield=True),
                    anyio.move_on_after(self.connect_timeout),
                    suppress(MCPError),
                ):
                    await ask(now, uri, subscribe=False)

    async def list_prompts(self) -> tuple[Prompt, ...]:
        """The prompts the server lists (every page)."""
        conn = await self._connection()
        with asking(conn, "prompts/list"):
            found = await every_page(self._pages(conn.session.list_prompts), "prompts")
            return tuple(to_prompt(p) for p in found)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> PromptResult:
        """The prompt ``name`` filled in with ``arguments`` (strings), its messages as
        reactcore messages (``UserMessage``, ``AssistantMessage``)."""
        valid.text(non_empty=True).spec.check("get_prompt name", name)
        given = prompt_arguments(arguments)
        conn = await self._connection()
        with asking(conn, "prompts/get"):
            result = await conn.session.get_prompt(name, given)
            return to_result(result, conn.server)

    @staticmethod
    def _pages(listing: Any) -> Any:
        """A page fetcher for ``every_page`` from a session's ``list_*`` method."""
        return lambda params: listing(params=params)

    # --- the connection ------------------------------------------------------------------

    async def _connection(self) -> Connection:
        conn = self._conn
        if conn is not None and not conn.down.is_set():
            return conn
        return await self._connect()

    async def _connect(self) -> Connection:
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
                assert isinstance(conn, Connection)
            except Exception as exc:
                raise MCPError(
                    f"cannot connect to MCP server '{self.server_name}': {reason(exc)}",
                    server=self.server_name,
                ) from exc
            self._conn = conn
            self._server = conn.server
            for uri in self._subscriptions.uris:  # a new session: ask again
                try:
                    await ask(conn, uri, subscribe=True)
                except MCPError as exc:
                    _log.warning(
                        "mcp_subscribe_failed", server=conn.server, uri=uri, error=str(exc)
                    )
            return conn

    async def _serve(self, *, task_status: anyio.abc.TaskStatus[Connection]) -> None:
        """Own one session: connect, list, hand it over, then keep it until it is down."""
        down = anyio.Event()
        changes, changed = anyio.create_memory_object_stream[None](1)
        started = False
        try:
            async with AsyncExitStack() as stack:
                stack.enter_context(changes)
                stack.enter_context(changed)
                read, write = await stack.enter_async_context(self.transport.open())
                screen = Screen()
                named = lambda: self.server_name  # noqa: E731
                sampler = Sampler(self.sampling, self.sampling_policy, self._calls, named)
                session = ClientSession(
                    WatchedStream(read, down, screen),
                    ScreenedWrite(write, screen),
                    message_handler=lambda message: self._on_message(changes, message),
                    sampling_callback=sampler if sampler.enabled else None,
                    elicitation_callback=Elicitor(self.elicitation_policy, self._calls, named),
                )
                await stack.enter_async_context(session)
                with anyio.fail_after(self.connect_timeout):
                    info = await session.initialize()
                    screen.version = session.protocol_version
                    server = self.name or info.server_info.name
                    conn = Connection(session, down, server, screen)
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
            _log.warning("mcp_connection_failed", server=self.server_name, error=reason(exc))
        finally:
            down.set()

    async def _on_message(self, changes: MemoryObjectSendStream[None], message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            with suppress(anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                changes.send_nowait(None)
        elif isinstance(message, mt.ResourceUpdatedNotification):
            self._subscriptions.deliver(message.params.uri)
        await anyio.lowlevel.checkpoint()

    async def _relist_on_change(
        self, conn: Connection, changed: MemoryObjectReceiveStream[None]
    ) -> None:
        async for _ in changed:
            try:
                await self._list(conn)
            except Exception as exc:
                _log.warning("mcp_list_failed", server=conn.server, error=reason(exc))

    async def _list(self, conn: Connection) -> None:
        """List the server's tools (every page) and make them the toolset's tools."""
        found: list[mt.Tool] = await every_page(self._pages(conn.session.list_tools), "tools")
        tools: dict[str, Tool] = {}
        remote: dict[str, str] = {}
        usable = [t for t in found if self._wanted(t.name) and self._usable(conn, t)]
        for name, refused in conn.screen.refused:
            if self._wanted(name):
                self._once("mcp_tool_skipped", conn.server, name, reason=refused)
        conn.screen.refused.clear()
        safe = safe_names(self.prefix + t.name for t in usable)
        for spec in usable:
            name = safe[self.prefix + spec.name]
            if name != self.prefix + spec.name:
                self._once("mcp_tool_renamed", conn.server, spec.name, name=name)
            tools[name] = self._tool(spec, name)
            remote[name] = spec.name
        if self.resource_tool:
            name = f"{self.prefix}read_resource"
            if name in tools:
                reason = "the server has a tool of that name"
                self._once("mcp_tool_skipped", conn.server, name, reason=reason)
            else:
                tools[name] = await resource_tool(conn, name, self.read_resource, self._options)
        self._tools, self._remote = tools, remote
        self._listings += 1
        listed, self._listed = self._listed, anyio.Event()
        if listed is not None:
            listed.set()

    def _wanted(self, name: str) -> bool:
        return (self.allow is None or name in self.allow) and name not in self.deny

    def _usable(self, conn: Connection, spec: mt.Tool) -> bool:
        """Whether the tool's input schema can be used; a tool whose cannot is skipped
        (and logged once), the server's other tools kept."""
        problem = schema_problem(spec.input_schema)
        if problem is not None:
            self._once("mcp_tool_skipped", conn.server, spec.name, reason=problem)
        return problem is None

    def _once(self, event: str, server: str, tool: str, **fields: Any) -> None:
        """Log ``event`` about ``tool`` once for as long as the toolset lives (a warning
        when it is skipped, info when it is renamed), not at every listing."""
        if (event, tool) in self._logged:
            return
        self._logged.add((event, tool))
        log = _log.warning if event == "mcp_tool_skipped" else _log.info
        log(event, server=server, tool=tool, **fields)

    @property
    def _options(self) -> dict[str, Any]:
        """What every tool of the toolset gets: its timeout and limiter."""
        return {"timeout": self.timeout, "limiter": self._limiter}

    def _tool(self, spec: mt.Tool, name: str) -> Tool:
        remote = spec.name
        structured = spec.output_schema is not None

        async def call(**arguments: Any) -> ToolCallResponse:
            context: ToolContext | None = arguments.pop(_CONTEXT, None)
            return await self._call(remote, arguments, context, structured=structured)

        call.check_decisions = check_decisions  # type: ignore[attr-defined]

        return Tool.from_schema(
            name,
            spec.description or spec.title or "",
            dict(spec.input_schema),
            call,
            check=schema_check(spec.input_schema, name),
            annotations=to_annotations(spec),
            context=_CONTEXT,
            **self._options,
        )

    async def _call(
        self,
        remote: str,
        arguments: dict[str, Any],
        context: ToolContext | None,
        *,
        structured: bool,
    ) -> ToolCallResponse:
        """Call ``remote`` on the server; a failure of the server raises ``MCPError``.
        ``structured``: the tool declares an output schema (see ``to_response``). The
        server's requests meanwhile are answered in this call (see ``_inflight``); one that
        pauses the run (an elicitation) stops the call, which answers with the interrupt."""
        conn = await self._connection()

        async def send() -> mt.CallToolResult:
            with asking(conn, "the call"):
                return await conn.session.call_tool(remote, arguments)

        if context is None:  # called directly, outside any run: nothing to ask the run
            return to_response(await send(), structured=structured)
        result = await self._calls.run(context, lambda _: send())
        if isinstance(result, Paused):
            return waiting_for(result.waiting)
        return to_response(result, structured=structured)

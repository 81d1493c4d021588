"""What passes between a toolset and its server, looked at on the way.

``Screen`` takes out of a ``tools/list`` answer, before the SDK reads it, each tool the
SDK would refuse (one such tool would make it refuse the whole listing). The transport's
streams are wrapped: ``WatchedStream`` (reading) passes each message through the screen
and sets the connection's ``down`` event when the stream ends (the server went away);
``ScreenedWrite`` (writing) tells the screen which requests were ``tools/list``.
"""

from __future__ import annotations

from typing import Any, Self

import anyio
import attrs
from mcp_types import JSONRPCRequest, JSONRPCResponse
from mcp_types.methods import validate_server_result
from pydantic import ValidationError


@attrs.define(eq=False)
class Screen:
    """Takes out of a ``tools/list`` answer, before the SDK reads it, each tool the SDK
    would refuse (``"properties": 5`` in its input schema, say): one such tool would
    make it refuse the whole listing, and the server's other tools with it.

    ``asked`` holds the ids of the ``tools/list`` requests sent; ``refused`` the tools
    taken out (name, why), until ``_list`` reads them; ``version`` is the protocol version
    the session agreed (the SDK checks a result against that version's schema).
    """

    asked: set[Any] = attrs.field(factory=set)
    refused: list[tuple[str, str]] = attrs.field(factory=list)
    version: str | None = None

    def sent(self, item: Any) -> None:
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCRequest) and message.method == "tools/list":
            self.asked.add(message.id)

    def received(self, item: Any) -> Any:
        message = getattr(item, "message", None)
        if not isinstance(message, JSONRPCResponse) or message.id not in self.asked:
            return item
        self.asked.discard(message.id)
        tools = message.result.get("tools")
        if self.version is None or not isinstance(tools, list):
            return item
        kept = [tool for tool in tools if self._fits(tool)]
        if len(kept) < len(tools):
            message.result = {**message.result, "tools": kept}
        return item

    def _fits(self, tool: Any) -> bool:
        assert self.version is not None
        try:
            validate_server_result("tools/list", self.version, {"tools": [tool]})
        except ValidationError as exc:
            name = tool.get("name") if isinstance(tool, dict) else None
            self.refused.append((name if isinstance(name, str) else repr(name), _invalid(exc)))
            return False
        except (KeyError, ValueError):  # a version the SDK has no schema for: it checks nothing
            return True
        return True


def _invalid(exc: ValidationError) -> str:
    """A tool's validation errors in words, without the values (they are the server's)."""
    problems = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"][2:])  # past "tools", 0
        problems.append(f"{where}: {error['msg']}" if where else str(error["msg"]))
    return "; ".join(problems)


class WatchedStream:
    """The transport's read stream, setting ``down`` when it ends (the server went away),
    each message passed through ``screen``."""

    def __init__(self, inner: Any, down: anyio.Event, screen: Screen) -> None:
        self._inner = inner
        self._down = down
        self._screen = screen

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return self._screen.received(await self._inner.receive())
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._down.set()
            raise

    def __aiter__(self) -> WatchedStream:
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


class ScreenedWrite:
    """The transport's write stream, telling ``screen`` of every message sent."""

    def __init__(self, inner: Any, screen: Screen) -> None:
        self._inner = inner
        self._screen = screen

    async def send(self, item: Any) -> None:
        self._screen.sent(item)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

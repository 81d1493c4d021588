"""Who waits for updates of which resource: the readers of ``MCPToolset.subscribe``.

Each ``subscribe(uri)`` block gets its own memory object stream; when the server says
the resource changed (``notifications/resources/updated``) every stream of that URI gets
the URI. A stream holds one pending update: while its reader is behind, further updates
of the URI coalesce into that one ("it changed since you last looked"), so a slow
reader never makes the session wait nor memory grow. No task is involved: the SDK's
message handler delivers with ``send_nowait``.
"""

from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING

import anyio
import attrs
import mcp.types as mt
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ._requests import asking

if TYPE_CHECKING:
    from ._requests import Connection


@attrs.define(eq=False)
class Subscriptions:
    """The open subscription streams, by resource URI."""

    _streams: dict[str, list[MemoryObjectSendStream[str]]] = attrs.field(factory=dict)

    @property
    def uris(self) -> tuple[str, ...]:
        """The URIs someone is subscribed to (to subscribe again after a reconnection)."""
        return tuple(self._streams)

    def add(self, uri: str) -> tuple[MemoryObjectSendStream[str], MemoryObjectReceiveStream[str]]:
        """A new stream for updates of ``uri``."""
        send, receive = anyio.create_memory_object_stream[str](1)
        self._streams.setdefault(uri, []).append(send)
        return send, receive

    def remove(self, uri: str, send: MemoryObjectSendStream[str]) -> bool:
        """Close ``send`` and forget it; ``True`` when it was the last one of ``uri``."""
        send.close()
        streams = self._streams.get(uri, [])
        if send in streams:
            streams.remove(send)
        if streams:
            return False
        self._streams.pop(uri, None)
        return True

    def deliver(self, uri: str) -> None:
        """Tell every reader of ``uri`` that it changed (coalesced when one is behind)."""
        for send in self._streams.get(uri, ()):
            with suppress(anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                send.send_nowait(uri)

    def close(self) -> None:
        """End every reader's stream (the toolset is closing)."""
        for streams in self._streams.values():
            for send in streams:
                send.close()
        self._streams.clear()


async def ask(conn: Connection, uri: str, *, subscribe: bool) -> None:
    """Ask the server to (un)subscribe this session to ``uri``; ``MCPError`` if it fails.

    Sent as a plain request, not with ``session.subscribe_resource``, which the SDK marks
    deprecated for the 2026 protocol (it warns at every call): the session negotiates the
    2025 protocol, whose servers serve ``resources/subscribe``.
    """
    if subscribe:
        request: mt.SubscribeRequest | mt.UnsubscribeRequest = mt.SubscribeRequest(
            params=mt.SubscribeRequestParams(uri=uri)
        )
    else:
        request = mt.UnsubscribeRequest(params=mt.UnsubscribeRequestParams(uri=uri))
    with asking(conn, request.method):
        await conn.session.send_request(request, mt.EmptyResult)

"""Asking a server over one live session: every page of a listing, and failures as ``MCPError``.

A ``Connection`` is one session; ``asking(conn, during)`` wraps one request to it and
turns what can go wrong into an ``MCPError`` naming the server: the server answered
with an error; it closed the connection (``down`` is set: the next use connects again);
it could not be reached; a streamed result was past the client's size limit (the session
goes on); a tool's structured content did not fit its output schema (the SDK checks it);
anything else. Tool calls, resource reads and prompt requests share it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import attrs
import httpx2
import jsonschema.exceptions  # type: ignore[import-untyped]
import mcp.types as mt
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError as SDKError

from .._exceptions import MCPError
from ._results import where_invalid
from ._screen import Screen

MAX_PAGES = 100
"""The most pages of one listing that are read (a server whose cursor never ends)."""
# Failures of the connection itself (not of the request): the session is given up.
_TRANSPORT_ERRORS = (
    httpx2.TransportError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    OSError,
)
# How the SDK says a server-sent event was past its size limit (httpx2's SSEError).
_OVER_THE_LIMIT = re.compile(r"exceeded the (\d+) byte limit")


@attrs.define(eq=False)
class Connection:
    """One live session; ``down`` is set when it ended or must end."""

    session: ClientSession
    down: anyio.Event
    server: str
    screen: Screen


def reason(exc: BaseException) -> str:
    """What went wrong, in one line: the server's message, else ``Type: message``."""
    if isinstance(exc, SDKError):
        return exc.error.message
    if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        return reason(exc.exceptions[0])
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextmanager
def asking(conn: Connection, during: str) -> Iterator[None]:
    """Run one request to ``conn``'s server; its failure raises ``MCPError`` (``during``
    says what was asked: ``the call``, ``resources/read`` …)."""
    server = conn.server
    try:
        yield
    except SDKError as exc:
        over = _OVER_THE_LIMIT.search(exc.error.message)
        if exc.error.code == mt.CONNECTION_CLOSED and over:  # the session goes on
            message = (
                f"MCP server '{server}' answered with a result of more than "
                f"{over[1]} bytes, the client's limit (max_result_bytes)"
            )
        elif exc.error.code == mt.CONNECTION_CLOSED:
            conn.down.set()  # the next request or model turn connects again
            message = f"MCP server '{server}' closed the connection during {during}"
        else:
            message = f"MCP server '{server}' answered with an error: {reason(exc)}"
        raise MCPError(message, server=server) from exc
    except _TRANSPORT_ERRORS as exc:
        conn.down.set()
        message = f"MCP server '{server}' could not be reached: {reason(exc)}"
        raise MCPError(message, server=server) from exc
    except RuntimeError as exc:
        cause = exc.__cause__
        if isinstance(cause, jsonschema.exceptions.ValidationError):  # the SDK's check
            message = (
                f"MCP server '{server}' answered with structured content that does not fit "
                f"the tool's output schema: {where_invalid(cause)}"
            )
        else:
            message = f"MCP server '{server}' failed during {during}: {reason(exc)}"
        raise MCPError(message, server=server) from exc
    except Exception as exc:
        message = f"MCP server '{server}' failed during {during}: {reason(exc)}"
        raise MCPError(message, server=server) from exc


async def every_page(
    fetch: Callable[[mt.PaginatedRequestParams | None], Awaitable[Any]], field: str
) -> list[Any]:
    """The items (``field`` of each page) of a paginated listing, following its cursor
    for at most ``MAX_PAGES`` pages."""
    found: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await fetch(mt.PaginatedRequestParams(cursor=cursor) if cursor else None)
        found.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            break
    return found


def one_error(
    errors: BaseExceptionGroup[BaseException], body: BaseException | None
) -> BaseException:
    """What leaves ``async with`` when the session's task group failed: its one error as
    itself; several (or one beside the block's own ``body`` error) stay grouped."""
    found = [*([body] if body is not None else []), *errors.exceptions]
    if len(found) == 1 and not isinstance(found[0], BaseExceptionGroup):
        return found[0]
    return BaseExceptionGroup("errors in MCPToolset and its block", found)

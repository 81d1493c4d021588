"""Reading a client's JSON body within ``Limits.max_body_bytes``, and turning approval
decisions sent as JSON into a ``Resume``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._approval import Approve, Decision, Edit, Reject, Resume
from .._exceptions import RequestRefused
from .._json import loads

if TYPE_CHECKING:
    from starlette.requests import Request


def _too_large(limit: int) -> RequestRefused:
    return RequestRefused(413, "too_large", f"the request body is larger than {limit} bytes")


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The request's body, read no further than ``max_bytes`` (413 beyond it)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise _too_large(max_bytes)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise _too_large(max_bytes)
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: Request, max_bytes: int) -> Any:
    """The request's JSON body, read no further than ``max_bytes`` (413 beyond it; 400
    when it is not JSON)."""
    body = await read_body(request, max_bytes)
    if not body:
        return None
    try:
        return loads(body)
    except ValueError as exc:
        raise RequestRefused(400, "bad_json", "the request body is not valid JSON") from exc


def _refused(message: str) -> RequestRefused:
    return RequestRefused(422, "bad_decisions", message)


def _decision(call_id: str, value: Any) -> Decision:
    if not isinstance(value, Mapping):
        raise _refused(f"decisions[{call_id!r}] must be an object with a 'type'")
    kind = value.get("type")
    if kind == "approve":
        return Approve()
    if kind == "edit":
        arguments = value.get("arguments")
        if not isinstance(arguments, str | Mapping):
            raise _refused(
                f"decisions[{call_id!r}]: an edit needs 'arguments' (an object or a JSON string)"
            )
        return Edit(arguments)
    if kind == "reject":
        reason = value.get("reason")
        if reason is None:
            return Reject()
        if not isinstance(reason, str) or not reason:
            raise _refused(f"decisions[{call_id!r}]: 'reason' must be a non-empty string")
        return Reject(reason)
    raise _refused(
        f"decisions[{call_id!r}]: 'type' must be 'approve', 'edit' or 'reject', got {kind!r}"
    )


def decisions_from_json(value: Any) -> Resume:
    """``{"<call id>": {"type": "approve"}}`` (``"edit"`` with ``"arguments"``, ``"reject"``
    with an optional ``"reason"``) as a ``Resume``; 422 naming what does not fit."""
    if not isinstance(value, Mapping) or not value:
        raise _refused("'decisions' must be an object mapping call ids to decisions")
    return Resume({str(call_id): _decision(str(call_id), item) for call_id, item in value.items()})

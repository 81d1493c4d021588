"""What the loopback Gemini server sends (``reactcore.testing.serve_gemini``): whole
``GenerateContentResponse``s, streamed ones framed as ``:streamGenerateContent?alt=sse``
frames them, and Google's error bodies (``google.rpc.Status`` with ``details``), in the
API's camelCase JSON. Proven against the official ``google-genai`` SDK in the tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs

from . import _validate as valid
from ._messages import AssistantMessage
from ._testing_sse import ENDINGS, EVENTS, THREADING_EVENT, Ending, send_events, to_events
from .models._gemini_parts import model_parts
from .models.base import Usage

if TYPE_CHECKING:
    from .testing import Exchange, HTTPReply

_MODEL = "test-model"
_RESPONSE_ID = "resp_test"
_REASONS = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}
_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _as_message(message: AssistantMessage | str) -> AssistantMessage:
    return AssistantMessage(message) if isinstance(message, str) else message


def _finish_reason(message: AssistantMessage, given: str | None) -> str:
    if given is not None:
        return given
    if message.finish_reason is None:
        return "STOP"
    return _REASONS.get(message.finish_reason, message.finish_reason.upper())


def gemini_usage_json(usage: Usage | None) -> dict[str, Any]:
    """``usage`` as ``usageMetadata`` (thoughts apart from the candidates' tokens, the
    cached tokens when there are any)."""
    usage = usage or Usage(10, 5, 15)
    wire = {
        "promptTokenCount": usage.prompt_tokens,
        "candidatesTokenCount": usage.completion_tokens - usage.reasoning_tokens,
        "totalTokenCount": usage.total_tokens,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": usage.prompt_tokens}],
    }
    if usage.cached_tokens:
        wire["cachedContentTokenCount"] = usage.cached_tokens
    if usage.reasoning_tokens:
        wire["thoughtsTokenCount"] = usage.reasoning_tokens
    return wire


def _response(
    parts: list[dict[str, Any]], finish: str | None, usage: dict[str, Any]
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": _MODEL,
        "responseId": _RESPONSE_ID,
    }


def gemini_response_json(
    message: AssistantMessage | str, *, usage: Usage | None = None, finish_reason: str | None = None
) -> dict[str, Any]:
    """A whole ``GenerateContentResponse`` carrying ``message``: its parts as the model
    sent them (thoughts, signatures and made-up ids from its layout, else its text then
    its calls, each call with its id), its finish reason (``finish_reason``: the wire's,
    e.g. ``"RECITATION"``, to say it outright), ``usage``."""
    message = _as_message(message)
    parts, _ = model_parts(message)
    finish = _finish_reason(message, finish_reason)
    return _response(parts, finish, gemini_usage_json(usage))


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _split(part: dict[str, Any], size: int) -> list[dict[str, Any]]:
    """An unsigned text or thought part as parts of ``size`` characters; others whole."""
    if set(part) - {"thought"} != {"text"}:
        return [part]
    return [{**part, "text": piece} for piece in _pieces(part["text"], size)]


def gemini_chunks(
    message: AssistantMessage | str,
    *,
    usage: Usage | None = None,
    chunk_size: int = 4,
    finish_reason: str | None = None,
) -> list[dict[str, Any]]:
    """``message`` as ``streamGenerateContent`` sends it: one part per event (unsigned text
    and thoughts in pieces of ``chunk_size`` characters, a signed part or a call whole),
    every event with the prompt's usage, the last with the finish reason and the whole
    usage."""
    message = _as_message(message)
    parts, _ = model_parts(message)
    pieces = [piece for part in parts for piece in _split(part, chunk_size)] or [{"text": ""}]
    full = gemini_usage_json(usage)
    so_far = {
        "promptTokenCount": full["promptTokenCount"],
        "totalTokenCount": full["promptTokenCount"],
        "promptTokensDetails": full["promptTokensDetails"],
    }
    chunks = [_response([piece], None, so_far) for piece in pieces[:-1]]
    chunks.append(_response([pieces[-1]], _finish_reason(message, finish_reason), full))
    return chunks


GeminiChunk: TypeAlias = Mapping[str, Any] | str
"""A streamed event: a ``GenerateContentResponse`` chunk (a JSON object), or raw text sent
as the ``data`` as is (e.g. malformed JSON)."""


def _frame(chunk: GeminiChunk) -> bytes:
    data = chunk if isinstance(chunk, str) else json.dumps(dict(chunk))
    return f"data: {data}\r\n\r\n".encode()


@attrs.frozen
class GeminiSSEReply:
    """A ``streamGenerateContent?alt=sse`` answer: each chunk as a ``data:`` event (CRLF
    framed, as the API frames them), then the ``ending``: ``"eof"`` a clean end (a
    complete answer's last chunk has a ``finishReason``); ``"cut"`` the connection closed
    mid-body; ``"hang"`` the stream stays open until the client leaves (``client_left`` is
    set then)."""

    chunks: tuple[GeminiChunk, ...] = attrs.field(converter=to_events, validator=EVENTS)
    ending: Ending = attrs.field(default="eof", validator=valid.one_of(*ENDINGS))
    client_left: threading.Event = attrs.field(
        factory=threading.Event, eq=False, repr=False, validator=THREADING_EVENT
    )

    @classmethod
    def of(
        cls,
        message: AssistantMessage | str,
        *,
        usage: Usage | None = None,
        chunk_size: int = 4,
        finish_reason: str | None = None,
    ) -> GeminiSSEReply:
        """``message`` streamed whole (``gemini_chunks``)."""
        return cls(
            gemini_chunks(message, usage=usage, chunk_size=chunk_size, finish_reason=finish_reason)
        )

    async def respond(self, exchange: Exchange) -> None:
        await send_events(exchange, self.chunks, self.ending, self.client_left, _frame)


def gemini_reply(
    message: AssistantMessage | str,
    *,
    usage: Usage | None = None,
    finish_reason: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> HTTPReply:
    """A successful whole ``generateContent`` answer carrying ``message``."""
    from .testing import HTTPReply

    payload = gemini_response_json(message, usage=usage, finish_reason=finish_reason)
    return HTTPReply.from_json(payload, headers=headers)


def _delay(seconds: float) -> str:
    """Seconds as a protobuf ``Duration`` in JSON: ``"13s"``, ``"0.300s"``."""
    return f"{seconds:.0f}s" if float(seconds).is_integer() else f"{seconds:.3f}s"


def gemini_error_reply(
    status: int,
    message: str,
    *,
    status_text: str | None = None,
    retry_delay: float | None = None,
    headers: Mapping[str, str] | None = None,
) -> HTTPReply:
    """A Google API error body (``{"error": {"code", "message", "status", "details"}}``):
    ``status_text`` is the RPC status (by default the one of ``status``: 429
    ``RESOURCE_EXHAUSTED``, 503 ``UNAVAILABLE`` …); ``retry_delay`` adds a quota failure
    and a ``google.rpc.RetryInfo`` detail whose ``retryDelay`` asks for that many seconds,
    as a 429 of the Gemini API does."""
    from .testing import HTTPReply

    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": status_text or _STATUSES.get(status, "UNKNOWN"),
    }
    if retry_delay is not None:
        error["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/"
                        "generate_content_free_tier_requests",
                        "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                        "quotaDimensions": {"location": "global", "model": _MODEL},
                        "quotaValue": "15",
                    }
                ],
            },
            {
                "@type": "type.googleapis.com/google.rpc.RetryInfo",
                "retryDelay": _delay(retry_delay),
            },
        ]
    return HTTPReply.from_json({"error": error}, status=status, headers=headers)

"""What the loopback Anthropic server sends (``reactcore.testing.serve_anthropic``): whole
Messages answers, streamed events as the API sends them (``event:`` and ``data:`` lines,
which the official SDK needs both of), and error bodies. Proven against the official
``anthropic`` SDK in the tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs

from . import _validate as valid
from ._messages import AssistantMessage
from ._testing_sse import (
    ENDINGS,
    EVENTS,
    THREADING_EVENT,
    Ending,
    TypedEvent,
    send_events,
    to_events,
)
from .models.anthropic import _assistant_blocks
from .models.base import Usage

if TYPE_CHECKING:
    from .testing import Exchange, HTTPReply

_MODEL = "test-model"
_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}


def _stop_reason(message: AssistantMessage) -> str:
    if message.finish_reason is None:
        return "tool_use" if message.tool_calls else "end_turn"
    return _REASONS.get(message.finish_reason, message.finish_reason)


def _usage_json(usage: Usage | None, *, output: int | None = None) -> dict[str, Any]:
    usage = usage or Usage(10, 5, 15)
    return {
        "input_tokens": usage.prompt_tokens - usage.cached_tokens - usage.cache_creation_tokens,
        "output_tokens": usage.completion_tokens if output is None else output,
        "cache_creation_input_tokens": usage.cache_creation_tokens,
        "cache_read_input_tokens": usage.cached_tokens,
    }


def _as_message(message: AssistantMessage | str) -> AssistantMessage:
    return AssistantMessage(message) if isinstance(message, str) else message


def _head(message: AssistantMessage) -> dict[str, Any]:
    return {"id": "msg_test", "type": "message", "role": "assistant", "model": _MODEL}


def anthropic_message_json(
    message: AssistantMessage | str, *, usage: Usage | None = None
) -> dict[str, Any]:
    """A whole Messages answer carrying ``message``: its thinking blocks (from its
    provider data), text and ``tool_use`` blocks, its stop reason, ``usage``."""
    message = _as_message(message)
    return {
        **_head(message),
        "content": _assistant_blocks(message),
        "stop_reason": _stop_reason(message),
        "stop_sequence": None,
        "usage": _usage_json(usage),
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _block_events(index: int, block: Mapping[str, Any], size: int) -> list[dict[str, Any]]:
    kind = block["type"]
    delta = "content_block_delta"
    if kind == "thinking":
        start: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": delta, "index": index, "delta": {"type": "thinking_delta", "thinking": p}}
            for p in _pieces(block["thinking"], size)
        ]
        signature = {"type": "signature_delta", "signature": block["signature"]}
        deltas.append({"type": delta, "index": index, "delta": signature})
    elif kind == "text":
        start = {"type": "text", "text": ""}
        deltas = [
            {"type": delta, "index": index, "delta": {"type": "text_delta", "text": p}}
            for p in _pieces(block["text"], size)
        ]
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        arguments = json.dumps(block["input"])
        deltas = [
            {
                "type": delta,
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in _pieces(arguments, size)
        ]
    else:  # redacted_thinking, and anything else sent whole
        start, deltas = dict(block), []
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *deltas,
        {"type": "content_block_stop", "index": index},
    ]


def anthropic_events(
    message: AssistantMessage | str, *, usage: Usage | None = None, chunk_size: int = 4
) -> list[dict[str, Any]]:
    """``message`` as the Messages API streams it: ``message_start``, a ``ping``, each
    block's start, deltas (``chunk_size`` characters each) and stop, ``message_delta``
    with the stop reason and usage, ``message_stop``."""
    message = _as_message(message)
    start = {
        **_head(message),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage_json(usage, output=1),
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for index, block in enumerate(_assistant_blocks(message)):
        events += _block_events(index, block, chunk_size)
    final = _usage_json(usage)
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(message), "stop_sequence": None},
            "usage": {"output_tokens": final["output_tokens"]},
        },
        {"type": "message_stop"},
    ]
    return events


AnthropicEvent: TypeAlias = TypedEvent
"""A streamed event: a JSON object (sent under ``event: <its type>``) or raw text sent as
the ``data`` of an untyped event as is (e.g. malformed JSON)."""


@attrs.frozen
class AnthropicSSEReply:
    """A Messages stream: each event framed as the API frames it, then the ``ending``:
    ``"eof"`` a clean end (a complete answer ends with its ``message_stop`` event);
    ``"cut"`` the connection closed mid-body; ``"hang"`` the stream stays open until the
    client leaves (``client_left`` is set then)."""

    events: tuple[AnthropicEvent, ...] = attrs.field(converter=to_events, validator=EVENTS)
    ending: Ending = attrs.field(default="eof", validator=valid.one_of(*ENDINGS))
    client_left: threading.Event = attrs.field(
        factory=threading.Event, eq=False, repr=False, validator=THREADING_EVENT
    )

    @classmethod
    def of(
        cls, message: AssistantMessage | str, *, usage: Usage | None = None, chunk_size: int = 4
    ) -> AnthropicSSEReply:
        """``message`` streamed whole (``anthropic_events``)."""
        return cls(anthropic_events(message, usage=usage, chunk_size=chunk_size))

    async def respond(self, exchange: Exchange) -> None:
        await send_events(exchange, self.events, self.ending, self.client_left)


def anthropic_message_reply(
    message: AssistantMessage | str,
    *,
    usage: Usage | None = None,
    headers: Mapping[str, str] | None = None,
) -> HTTPReply:
    """A successful whole Messages answer carrying ``message``."""
    from .testing import HTTPReply

    return HTTPReply.from_json(anthropic_message_json(message, usage=usage), headers=headers)


def anthropic_error_reply(
    status: int,
    message: str,
    *,
    error_type: str = "api_error",
    headers: Mapping[str, str] | None = None,
) -> HTTPReply:
    """An Anthropic error body (``{"type": "error", "error": {"type", "message"}}``):
    e.g. 529 with ``error_type="overloaded_error"``, 429 ``rate_limit_error``."""
    from .testing import HTTPReply

    payload = {"type": "error", "error": {"type": error_type, "message": message}}
    return HTTPReply.from_json(
        payload, status=status, headers={"request-id": "req_test", **(headers or {})}
    )

"""What the loopback Responses server sends (``reactcore.testing.serve_openai_responses``):
whole ``response`` objects, streamed events as OpenAI's Responses API sends them (typed
``event:`` and ``data:`` lines, a ``sequence_number`` on every event, item ids, output and
content indexes), and error bodies. Proven against the official ``openai`` SDK in the
tests."""

from __future__ import annotations

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
from .models.base import Usage
from .models.openai_responses import assistant_items, own_data

if TYPE_CHECKING:
    from .testing import Exchange, HTTPReply

_MODEL = "test-model"
_RESPONSE_ID = "resp_test"
_CREATED_AT = 1_700_000_000
_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}

ResponsesEvent: TypeAlias = TypedEvent
"""A streamed event: a JSON object (sent under ``event: <its type>``) or raw text sent as
the ``data`` of an untyped event as is (e.g. malformed JSON)."""


def _as_message(message: AssistantMessage | str) -> AssistantMessage:
    return AssistantMessage(message) if isinstance(message, str) else message


def _usage_json(usage: Usage | None) -> dict[str, Any]:
    usage = usage or Usage(10, 5, 15)
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {
            "cached_tokens": usage.cached_tokens,
            "cache_write_tokens": usage.cache_creation_tokens,
        },
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def _reasoning_items(message: AssistantMessage) -> list[dict[str, Any]]:
    """A reasoning item made of ``message.reasoning`` when its provider data holds none
    (a message written for a test), so the text still comes back as a summary."""
    recorded = own_data(message).get("output")
    if not message.reasoning or (
        isinstance(recorded, list)
        and any(isinstance(e, Mapping) and e.get("type") == "reasoning" for e in recorded)
    ):
        return []
    summary = [{"type": "summary_text", "text": message.reasoning}]
    return [{"type": "reasoning", "summary": summary}]


def output_items(message: AssistantMessage | str) -> list[dict[str, Any]]:
    """``message`` as the ``output`` of a response: its reasoning items (from its provider
    data, or one made of its ``reasoning``), its text as a message and its calls as
    ``function_call`` items, with their ids (the recorded ones, else made up)."""
    message = _as_message(message)
    status = "incomplete" if message.finish_reason in _INCOMPLETE else "completed"
    out: list[dict[str, Any]] = []
    for at, item in enumerate(_reasoning_items(message) + assistant_items(message, stored=True)):
        kind = item["type"]
        if kind == "reasoning":
            reasoning = {"id": f"rs_test_{at}", **item}
            reasoning.setdefault("summary", [])
            out.append(reasoning)
        elif kind == "message":
            content = item["content"]
            text = content if isinstance(content, str) else content[0]["text"]
            part: dict[str, Any] = {"type": "output_text", "annotations": [], "logprobs": []}
            part["text"] = text
            found = {
                "id": item.get("id", f"msg_test_{at}"),
                "type": "message",
                "status": status,
                "content": [part],
                "role": "assistant",
            }
            if "phase" in item:
                found["phase"] = item["phase"]
            out.append(found)
        else:
            out.append(
                {
                    "id": item.get("id", f"fc_test_{at}"),
                    "type": "function_call",
                    "status": "completed",
                    "arguments": item["arguments"],
                    "call_id": item["call_id"],
                    "name": item["name"],
                }
            )
    return out


def _response(
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    response_id: str,
    incomplete: str | None = None,
) -> dict[str, Any]:
    """A ``response`` object as the API sends it."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": _CREATED_AT,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None if incomplete is None else {"reason": incomplete},
        "instructions": None,
        "max_output_tokens": None,
        "model": _MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


def responses_json(
    message: AssistantMessage | str,
    *,
    usage: Usage | None = None,
    response_id: str = _RESPONSE_ID,
) -> dict[str, Any]:
    """A whole ``response`` carrying ``message``: ``completed``, or ``incomplete`` when
    its finish reason is ``"length"`` (``max_output_tokens``) or ``"content_filter"``."""
    message = _as_message(message)
    incomplete = _INCOMPLETE.get(message.finish_reason or "")
    status = "completed" if incomplete is None else "incomplete"
    return _response(status, output_items(message), _usage_json(usage), response_id, incomplete)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _reasoning_events(item: dict[str, Any], at: int, size: int) -> list[dict[str, Any]]:
    where = {"item_id": item["id"], "output_index": at}
    events: list[dict[str, Any]] = []
    for n, part in enumerate(item["summary"]):
        text, index = part["text"], {**where, "summary_index": n}
        empty = {"type": "summary_text", "text": ""}
        events.append({"type": "response.reasoning_summary_part.added", **index, "part": empty})
        events += [
            {"type": "response.reasoning_summary_text.delta", **index, "delta": piece}
            for piece in _pieces(text, size)
        ]
        events.append({"type": "response.reasoning_summary_text.done", **index, "text": text})
        done = {"type": "summary_text", "text": text}
        events.append({"type": "response.reasoning_summary_part.done", **index, "part": done})
    return events


def _message_events(item: dict[str, Any], at: int, size: int) -> list[dict[str, Any]]:
    where = {"item_id": item["id"], "output_index": at, "content_index": 0}
    part = item["content"][0]
    text = part["text"]
    empty = {**part, "text": ""}
    return [
        {"type": "response.content_part.added", **where, "part": empty},
        *(
            {"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []}
            for piece in _pieces(text, size)
        ),
        {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **where, "part": part},
    ]


def _call_events(item: dict[str, Any], at: int, size: int) -> list[dict[str, Any]]:
    where = {"item_id": item["id"], "output_index": at}
    return [
        *(
            {"type": "response.function_call_arguments.delta", **where, "delta": piece}
            for piece in _pieces(item["arguments"], size)
        ),
        {"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"]},
    ]


def _added(item: dict[str, Any]) -> dict[str, Any]:
    """An item as ``response.output_item.added`` shows it: in progress, before its content."""
    kind = item["type"]
    if kind == "reasoning":
        return {"id": item["id"], "type": "reasoning", "summary": []}
    if kind == "message":
        return {**item, "status": "in_progress", "content": []}
    return {**item, "status": "in_progress", "arguments": ""}


def responses_events(
    message: AssistantMessage | str,
    *,
    usage: Usage | None = None,
    chunk_size: int = 4,
    response_id: str = _RESPONSE_ID,
) -> list[dict[str, Any]]:
    """``message`` as the Responses API streams it: ``response.created``,
    ``response.in_progress``, then per output item ``response.output_item.added``, its
    content (summary parts and text deltas, a content part and text deltas, argument
    deltas: ``chunk_size`` characters each, with their ``…done``) and
    ``response.output_item.done``, and last ``response.completed`` (or
    ``response.incomplete``) with the whole response and its usage; every event with its
    ``sequence_number``."""
    whole = responses_json(message, usage=usage, response_id=response_id)
    start = _response("in_progress", [], None, response_id)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": start},
        {"type": "response.in_progress", "response": start},
    ]
    content = {"reasoning": _reasoning_events, "message": _message_events}
    for at, item in enumerate(whole["output"]):
        events.append(
            {"type": "response.output_item.added", "output_index": at, "item": _added(item)}
        )
        events += content.get(item["type"], _call_events)(item, at, chunk_size)
        events.append({"type": "response.output_item.done", "output_index": at, "item": item})
    end = "response.completed" if whole["status"] == "completed" else "response.incomplete"
    events.append({"type": end, "response": whole})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


@attrs.frozen
class ResponsesSSEReply:
    """A Responses stream: each event framed as the API frames it, then the ``ending``:
    ``"eof"`` a clean end (a complete answer ends with its ``response.completed``,
    ``response.incomplete`` or ``response.failed`` event); ``"cut"`` the connection closed
    mid-body; ``"hang"`` the stream stays open until the client leaves (``client_left`` is
    set then)."""

    events: tuple[ResponsesEvent, ...] = attrs.field(converter=to_events, validator=EVENTS)
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
        response_id: str = _RESPONSE_ID,
    ) -> ResponsesSSEReply:
        """``message`` streamed whole (``responses_events``)."""
        return cls(
            responses_events(message, usage=usage, chunk_size=chunk_size, response_id=response_id)
        )

    async def respond(self, exchange: Exchange) -> None:
        await send_events(exchange, self.events, self.ending, self.client_left)


def responses_reply(
    message: AssistantMessage | str,
    *,
    usage: Usage | None = None,
    response_id: str = _RESPONSE_ID,
    headers: Mapping[str, str] | None = None,
) -> HTTPReply:
    """A successful whole Responses answer carrying ``message`` (``responses_json``)."""
    from .testing import HTTPReply

    payload = responses_json(message, usage=usage, response_id=response_id)
    return HTTPReply.from_json(payload, headers=headers)


def responses_error_reply(
    status: int,
    message: str,
    *,
    error_type: str = "server_error",
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> HTTPReply:
    """An OpenAI error body (``{"error": {"message", "type", "param", "code"}}``) with
    ``status`` and an ``x-request-id``: e.g. 429 with ``error_type="requests"``,
    ``code="rate_limit_exceeded"`` and ``{"retry-after": "1"}``."""
    from .testing import HTTPReply

    error = {"message": message, "type": error_type, "param": None, "code": code}
    return HTTPReply.from_json(
        {"error": error}, status=status, headers={"x-request-id": "req_test", **(headers or {})}
    )

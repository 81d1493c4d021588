"""The answers of Bedrock's Converse API, whole (``parse_converse``) and streamed
(``Events``, fed the ``ConverseStream`` events as ``{type: payload}`` JSON by the
event-stream reader): text, ``toolUse`` and ``reasoningContent`` blocks, stop reasons and
usage, as ``reactcore.models.bedrock`` describes them."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .._exceptions import ModelError, ModelStreamError
from .._messages import AssistantMessage, ToolCall
from .._serde import clean_arguments, clean_text
from ._http import parse_json
from ._wire import field as _field
from ._wire import json_object as _object
from ._wire import malformed as _malformed
from ._wire import token_count as _count
from .base import ModelChunk, ModelResponse, ToolCallDelta, Usage

PROVIDER = "bedrock"
"""The key of this provider's data on messages (``AssistantMessage.provider_data``)."""

_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}


def finish_reason(stop_reason: str | None) -> str | None:
    """Bedrock's ``stopReason`` as the loop's finish reason (see ``reactcore.models.bedrock``)."""
    return None if stop_reason is None else _STOP_REASONS.get(stop_reason, stop_reason)


def usage_of(usage: Mapping[str, Any]) -> Usage:
    """Converse ``usage`` as ``Usage``: the prompt counts the uncached input, the cache
    reads (``cached_tokens``) and the cache writes (``cache_creation_tokens``)."""
    read = _count(usage, "cacheReadInputTokens")
    written = _count(usage, "cacheWriteInputTokens")
    prompt = _count(usage, "inputTokens") + read + written
    output = _count(usage, "outputTokens")
    return Usage(prompt, output, prompt + output, cached_tokens=read, cache_creation_tokens=written)


def _provider_data(reasoning: list[dict[str, Any]]) -> dict[str, Any]:
    return {PROVIDER: {"reasoning": reasoning}} if reasoning else {}


def _reasoning_of(content: Mapping[str, Any], index: int, where: str) -> dict[str, Any]:
    if "redactedContent" in content:
        redacted = _field(content, "redactedContent", str, where, ModelError)
        return {"index": index, "redacted": redacted}
    text = _object(content.get("reasoningText"), f"{where}.reasoningText", ModelError)
    signature = text.get("signature")
    return {
        "index": index,
        "text": clean_text(_field(text, "text", str, f"{where}.reasoningText", ModelError)),
        "signature": signature if isinstance(signature, str) else "",
    }


def parse_converse(payload: Any) -> ModelResponse:
    """A ``ModelResponse`` from a whole Converse answer."""
    answer = _object(payload, "$", ModelError)
    output = _object(answer.get("output"), "$.output", ModelError)
    message = _object(output.get("message"), "$.output.message", ModelError)
    content = message.get("content")
    if not isinstance(content, list):
        raise _malformed("an array 'content'", "$.output.message", ModelError)
    text: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, Any]] = []
    for index, raw in enumerate(content):
        where = f"$.output.message.content[{index}]"
        block = _object(raw, where, ModelError)
        if "text" in block:
            text.append(clean_text(_field(block, "text", str, where, ModelError)))
        elif "toolUse" in block:
            use = _object(block["toolUse"], f"{where}.toolUse", ModelError)
            arguments = json.dumps(
                _field(use, "input", dict, f"{where}.toolUse", ModelError), ensure_ascii=False
            )
            calls.append(
                ToolCall(
                    clean_text(_field(use, "toolUseId", str, f"{where}.toolUse", ModelError)),
                    clean_text(_field(use, "name", str, f"{where}.toolUse", ModelError)),
                    clean_arguments(arguments),
                )
            )
        elif "reasoningContent" in block:
            inner = _object(block["reasoningContent"], f"{where}.reasoningContent", ModelError)
            reasoning.append(_reasoning_of(inner, index, f"{where}.reasoningContent"))
    stop = answer.get("stopReason")
    finish = finish_reason(stop if isinstance(stop, str) else None)
    usage = usage_of(_object(answer.get("usage") or {}, "$.usage", ModelError))
    result = AssistantMessage(
        "".join(text),
        calls,
        finish_reason=finish,
        reasoning="".join(b.get("text", "") for b in reasoning),
        provider_data=_provider_data(reasoning),
    )
    return ModelResponse(result, usage, raw=payload, finish_reason=finish)


_NOTHING = ModelChunk()


@attrs.define
class Events:
    """The reading of a ``ConverseStream`` answer: one chunk per event that carries
    something, up to ``metadata`` (the last event, with the usage). Reasoning blocks are
    gathered (text, signature, redacted content) and sent, all so far, as provider data
    when each one stops."""

    redact: Callable[[str], str]
    done: bool = False
    open_reasoning: dict[int, dict[str, Any]] = attrs.field(factory=dict)
    reasoning: list[dict[str, Any]] = attrs.field(factory=list)

    def feed(self, data: str) -> ModelChunk | None:
        event = _object(parse_json(data, ModelStreamError, "a stream event"), "$", ModelStreamError)
        for kind, body in event.items():
            where = f"$.{kind}"
            payload = _object(body, where, ModelStreamError)
            if kind == "contentBlockDelta":
                chunk = self._delta(payload)
            elif kind == "contentBlockStart":
                chunk = self._start(payload)
            elif kind == "contentBlockStop":
                chunk = self._stop(payload)
            elif kind == "messageStop":
                stop = payload.get("stopReason")
                chunk = ModelChunk(
                    finish_reason=finish_reason(stop if isinstance(stop, str) else None)
                )
            elif kind == "metadata":
                self.done = True
                usage = _object(payload.get("usage") or {}, f"{where}.usage", ModelStreamError)
                chunk = ModelChunk(usage=usage_of(usage))
            else:  # messageStart, and event types added later
                chunk = _NOTHING
            return None if chunk is _NOTHING else chunk
        return None

    def _delta(self, event: Mapping[str, Any]) -> ModelChunk:
        index = _field(event, "contentBlockIndex", int, "$", ModelStreamError)
        delta = _object(event.get("delta"), "$.delta", ModelStreamError)
        if "text" in delta:
            return ModelChunk(
                text=clean_text(_field(delta, "text", str, "$.delta", ModelStreamError))
            )
        if "toolUse" in delta:
            use = _object(delta["toolUse"], "$.delta.toolUse", ModelStreamError)
            piece = _field(use, "input", str, "$.delta.toolUse", ModelStreamError)
            return ModelChunk(tool_calls=[ToolCallDelta(index, arguments=clean_text(piece))])
        if "reasoningContent" in delta:
            content = _object(
                delta["reasoningContent"], "$.delta.reasoningContent", ModelStreamError
            )
            block = self.open_reasoning.setdefault(
                index, {"index": index, "text": "", "signature": ""}
            )
            if isinstance(content.get("text"), str):
                piece = clean_text(content["text"])
                block["text"] += piece
                return ModelChunk(reasoning=piece)
            if isinstance(content.get("signature"), str):
                block["signature"] = content["signature"]
            elif isinstance(content.get("redactedContent"), str):
                self.open_reasoning[index] = {
                    "index": index,
                    "redacted": content["redactedContent"],
                }
        return _NOTHING

    def _start(self, event: Mapping[str, Any]) -> ModelChunk:
        index = _field(event, "contentBlockIndex", int, "$", ModelStreamError)
        start = _object(event.get("start") or {}, "$.start", ModelStreamError)
        if "toolUse" not in start:
            return _NOTHING
        use = _object(start["toolUse"], "$.start.toolUse", ModelStreamError)
        where = "$.start.toolUse"
        delta = ToolCallDelta(
            index,
            clean_text(_field(use, "toolUseId", str, where, ModelStreamError)),
            clean_text(_field(use, "name", str, where, ModelStreamError)),
        )
        return ModelChunk(tool_calls=[delta])

    def _stop(self, event: Mapping[str, Any]) -> ModelChunk:
        index = _field(event, "contentBlockIndex", int, "$", ModelStreamError)
        block = self.open_reasoning.pop(index, None)
        if block is None:
            return _NOTHING
        self.reasoning.append(block)
        return ModelChunk(provider_data=_provider_data(list(self.reasoning)))

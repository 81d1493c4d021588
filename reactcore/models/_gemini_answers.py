"""Reading Gemini answers: a whole ``GenerateContentResponse``, or the stream of them that
``:streamGenerateContent?alt=sse`` sends, one per ``data:`` event.

Only the first candidate is read. Its parts become the message: text, ``thought`` text as
``reasoning``, each ``functionCall`` (sent whole, never in pieces) as a tool call — with
the model's ``id``, or else one made of the answer's ``responseId`` and the call's index
(``call_<responseId>_<i>``: the same streamed or whole, unique across answers) — and the
layout of the turn, signatures and all, as provider data (``_gemini_parts``).

Finish reasons: ``STOP`` → ``"stop"`` (``"tool_calls"`` when the answer has calls),
``MAX_TOKENS`` → ``"length"``; ``SAFETY``, ``RECITATION``, ``BLOCKLIST``,
``PROHIBITED_CONTENT``, ``SPII``, ``MODEL_ARMOR`` and the ``IMAGE_*`` safety reasons →
``"content_filter"`` (the answer so far is returned, as for every provider's filter);
any other reason in lower case (``"other"``, ``"language"`` …).
``MALFORMED_FUNCTION_CALL`` raises ``ModelError`` (``ModelStreamError`` in a stream)
with the API's ``finishMessage``: there is no call to run. A prompt the API blocked
(``promptFeedback.blockReason``, no candidate) raises the same, naming the reason.

Usage (``usageMetadata``): ``promptTokenCount`` (plus ``toolUsePromptTokenCount``) is
the prompt, ``candidatesTokenCount + thoughtsTokenCount`` the completion (thoughts are
``reasoning_tokens``), ``cachedContentTokenCount`` the ``cached_tokens``,
``totalTokenCount`` the total.

A stream has no end marker: it is complete with the event whose candidate carries a
``finishReason`` (usage comes with it); one that ends before is cut
(``ModelStreamError``). An ``error`` object in the stream is a ``ModelStreamError``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .._exceptions import ModelError, ModelStreamError
from .._messages import AssistantMessage, ToolCall
from .._serde import clean_arguments, clean_text
from ._gemini_parts import SIGNATURE, Layout
from ._http import parse_json
from ._wire import field, json_object, malformed, token_count
from .base import ModelChunk, ModelResponse, ToolCallDelta, Usage

_CONTENT_FILTER = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "MODEL_ARMOR",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
_MALFORMED_CALL = "MALFORMED_FUNCTION_CALL"
_UNSPECIFIED = "FINISH_REASON_UNSPECIFIED"


def finish_reason(reason: str | None, *, has_calls: bool) -> str | None:
    """A candidate's ``finishReason`` as the loop's finish reason (see the module)."""
    if reason is None or reason == _UNSPECIFIED:
        return None
    if reason == "STOP":
        return "tool_calls" if has_calls else "stop"
    if reason == "MAX_TOKENS":
        return "length"
    if reason in _CONTENT_FILTER:
        return "content_filter"
    return reason.lower()


def usage_of(metadata: Mapping[str, Any]) -> Usage:
    """``usageMetadata`` as a ``Usage`` (see the module)."""
    prompt = token_count(metadata, "promptTokenCount")
    prompt += token_count(metadata, "toolUsePromptTokenCount")
    thoughts = token_count(metadata, "thoughtsTokenCount")
    completion = token_count(metadata, "candidatesTokenCount") + thoughts
    return Usage(
        prompt,
        completion,
        token_count(metadata, "totalTokenCount") or prompt + completion,
        cached_tokens=token_count(metadata, "cachedContentTokenCount"),
        reasoning_tokens=thoughts,
    )


def _first_candidate(
    response: Mapping[str, Any], error: type[ModelError], redact: Callable[[str], str]
) -> Mapping[str, Any] | None:
    """The first candidate of ``response``; None when it has none (a usage-only event);
    a blocked prompt raises ``error``."""
    feedback = response.get("promptFeedback")
    candidates = response.get("candidates")
    if isinstance(feedback, Mapping) and feedback.get("blockReason") and not candidates:
        said = redact(str(feedback.get("blockReasonMessage") or ""))
        raise error(
            f"the Gemini API blocked the prompt (promptFeedback.blockReason "
            f"{feedback['blockReason']!s:.40}){': ' + said if said else ''}"[:600]
        )
    if candidates is None:
        return None
    if not isinstance(candidates, list):
        raise malformed("an array 'candidates'", "$", error)
    if not candidates:
        return None
    return json_object(candidates[0], "$.candidates[0]", error)


def _check_finish(
    candidate: Mapping[str, Any], error: type[ModelError], redact: Callable[[str], str]
) -> str | None:
    """The candidate's ``finishReason`` (None when it has none); a malformed function
    call raises ``error``."""
    reason = candidate.get("finishReason")
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise malformed("str 'finishReason'", "$.candidates[0]", error)
    if reason == _MALFORMED_CALL:
        said = redact(str(candidate.get("finishMessage") or ""))
        raise error(
            "the model produced a malformed function call (finishReason "
            f"MALFORMED_FUNCTION_CALL){': ' + said if said else ''}; there is no call to "
            "run (ask again, or simplify the tools' parameters)"[:600]
        )
    return reason


@attrs.define
class _Turn:
    """The model turn being read, part by part, whole or streamed."""

    error: type[ModelError]
    layout: Layout = attrs.field(factory=Layout)
    response_id: str | None = None

    def parts(
        self, candidate: Mapping[str, Any], where: str
    ) -> tuple[list[str], list[str], list[ToolCallDelta]]:
        """The text pieces, thought pieces and calls of ``candidate``'s parts."""
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[ToolCallDelta] = []
        content = candidate.get("content")
        if content is None:
            return texts, thoughts, calls
        if type(content) is not dict:
            raise malformed("an object", f"{where}.content", self.error)
        raw = content.get("parts") or ()
        if type(raw) is not list and raw != ():
            raise malformed("an array 'parts'", f"{where}.content", self.error)
        for index, part in enumerate(raw):
            if type(part) is not dict:
                raise malformed("an object", f"{where}.content.parts[{index}]", self.error)
            signature = part.get(SIGNATURE)
            if signature is not None and type(signature) is not str:
                signature = None
            text = part.get("text")
            if "functionCall" in part:
                at = f"{where}.content.parts[{index}].functionCall"
                calls.append(self._call(part["functionCall"], signature, at))
            elif text is not None:
                if type(text) is not str:
                    raise malformed("str 'text'", f"{where}.content.parts[{index}]", self.error)
                text = clean_text(text)
                if part.get("thought") is True:
                    thoughts.append(text)
                    self.layout.thought(text, signature)
                elif text or signature is not None:
                    texts.append(text)
                    self.layout.text(len(text), signature)
            else:
                self.layout.other(part)
        return texts, thoughts, calls

    def _call(self, value: Any, signature: str | None, where: str) -> ToolCallDelta:
        call = json_object(value, where, self.error)
        name = clean_text(field(call, "name", str, where, self.error))
        given = call.get("id")
        given = clean_text(given) if isinstance(given, str) and given else None
        args = call.get("args")
        if args is not None and not isinstance(args, dict):
            raise malformed("an object 'args'", where, self.error)
        index = self.layout.call(given is not None, signature)
        if given is None:
            self.response_id = self.response_id or uuid.uuid4().hex
            given = f"call_{self.response_id}_{index}"
        arguments = clean_arguments(json.dumps(args or {}, ensure_ascii=False))
        return ToolCallDelta(index, given, name, arguments)

    def read_response_id(self, response: Mapping[str, Any]) -> None:
        if self.response_id is None and isinstance(response.get("responseId"), str):
            self.response_id = response["responseId"]


def _no_redaction(text: str) -> str:
    return text  # whole answers' errors are scrubbed by the shared layer


def parse_response(payload: Any) -> ModelResponse:
    """A ``ModelResponse`` from a whole ``GenerateContentResponse``."""
    response = json_object(payload, "$", ModelError)
    turn = _Turn(ModelError)
    turn.read_response_id(response)
    candidate = _first_candidate(response, ModelError, _no_redaction)
    if candidate is None:
        raise malformed("a candidate", "$.candidates", ModelError)
    texts, thoughts, deltas = turn.parts(candidate, "$.candidates[0]")
    reason = _check_finish(candidate, ModelError, _no_redaction)
    finish = finish_reason(reason, has_calls=bool(deltas))
    metadata = response.get("usageMetadata")
    usage = usage_of(json_object(metadata, "$.usageMetadata", ModelError)) if metadata else None
    calls = [ToolCall(d.id or "", d.name or "", d.arguments) for d in deltas]
    answer = AssistantMessage(
        "".join(texts),
        calls,
        finish_reason=finish,
        reasoning="".join(thoughts),
        provider_data=turn.layout.provider_data(),
    )
    return ModelResponse(answer, usage, raw=payload, finish_reason=finish)


@attrs.define
class GeminiEvents:
    """The reading of a Gemini stream: one chunk per event that carries something, up to
    the event with a ``finishReason``; the layout goes out as provider data with it."""

    redact: Callable[[str], str]
    done: bool = False
    turn: _Turn = attrs.field(factory=lambda: _Turn(ModelStreamError))
    usage: Mapping[str, Any] | None = None

    def feed(self, data: str) -> ModelChunk | None:
        event = parse_json(data, ModelStreamError, "a stream event")
        if type(event) is not dict:
            raise malformed("an object", "$", ModelStreamError)
        if "error" in event:
            said = self.redact(repr(event.get("error")))
            raise ModelStreamError(f"the server sent an error in the stream: {said}"[:600])
        metadata = event.get("usageMetadata")
        if metadata is not None:
            self.usage = json_object(metadata, "$.usageMetadata", ModelStreamError)
        if self.turn.response_id is None:
            self.turn.read_response_id(event)
        candidate = _first_candidate(event, ModelStreamError, self.redact)
        if candidate is None:
            return None
        texts, thoughts, calls = self.turn.parts(candidate, "$.candidates[0]")
        reason = _check_finish(candidate, ModelStreamError, self.redact)
        text = texts[0] if len(texts) == 1 else "".join(texts)
        reasoning = thoughts[0] if len(thoughts) == 1 else "".join(thoughts)
        if reason is None:
            if not (text or reasoning or calls):
                return None
            return ModelChunk(text, calls, reasoning=reasoning)
        self.done = True
        return ModelChunk(
            text,
            calls,
            usage=usage_of(self.usage) if self.usage is not None else None,
            finish_reason=finish_reason(reason, has_calls=self.turn.layout.calls > 0),
            reasoning=reasoning,
            provider_data=self.turn.layout.provider_data(),
        )

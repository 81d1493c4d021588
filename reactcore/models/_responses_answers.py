"""The answers of OpenAI's Responses API, whole or streamed, as reactcore's messages and
chunks (the requests are ``openai_responses``'s).

A whole answer is a ``response`` object; a streamed one is its events, each with its
``type`` and ``sequence_number``: ``response.created`` / ``in_progress``, then per output
item ``response.output_item.added``, its content (``response.output_text.delta``,
``response.function_call_arguments.delta``, ``response.reasoning_summary_text.delta``,
with their ``…done`` and the ``content_part`` / ``reasoning_summary_part`` events around
them) and ``response.output_item.done``, and last ``response.completed``,
``response.incomplete`` or ``response.failed``. A stream that ends before one of those
three is cut (``ModelStreamError``, the shared layer's), as is one with an ``error``
event or ending in ``response.failed`` (the server's message, its key redacted). A delta
or ``…done`` event without its ``summary_index`` / ``content_index`` (LiteLLM's proxy
leaves it out; the official SDK reads it) belongs to its item's last announced part.

What an answer becomes, whole or streamed alike: the text of its ``output_text`` (and
``refusal``) parts; its ``function_call`` items as tool calls, in output order (streamed
fragments are kept apart by their ``output_index``, the ``ToolCallDelta`` index); the text
of its reasoning summaries, parts joined by a blank line, as ``reasoning``; the usage
(``cached_tokens`` from ``input_tokens_details``, ``cache_write_tokens`` as
``cache_creation_tokens``, ``reasoning_tokens`` from ``output_tokens_details``); the finish
reason: ``"tool_calls"`` with calls, ``"content_filter"`` after a refusal, else
``"stop"``, and for an incomplete answer ``"length"`` (``max_output_tokens``),
``"content_filter"``, or the reason as given. The provider data
(``provider_data["openai-responses"]``) records the output items in order — reasoning
items verbatim (id, summary, encrypted content), the ids (and text lengths) of message
items, the ids of function calls — and the response's id: what the next request sends
back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .._exceptions import ModelError, ModelStreamError
from .._messages import AssistantMessage, ToolCall
from .._serde import clean_arguments, clean_text
from ._http import parse_json
from ._wire import json_object as _object
from ._wire import malformed as _malformed
from .base import ModelChunk, ModelResponse, ToolCallDelta, Usage

PROVIDER = "openai-responses"
"""The key of this provider's data on messages (``AssistantMessage.provider_data``)."""
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}
_REASONING_KEYS = ("type", "id", "summary", "encrypted_content", "content")
_SUMMARY_BREAK = "\n\n"
_ERROR_CHARS = 600


def _text(value: Mapping[str, Any], key: str, where: str, error: type[ModelError]) -> str:
    found = value.get(key)
    if type(found) is not str:
        raise _malformed(f"a string {key!r}", where, error)
    return found


def _index(value: Mapping[str, Any], key: str, where: str, error: type[ModelError]) -> int:
    found = value.get(key)
    if type(found) is not int:
        raise _malformed(f"an integer {key!r}", where, error)
    return found


def _count(value: Any, key: str) -> int:
    found = value.get(key) if isinstance(value, Mapping) else None
    return found if type(found) is int else 0


def usage(payload: Any) -> Usage | None:
    """The ``usage`` of a response object, or None when it has none."""
    if not isinstance(payload, Mapping):
        return None
    prompt, completion = _count(payload, "input_tokens"), _count(payload, "output_tokens")
    details = payload.get("input_tokens_details")
    return Usage(
        prompt,
        completion,
        _count(payload, "total_tokens") or prompt + completion,
        cached_tokens=_count(details, "cached_tokens"),
        reasoning_tokens=_count(payload.get("output_tokens_details"), "reasoning_tokens"),
        cache_creation_tokens=_count(details, "cache_write_tokens"),
    )


def finish_reason(response: Mapping[str, Any], *, calls: bool, refused: bool) -> str:
    """The loop's finish reason of a finished response (see the module docstring)."""
    if response.get("status") == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        if not isinstance(reason, str):
            return "incomplete"
        return _INCOMPLETE.get(reason, reason)
    if calls:
        return "tool_calls"
    return "content_filter" if refused else "stop"


def failure(response: Any) -> str:
    """What a failed response's ``error`` says: its code and message."""
    error = response.get("error") if isinstance(response, Mapping) else None
    if not isinstance(error, Mapping):
        return "no error given"
    code, message = error.get("code"), error.get("message")
    return ": ".join(str(v) for v in (code, message) if v is not None) or repr(dict(error))


def _message_text(item: Mapping[str, Any], where: str, error: type[ModelError]) -> str:
    """The text of an output message: its ``output_text`` and ``refusal`` parts, joined."""
    content = item.get("content")
    if not isinstance(content, list):
        raise _malformed("an array 'content'", where, error)
    pieces = []
    for at, raw in enumerate(content):
        part = _object(raw, f"{where}.content[{at}]", error)
        kind = part.get("type")
        if kind == "output_text":
            pieces.append(_text(part, "text", f"{where}.content[{at}]", error))
        elif kind == "refusal":
            pieces.append(_text(part, "refusal", f"{where}.content[{at}]", error))
    return "".join(pieces)


def _refused(item: Mapping[str, Any]) -> bool:
    content = item.get("content")
    return isinstance(content, list) and any(
        isinstance(p, Mapping) and p.get("type") == "refusal" for p in content
    )


def summary_text(item: Mapping[str, Any]) -> list[str]:
    """The texts of a reasoning item's summary parts."""
    summary = item.get("summary")
    if not isinstance(summary, list):
        return []
    texts = (p.get("text") for p in summary if isinstance(p, Mapping))
    return [clean_text(text) for text in texts if type(text) is str]


def record(item: Mapping[str, Any], where: str, error: type[ModelError]) -> dict[str, Any] | None:
    """What the provider data keeps of one finished output item (the module docstring);
    None for an item it keeps nothing of (hosted tools' items)."""
    kind = item.get("type")
    if kind == "reasoning":
        _text(item, "id", where, error)
        return {k: item[k] for k in _REASONING_KEYS if item.get(k) is not None}
    if kind == "message":
        entry: dict[str, Any] = {"type": "message", "id": _text(item, "id", where, error)}
        entry["length"] = len(clean_text(_message_text(item, where, error)))
        if isinstance(item.get("phase"), str):
            entry["phase"] = item["phase"]
        return entry
    if kind == "function_call":
        entry = {"type": "function_call", "call_id": _text(item, "call_id", where, error)}
        if isinstance(item.get("id"), str):
            entry["id"] = item["id"]
        return entry
    return None


def _provider_data(output: list[dict[str, Any]], response_id: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"output": output}
    if isinstance(response_id, str):
        data["response_id"] = response_id
    return {PROVIDER: data}


# --- whole answers ----------------------------------------------------------------------


def parse_response(payload: Any) -> ModelResponse:
    """A ``ModelResponse`` from a whole response object; a failed one is a ``ModelError``
    with its error."""
    response = _object(payload, "$", ModelError)
    if response.get("status") == "failed":
        raise ModelError(f"the response failed: {failure(response)}"[:_ERROR_CHARS])
    output = response.get("output")
    if not isinstance(output, list):
        raise _malformed("an array 'output'", "$", ModelError)
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    kept: list[dict[str, Any]] = []
    refused = False
    for at, raw in enumerate(output):
        where = f"$.output[{at}]"
        item = _object(raw, where, ModelError)
        entry = record(item, where, ModelError)
        if entry is not None:
            kept.append(entry)
        kind = item.get("type")
        if kind == "message":
            text.append(clean_text(_message_text(item, where, ModelError)))
            refused = refused or _refused(item)
        elif kind == "function_call":
            calls.append(
                ToolCall(
                    clean_text(_text(item, "call_id", where, ModelError)),
                    clean_text(_text(item, "name", where, ModelError)),
                    clean_arguments(_text(item, "arguments", where, ModelError) or "{}"),
                )
            )
        elif kind == "reasoning":
            reasoning += summary_text(item)
    finish = finish_reason(response, calls=bool(calls), refused=refused)
    message = AssistantMessage(
        "".join(text),
        calls,
        finish_reason=finish,
        reasoning=_SUMMARY_BREAK.join(reasoning),
        provider_data=_provider_data(kept, response.get("id")),
    )
    return ModelResponse(message, usage(response.get("usage")), raw=payload, finish_reason=finish)


# --- streamed answers -------------------------------------------------------------------

_NOTHING = ModelChunk()
_LIFECYCLE = ("response.created", "response.in_progress", "response.queued")
_ENDS = ("response.completed", "response.incomplete")


@attrs.define
class Events:
    """The reading of a Responses stream: one chunk per event that carries something, up
    to ``response.completed`` or ``response.incomplete``.

    Text, arguments and summary text come from the deltas; a ``…done`` event (or an item
    added or finished with its content) that holds more than the deltas did sends the
    rest, for servers that send an item whole. The recorded output items are sent, all
    so far, as provider data when each one finishes.
    """

    redact: Callable[[str], str]
    done: bool = False
    response_id: str | None = None
    output: dict[int, dict[str, Any]] = attrs.field(factory=dict)
    seen: dict[tuple[str, int, int], int] = attrs.field(factory=dict)
    parts: dict[tuple[str, int], int] = attrs.field(factory=dict)
    summaries: int = 0
    calls: bool = False
    refused: bool = False

    def feed(self, data: str) -> ModelChunk | None:
        event = _object(parse_json(data, ModelStreamError, "a stream event"), "$", ModelStreamError)
        kind = event.get("type")
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            self.refused = self.refused or kind == "response.refusal.delta"
            piece, _ = self._delta(event, "text", "content_index")
            return ModelChunk(text=clean_text(piece)) if piece else None
        if kind == "response.function_call_arguments.delta":
            piece, index = self._delta(event, "call", None)
            return ModelChunk(tool_calls=[ToolCallDelta(index, arguments=clean_text(piece))])
        if kind == "response.reasoning_summary_text.delta":
            piece, _ = self._delta(event, "summary", "summary_index")
            return ModelChunk(reasoning=clean_text(piece)) if piece else None
        chunk = self._other(kind, event)
        return None if chunk is _NOTHING else chunk

    def _delta(self, event: Mapping[str, Any], what: str, part: str | None) -> tuple[str, int]:
        """The ``delta`` of ``event`` and its item's output index; counted against the
        item's part."""
        piece = _text(event, "delta", "$", ModelStreamError)
        index = self._output_index(event)
        key = (what, index, 0 if part is None else self._part(event, what, part, index))
        self.seen[key] = self.seen.get(key, 0) + len(piece)
        return piece, index

    def _part(self, event: Mapping[str, Any], what: str, key: str, index: int) -> int:
        """The part (``summary_index``, ``content_index``) of item ``index`` that
        ``event`` is about. Some servers leave it out (LiteLLM's proxy, on summary
        deltas), which the official SDK reads: then it is the item's last part announced
        (``…part.added``), else the first."""
        if event.get(key) is None:
            return self.parts.get((what, index), 0)
        part = _index(event, key, "$", ModelStreamError)
        self.parts[(what, index)] = part
        return part

    def _rest(self, key: tuple[str, int, int], whole: Any) -> str:
        """What of ``whole`` (a part's final text) the deltas have not sent."""
        if type(whole) is not str:
            return ""
        sent = self.seen.get(key, 0)
        self.seen[key] = max(sent, len(whole))
        return whole[sent:]

    def _other(self, kind: Any, event: Mapping[str, Any]) -> ModelChunk:
        if kind in _LIFECYCLE:
            response = _object(event.get("response"), "$.response", ModelStreamError)
            if isinstance(response.get("id"), str):
                self.response_id = response["id"]
            return _NOTHING
        if kind == "response.output_item.added":
            return self._added(event)
        if kind == "response.output_item.done":
            return self._item_done(event)
        if kind == "response.reasoning_summary_part.added":
            self._part(event, "summary", "summary_index", self._output_index(event))
            self.summaries += 1
            return ModelChunk(reasoning=_SUMMARY_BREAK) if self.summaries > 1 else _NOTHING
        if kind == "response.content_part.added":
            self._part(event, "text", "content_index", self._output_index(event))
            return _NOTHING
        if kind in (
            "response.output_text.done",
            "response.refusal.done",
            "response.reasoning_summary_text.done",
            "response.function_call_arguments.done",
        ):
            return self._part_done(kind, event)
        if kind in _ENDS:
            return self._end(event)
        if kind == "response.failed":
            said = self.redact(failure(event.get("response")))
            raise ModelStreamError(f"the response failed: {said}"[:_ERROR_CHARS])
        if kind == "error":
            said = self.redact(failure({"error": event}))
            raise ModelStreamError(f"the server sent an error in the stream: {said}"[:_ERROR_CHARS])
        return _NOTHING  # content_part, annotations, hosted tools' events, and later ones

    def _output_index(self, event: Mapping[str, Any]) -> int:
        return _index(event, "output_index", "$", ModelStreamError)

    def _added(self, event: Mapping[str, Any]) -> ModelChunk:
        item = _object(event.get("item"), "$.item", ModelStreamError)
        if item.get("type") != "function_call":
            return _NOTHING
        index = self._output_index(event)
        self.calls = True
        arguments = self._rest(("call", index, 0), item.get("arguments"))
        delta = ToolCallDelta(
            index,
            clean_text(_text(item, "call_id", "$.item", ModelStreamError)),
            clean_text(_text(item, "name", "$.item", ModelStreamError)),
            clean_text(arguments),
        )
        return ModelChunk(tool_calls=[delta])

    def _part_done(self, kind: str, event: Mapping[str, Any]) -> ModelChunk:
        index = self._output_index(event)
        if kind == "response.function_call_arguments.done":
            rest = self._rest(("call", index, 0), event.get("arguments"))
            calls = [ToolCallDelta(index, arguments=clean_text(rest))]
            return ModelChunk(tool_calls=calls) if rest else _NOTHING
        if kind == "response.reasoning_summary_text.done":
            part = self._part(event, "summary", "summary_index", index)
            rest = self._rest(("summary", index, part), event.get("text"))
            return ModelChunk(reasoning=clean_text(rest)) if rest else _NOTHING
        part = self._part(event, "text", "content_index", index)
        whole = event.get("text" if kind == "response.output_text.done" else "refusal")
        rest = self._rest(("text", index, part), whole)
        return ModelChunk(text=clean_text(rest)) if rest else _NOTHING

    def _item_done(self, event: Mapping[str, Any]) -> ModelChunk:
        index = self._output_index(event)
        item = _object(event.get("item"), "$.item", ModelStreamError)
        entry = record(item, "$.item", ModelStreamError)
        if entry is None:
            return _NOTHING
        self.output[index] = entry
        data = _provider_data([self.output[i] for i in sorted(self.output)], self.response_id)
        if item.get("type") != "function_call":
            return ModelChunk(provider_data=data)
        rest = self._rest(("call", index, 0), item.get("arguments"))
        calls = [ToolCallDelta(index, arguments=clean_text(rest))] if rest else []
        return ModelChunk(tool_calls=calls, provider_data=data)

    def _end(self, event: Mapping[str, Any]) -> ModelChunk:
        self.done = True
        response = _object(event.get("response"), "$.response", ModelStreamError)
        if isinstance(response.get("id"), str):
            self.response_id = response["id"]
        finish = finish_reason(response, calls=self.calls, refused=self.refused)
        data = _provider_data([self.output[i] for i in sorted(self.output)], self.response_id)
        return ModelChunk(
            usage=usage(response.get("usage")), finish_reason=finish, provider_data=data
        )

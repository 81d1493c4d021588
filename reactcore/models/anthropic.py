"""``AnthropicModel``: a client for Anthropic's Messages API (``POST /v1/messages``).

This module is the wire mapping only; retries (429 with ``retry-after``, 529
``overloaded_error``, 5xx), error mapping, key redaction, bounded parsing, SSE reading and
closing the connection are the shared layer's (``reactcore.models._http``).

Requests: the system prompt (and any ``SystemMessage`` in the conversation) goes top
level; tools as ``input_schema``; an assistant message's tool calls as ``tool_use``
blocks, and the responses of one batch as ``tool_result`` blocks of one user turn
(``is_error`` for errors; images and PDF documents inside them); consecutive turns of
one role are joined, a user turn's ``tool_result`` blocks first (a user message sent
between a ``tool_use`` and its results goes after them, as the API requires).
``ChatOptions.parallel_tool_calls=False`` becomes ``disable_parallel_tool_use``;
``tool_choice`` ``"auto"``/``"required"``/``"none"``/a named function becomes
Anthropic's; a strict ``response_format`` JSON schema becomes the native
``output_config.format``. ``max_tokens`` is required by this API: the model's
``max_tokens`` (``DEFAULT_MAX_TOKENS``) unless the request's options say otherwise.

Answers, whole or streamed (``message_start``, ``content_block_start/delta/stop`` with
``text_delta``, ``input_json_delta``, ``thinking_delta``, ``signature_delta``,
``message_delta``, ``message_stop``, ``ping``, ``error``), become the same
``ModelChunk``s and messages as every provider's. Thinking: ``thinking`` and
``redacted_thinking`` blocks are kept, signatures and all, in the message's
``provider_data["anthropic"]["thinking"]`` (with their position among the blocks) and
sent back verbatim on later requests of the tool loop; their text is the message's
``reasoning``. An unsigned thinking block (``"signature": null`` from a proxy, or a stream
without ``signature_delta``) is read, as the official SDK reads it, and kept, but never
sent back: the API refuses a thinking block without a valid signature. A tool loop is
one assistant turn with one thinking mode: a loop whose first answer has no (signed)
thinking (e.g. it came from another provider through a fallback) is continued without
thinking, and a new turn thinks again. Stop reasons: ``end_turn``/``stop_sequence`` →
``"stop"``, ``max_tokens`` (and ``model_context_window_exceeded``) → ``"length"``,
``tool_use`` → ``"tool_calls"``, ``refusal`` → ``"content_filter"``, ``pause_turn`` kept
as is. An ``error`` event in the stream is a ``ModelStreamError``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

import attrs

from .. import _validate as valid
from .._exceptions import ModelError, ModelStreamError
from .._messages import (
    AssistantMessage,
    AudioPart,
    ContentPart,
    FilePart,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResponse,
)
from .._messages import split_data_url as _data_url
from .._serde import clean_arguments, clean_text, converter
from ._client import FLAG, HTTPModel
from ._http import EventParser, parse_json
from ._wire import block_turns, turn_in_progress
from ._wire import call_arguments as _tool_input
from ._wire import field as _field
from ._wire import json_object as _object
from ._wire import malformed as _malformed
from ._wire import token_count as _count
from .base import ModelChunk, ModelRequest, ModelResponse, ToolCallDelta, ToolSpec, Usage

PROVIDER = "anthropic"
"""The key of this provider's data on messages (``AssistantMessage.provider_data``)."""
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` of a request whose options do not set it (the API requires one)."""
_DEFAULT_BASE_URL = "https://api.anthropic.com"
_EPHEMERAL = {"type": "ephemeral"}
_THINKING_TYPES = ("thinking", "redacted_thinking")
_REPLAY_KEYS = {"thinking": "signature", "redacted_thinking": "data"}
"""What a thinking block must carry (non-empty) to be sent back."""
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


# --- requests ---------------------------------------------------------------------------


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _file_block(part: FilePart) -> dict[str, Any]:
    inline = _data_url(part.file_data) if part.file_data is not None else None
    if inline is None:
        return _text_block(part.describe())
    media_type, data = inline
    if media_type == "application/pdf":
        block: dict[str, Any] = {
            "type": "document",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    elif media_type == "text/plain":
        try:
            text = base64.b64decode(data).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return _text_block(part.describe())
        block = {
            "type": "document",
            "source": {"type": "text", "media_type": media_type, "data": text},
        }
    else:
        return _text_block(part.describe())
    if part.filename:
        block["title"] = part.filename
    return block


def part_block(part: ContentPart) -> dict[str, Any]:
    """One content part as an Anthropic content block: text; an image (base64 or URL);
    a PDF or plain-text file as a document; anything else described in text."""
    match part:
        case TextPart(text=text):
            return _text_block(text)
        case ImagePart(url=url):
            inline = _data_url(url)
            if inline is None:
                return {"type": "image", "source": {"type": "url", "url": url}}
            media_type, data = inline
            return {
                "type": "image",
                "source": {"type": "base64", "media_type": media_type, "data": data},
            }
        case FilePart():
            return _file_block(part)
        case AudioPart():
            return _text_block(part.describe())
    raise TypeError(f"not a content part: {part!r}")


def _blocks(text: str, parts: Iterable[ContentPart]) -> list[dict[str, Any]]:
    """``text`` then ``parts`` as content blocks; empty text left out (the API refuses it)."""
    blocks = [_text_block(text)] if text else []
    blocks += [part_block(p) for p in parts]
    return [b for b in blocks if b["type"] != "text" or b["text"]]


def _replayable(block: Any) -> bool:
    """Whether ``block`` is a thinking block the API takes back: a ``thinking`` block with
    its signature, or a ``redacted_thinking`` block with its data. An unsigned one (a proxy
    sent ``"signature": null``, or a stream gave no ``signature_delta``) would be refused
    ("invalid signature"), so it stays on the message and is never sent."""
    if not isinstance(block, dict):
        return False
    key = _REPLAY_KEYS.get(str(block.get("type")))
    return key is not None and isinstance(block.get(key), str) and bool(block[key])


def _thinking_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    """This provider's thinking blocks of ``message`` the API takes back, with their
    ``index`` (``_replayable``)."""
    data = message.provider_data.get(PROVIDER)
    found = data.get("thinking") if isinstance(data, Mapping) else None
    if not isinstance(found, list):
        return []
    return [b for b in found if _replayable(b)]


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    """Text, then ``tool_use`` blocks, with the thinking blocks back where they were."""
    blocks = [_text_block(message.text)] if message.text else []
    blocks += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": _tool_input(c.arguments)}
        for c in message.tool_calls
    ]
    thinking = sorted(_thinking_blocks(message), key=lambda b: int(b.get("index", 0)))
    for block in thinking:
        at = block.get("index", 0)
        at = at if isinstance(at, int) and 0 <= at <= len(blocks) else len(blocks)
        blocks.insert(at, {k: v for k, v in block.items() if k != "index"})
    return blocks


def _tool_result(response: ToolResponse) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": response.id}
    content = _blocks(response.response_data, response.parts)
    if content:
        block["content"] = content
    if response.is_error:
        block["is_error"] = True
    return block


def _is_result(block: Mapping[str, Any]) -> bool:
    return block.get("type") == "tool_result"


def turns(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The conversation (without system messages) as ``messages``: consecutive turns of
    one role joined (a user turn's tool results first), turns without blocks (an empty
    answer) left out (``block_turns``)."""
    return block_turns(messages, _blocks, _assistant_blocks, _tool_result, _is_result)


def _tool_spec(spec: ToolSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "description": spec.description,
        "input_schema": converter.unstructure(dict(spec.parameters)),
    }


def _tool_choice(choice: str | Mapping[str, Any] | None, parallel: bool | None) -> Any:
    """OpenAI-style ``tool_choice`` (and ``parallel_tool_calls``) as Anthropic's."""
    named = {"auto": "auto", "required": "any", "any": "any", "none": "none"}
    if choice is None:
        out: dict[str, Any] | None = None
    elif isinstance(choice, str):
        if choice not in named:
            raise ValueError(f"tool_choice must be auto, required or none, got {choice!r}")
        out = {"type": named[choice]}
    elif choice.get("type") == "function":
        out = {"type": "tool", "name": choice["function"]["name"]}
    else:
        out = dict(choice)
    if parallel is False and (out is None or out["type"] != "none"):
        out = {**(out or {"type": "auto"}), "disable_parallel_tool_use": True}
    return out


def _output_format(response_format: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A strict JSON-schema ``response_format`` as native ``output_config.format``; None
    otherwise (the schema is in the prompt then, as for every provider)."""
    if response_format is None or response_format.get("type") != "json_schema":
        return None
    spec = response_format.get("json_schema") or {}
    if not spec.get("strict") or not isinstance(spec.get("schema"), Mapping):
        return None
    return {"type": "json_schema", "schema": converter.unstructure(dict(spec["schema"]))}


def _cache_last_block(turns_: list[dict[str, Any]]) -> None:
    for block in reversed(turns_[-1]["content"] if turns_ else []):
        if block.get("type") not in _THINKING_TYPES:
            block["cache_control"] = _EPHEMERAL
            return


def _one_thinking_mode_per_turn(body: dict[str, Any]) -> None:
    """Anthropic's rule: an assistant turn, tool loop included, runs in one thinking mode;
    with manual thinking on (``{"type": "enabled"}``), the turn in progress must start
    with a thinking block. When its first answer has none (it came from another provider
    through a fallback, or from this provider with thinking off), this request goes
    without ``thinking`` and without the turn's thinking blocks, which is what the API
    does itself ("graceful thinking degradation") and what an endpoint that refuses the
    mixed turn accepts. A new turn (after a user message) thinks again. Adaptive thinking
    (the model may not think) is left as is."""
    thinking = body.get("thinking")
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return
    turn = turn_in_progress(body["messages"], _is_result)
    if not turn or turn[0]["content"][0].get("type") in _THINKING_TYPES:
        return
    del body["thinking"]
    for message in turn:
        message["content"] = [b for b in message["content"] if b.get("type") not in _THINKING_TYPES]


def request_body(
    request: ModelRequest,
    model: str,
    *,
    stream: bool,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    thinking_budget: int | None = None,
    cache_prompt: bool = False,
) -> dict[str, Any]:
    """The JSON body of a Messages request for ``request`` (see the module docstring).

    With ``cache_prompt``, ``cache_control`` breakpoints go on the system prompt, the last
    tool and the conversation's last block; ``thinking_budget`` turns extended thinking
    on (but not in the middle of a tool loop begun without thinking: see
    ``_one_thinking_mode_per_turn``); ``extra_body`` is merged in last.
    """
    options = request.options
    systems = [request.system_message] if request.system_message is not None else []
    systems += [m for m in request.messages if isinstance(m, SystemMessage)]
    messages = turns(request.messages)
    body: dict[str, Any] = {
        "model": options.model or model,
        "max_tokens": options.max_tokens or max_tokens,
        "messages": messages,
    }
    system = "\n\n".join(m.text for m in systems if m.text)
    if system:
        block = _text_block(system)
        body["system"] = [{**block, "cache_control": _EPHEMERAL}] if cache_prompt else system
    tools = [_tool_spec(spec) for spec in request.visible_tool_specs()]
    if tools:
        if cache_prompt:
            tools[-1]["cache_control"] = _EPHEMERAL
        body["tools"] = tools
        choice = _tool_choice(options.tool_choice, options.parallel_tool_calls)
        if choice is not None:
            body["tool_choice"] = choice
    if cache_prompt:
        _cache_last_block(messages)
    for name in ("temperature", "top_p"):
        value = getattr(options, name)
        if value is not None:
            body[name] = value
    if thinking_budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": thinking_budget}
    output_format = _output_format(options.response_format)
    if output_format is not None:
        body["output_config"] = {"format": output_format}
    if stream:
        body["stream"] = True
    body.update(converter.unstructure(dict(options.extra_body)))
    _one_thinking_mode_per_turn(body)
    return body


# --- answers ----------------------------------------------------------------------------


@attrs.define
class _Counts:
    """Token counts as Anthropic reports them: input (uncached), cache writes, cache
    reads, output. ``message_delta`` counts are cumulative: they replace."""

    input: int = 0
    cache_creation: int = 0
    cache_read: int = 0
    output: int = 0

    def update(self, usage: Mapping[str, Any]) -> None:
        for key, name in (
            ("input_tokens", "input"),
            ("cache_creation_input_tokens", "cache_creation"),
            ("cache_read_input_tokens", "cache_read"),
            ("output_tokens", "output"),
        ):
            if usage.get(key) is not None:
                setattr(self, name, _count(usage, key))

    def usage(self) -> Usage:
        prompt = self.input + self.cache_creation + self.cache_read
        return Usage(
            prompt,
            self.output,
            prompt + self.output,
            cached_tokens=self.cache_read,
            cache_creation_tokens=self.cache_creation,
        )


def finish_reason(stop_reason: str | None) -> str | None:
    """Anthropic's ``stop_reason`` as the loop's finish reason (see the module docstring)."""
    return None if stop_reason is None else _STOP_REASONS.get(stop_reason, stop_reason)


def _provider_data(thinking: list[dict[str, Any]]) -> dict[str, Any]:
    return {PROVIDER: {"thinking": thinking}} if thinking else {}


def _signature(block: Mapping[str, Any], where: str) -> str:
    """A whole answer's thinking signature; ``""`` (unsigned) when it is null or absent,
    as the official SDK reads it (LiteLLM's proxy sends ``"signature": null``)."""
    if block.get("signature") is None:
        return ""
    return str(_field(block, "signature", str, where, ModelError))


def _thinking_of(block: Mapping[str, Any], index: int, where: str) -> dict[str, Any]:
    if block["type"] == "thinking":
        return {
            "index": index,
            "type": "thinking",
            "thinking": clean_text(_field(block, "thinking", str, where, ModelError)),
            "signature": _signature(block, where),
        }
    return {
        "index": index,
        "type": "redacted_thinking",
        "data": _field(block, "data", str, where, ModelError),
    }


def parse_message(payload: Any) -> ModelResponse:
    """A ``ModelResponse`` from a whole Messages answer."""
    message = _object(payload, "$", ModelError)
    content = message.get("content")
    if not isinstance(content, list):
        raise _malformed("an array 'content'", "$", ModelError)
    text: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[dict[str, Any]] = []
    for index, raw in enumerate(content):
        where = f"$.content[{index}]"
        block = _object(raw, where, ModelError)
        kind = block.get("type")
        if kind == "text":
            text.append(clean_text(_field(block, "text", str, where, ModelError)))
        elif kind == "tool_use":
            arguments = json.dumps(
                _field(block, "input", dict, where, ModelError), ensure_ascii=False
            )
            calls.append(
                ToolCall(
                    clean_text(_field(block, "id", str, where, ModelError)),
                    clean_text(_field(block, "name", str, where, ModelError)),
                    clean_arguments(arguments),
                )
            )
        elif kind in _THINKING_TYPES:
            thinking.append(_thinking_of(block, index, where))
    counts = _Counts()
    counts.update(_object(message.get("usage") or {}, "$.usage", ModelError))
    stop = message.get("stop_reason")
    finish = finish_reason(stop if isinstance(stop, str) else None)
    answer = AssistantMessage(
        "".join(text),
        calls,
        finish_reason=finish,
        reasoning="".join(b["thinking"] for b in thinking if b["type"] == "thinking"),
        provider_data=_provider_data(thinking),
    )
    return ModelResponse(answer, counts.usage(), raw=payload, finish_reason=finish)


_NOTHING = ModelChunk()


@attrs.define
class _Events:
    """The reading of a Messages stream: one chunk per event that carries something, up
    to ``message_stop``. Thinking blocks are gathered (text and signature) and sent, all
    so far, as provider data when each one stops."""

    redact: Callable[[str], str]
    done: bool = False
    counts: _Counts = attrs.field(factory=_Counts)
    open_thinking: dict[int, dict[str, Any]] = attrs.field(factory=dict)
    thinking: list[dict[str, Any]] = attrs.field(factory=list)

    def feed(self, data: str) -> ModelChunk | None:
        event = _object(parse_json(data, ModelStreamError, "a stream event"), "$", ModelStreamError)
        kind = event.get("type")
        if kind == "content_block_delta":
            chunk = self._delta(event)
        elif kind == "content_block_start":
            chunk = self._start(event)
        elif kind == "content_block_stop":
            chunk = self._stop(event)
        elif kind == "message_start":
            message = _object(event.get("message"), "$.message", ModelStreamError)
            self.counts.update(
                _object(message.get("usage") or {}, "$.message.usage", ModelStreamError)
            )
            chunk = _NOTHING
        elif kind == "message_delta":
            delta = _object(event.get("delta") or {}, "$.delta", ModelStreamError)
            self.counts.update(_object(event.get("usage") or {}, "$.usage", ModelStreamError))
            stop = delta.get("stop_reason")
            finish = finish_reason(stop if isinstance(stop, str) else None)
            chunk = ModelChunk(usage=self.counts.usage(), finish_reason=finish)
        elif kind == "message_stop":
            self.done = True
            chunk = _NOTHING
        elif kind == "error":
            said = self.redact(repr(event.get("error")))
            raise ModelStreamError(f"the server sent an error in the stream: {said}"[:600])
        else:  # ping, and event types added later
            chunk = _NOTHING
        return None if chunk is _NOTHING else chunk

    def _delta(self, event: Mapping[str, Any]) -> ModelChunk:
        index = _field(event, "index", int, "$", ModelStreamError)
        delta = _object(event.get("delta"), "$.delta", ModelStreamError)
        kind = delta.get("type")
        if kind == "text_delta":
            return ModelChunk(
                text=clean_text(_field(delta, "text", str, "$.delta", ModelStreamError))
            )
        if kind == "input_json_delta":
            piece = _field(delta, "partial_json", str, "$.delta", ModelStreamError)
            return ModelChunk(tool_calls=[ToolCallDelta(index, arguments=clean_text(piece))])
        block = self.open_thinking.get(index)
        if kind == "thinking_delta" and block is not None:
            piece = clean_text(_field(delta, "thinking", str, "$.delta", ModelStreamError))
            block["thinking"] += piece
            return ModelChunk(reasoning=piece)
        if kind == "signature_delta" and block is not None:
            block["signature"] = _field(delta, "signature", str, "$.delta", ModelStreamError)
        return _NOTHING

    def _start(self, event: Mapping[str, Any]) -> ModelChunk:
        index = _field(event, "index", int, "$", ModelStreamError)
        block = _object(event.get("content_block"), "$.content_block", ModelStreamError)
        kind = block.get("type")
        where = "$.content_block"
        if kind == "text":
            return ModelChunk(text=clean_text(block.get("text") or ""))
        if kind == "tool_use":
            given = block.get("input")
            arguments = json.dumps(given, ensure_ascii=False) if given else ""
            return ModelChunk(
                tool_calls=[
                    ToolCallDelta(
                        index,
                        clean_text(_field(block, "id", str, where, ModelStreamError)),
                        clean_text(_field(block, "name", str, where, ModelStreamError)),
                        arguments,
                    )
                ]
            )
        if kind == "thinking":
            text = clean_text(block.get("thinking") or "")
            self.open_thinking[index] = {
                "index": index,
                "type": "thinking",
                "thinking": text,
                "signature": block.get("signature") or "",
            }
            return ModelChunk(reasoning=text)
        if kind == "redacted_thinking":
            data = _field(block, "data", str, where, ModelStreamError)
            self.open_thinking[index] = {"index": index, "type": "redacted_thinking", "data": data}
        return _NOTHING

    def _stop(self, event: Mapping[str, Any]) -> ModelChunk:
        block = self.open_thinking.pop(_field(event, "index", int, "$", ModelStreamError), None)
        if block is None:
            return _NOTHING
        self.thinking.append(block)
        return ModelChunk(provider_data=_provider_data(list(self.thinking)))


# --- the client -------------------------------------------------------------------------


@attrs.define(eq=False)
class AnthropicModel(HTTPModel):
    """A Claude model behind Anthropic's Messages API (``{base_url}/v1/messages``).

    ``base_url`` and ``api_key`` default to ``ANTHROPIC_BASE_URL`` (else the Anthropic
    API) and ``ANTHROPIC_API_KEY``; the key travels in ``x-api-key`` only, never in a
    repr, log or error. ``options.model`` in a request overrides ``model``. ``timeout``,
    ``max_retries``, ``retry_backoff`` and ``retry_after_cap`` are as for
    ``OpenAIChatModel`` (the shared layer's retries; 529 ``overloaded`` is retried).

    ``max_tokens`` (default ``DEFAULT_MAX_TOKENS`` = 4096) is sent when the request's
    options do not set one: the API requires it. ``thinking_budget`` turns extended
    thinking on with that many tokens (less than ``max_tokens``); thinking blocks are kept
    on the messages and sent back, signed, on the next requests; a tool loop whose first
    answer did not think (another provider's, through a fallback) is finished without
    thinking, as the API requires one thinking mode per turn. ``cache_prompt`` places
    prompt-caching breakpoints on the system prompt, the tools and the conversation's
    last block; ``Usage`` reports the cache reads (``cached_tokens``) and writes
    (``cache_creation_tokens``).

    The model owns the HTTP client it makes and closes it in ``aclose()`` (or at the end
    of ``async with``); a given ``http_client`` is left open for its owner.
    """

    provider_name: ClassVar[str] = PROVIDER
    api_name: ClassVar[str] = "Anthropic API"
    base_url_variable: ClassVar[str] = "ANTHROPIC_BASE_URL"
    api_key_variables: ClassVar[tuple[str, ...]] = ("ANTHROPIC_API_KEY",)
    key_header: ClassVar[str | None] = "x-api-key"
    default_base_url: ClassVar[str] = _DEFAULT_BASE_URL
    request_id_header: ClassVar[str] = "request-id"

    max_tokens: int = attrs.field(
        default=DEFAULT_MAX_TOKENS, kw_only=True, validator=valid.integer(minimum=1)
    )
    thinking_budget: int | None = attrs.field(
        default=None, kw_only=True, validator=valid.integer(minimum=1, optional=True)
    )
    cache_prompt: bool = attrs.field(default=False, kw_only=True, validator=FLAG)

    def _body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        return request_body(
            request,
            self.model,
            stream=stream,
            max_tokens=self.max_tokens,
            thinking_budget=self.thinking_budget,
            cache_prompt=self.cache_prompt,
        )

    def _url(self, request: ModelRequest, *, stream: bool) -> str:
        return f"{self.base_url}/v1/messages"

    def _headers(self) -> dict[str, str]:
        return {"anthropic-version": API_VERSION}

    def _parse(self, payload: Any) -> ModelResponse:
        return parse_message(payload)

    def _events(self, redact: Callable[[str], str]) -> EventParser:
        return _Events(redact)

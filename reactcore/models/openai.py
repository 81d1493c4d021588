"""``OpenAIChatModel``: a client for OpenAI-compatible chat-completions endpoints.

``call`` POSTs ``{base_url}/chat/completions`` and parses the whole answer; ``stream``
asks for server-sent events, ended by ``data: [DONE]``. This module is the wire mapping
only: retries, Retry-After, error mapping, key redaction, bounded parsing, SSE reading
and closing the connection are the shared layer's (``reactcore.models._http``).

The API key travels in the ``Authorization`` header only: it is left out of the repr
and never logged, nor in any error (see the shared layer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar
from urllib.parse import urlsplit

import attrs

from .. import _validate as valid
from .._exceptions import ModelError, ModelStreamError
from .._serde import (
    TOOL_MEDIA,
    ToolMedia,
    _wire_hook,
    assistant_from_wire,
    clean_text,
    converter,
    messages_to_wire,
    reasoning_text,
)
from ._client import FLAG, HTTPModel
from ._hosts import MaxTokensField, alnum9_id
from ._http import EventParser, decode, parse_json
from .base import (
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ToolCallDelta,
    ToolSpec,
    Usage,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_DONE = "[DONE]"
_OPTIONS = ("temperature", "top_p", "tool_choice", "response_format")
MAX_TOKENS_FIELDS: tuple[MaxTokensField, ...] = ("max_completion_tokens", "max_tokens")
_OPENAI_HOST = "api.openai.com"


# --- the wire format of answers (requests are built from plain dicts) -------------------


@attrs.frozen
class _WirePromptDetails:
    cached_tokens: int | None = None


@attrs.frozen
class _WireCompletionDetails:
    reasoning_tokens: int | None = None


@attrs.frozen
class _WireUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int | None = None
    prompt_tokens_details: _WirePromptDetails | None = None
    completion_tokens_details: _WireCompletionDetails | None = None


@attrs.frozen
class _WireChoice:
    message: Any
    finish_reason: str | None = None
    content_filter_results: Any = None


@attrs.frozen
class _WireCompletion:
    choices: list[_WireChoice]
    usage: _WireUsage | None = None
    prompt_filter_results: Any = None


@attrs.frozen
class _WireFunctionDelta:
    name: str | None = None
    arguments: str | None = None


@attrs.frozen
class _WireToolCallDelta:
    index: int | None = None
    id: str | None = None
    function: _WireFunctionDelta | None = None


@attrs.frozen
class _WireDelta:
    content: str | None = None
    tool_calls: list[_WireToolCallDelta] | None = None
    reasoning_content: Any = None
    reasoning: Any = None


@attrs.frozen
class _WireChunkChoice:
    index: int = 0
    delta: _WireDelta = _WireDelta()
    finish_reason: str | None = None
    content_filter_results: Any = None


@attrs.frozen
class _WireChunk:
    choices: list[_WireChunkChoice] = attrs.field(factory=list)
    usage: _WireUsage | None = None
    error: Any = None
    prompt_filter_results: Any = None


for _cls in (
    _WirePromptDetails,
    _WireCompletionDetails,
    _WireUsage,
    _WireChoice,
    _WireCompletion,
    _WireFunctionDelta,
    _WireToolCallDelta,
    _WireDelta,
    _WireChunkChoice,
    _WireChunk,
):
    # Objects only, and extra fields (id, created, logprobs, system_fingerprint …) tolerated.
    converter.register_structure_hook(_cls, _wire_hook(_cls))


# --- requests ---------------------------------------------------------------------------


def _tool_to_wire(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": converter.unstructure(dict(spec.parameters)),
        },
    }


def request_body(
    request: ModelRequest,
    model: str,
    *,
    stream: bool,
    tool_media: ToolMedia = "describe",
    send_reasoning: bool = False,
    max_tokens_field: MaxTokensField = "max_completion_tokens",
    tool_call_id: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """The JSON body of a chat-completions request for ``request``.

    The system message goes first; the results of an assistant's calls right after it
    (``_results_after_calls``); tools are the visible ones (the key is left out when
    there are none); options are sent only when set, ``max_tokens`` under
    ``max_tokens_field``; ``extra_body`` is merged in last. ``tool_media`` says how
    tools' images and files are sent (see ``messages_to_wire``); with
    ``send_reasoning``, assistant messages carry their ``reasoning_content``;
    ``tool_call_id``, when given, re-keys every tool-call id on the wire (a host accepting
    only its own format: Mistral's), calls and results alike.
    """
    options = request.options
    system = [request.system_message] if request.system_message is not None else []
    messages = _results_after_calls(
        messages_to_wire(
            [*system, *request.messages], tool_media=tool_media, reasoning=send_reasoning
        )
    )
    if tool_call_id is not None:
        messages = [_rekeyed(m, tool_call_id) for m in messages]
    body: dict[str, Any] = {"model": options.model or model, "messages": messages}
    tools = [_tool_to_wire(spec) for spec in request.visible_tool_specs()]
    if tools:
        body["tools"] = tools
        if options.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = options.parallel_tool_calls
    for name in _OPTIONS:
        value = getattr(options, name)
        if value is not None:
            body[name] = converter.unstructure(value)
    if options.max_tokens is not None:
        body[max_tokens_field] = options.max_tokens
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    body.update(converter.unstructure(dict(options.extra_body)))
    return body


def _rekeyed(message: dict[str, Any], new_id: Callable[[str], str]) -> dict[str, Any]:
    """``message`` with its tool-call ids (an assistant's calls, a tool's result) as
    ``new_id`` makes them."""
    calls = message.get("tool_calls")
    if calls:
        return {**message, "tool_calls": [{**c, "id": new_id(c["id"])} for c in calls]}
    if message.get("role") == "tool":
        return {**message, "tool_call_id": new_id(message["tool_call_id"])}
    return message


def _results_after_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with the ``tool`` messages answering an assistant's calls right after
    it: a message sent between the calls and their results (a user's steering, a hook's)
    goes after the results, as the API requires ("an assistant message with 'tool_calls'
    must be followed by tool messages responding to each 'tool_call_id'"). A message held
    so goes out at the next assistant message, or at the end, when results are missing."""
    out: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []
    pending: set[Any] = set()
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            out += held
            held = []
            pending = {c.get("id") for c in message.get("tool_calls") or ()}
            out.append(message)
        elif role == "tool":
            out.append(message)
            pending.discard(message.get("tool_call_id"))
            if not pending:
                out += held
                held = []
        else:
            (held if pending else out).append(message)
    return out + held


def max_tokens_field_for(base_url: str) -> MaxTokensField:
    """The field ``max_tokens`` goes in by default: ``max_completion_tokens`` for the OpenAI
    API itself (its o-series and GPT-5 models refuse the deprecated ``max_tokens``),
    ``max_tokens`` for any other server (vLLM, Ollama, llama.cpp, gateways, other hosts:
    the field every OpenAI-compatible server knows, where some refuse the newer one)."""
    return "max_completion_tokens" if urlsplit(base_url).hostname == _OPENAI_HOST else "max_tokens"


def _usage(wire: _WireUsage | None) -> Usage | None:
    if wire is None:
        return None
    total = wire.total_tokens
    if total is None:
        total = wire.prompt_tokens + wire.completion_tokens
    prompt, completion = wire.prompt_tokens_details, wire.completion_tokens_details
    return Usage(
        wire.prompt_tokens,
        wire.completion_tokens,
        total,
        cached_tokens=(prompt.cached_tokens or 0) if prompt else 0,
        reasoning_tokens=(completion.reasoning_tokens or 0) if completion else 0,
    )


# --- answers ----------------------------------------------------------------------------


def _without_null_ids(message: Any) -> Any:
    """``message`` with a tool call's null or missing ``id`` read as empty, as the official
    SDK reads it and as a streamed call without id is: the LLM node re-keys both
    (``call_<index>``)."""
    calls = message.get("tool_calls") if type(message) is dict else None
    if type(calls) is not list or all(
        type(c) is not dict or c.get("id") is not None for c in calls
    ):
        return message
    fixed = [{**c, "id": ""} if type(c) is dict and c.get("id") is None else c for c in calls]
    return {**message, "tool_calls": fixed}


FILTERS = "azure"
"""The key of Azure's content-filter results on a message (``provider_data["azure"]``)."""


def _filter_results(prompt: Any, completion: Any) -> dict[str, dict[str, Any]]:
    """Azure's content-filter results, as provider data: what it found in the prompt
    (``prompt_filter_results``) and in the answer (``content_filter_results``); nothing
    for a host that sends none. Kept, never sent back."""
    found = {"prompt_filter_results": prompt, "content_filter_results": completion}
    kept = {k: v for k, v in found.items() if v is not None}
    return {FILTERS: kept} if kept else {}


def parse_completion(payload: Any) -> ModelResponse:
    """A ``ModelResponse`` from a chat-completions JSON answer (its first choice)."""
    wire = decode(lambda p: converter.structure(p, _WireCompletion), payload, ModelError, "$")
    if not wire.choices:
        raise ModelError("malformed answer: no choices")
    choice = wire.choices[0]
    message = decode(
        assistant_from_wire, _without_null_ids(choice.message), ModelError, "$.choices[0].message"
    )
    filters = _filter_results(wire.prompt_filter_results, choice.content_filter_results)
    message = attrs.evolve(
        message,
        finish_reason=choice.finish_reason,
        provider_data={**message.provider_data, **filters},
    )
    return ModelResponse(
        message, _usage(wire.usage), raw=payload, finish_reason=choice.finish_reason
    )


def _tool_call_delta(wire: _WireToolCallDelta) -> ToolCallDelta:
    """A fragment as the server sent it, its index ``None`` when it had none (the
    ``ChunkAssembler`` then finds its call by id, or takes the last one)."""
    function = wire.function or _WireFunctionDelta()
    return ToolCallDelta(
        wire.index,
        None if wire.id is None else clean_text(wire.id),
        None if function.name is None else clean_text(function.name),
        clean_text(function.arguments or ""),
    )


_NO_CHUNK = ModelChunk()


def _text_chunk(payload: Any) -> ModelChunk | None:
    """The chunk of the most common event — one choice, a text delta, no tool calls, no
    usage — read without the converter (it is 2× faster); None for any other shape,
    which then goes the strict way."""
    if type(payload) is not dict or "error" in payload or payload.get("usage") is not None:
        return None
    choices = payload.get("choices")
    if type(choices) is not list or len(choices) != 1 or type(choices[0]) is not dict:
        return None
    choice = choices[0]
    delta, finish = choice.get("delta"), choice.get("finish_reason")
    if choice.get("index", 0) != 0 or type(delta) is not dict or delta.get("tool_calls"):
        return None
    if finish == "content_filter":  # its filter results are kept: the strict way
        return None
    if delta.get("reasoning_content") or delta.get("reasoning"):
        return None
    content = delta.get("content")
    if not (content is None or type(content) is str) or not (finish is None or type(finish) is str):
        return None
    return ModelChunk(text=clean_text(content) if content else "", finish_reason=finish)


def _as_is(text: str) -> str:
    return text


def parse_chunk(data: str, redact: Callable[[str], str] = _as_is) -> ModelChunk | None:
    """The ``ModelChunk`` of one SSE ``data`` payload; None when it carries nothing.

    An error event raises ``ModelStreamError`` with the server's error, passed through
    ``redact`` (before it is cut to length) and never chained to the payload.
    """
    payload = parse_json(data, ModelStreamError, "a stream event")
    quick = _text_chunk(payload)
    if quick is not None:
        return None if quick == _NO_CHUNK else quick
    wire = decode(lambda p: converter.structure(p, _WireChunk), payload, ModelStreamError, "$")
    if wire.error is not None:
        said = redact(repr(wire.error))
        raise ModelStreamError(f"the server sent an error in the stream: {said}"[:600])
    choice = next((c for c in wire.choices if c.index == 0), _WireChunkChoice())
    calls = choice.delta.tool_calls or []
    chunk = ModelChunk(
        text=clean_text(choice.delta.content or ""),
        reasoning=reasoning_text(choice.delta.reasoning_content, choice.delta.reasoning),
        tool_calls=[_tool_call_delta(d) for d in calls],
        usage=_usage(wire.usage),
        finish_reason=choice.finish_reason,
        provider_data=_filter_results(wire.prompt_filter_results, choice.content_filter_results),
    )
    return None if chunk == _NO_CHUNK else chunk


@attrs.define
class _Events:
    """The reading of a chat-completions stream: one chunk per event, up to ``[DONE]``."""

    redact: Callable[[str], str]
    done: bool = False

    def feed(self, data: str) -> ModelChunk | None:
        if data == _DONE:
            self.done = True
            return None
        return parse_chunk(data, self.redact)


# --- the client -------------------------------------------------------------------------

_MAX_TOKENS_FIELD = valid.satisfies(
    "'max_completion_tokens', 'max_tokens' or None",
    str,
    optional=True,
    limits=[(lambda v: v in MAX_TOKENS_FIELDS, "must be 'max_completion_tokens' or 'max_tokens'")],
)


@attrs.define(eq=False)
class OpenAIChatModel(HTTPModel):
    """A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``base_url`` and ``api_key`` default to ``OPENAI_BASE_URL`` (else the OpenAI API) and
    ``OPENAI_API_KEY``; ``options.model`` in a request overrides ``model``. ``timeout``
    (an ``httpx.Timeout``, or seconds; ``None`` for none) applies to every request, also
    through a given ``http_client``. ``max_retries``, ``retry_backoff`` (the first pause)
    and ``retry_after_cap`` shape the retries described in the module docstring.

    ``tool_media`` is how what tools return besides text (images, files) reaches the
    model, which takes only text in ``tool`` messages: ``"describe"`` (the default) in
    words in the tool message; ``"user_message"`` also whole in a user message after
    the tool messages, for vision models; ``"parts"`` as the tool message's own content
    parts, for providers that accept them (see ``messages_to_wire``).

    The model's reasoning (``reasoning_content`` or ``reasoning``) is kept on the
    ``AssistantMessage`` and streamed as its own chunks. ``send_reasoning=True`` sends it
    back, as ``reasoning_content`` on earlier assistant messages, for providers that
    require it (DeepSeek's thinking mode with tool calls, Kimi); by default it is not
    sent, as others reject it.

    ``ChatOptions.max_tokens`` goes as ``max_tokens_field``: ``"max_completion_tokens"``
    (the OpenAI API's field, required by its o-series and GPT-5 models) or
    ``"max_tokens"`` (the field OpenAI-compatible servers know). ``None`` (the default)
    chooses by ``base_url``: the first for ``api.openai.com``, the second elsewhere
    (``max_tokens_field_for``).

    ``host=`` puts the model on an OpenAI-compatible host (``HOSTS["groq"]`` …) or on Azure
    (``azure_model``): its URL, key variable and deviations — ``max_tokens_field``,
    ``send_reasoning`` (DeepSeek), tool-call ids re-keyed to 9 letters and digits on the
    wire (Mistral) — apply unless set here. Azure's content-filter results are kept on
    the message (``provider_data["azure"]``), never sent back.

    The model owns the HTTP client it makes and closes it in ``aclose()`` (or at the end
    of ``async with``); a given ``http_client`` is left open for its owner.
    """

    provider_name: ClassVar[str] = "openai"
    api_name: ClassVar[str] = "OpenAI API"
    base_url_variable: ClassVar[str] = "OPENAI_BASE_URL"
    api_key_variables: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL
    hostable: ClassVar[bool] = True

    send_reasoning: bool = attrs.field(default=False, kw_only=True, validator=FLAG)
    tool_media: ToolMedia = attrs.field(
        default="describe", kw_only=True, validator=valid.one_of(*TOOL_MEDIA)
    )
    max_tokens_field: MaxTokensField | None = attrs.field(
        default=None, kw_only=True, validator=_MAX_TOKENS_FIELD
    )

    def _body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        host = self.host
        return request_body(
            request,
            self.model,
            stream=stream,
            tool_media=self.tool_media,
            send_reasoning=self.send_reasoning or (host is not None and host.send_reasoning),
            max_tokens_field=self.max_tokens_field
            or (host.max_tokens_field if host else max_tokens_field_for(self.base_url)),
            tool_call_id=alnum9_id if host is not None and host.tool_call_ids == "alnum9" else None,
        )

    def _url(self, request: ModelRequest, *, stream: bool) -> str:
        if self.host is None:
            return f"{self.base_url}/chat/completions"
        model = request.options.model or self.model
        return self.host.url(self.base_url, "/chat/completions", model, per_deployment=True)

    def _parse(self, payload: Any) -> ModelResponse:
        return parse_completion(payload)

    def _events(self, redact: Callable[[str], str]) -> EventParser:
        return _Events(redact)

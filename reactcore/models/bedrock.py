"""``BedrockModel``: a client for Amazon Bedrock's Converse API
(``POST /model/{modelId}/converse`` and ``/converse-stream``).

This module is the wire mapping only; retries (``ThrottlingException`` and
``ModelNotReadyException`` are 429, ``ServiceUnavailableException`` 503,
``InternalServerException`` 500, ``ModelTimeoutException`` 408: all retried with the
layer's backoff), error mapping, secret redaction and bounded parsing are the shared
layer's (``reactcore.models._http``), credentials and SigV4 signing botocore's
(``reactcore.models._aws``), the event-stream framing of ``ConverseStream``
``reactcore.models._eventstream``'s.

Requests: the system prompt (and any ``SystemMessage``) as ``system`` text blocks; tools
as ``toolConfig.tools[].toolSpec`` with ``inputSchema.json``; ``tool_choice``
``"auto"``/``"required"``/a named function as ``toolChoice`` (``"none"`` sends no
``toolChoice``: Bedrock has none, and refuses ``toolUse`` blocks without a ``toolConfig``);
a step with no visible tools whose conversation called some sends those tools, by name
with a minimal schema, marked not offered (``_used_tools``);
an assistant message's calls as ``toolUse`` blocks, the responses of a batch as
``toolResult`` blocks (``status: "error"`` for errors) of one user turn, first in it;
images (png, jpeg, gif, webp; inline or ``s3://``) and documents (pdf, csv, doc, docx,
xls, xlsx, html, txt, md) as ``image`` / ``document`` blocks with ``source.bytes`` in
base64. ``max_tokens``/``temperature``/``top_p`` go in ``inferenceConfig``;
``thinking_budget`` turns Claude's extended thinking on through
``additionalModelRequestFields``; ``cache_prompt`` puts ``cachePoint`` blocks after the
system prompt, the tools and the conversation's last block. ``extra_body`` is merged in
last.

Answers: text, ``toolUse`` and ``reasoningContent`` blocks, whole or streamed
(``messageStart``, ``contentBlockStart/Delta/Stop``, ``messageStop``, ``metadata``).
Reasoning (``reasoningText`` with its ``signature``, or ``redactedContent``) is kept in
the message's ``provider_data["bedrock"]["reasoning"]`` with its position among the
blocks, its text as the message's ``reasoning``, and sent back unchanged on later
requests of the tool loop (Bedrock refuses signed reasoning that is not); an unsigned
block is kept but never sent back. Stop reasons: ``end_turn``/``stop_sequence`` →
``"stop"``, ``max_tokens``/``model_context_window_exceeded`` → ``"length"``,
``tool_use`` → ``"tool_calls"``, ``guardrail_intervened``/``content_filtered`` →
``"content_filter"``. Usage counts cache reads and writes (``cacheReadInputTokens``,
``cacheWriteInputTokens``).
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, ClassVar
from urllib.parse import quote

import attrs

from .. import _validate as valid
from .._messages import (
    AssistantMessage,
    AudioPart,
    ContentPart,
    FilePart,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    ToolResponse,
    ToolResponseMessage,
)
from .._messages import split_data_url as _data_url
from .._serde import converter
from ._aws import AWSAuth
from ._bedrock_answers import PROVIDER as PROVIDER
from ._bedrock_answers import Events, parse_converse
from ._client import FLAG, URL, HTTPModel
from ._eventstream import EventStreamReader
from ._http import EventParser, Reader, Signer, StreamReader
from ._wire import block_turns, call_arguments, turn_in_progress
from .base import ModelChunk, ModelRequest, ModelResponse, ToolSpec

ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL")
"""botocore's endpoint overrides for the Bedrock runtime, the first set wins."""
_CACHE_POINT = {"cachePoint": {"type": "default"}}
_IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
_DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9\s\-()\[\]]+")


# --- requests ---------------------------------------------------------------------------


def _document_name(filename: str | None) -> str:
    """A document name Bedrock takes: letters, digits, single spaces, ``-()[]``."""
    name = " ".join(_NAME_UNSAFE.sub("-", filename or "").split())
    return name or "document"


def part_block(part: ContentPart) -> dict[str, Any]:
    """One content part as a Converse content block: text; an inline or ``s3://`` image;
    an inline document of a format Bedrock reads; anything else described in text."""
    match part:
        case TextPart(text=text):
            return {"text": text}
        case ImagePart(url=url):
            inline = _data_url(url)
            if inline is not None and inline[0] in _IMAGE_FORMATS:
                source: dict[str, Any] = {"bytes": inline[1]}
                return {"image": {"format": _IMAGE_FORMATS[inline[0]], "source": source}}
            if url.startswith("s3://"):
                ext = url.rsplit(".", 1)[-1].lower().replace("jpg", "jpeg")
                if ext in _IMAGE_FORMATS.values():
                    return {"image": {"format": ext, "source": {"s3Location": {"uri": url}}}}
            return {"text": part.describe()}
        case FilePart(file_data=data, filename=filename):
            inline = _data_url(data) if data is not None else None
            if inline is None or inline[0] not in _DOCUMENT_FORMATS:
                return {"text": part.describe()}
            document = {
                "format": _DOCUMENT_FORMATS[inline[0]],
                "name": _document_name(filename),
                "source": {"bytes": inline[1]},
            }
            return {"document": document}
        case AudioPart():
            return {"text": part.describe()}
    raise TypeError(f"not a content part: {part!r}")


def _blocks(text: str, parts: Iterable[ContentPart]) -> list[dict[str, Any]]:
    """``text`` then ``parts`` as content blocks, empty text left out (Bedrock refuses it)."""
    blocks = [{"text": text}] if text else []
    blocks += [part_block(p) for p in parts]
    return [b for b in blocks if "text" not in b or b["text"]]


def _replayable(block: Any) -> bool:
    """A reasoning block Bedrock takes back: signed text, or redacted content."""
    if not isinstance(block, dict):
        return False
    if "redacted" in block:
        return isinstance(block["redacted"], str) and bool(block["redacted"])
    return (
        isinstance(block.get("text"), str)
        and isinstance(block.get("signature"), str)
        and bool(block["signature"])
    )


def _reasoning_block(block: Mapping[str, Any]) -> dict[str, Any]:
    if "redacted" in block:
        return {"reasoningContent": {"redactedContent": block["redacted"]}}
    text = {"text": block["text"], "signature": block["signature"]}
    return {"reasoningContent": {"reasoningText": text}}


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    """Text, then ``toolUse`` blocks, with the reasoning blocks back where they were."""
    blocks: list[dict[str, Any]] = [{"text": message.text}] if message.text else []
    blocks += [
        {"toolUse": {"toolUseId": c.id, "name": c.name, "input": call_arguments(c.arguments)}}
        for c in message.tool_calls
    ]
    data = message.provider_data.get(PROVIDER)
    found = data.get("reasoning") if isinstance(data, Mapping) else None
    kept = [b for b in found if _replayable(b)] if isinstance(found, list) else []
    for block in sorted(kept, key=lambda b: int(b.get("index", 0))):
        at = block.get("index", 0)
        at = at if isinstance(at, int) and 0 <= at <= len(blocks) else len(blocks)
        blocks.insert(at, _reasoning_block(block))
    return blocks


def _tool_result(response: ToolResponse) -> dict[str, Any]:
    content = _blocks(response.response_data, response.parts) or [{"text": ""}]
    result: dict[str, Any] = {"toolUseId": response.id, "content": content}
    result["status"] = "error" if response.is_error else "success"
    return {"toolResult": result}


def _is_result(block: Mapping[str, Any]) -> bool:
    return "toolResult" in block


def turns(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The conversation (without system messages) as Converse ``messages``: consecutive
    turns of one role joined, a user turn's ``toolResult`` blocks first
    (``block_turns``)."""
    return block_turns(messages, _blocks, _assistant_blocks, _tool_result, _is_result)


def _one_thinking_mode_per_turn(body: dict[str, Any]) -> None:
    """Claude's rule on Bedrock as on Anthropic's API: with thinking on, the assistant turn
    in progress (a tool loop) must start with a reasoning block. When its first answer has
    none (it came from another provider through a fallback, or with thinking off), this
    request goes without thinking and without the turn's reasoning blocks; a new turn
    (after a user message) thinks again."""
    fields = body.get("additionalModelRequestFields")
    if not isinstance(fields, dict) or "thinking" not in fields:
        return
    turn = turn_in_progress(body["messages"], _is_result)
    if not turn or "reasoningContent" in turn[0]["content"][0]:
        return
    del fields["thinking"]
    if not fields:
        del body["additionalModelRequestFields"]
    for message in turn:
        message["content"] = [b for b in message["content"] if "reasoningContent" not in b]


def _tool_spec(spec: ToolSpec) -> dict[str, Any]:
    schema = {"json": converter.unstructure(dict(spec.parameters))}
    described = {"description": spec.description} if spec.description else {}
    return {"toolSpec": {"name": spec.name, **described, "inputSchema": schema}}


_UNOFFERED = "Not offered at this step: do not call it."
_ANY_INPUT = {"json": {"type": "object", "properties": {}}}


def _used_tools(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Specs of the tools the conversation called (by name, once each, in order), with a
    minimal schema and a description that says they are not offered: Bedrock refuses
    ``toolUse``/``toolResult`` blocks in a request without a ``toolConfig`` ("The
    toolConfig field must be defined when using toolUse and toolResult content blocks."),
    which a step with no visible tools (tool selection, a final answer) would send.
    The real names, not a placeholder, so a model that checks the history's tool names
    against the config finds them; no real schema, so nothing invites a hidden tool."""
    names: dict[str, None] = {}
    for message in messages:
        if isinstance(message, AssistantMessage):
            names.update((c.name, None) for c in message.tool_calls)
        elif isinstance(message, ToolResponseMessage):
            names.update((r.name, None) for r in message.responses)
    return [
        {"toolSpec": {"name": n, "description": _UNOFFERED, "inputSchema": _ANY_INPUT}}
        for n in names
    ]


def _tool_choice(choice: str | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """OpenAI-style ``tool_choice`` as Converse's ``toolChoice`` (None: not sent)."""
    if choice is None or choice == "none":
        return None
    if isinstance(choice, str):
        named = {"auto": "auto", "required": "any", "any": "any"}
        if choice not in named:
            raise ValueError(f"tool_choice must be auto, required or none, got {choice!r}")
        return {named[choice]: {}}
    if choice.get("type") == "function":
        return {"tool": {"name": choice["function"]["name"]}}
    return dict(choice)


def request_body(
    request: ModelRequest,
    *,
    max_tokens: int | None = None,
    thinking_budget: int | None = None,
    cache_prompt: bool = False,
) -> dict[str, Any]:
    """The JSON body of a Converse request for ``request`` (see the module docstring)."""
    options = request.options
    systems = [request.system_message] if request.system_message is not None else []
    systems += [m for m in request.messages if isinstance(m, SystemMessage)]
    messages = turns(request.messages)
    body: dict[str, Any] = {"messages": messages}
    system = "\n\n".join(m.text for m in systems if m.text)
    if system:
        body["system"] = [{"text": system}, *([_CACHE_POINT] if cache_prompt else [])]
    tools: list[dict[str, Any]] = [_tool_spec(s) for s in request.visible_tool_specs()]
    if tools:
        if cache_prompt:
            tools.append(_CACHE_POINT)
        body["toolConfig"] = {"tools": tools}
        choice = _tool_choice(options.tool_choice)
        if choice is not None:
            body["toolConfig"]["toolChoice"] = choice
    elif used := _used_tools(request.messages):
        body["toolConfig"] = {"tools": used}
    inference: dict[str, Any] = {}
    if options.max_tokens or max_tokens:
        inference["maxTokens"] = options.max_tokens or max_tokens
    if options.temperature is not None:
        inference["temperature"] = options.temperature
    if options.top_p is not None:
        inference["topP"] = options.top_p
    if inference:
        body["inferenceConfig"] = inference
    if thinking_budget is not None:
        thinking = {"type": "enabled", "budget_tokens": thinking_budget}
        body["additionalModelRequestFields"] = {"thinking": thinking}
        _one_thinking_mode_per_turn(body)
    if cache_prompt and messages:
        messages[-1]["content"].append(_CACHE_POINT)
    body.update(converter.unstructure(dict(options.extra_body)))
    return body


def event_stream_reader(
    response: Any, parser: EventParser, redact: Callable[[str], str]
) -> StreamReader:
    """The shared layer's reader of a ``ConverseStream`` answer (AWS event stream)."""
    return EventStreamReader(response, parser, redact)


# --- the client -------------------------------------------------------------------------


def _endpoint_url(value: str | None) -> str:
    """``endpoint_url``: as given, else botocore's overrides (``ENDPOINT_VARIABLES``),
    else ``""`` (the region's public endpoint)."""
    if not isinstance(value, str | None):
        return valid.leave(value)
    found = value or next((os.environ[v] for v in ENDPOINT_VARIABLES if os.environ.get(v)), "")
    return found.rstrip("/")


_OPTIONAL_TEXT = valid.text(optional=True)


@attrs.define(eq=False)
class BedrockModel(HTTPModel):
    """A model (or inference profile) on Amazon Bedrock, through the Converse API.

    ``model`` is the model id, inference profile id or ARN (``"anthropic.claude-…"``,
    ``"us.anthropic.claude-…"``). ``region`` defaults to ``AWS_REGION``, else botocore's
    (``AWS_DEFAULT_REGION``, the profile's); ``base_url`` (the endpoint override) to
    ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, then ``AWS_ENDPOINT_URL``, else
    ``https://bedrock-runtime.{region}.amazonaws.com``.

    Credentials: requests are signed with SigV4 (``reactcore.models._aws``) with
    ``aws_credentials`` (a botocore credentials object, e.g.
    ``boto3.Session(profile_name=…).get_credentials()``, refreshed by botocore) or
    ``aws_access_key_id``/``aws_secret_access_key``/``aws_session_token`` when given, else
    ``profile`` (or ``AWS_PROFILE``) and botocore's standard chain, resolved and refreshed
    in a worker thread; or, with ``api_key`` (default ``AWS_BEARER_TOKEN_BEDROCK``, a
    Bedrock API key), sent as ``Authorization: Bearer`` unsigned. Secret key, session
    token and API key are blanked out of errors and never in a repr.

    ``max_tokens`` is sent when set (or in the request's options); ``thinking_budget``
    turns Claude's extended thinking on (the reasoning is sent back signed on the
    following requests); ``cache_prompt`` places ``cachePoint`` blocks (see the module
    docstring). ``timeout`` and the retry knobs are the shared layer's.
    """

    provider_name: ClassVar[str] = PROVIDER
    telemetry_name: ClassVar[str | None] = "aws.bedrock"
    api_name: ClassVar[str] = "Amazon Bedrock"
    base_url_variable: ClassVar[str] = ENDPOINT_VARIABLES[0]
    api_key_variables: ClassVar[tuple[str, ...]] = ("AWS_BEARER_TOKEN_BEDROCK",)
    default_base_url: ClassVar[str] = ""
    request_id_header: ClassVar[str] = "x-amzn-requestid"
    stream_media_type: ClassVar[str] = "application/vnd.amazon.eventstream"

    base_url: str = attrs.field(default=None, converter=_endpoint_url, kw_only=True, validator=URL)
    region: str | None = attrs.field(default=None, kw_only=True, validator=_OPTIONAL_TEXT)
    profile: str | None = attrs.field(default=None, kw_only=True, validator=_OPTIONAL_TEXT)
    aws_access_key_id: str | None = attrs.field(
        default=None, kw_only=True, repr=False, validator=_OPTIONAL_TEXT
    )
    aws_secret_access_key: str | None = attrs.field(
        default=None, kw_only=True, repr=False, validator=_OPTIONAL_TEXT
    )
    aws_session_token: str | None = attrs.field(
        default=None, kw_only=True, repr=False, validator=_OPTIONAL_TEXT
    )
    aws_credentials: Any = attrs.field(
        default=None,
        kw_only=True,
        repr=False,
        validator=valid.has_methods(
            "get_frozen_credentials", what="botocore credentials", optional=True
        ),
    )
    max_tokens: int | None = attrs.field(
        default=None, kw_only=True, validator=valid.integer(minimum=1, optional=True)
    )
    thinking_budget: int | None = attrs.field(
        default=None, kw_only=True, validator=valid.integer(minimum=1, optional=True)
    )
    cache_prompt: bool = attrs.field(default=False, kw_only=True, validator=FLAG)
    _auth: AWSAuth = attrs.field(init=False, repr=False)

    @_auth.default
    def _make_auth(self) -> AWSAuth:
        return AWSAuth(
            self.region,
            self.profile,
            self.aws_access_key_id,
            self.aws_secret_access_key,
            self.aws_session_token,
            self.aws_credentials,
        )

    async def call(self, request: ModelRequest) -> ModelResponse:
        """The model's whole answer to ``request`` (``converse``)."""
        await self._find_region()
        return await super().call(request)

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelChunk]]:
        """The model's answer as chunks (``converse-stream``)."""
        await self._find_region()
        async with super().stream(request) as chunks:
            yield chunks

    async def _find_region(self) -> None:
        """The region, when the URL needs it (no endpoint override): resolved in a worker
        thread the first time if neither given nor in ``AWS_REGION``."""
        if not self.base_url:
            await self._auth.resolve_region()

    def _check_credentials(self) -> None:
        """Nothing to check here: the credential chain is resolved when signing."""

    def _reader(self) -> Reader:
        return event_stream_reader

    def _signer(self) -> Signer | None:
        return None if self.api_key else self._auth.sign

    def _body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        return request_body(
            request,
            max_tokens=self.max_tokens,
            thinking_budget=self.thinking_budget,
            cache_prompt=self.cache_prompt,
        )

    def _url(self, request: ModelRequest, *, stream: bool) -> str:
        base = self.base_url or f"https://bedrock-runtime.{self._auth.known_region}.amazonaws.com"
        model = quote(request.options.model or self.model, safe="")
        return f"{base}/model/{model}/{'converse-stream' if stream else 'converse'}"

    def _parse(self, payload: Any) -> ModelResponse:
        return parse_converse(payload)

    def _events(self, redact: Callable[[str], str]) -> EventParser:
        return Events(redact)

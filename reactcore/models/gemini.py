"""``GeminiModel``: a client for the Gemini API (``POST {base_url}/v1beta/models/{model}:
generateContent``, and ``:streamGenerateContent?alt=sse`` for streams).

This module is the wire mapping of requests and the client; answers are read in
``_gemini_answers``, the parts of a model turn (thought signatures) kept and rebuilt in
``_gemini_parts``, tool schemas converted in ``_gemini_schema``. Retries (429
``RESOURCE_EXHAUSTED`` honouring the body's ``RetryInfo.retryDelay``, 5xx), error mapping,
key redaction, bounded parsing, SSE reading and closing the connection are the shared
layer's (``reactcore.models._http``).

Requests: the system prompt (and any ``SystemMessage`` in the conversation) becomes
``systemInstruction``; the conversation becomes ``contents`` with roles ``user`` and
``model``, consecutive turns of one role joined. An assistant message is a ``model`` turn
rebuilt from its text, its calls (``functionCall`` parts) and its layout: thought parts
and ``thoughtSignature``s go back exactly on the parts they came on. The responses of
one batch are ``functionResponse`` parts of one ``user`` turn (``{"output": text}``, or
``{"error": text}`` for an error), each with its call's ``id`` when the call went with
one (a call the model gave no id goes without the id reactcore made up, and pairs with
its response by order and name); images and files a tool returned follow them in that turn
as ``inlineData``. User messages' images, audio and files go as ``inlineData`` (base64
with their media type: images, audio, video, text and PDF; other files are described in
text); an image URL whose type its extension tells goes as ``fileData``.

Tools go as ``tools: [{"functionDeclarations": [...]}]`` with their parameters converted
to the API's schema subset (``_gemini_schema``; what is dropped is logged at debug level
as ``gemini_schema_keys_dropped``); a tool without parameters has none. ``tool_choice``
becomes ``toolConfig.functionCallingConfig``: ``"auto"`` → ``AUTO``, ``"required"`` →
``ANY``, ``"none"`` → ``NONE``, a named function → ``ANY`` with ``allowedFunctionNames``
(``parallel_tool_calls`` has no Gemini counterpart and is not sent). A ``json_schema``
``response_format`` becomes ``responseMimeType: application/json`` with the converted
``responseSchema`` (``json_object``: the MIME type alone) when the request shows no
tools: Gemini 2.x models refuse JSON mode beside function calling, and the agent writes
the schema in the prompt anyway. ``temperature``, ``top_p`` and ``max_tokens`` become
``generationConfig``'s ``temperature``, ``topP`` and ``maxOutputTokens``; the model's
``stop_sequences`` and thinking settings (``thinkingConfig``) go there too.
``extra_body`` is merged in last, one level deep (``{"generationConfig": {"seed": 1}}``
adds to the generation config, ``safetySettings`` are added as given).

The API key travels in the ``x-goog-api-key`` header only, never in the URL.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar
from urllib.parse import quote

import attrs

from .. import _validate as valid
from .._logging import get_logger
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
    UserMessage,
    split_data_url,
)
from .._serde import converter
from ._client import FLAG, HTTPModel
from ._gemini_answers import GeminiEvents, parse_response
from ._gemini_parts import PROVIDER, model_parts
from ._gemini_schema import gemini_schema
from ._http import EventParser, loads
from ._wire import join_turn
from .base import ModelRequest, ModelResponse, ToolSpec

API_VERSION = "v1beta"
_DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
_INLINE_TYPES = ("image/", "audio/", "video/", "text/", "application/pdf")
_MODES = {"auto": "AUTO", "required": "ANY", "any": "ANY", "none": "NONE"}
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"

_log = get_logger()


# --- requests ---------------------------------------------------------------------------


def _text(text: str) -> list[dict[str, Any]]:
    return [{"text": text}] if text else []


def _inline(media_type: str, data: str) -> dict[str, Any]:
    return {"inlineData": {"mimeType": media_type, "data": data}}


def part_of(part: ContentPart) -> dict[str, Any] | None:
    """One content part as a Gemini part: text; inline data (images, audio, video, text
    and PDF files); an image URL as ``fileData`` when its type shows in its extension;
    anything else described in text. None for empty text."""
    match part:
        case TextPart(text=text):
            return {"text": text} if text else None
        case ImagePart(url=url):
            inline = split_data_url(url)
            if inline is not None:
                return _inline(*inline)
            guessed, _ = mimetypes.guess_type(url)
            if guessed is not None and guessed.startswith("image/"):
                return {"fileData": {"mimeType": guessed, "fileUri": url}}
            return {"text": part.describe()}
        case AudioPart(data_base64=data, format=kind):
            return _inline(f"audio/{kind}", data)
        case FilePart(file_data=file_data):
            inline = split_data_url(file_data) if file_data is not None else None
            if inline is not None and inline[0].startswith(_INLINE_TYPES):
                return _inline(*inline)
            return {"text": part.describe()}
    raise TypeError(f"not a content part: {part!r}")


def _parts(text: str, parts: Iterable[ContentPart]) -> list[dict[str, Any]]:
    """``text`` then ``parts`` as Gemini parts; empty text left out (the API refuses it)."""
    out = _text(text)
    out += [p for p in map(part_of, parts) if p is not None]
    return out


def _function_response(response: ToolResponse, ids: set[str]) -> dict[str, Any]:
    key = "error" if response.is_error else "output"
    function: dict[str, Any] = {"name": response.name, "response": {key: response.response_data}}
    if response.id in ids:
        function = {"id": response.id, **function}
    return {"functionResponse": function}


def contents(messages: Iterable[Message], *, call_ids: bool = True) -> list[dict[str, Any]]:
    """The conversation (without system messages) as ``contents``: consecutive turns of
    one role joined, turns without parts left out. ``call_ids=False``: no ``id`` on any
    ``functionCall`` or ``functionResponse`` (Vertex AI refuses the field; calls and
    responses then pair by order and name)."""
    out: list[dict[str, Any]] = []
    ids: set[str] = set()  # the call ids sent so far: their responses carry them
    for message in messages:
        match message:
            case UserMessage(text=text, parts=parts):
                role, turn = "user", _parts(text, parts)
            case AssistantMessage():
                turn, sent = model_parts(message, call_ids=call_ids)
                role = "model"
                ids |= sent
            case ToolResponseMessage(responses=responses):
                role = "user"
                turn = [_function_response(r, ids) for r in responses]
                turn += [p for r in responses for p in _parts("", r.parts)]
            case _:
                continue
        join_turn(out, role, "parts", turn)
    return out


def _schema(schema: Mapping[str, Any], what: str) -> dict[str, Any]:
    converted, dropped = gemini_schema(converter.unstructure(dict(schema)))
    if dropped:
        _log.debug("gemini_schema_keys_dropped", schema=what, dropped=dropped)
    return converted


def _declaration(spec: ToolSpec) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": spec.name, "description": spec.description}
    parameters = _schema(spec.parameters, f"tool {spec.name}")
    if parameters.get("properties"):  # the API refuses an OBJECT without properties
        declaration["parameters"] = parameters
    return declaration


def _tool_config(choice: str | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """OpenAI-style ``tool_choice`` as ``toolConfig`` (a mapping with
    ``functionCallingConfig`` is taken as Gemini's own)."""
    if choice is None:
        return None
    if isinstance(choice, str):
        if choice not in _MODES:
            raise ValueError(f"tool_choice must be auto, required or none, got {choice!r}")
        return {"functionCallingConfig": {"mode": _MODES[choice]}}
    if choice.get("type") == "function":
        name = choice["function"]["name"]
        return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [name]}}
    if "functionCallingConfig" in choice:
        config: dict[str, Any] = converter.unstructure(dict(choice))
        return config
    raise ValueError(
        "tool_choice must be auto, required, none, a named function or a Gemini "
        f"toolConfig, got {dict(choice)!r:.80}"
    )


def _output(response_format: Mapping[str, Any] | None) -> dict[str, Any]:
    """A ``response_format`` as the generation config's JSON mode (see the module)."""
    kind = response_format.get("type") if response_format is not None else None
    if kind == "json_object":
        return {"responseMimeType": "application/json"}
    if kind != "json_schema" or response_format is None:
        return {}
    spec = response_format.get("json_schema") or {}
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    out: dict[str, Any] = {"responseMimeType": "application/json"}
    if isinstance(schema, Mapping):
        out["responseSchema"] = _schema(schema, "response_format")
    return out


def _merge(body: dict[str, Any], extra: Mapping[str, Any]) -> None:
    """``extra`` merged into ``body``, one level deep for objects on both sides."""
    for key, value in converter.unstructure(dict(extra)).items():
        if isinstance(value, dict) and isinstance(body.get(key), dict):
            body[key] = {**body[key], **value}
        else:
            body[key] = value


def request_body(
    request: ModelRequest,
    *,
    stop_sequences: tuple[str, ...] = (),
    thinking: Mapping[str, Any] | None = None,
    call_ids: bool = True,
) -> dict[str, Any]:
    """The JSON body of a ``generateContent`` request for ``request`` (see the module);
    ``thinking`` is the ``thinkingConfig``; ``call_ids=False`` sends no call ids
    (``contents``)."""
    options = request.options
    systems = [request.system_message] if request.system_message is not None else []
    systems += [m for m in request.messages if isinstance(m, SystemMessage)]
    body: dict[str, Any] = {"contents": contents(request.messages, call_ids=call_ids)}
    system = "\n\n".join(m.text for m in systems if m.text)
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    declarations = [_declaration(spec) for spec in request.visible_tool_specs()]
    if declarations:
        body["tools"] = [{"functionDeclarations": declarations}]
        config = _tool_config(options.tool_choice)
        if config is not None:
            body["toolConfig"] = config
    generation: dict[str, Any] = {}
    for name, key in (("temperature", "temperature"), ("top_p", "topP")):
        if getattr(options, name) is not None:
            generation[key] = getattr(options, name)
    if options.max_tokens is not None:
        generation["maxOutputTokens"] = options.max_tokens
    if stop_sequences:
        generation["stopSequences"] = list(stop_sequences)
    if thinking:
        generation["thinkingConfig"] = dict(thinking)
    if not declarations:
        generation.update(_output(options.response_format))
    if generation:
        body["generationConfig"] = generation
    _merge(body, options.extra_body)
    return body


def _delay(value: Any) -> float | None:
    """A protobuf ``Duration`` in JSON (``"13s"``, ``"0.250s"``) in seconds, else None."""
    if not isinstance(value, str) or not value.endswith("s"):
        return None
    try:
        seconds = float(value[:-1])
    except ValueError:
        return None
    return seconds if 0 <= seconds < float("inf") else None


def retry_delay(body: str) -> float | None:
    """The ``retryDelay`` of a ``google.rpc.RetryInfo`` in an error body's
    ``error.details``, in seconds; None when there is none."""
    try:
        payload = loads(body)
    except ValueError:  # not JSON, or past a parsing limit
        return None
    error = payload.get("error") if isinstance(payload, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, dict) and detail.get("@type") == _RETRY_INFO:
            return _delay(detail.get("retryDelay"))
    return None


# --- the client -------------------------------------------------------------------------

_THINKING_LEVELS = ("minimal", "low", "medium", "high")


def _stop_sequences(value: Any) -> tuple[str, ...]:
    return tuple(value) if valid.ITERABLE.accepts(value) else valid.leave(value)


@attrs.define(eq=False)
class GeminiModel(HTTPModel):
    """A Gemini model behind the Gemini API (``{base_url}/v1beta/models/{model}``).

    ``base_url`` defaults to ``GOOGLE_GEMINI_BASE_URL`` (the variable the official
    ``google-genai`` SDK reads), else the Gemini API; ``api_key`` to ``GOOGLE_API_KEY``,
    else ``GEMINI_API_KEY`` (the SDK's order). The key travels in ``x-goog-api-key``
    only, never in the URL, a repr, a log or an error. ``options.model`` in a request
    overrides ``model`` (``"gemini-2.5-flash"``; a name with a ``/``, such as
    ``"tunedModels/x"``, is taken as the resource path). ``timeout``, ``max_retries``,
    ``retry_backoff`` and ``retry_after_cap`` are the shared layer's; a 429's
    ``RetryInfo.retryDelay`` is honoured as ``Retry-After`` is.

    Thinking (``generationConfig.thinkingConfig``): ``thinking_budget`` (tokens; 0 turns
    thinking off where the model allows, -1 lets it decide), ``thinking_level``
    (``"minimal"``, ``"low"``, ``"medium"``, ``"high"``: Gemini 3's) and
    ``include_thoughts`` (the model's thought summaries come back as ``reasoning``);
    unset, the model's defaults. Thought signatures are kept on the messages and sent
    back, part for part, on the next requests (``_gemini_parts``). ``stop_sequences``
    go in every request's generation config. ``api_version`` is the path's version
    (``"v1beta"``, where every feature above is; the SDK's default is ``"v1"``).

    The model owns the HTTP client it makes and closes it in ``aclose()`` (or at the end
    of ``async with``); a given ``http_client`` is left open for its owner.
    """

    provider_name: ClassVar[str] = PROVIDER
    telemetry_name: ClassVar[str | None] = "gcp.gemini"
    api_name: ClassVar[str] = "Gemini API"
    base_url_variable: ClassVar[str] = "GOOGLE_GEMINI_BASE_URL"
    api_key_variables: ClassVar[tuple[str, ...]] = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
    key_header: ClassVar[str | None] = "x-goog-api-key"
    default_base_url: ClassVar[str] = _DEFAULT_BASE_URL

    thinking_budget: int | None = attrs.field(
        default=None, kw_only=True, validator=valid.integer(minimum=-1, optional=True)
    )
    thinking_level: str | None = attrs.field(
        default=None,
        kw_only=True,
        validator=valid.satisfies(
            "a str",
            str,
            limits=[(_THINKING_LEVELS.__contains__, f"must be one of {_THINKING_LEVELS}")],
            optional=True,
        ),
    )
    include_thoughts: bool = attrs.field(default=False, kw_only=True, validator=FLAG)
    stop_sequences: tuple[str, ...] = attrs.field(
        default=(),
        converter=_stop_sequences,
        kw_only=True,
        validator=valid.each(valid.text(non_empty=True)),
    )
    api_version: str = attrs.field(
        default=API_VERSION, kw_only=True, validator=valid.text(non_empty=True)
    )

    def _thinking(self) -> dict[str, Any]:
        config: dict[str, Any] = {}
        if self.thinking_budget is not None:
            config["thinkingBudget"] = self.thinking_budget
        if self.thinking_level is not None:
            config["thinkingLevel"] = self.thinking_level.upper()
        if self.include_thoughts:
            config["includeThoughts"] = True
        return config

    call_ids: ClassVar[bool] = True
    """Whether calls and their responses carry their ids (Vertex AI refuses them)."""

    def _body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        return request_body(
            request,
            stop_sequences=self.stop_sequences,
            thinking=self._thinking(),
            call_ids=self.call_ids,
        )

    def _url(self, request: ModelRequest, *, stream: bool) -> str:
        model = request.options.model or self.model
        resource = quote(model if "/" in model else f"models/{model}", safe="/")
        if stream:
            return f"{self.base_url}/{self.api_version}/{resource}:streamGenerateContent?alt=sse"
        return f"{self.base_url}/{self.api_version}/{resource}:generateContent"

    def _parse(self, payload: Any) -> ModelResponse:
        return parse_response(payload)

    def _events(self, redact: Callable[[str], str]) -> EventParser:
        return GeminiEvents(redact)

    def _retry_hint(self, body: str) -> float | None:
        return retry_delay(body)

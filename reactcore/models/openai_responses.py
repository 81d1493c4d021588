"""``OpenAIResponsesModel``: a client for OpenAI's Responses API (``POST {base_url}/responses``).

This module is the wire mapping of requests and the client; the answers (whole, and the
stream's events) are read in ``_responses_answers``. Retries (429 with ``retry-after``,
5xx), error mapping, key redaction, bounded parsing, SSE reading and closing the
connection are the shared layer's (``reactcore.models._http``).

Requests: the request's system prompt goes as ``instructions`` (sent on every request:
the API never carries them over from a previous response); a ``SystemMessage`` inside the
conversation stays in place as a ``system`` / ``developer`` message item. The
conversation becomes ``input`` items: a user message's text and parts as ``input_text``,
``input_image`` and ``input_file`` (audio described in text); an assistant message as
its output items — its ``reasoning`` items, its text as an ``assistant`` message and its
calls as ``function_call`` items (``call_id``, ``name``, ``arguments``), in the order the
model produced them and with their item ids; each tool response as a
``function_call_output`` whose ``output`` is the text, or a list of ``input_text``,
``input_image`` and ``input_file`` when the tool returned images or files.

Stateless by default: ``store: false`` and ``include: ["reasoning.encrypted_content"]``.
The answer's output items are kept on the ``AssistantMessage`` as opaque provider data
(``provider_data["openai-responses"]``: the reasoning items verbatim — id, summary,
encrypted content — and the ids of its message and function-call items, which the API
pairs a reasoning item with), and sent back verbatim on the next requests, so a
checkpoint, a resume after a crash or a fallback and back needs nothing kept on OpenAI's
side. Another provider's data is never sent, and this provider's never to another. A
reasoning item kept without encrypted content (``encrypted_reasoning=False``) cannot go
back with ``store: false`` (the API would look its id up and find nothing): that answer is
sent without its reasoning, and without the item ids the API pairs with it.
``use_previous_response_id=True`` instead stores each response on OpenAI's side
(``store: true``) and sends only the items after the last answer, with its
``previous_response_id``.

Tools are ``function`` tools, ``strict`` when their schema meets the strict subset (as
structured output is); ``tool_choice`` ``"auto"``/``"required"``/``"none"`` or a named
function (chat-completions' shape or the Responses one); ``parallel_tool_calls`` as
given; a ``response_format`` as ``text.format``; ``max_tokens`` as ``max_output_tokens``;
the model's ``reasoning_effort`` and ``reasoning_summary`` as ``reasoning``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

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
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from .._schema import is_strict
from .._serde import converter
from ._client import FLAG, HTTPModel
from ._http import EventParser
from ._responses_answers import PROVIDER, Events, parse_response
from .base import ModelRequest, ModelResponse, ToolSpec

DEFAULT_BASE_URL = "https://api.openai.com/v1"
ENCRYPTED_REASONING = "reasoning.encrypted_content"
_TOOL_CHOICES = {"auto": "auto", "required": "required", "any": "required", "none": "none"}
_SUMMARIES = ("auto", "concise", "detailed")
# Model families that do not reason and refuse ``include: ["reasoning.encrypted_content"]``
# ("Encrypted content is not supported with this model").
_NOT_REASONING = ("gpt-3.5", "gpt-4", "chatgpt-", "gpt-5-chat")


# --- content ----------------------------------------------------------------------------


def _input_text(text: str) -> dict[str, Any]:
    return {"type": "input_text", "text": text}


def part_item(part: ContentPart) -> dict[str, Any]:
    """One content part as Responses input content: ``input_text``, ``input_image`` (a URL
    or a data URL), ``input_file`` (a data URL with its filename, or a file id); audio,
    which the API takes in no message content, described in text."""
    match part:
        case TextPart(text=text):
            return _input_text(text)
        case ImagePart(url=url, detail=detail):
            return {"type": "input_image", "image_url": url, "detail": detail or "auto"}
        case FilePart(file_data=data, file_id=file_id, filename=filename):
            given = {"file_data": data, "file_id": file_id, "filename": filename}
            return {"type": "input_file", **{k: v for k, v in given.items() if v is not None}}
        case AudioPart():
            return _input_text(part.describe())
    raise TypeError(f"not a content part: {part!r}")


def _content(text: str, parts: Iterable[ContentPart]) -> list[dict[str, Any]]:
    """``text`` then ``parts`` as content; empty text left out."""
    head = [_input_text(text)] if text else []
    return head + [part_item(p) for p in parts]


def _call_output(response: ToolResponse) -> dict[str, Any]:
    """A tool response as a ``function_call_output``: its text, or a list of content when
    the tool returned parts (images, files)."""
    output: str | list[dict[str, Any]] = response.response_data
    if response.parts:
        output = _content(response.response_data, response.parts)
    return {"type": "function_call_output", "call_id": response.id, "output": output}


# --- assistant messages -----------------------------------------------------------------


def own_data(message: AssistantMessage) -> Mapping[str, Any]:
    """This provider's data on ``message`` (empty when another provider made it)."""
    data = message.provider_data.get(PROVIDER)
    return data if isinstance(data, Mapping) else {}


def _recorded_output(message: AssistantMessage, *, stored: bool) -> list[Mapping[str, Any]]:
    """The recorded output items of ``message`` that can go back. Not ``stored`` (``store:
    false``), a reasoning item without its encrypted content cannot: the API would look
    its id up and find nothing kept. Then the answer's reasoning is left out, and so are
    the ids of its message and call items, which the API would otherwise pair with the
    missing reasoning item (and refuse)."""
    output = own_data(message).get("output")
    if not isinstance(output, list):
        return []
    entries = [entry for entry in output if isinstance(entry, Mapping)]
    if stored or all(
        e.get("type") != "reasoning" or isinstance(e.get("encrypted_content"), str) for e in entries
    ):
        return entries
    return [
        {k: v for k, v in e.items() if k != "id"} for e in entries if e.get("type") != "reasoning"
    ]


def _message_item(text: str, item_id: Any = None, phase: Any = None) -> dict[str, Any]:
    """The assistant's text: an output message with its item id (what a reasoning item
    before it is paired with), else a plain assistant message."""
    if not isinstance(item_id, str):
        return {"type": "message", "role": "assistant", "content": text}
    item: dict[str, Any] = {
        "type": "message",
        "role": "assistant",
        "id": item_id,
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    if isinstance(phase, str):
        item["phase"] = phase
    return item


def _call_item(call: ToolCall, item_id: Any = None) -> dict[str, Any]:
    item = {"type": "function_call", "call_id": call.id, "name": call.name}
    item["arguments"] = call.arguments
    if isinstance(item_id, str):
        item["id"] = item_id
    return item


def _text_pieces(text: str, output: Sequence[Mapping[str, Any]]) -> list[str]:
    """``text`` split back into the answer's message items: by their recorded lengths when
    they add up to it, else all of it in the first."""
    found = [e.get("length") for e in output if e.get("type") == "message"]
    lengths = [n for n in found if type(n) is int and n >= 0]
    if len(lengths) == len(found) and sum(lengths) == len(text):
        pieces, at = [], 0
        for n in lengths:
            pieces.append(text[at : at + n])
            at += n
        return pieces
    return [text] + [""] * (len(found) - 1) if found else []


def assistant_items(message: AssistantMessage, *, stored: bool = False) -> list[dict[str, Any]]:
    """``message`` as the input items of its answer: with this provider's data, its output
    items in their order (reasoning items verbatim, the text and the calls with their item
    ids); text or calls the record does not hold (a message made by hand, edited, or from
    another provider) after them, without ids. Unless ``stored`` (the API keeps the items:
    ``store: true``), reasoning without encrypted content is left out (``_recorded_output``)."""
    output = _recorded_output(message, stored=stored)
    pieces = iter(_text_pieces(message.text, output))
    calls = {call.id: call for call in message.tool_calls}
    sent: set[str] = set()
    text_sent = False
    items: list[dict[str, Any]] = []
    for entry in output:
        kind = entry.get("type")
        if kind == "reasoning":
            items.append(dict(entry))
        elif kind == "message":
            piece = next(pieces, "")
            text_sent = True
            if piece:
                items.append(_message_item(piece, entry.get("id"), entry.get("phase")))
        elif kind == "function_call" and entry.get("call_id") in calls:
            call = calls[entry["call_id"]]
            sent.add(call.id)
            items.append(_call_item(call, entry.get("id")))
    if message.text and not text_sent:
        items.append(_message_item(message.text))
    items += [_call_item(call) for call in message.tool_calls if call.id not in sent]
    return items


def input_items(messages: Iterable[Message], *, stored: bool = False) -> list[dict[str, Any]]:
    """The conversation as ``input`` items (see the module docstring); empty user messages
    are left out; ``stored`` as for ``assistant_items``."""
    items: list[dict[str, Any]] = []
    for message in messages:
        match message:
            case UserMessage(text=text, parts=parts):
                content = _content(text, parts)
                if content:
                    items.append({"type": "message", "role": "user", "content": content})
            case AssistantMessage():
                items += assistant_items(message, stored=stored)
            case ToolResponseMessage(responses=responses):
                items += [_call_output(r) for r in responses]
            case SystemMessage(text=text, role=role):
                items.append({"type": "message", "role": role, "content": [_input_text(text)]})
    return items


def _after_last_response(messages: Sequence[Message]) -> tuple[str | None, Sequence[Message]]:
    """The id of the last answer this provider stored, and the messages after it; no id
    and every message when there is none."""
    for at in range(len(messages) - 1, -1, -1):
        message = messages[at]
        if isinstance(message, AssistantMessage):
            response_id = own_data(message).get("response_id")
            if isinstance(response_id, str) and response_id:
                return response_id, messages[at + 1 :]
    return None, messages


# --- options ----------------------------------------------------------------------------


def _tool_item(spec: ToolSpec) -> dict[str, Any]:
    parameters = converter.unstructure(dict(spec.parameters))
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": parameters,
        "strict": is_strict(parameters),
    }


def tool_choice(choice: str | Mapping[str, Any] | None) -> Any:
    """A ``tool_choice`` (chat-completions' shape, or the Responses one) as the Responses
    API's: ``"auto"``, ``"required"`` (also ``"any"``), ``"none"``, or
    ``{"type": "function", "name": …}``."""
    if choice is None or not isinstance(choice, str | Mapping):
        return None
    if isinstance(choice, str):
        if choice not in _TOOL_CHOICES:
            raise ValueError(f"tool_choice must be auto, required or none, got {choice!r}")
        return _TOOL_CHOICES[choice]
    function = choice.get("function")
    if choice.get("type") == "function" and isinstance(function, Mapping):
        return {"type": "function", "name": function.get("name")}
    return converter.unstructure(dict(choice))


def text_format(response_format: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A ``response_format`` as ``text.format``: chat-completions' ``json_schema`` shape
    flattened (``{"type": "json_schema", "name", "schema", "strict"}``; ``strict`` as the
    format says, else whether the schema meets the strict subset), anything else (a
    ``json_object``, a format already in the Responses shape) as given."""
    if response_format is None:
        return None
    spec = response_format.get("json_schema")
    if response_format.get("type") != "json_schema" or not isinstance(spec, Mapping):
        return converter.unstructure(dict(response_format))  # type: ignore[no-any-return]
    schema = converter.unstructure(dict(spec.get("schema") or {}))
    strict = spec.get("strict")
    found: dict[str, Any] = {
        "type": "json_schema",
        "name": spec.get("name") or "output",
        "schema": schema,
        "strict": strict if isinstance(strict, bool) else is_strict(schema),
    }
    if isinstance(spec.get("description"), str):
        found["description"] = spec["description"]
    return found


def reasons(model: str) -> bool:
    """Whether ``model`` may reason (and so accepts ``include`` of encrypted reasoning):
    every model but the families known not to (GPT-3.5, GPT-4*, ChatGPT, gpt-5-chat)."""
    name = model.rpartition("/")[2].lower()
    return not name.startswith(_NOT_REASONING)


# --- the body ---------------------------------------------------------------------------


def request_body(
    request: ModelRequest,
    model: str,
    *,
    stream: bool,
    reasoning_effort: str | None = None,
    reasoning_summary: str | None = None,
    encrypted_reasoning: bool | None = None,
    use_previous_response_id: bool = False,
) -> dict[str, Any]:
    """The JSON body of a Responses request for ``request`` (see the module docstring).

    ``encrypted_reasoning`` (``None``: by the model's name, ``reasons``) asks for the
    encrypted reasoning items in the stateless mode; ``extra_body`` is merged in last.
    """
    options = request.options
    name = options.model or model
    messages: Sequence[Message] = request.messages
    previous = None
    if use_previous_response_id:
        previous, messages = _after_last_response(messages)
    body: dict[str, Any] = {
        "model": name,
        "input": input_items(messages, stored=use_previous_response_id),
    }
    if request.system_message is not None and request.system_message.text:
        body["instructions"] = request.system_message.text
    tools = [_tool_item(spec) for spec in request.visible_tool_specs()]
    if tools:
        body["tools"] = tools
        choice = tool_choice(options.tool_choice)
        if choice is not None:
            body["tool_choice"] = choice
        if options.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = options.parallel_tool_calls
    for key in ("temperature", "top_p"):
        value = getattr(options, key)
        if value is not None:
            body[key] = value
    if options.max_tokens is not None:
        body["max_output_tokens"] = options.max_tokens
    found = text_format(options.response_format)
    if found is not None:
        body["text"] = {"format": found}
    reasoning = {"effort": reasoning_effort, "summary": reasoning_summary}
    if reasoning_effort is not None or reasoning_summary is not None:
        body["reasoning"] = {k: v for k, v in reasoning.items() if v is not None}
    if use_previous_response_id:
        body["store"] = True
        if previous is not None:
            body["previous_response_id"] = previous
    else:
        body["store"] = False
        if encrypted_reasoning if encrypted_reasoning is not None else reasons(name):
            body["include"] = [ENCRYPTED_REASONING]
    if stream:
        body["stream"] = True
    body.update(converter.unstructure(dict(options.extra_body)))
    return body


# --- the client -------------------------------------------------------------------------

_EFFORT = valid.text(non_empty=True, optional=True)
_SUMMARY = valid.satisfies(
    "one of 'auto', 'concise', 'detailed'",
    str,
    optional=True,
    limits=[(lambda v: v in _SUMMARIES, "must be one of 'auto', 'concise', 'detailed'")],
)


@attrs.define(eq=False)
class OpenAIResponsesModel(HTTPModel):
    """A model behind OpenAI's Responses API (``{base_url}/responses``).

    ``base_url`` and ``api_key`` default to ``OPENAI_BASE_URL`` (else the OpenAI API) and
    ``OPENAI_API_KEY``; the key travels in the ``Authorization`` header only, never in a
    repr, log or error. ``options.model`` in a request overrides ``model``. ``timeout``,
    ``max_retries``, ``retry_backoff`` and ``retry_after_cap`` are as for every client
    (the shared layer's retries).

    Stateless by default (``store: false``): the answer's reasoning items, encrypted, and
    its item ids are kept on the ``AssistantMessage`` (``provider_data["openai-responses"]``)
    and sent back verbatim, so checkpoints, resuming and fallbacks keep the model's
    reasoning. ``encrypted_reasoning`` says whether to ask for it (``include:
    ["reasoning.encrypted_content"]``); ``None`` (the default) asks unless the model is of
    a family that does not reason and refuses it (GPT-4*, GPT-3.5, ChatGPT, gpt-5-chat).
    Without it the reasoning is kept on the message but not sent back (the API cannot
    look up an unstored item by id).

    ``use_previous_response_id=True`` stores every response on OpenAI's side (``store:
    true``) and sends only what came after the last answer, with its
    ``previous_response_id``: smaller requests, but the conversation then lives on the
    account that made it (a resume works only there, within OpenAI's retention), nothing
    is kept locally to replay, and a fallback model gets the history without the
    reasoning.

    ``reasoning_effort`` (``"minimal"``, ``"low"``, ``"medium"``, ``"high"`` …) and
    ``reasoning_summary`` (``"auto"``, ``"concise"``, ``"detailed"``) are sent as
    ``reasoning`` when set (not by default: models that do not reason refuse it); the
    summary's text is the message's ``reasoning``.

    The model owns the HTTP client it makes and closes it in ``aclose()`` (or at the end
    of ``async with``); a given ``http_client`` is left open for its owner.
    """

    provider_name: ClassVar[str] = PROVIDER
    telemetry_name: ClassVar[str | None] = "openai"
    api_name: ClassVar[str] = "OpenAI Responses API"
    base_url_variable: ClassVar[str] = "OPENAI_BASE_URL"
    api_key_variables: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL
    hostable: ClassVar[bool] = True

    reasoning_effort: str | None = attrs.field(default=None, kw_only=True, validator=_EFFORT)
    reasoning_summary: str | None = attrs.field(default=None, kw_only=True, validator=_SUMMARY)
    encrypted_reasoning: bool | None = attrs.field(
        default=None, kw_only=True, validator=valid.boolean(optional=True)
    )
    use_previous_response_id: bool = attrs.field(default=False, kw_only=True, validator=FLAG)

    def _body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        return request_body(
            request,
            self.model,
            stream=stream,
            reasoning_effort=self.reasoning_effort,
            reasoning_summary=self.reasoning_summary,
            encrypted_reasoning=self.encrypted_reasoning,
            use_previous_response_id=self.use_previous_response_id,
        )

    def _url(self, request: ModelRequest, *, stream: bool) -> str:
        if self.host is None:
            return f"{self.base_url}/responses"
        model = request.options.model or self.model
        return self.host.url(self.base_url, "/responses", model, per_deployment=False)

    def _parse(self, payload: Any) -> ModelResponse:
        return parse_response(payload)

    def _events(self, redact: Callable[[str], str]) -> EventParser:
        return Events(redact)

"""The one cattrs ``Converter`` and every conversion at the edges.

- tool arguments and structured output: strict structuring (no ``"5"`` → ``5``, no
  ``5.7`` → ``5``, no extra keys), with errors that name the parameter;
- results: the serialiser of tool results is ``_results`` (over this converter);
- the OpenAI chat-completions wire format (plain dicts), through private attrs classes
  that mirror it, so a malformed provider payload fails with a readable error;
- content parts: their wire shapes (``text``, ``image_url``, ``input_audio``, ``file``),
  and the text of a tool's parts (``split_parts``).
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal, NewType, get_args, get_origin

import attrs
import cattrs
import cattrs.cols
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ._json import loads as bounded_loads
from ._messages import (
    MEDIA_TYPES,
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

converter = cattrs.Converter(forbid_extra_keys=True)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


class StrictTypeError(TypeError):
    """A value of the wrong JSON type; the message says what was expected and got."""


def _strict_int(value: Any, _: type) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise StrictTypeError(f"expected an integer, got {_type_name(value)} {value!r}")


def _strict_float(value: Any, _: type) -> float:
    number = _any_float(value, _)
    if math.isfinite(number):
        return number
    # ``NaN``/``Infinity`` are not JSON, and ``1e999`` reads as infinity: no tool expects
    # them unless its parameter says so (``Annotated[float, AllowNonFinite]``).
    raise StrictTypeError(f"expected a finite number, got {value!r}")


def _any_float(value: Any, _: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise StrictTypeError(f"expected a number, got {_type_name(value)} {value!r}")


class AllowNonFinite:
    """A marker for a float parameter that accepts NaN and ±infinity:
    ``ratio: Annotated[float, AllowNonFinite]``. Without it, a tool argument (or a
    structured output field) that is ``NaN``, ``Infinity`` or overflows to infinity
    (``1e999``) is an invalid argument."""


def _allows_non_finite(tp: Any) -> bool:
    if get_origin(tp) is not Annotated:
        return False
    base, *metadata = get_args(tp)
    marked = any(m is AllowNonFinite or isinstance(m, AllowNonFinite) for m in metadata)
    return marked and base is float


def _strict_str(value: Any, _: type) -> str:
    if isinstance(value, str):
        return value
    raise StrictTypeError(f"expected a string, got {_type_name(value)} {value!r}")


def _strict_bool(value: Any, _: type) -> bool:
    if isinstance(value, bool):
        return value
    raise StrictTypeError(f"expected a boolean, got {_type_name(value)} {value!r}")


def _same_json(value: Any, option: Any) -> bool:
    # ``True == 1`` in Python, but a JSON boolean is never a number.
    return bool(value == option) and isinstance(value, bool) == isinstance(option, bool)


def _one_of(options: Iterable[Any], value: Any) -> StrictTypeError:
    allowed = ", ".join(json.dumps(o, default=repr) for o in options)
    return StrictTypeError(f"expected one of {allowed}, got {_type_name(value)} {value!r}")


def _is_literal(tp: Any) -> bool:
    return get_origin(tp) is Literal


def _is_enum(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


def _strict_literal(value: Any, tp: Any) -> Any:
    for option in get_args(tp):
        if _same_json(value, option):
            return option
    raise _one_of(get_args(tp), value)


def _strict_enum(value: Any, tp: type[enum.Enum]) -> enum.Enum:
    for member in tp:
        if _same_json(value, member.value):
            return member
    raise _one_of((m.value for m in tp), value)


def _is_array(tp: Any) -> bool:
    origin, args = get_origin(tp), get_args(tp)
    return origin is list or (origin is tuple and len(args) == 2 and args[1] is Ellipsis)


def _strict_array(tp: Any, conv: cattrs.BaseConverter) -> Callable[[Any, Any], Any]:
    factory = cattrs.cols.list_structure_factory
    if get_origin(tp) is tuple:
        factory = cattrs.cols.homogenous_tuple_structure_factory
    items = factory(tp, conv)

    def structure(value: Any, _: Any) -> Any:
        # A string or an object is iterable too, but is no JSON array.
        if not isinstance(value, list | tuple):
            raise StrictTypeError(f"expected an array, got {_type_name(value)}")
        return items(value, tp)

    return structure


def _is_object(tp: Any) -> bool:
    return get_origin(tp) is dict


def _strict_object(tp: Any, conv: cattrs.BaseConverter) -> Callable[[Any, Any], Any]:
    entries = cattrs.cols.mapping_structure_factory(tp, conv)

    def structure(value: Any, _: Any) -> Any:
        if not isinstance(value, Mapping):
            raise StrictTypeError(f"expected an object, got {_type_name(value)}")
        return entries(value, tp)

    return structure


converter.register_structure_hook(int, _strict_int)
converter.register_structure_hook(float, _strict_float)
converter.register_structure_hook(str, _strict_str)
converter.register_structure_hook(bool, _strict_bool)
converter.register_structure_hook_func(_is_literal, _strict_literal)
converter.register_structure_hook_func(_is_enum, _strict_enum)
converter.register_structure_hook_factory(_is_array, _strict_array)
converter.register_structure_hook_factory(_is_object, _strict_object)
converter.register_structure_hook_func(_allows_non_finite, _any_float)


def _format_one(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, StrictTypeError):
        return str(exc)
    if isinstance(exc, KeyError):
        return "required, missing"
    if isinstance(exc, ForbiddenExtraKeysError):
        return f"unexpected {', '.join(sorted(exc.extra_fields))}"
    expected = getattr(type_, "__name__", None) or repr(type_)
    return f"expected {expected} ({type(exc).__name__}: {exc})"


def describe_error(exc: BaseException, root: str) -> str:
    """One line saying what is wrong where, from a cattrs structuring error."""
    if isinstance(exc, ClassValidationError | IterableValidationError):
        return "; ".join(cattrs.transform_error(exc, path=root, format_exception=_format_one))
    return f"{_format_one(exc, None)} @ {root}"


# --- invalid Unicode -------------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def clean_text(text: str) -> str:
    """``text`` with invalid Unicode repaired: a surrogate pair held as two code points
    becomes its character, a lone surrogate (``json.loads`` makes one of ``"\\ud800"``)
    becomes U+FFFD. Such text cannot be encoded as UTF-8, so it would make every later
    request of the thread fail; it is cleaned where it enters (model answers, tool
    results, requests)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _clean_value(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k): _clean_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_value(v) for v in value]
    return value


def clean_arguments(arguments: str) -> str:
    """Tool-call ``arguments`` (JSON text) that decode to valid Unicode: lone surrogates,
    raw or escaped (``\\ud800``), become U+FFFD. Text that is not JSON is only cleaned of
    raw surrogates (the tool node reports it to the model); clean JSON is left as sent."""
    arguments = clean_text(arguments)
    if _SURROGATE_ESCAPE.search(arguments) is None:
        return arguments
    try:
        value = bounded_loads(arguments)
    except ValueError:
        return arguments
    cleaned = _clean_value(value)
    return arguments if cleaned == value else _ENCODER.encode(cleaned)


# One encoder: json.dumps with non-default options would build a new one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def store_when_set(cls: type, *names: str) -> None:
    """Unstructure ``cls`` with the fields ``names`` left out while they hold their
    default: fields added after the first checkpoint layout, so a value without them keeps
    the layout it had before they existed."""
    omit: dict[str, Any] = {name: override(omit_if_default=True) for name in names}
    converter.register_unstructure_hook(cls, make_dict_unstructure_fn(cls, converter, **omit))


# --- the OpenAI chat-completions wire format -------------------------------------------


@attrs.frozen
class _WireFunction:
    name: str
    arguments: str = "{}"


@attrs.frozen
class _WireToolCall:
    id: str
    function: _WireFunction
    type: Literal["function"] = "function"


_Content = NewType("_Content", str)
"""A wire ``content`` read as text (see ``_content_text``)."""


@attrs.frozen
class _WireMessage:
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: _Content = _Content("")
    tool_calls: list[_WireToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    # The model's thinking: ``reasoning_content`` (DeepSeek, vLLM) or ``reasoning``
    # (OpenRouter, newer vLLM); read only when it is text.
    reasoning_content: Any = None
    reasoning: Any = None


def _wire_hook(cls: type) -> Callable[[Any, Any], Any]:
    # Providers add fields (refusal, annotations, audio …); the wire tolerates them.
    fields: Callable[[Any, Any], Any] = make_dict_structure_fn(
        cls, converter, _cattrs_forbid_extra_keys=False
    )

    def structure(value: Any, tp: Any) -> Any:
        if not isinstance(value, Mapping):
            raise StrictTypeError(f"expected an object, got {_type_name(value)}")
        return fields(value, tp)

    return structure


def _content_text(content: Any, _: Any = None) -> _Content:
    """Text of a wire ``content``: a string, null, or a list of parts (the texts joined;
    the parts of user and tool messages are read again by ``_content_parts``)."""
    if content is None:
        return _Content("")
    if isinstance(content, str):
        return _Content(clean_text(content))
    if isinstance(content, list) and all(
        isinstance(part, dict) and isinstance(part.get("text", ""), str) for part in content
    ):
        return _Content(clean_text("".join(part.get("text", "") for part in content)))
    raise StrictTypeError(f"expected message content as a string or parts, got {content!r}")


converter.register_structure_hook(_Content, _content_text)

for _cls in (_WireFunction, _WireToolCall, _WireMessage):
    converter.register_structure_hook(_cls, _wire_hook(_cls))


# --- content parts on the wire ------------------------------------------------------------


@attrs.frozen
class _WireText:
    text: str


@attrs.frozen
class _WireImageURL:
    url: str
    detail: str | None = None


@attrs.frozen
class _WireImage:
    image_url: _WireImageURL


@attrs.frozen
class _WireAudioData:
    data: str
    format: str


@attrs.frozen
class _WireAudio:
    input_audio: _WireAudioData


@attrs.frozen
class _WireFileData:
    file_data: str | None = None
    file_id: str | None = None
    filename: str | None = None


@attrs.frozen
class _WireFile:
    file: _WireFileData


_PART_CLASSES: tuple[type, ...] = (
    _WireText,
    _WireImageURL,
    _WireImage,
    _WireAudioData,
    _WireAudio,
    _WireFileData,
    _WireFile,
)
for _part_cls in _PART_CLASSES:
    converter.register_structure_hook(_part_cls, _wire_hook(_part_cls))

_WIRE_PARTS: dict[str, type] = {
    "text": _WireText,
    "image_url": _WireImage,
    "input_audio": _WireAudio,
    "file": _WireFile,
}

_WirePart = NewType("_WirePart", object)
"""A wire content part, structured into a ``ContentPart`` (see ``_part_from_wire``)."""


def _part_from_wire(value: Any, _: Any = None) -> ContentPart:
    """The ``ContentPart`` of one wire part: ``text``, ``image_url``, ``input_audio``, ``file``."""
    if not isinstance(value, Mapping):
        raise StrictTypeError(f"expected a content part object, got {_type_name(value)}")
    kind = value.get("type")
    cls = _WIRE_PARTS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        allowed = ", ".join(json.dumps(t) for t in _WIRE_PARTS)
        raise StrictTypeError(f"expected a part of type {allowed}, got {kind!r}")
    wire: Any = converter.structure(value, cls)
    if isinstance(wire, _WireText):
        return TextPart(wire.text)
    if isinstance(wire, _WireImage):
        return ImagePart(wire.image_url.url, wire.image_url.detail)
    if isinstance(wire, _WireAudio):
        return AudioPart(wire.input_audio.data, wire.input_audio.format)
    given: _WireFileData = wire.file
    if given.file_data is None and given.file_id is None:
        raise StrictTypeError("expected a file part with file_data or file_id")
    return FilePart(given.file_data, given.file_id, given.filename)


converter.register_structure_hook(_WirePart, _part_from_wire)


def part_to_wire(part: ContentPart) -> dict[str, Any]:
    """One content part as a chat-completions content part dict."""
    match part:
        case TextPart(text=text):
            return {"type": "text", "text": text}
        case ImagePart(url=url, detail=detail):
            image = {"url": url} if detail is None else {"url": url, "detail": detail}
            return {"type": "image_url", "image_url": image}
        case AudioPart(data_base64=data, format=audio_format):
            return {"type": "input_audio", "input_audio": {"data": data, "format": audio_format}}
        case FilePart(file_data=data, file_id=file_id, filename=filename):
            given = {"file_data": data, "file_id": file_id, "filename": filename}
            return {"type": "file", "file": {k: v for k, v in given.items() if v is not None}}
    raise TypeError(f"not a content part: {part!r}")


def _content_to_wire(text: str, parts: Sequence[ContentPart]) -> str | list[dict[str, Any]]:
    """``text`` then ``parts`` as a wire ``content``: the plain string when there are no
    parts, else a list whose first part is the text (left out when it is empty)."""
    if not parts:
        return text
    head = [{"type": "text", "text": text}] if text else []
    return head + [part_to_wire(p) for p in parts]


def split_parts(parts: Sequence[ContentPart]) -> tuple[str, tuple[ContentPart, ...]]:
    """The text and the other parts of a wire part list: a first text part is the text."""
    if parts and type(parts[0]) is TextPart:
        return parts[0].text, tuple(parts[1:])
    return "", tuple(parts)


ToolMedia = Literal["describe", "user_message", "parts"]
TOOL_MEDIA: tuple[ToolMedia, ...] = ("describe", "user_message", "parts")


def _described(response: ToolResponse) -> str:
    """A tool response as text only: its text, then each part described on its own line."""
    pieces = [response.response_data, *(p.describe() for p in response.parts)]
    return "\n".join(piece for piece in pieces if piece)


def _tool_items(message: ToolResponseMessage, tool_media: ToolMedia) -> list[dict[str, Any]]:
    """A ``ToolResponseMessage`` as wire items: one ``tool`` item per response, and with
    ``"user_message"`` a ``user`` item after them holding the responses' media parts."""
    items: list[dict[str, Any]] = []
    media: list[dict[str, Any]] = []
    for r in message.responses:
        content = _content_to_wire(r.response_data, r.parts)
        if tool_media != "parts" and r.parts:
            content = _described(r)
        items.append({"role": "tool", "tool_call_id": r.id, "content": content})
        shown = [part_to_wire(p) for p in r.parts if type(p) in MEDIA_TYPES]
        if tool_media == "user_message" and shown:
            media += [{"type": "text", "text": f"The result of tool call {r.id} ({r.name}):"}]
            media += shown
    if media:
        items.append({"role": "user", "content": media})
    return items


def reasoning_text(*values: Any) -> str:
    """The first of ``values`` that is text (a provider's reasoning field), cleaned."""
    return next((clean_text(v) for v in values if isinstance(v, str) and v), "")


def message_to_wire(
    message: Message, *, tool_media: ToolMedia = "describe", reasoning: bool = False
) -> list[dict[str, Any]]:
    """One message as wire dicts (a ``ToolResponseMessage`` becomes one per response;
    ``tool_media`` as in ``messages_to_wire``). With ``reasoning``, an assistant message's
    reasoning goes as ``reasoning_content`` (some providers require it back, others reject
    it: the model client decides)."""
    match message:
        case SystemMessage(text=text, role=role):
            return [{"role": role, "content": text}]
        case UserMessage(text=text, parts=parts):
            return [{"role": "user", "content": _content_to_wire(text, parts)}]
        case AssistantMessage(text=text, tool_calls=calls):
            # Content may be null only beside tool calls; without them it is required.
            wire: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
            if reasoning and message.reasoning:
                wire["reasoning_content"] = message.reasoning
            if calls:
                wire["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in calls
                ]
            return [wire]
        case ToolResponseMessage():
            return _tool_items(message, tool_media)
    raise TypeError(f"not a message: {message!r}")


def messages_to_wire(
    messages: Iterable[Message],
    *,
    tool_media: ToolMedia = "describe",
    reasoning: bool = False,
) -> list[dict[str, Any]]:
    """A conversation as the ``messages`` array of a chat-completions request.

    A user message with parts has a list ``content``: its text first (as a text part,
    unless empty), then the parts in order; a system message keeps its role (``system``
    or ``developer``). The chat-completions API takes text only in ``tool`` messages, so
    what a tool returned besides text is, by ``tool_media``:

    - ``"describe"`` (the default): described in the tool message's text, after the
      tool's own text, one part a line (``[image: image/png, 12345 bytes]``);
    - ``"user_message"``: described so, and also sent whole in one ``user`` message
      after the tool messages (for vision models);
    - ``"parts"``: sent whole as the tool message's content parts (for providers that
      accept them; this is the one mode that ``messages_from_wire`` reads back exactly).

    With ``reasoning``, assistant reasoning is included as ``reasoning_content``.
    """
    if tool_media not in TOOL_MEDIA:
        raise ValueError(f"tool_media must be one of {', '.join(TOOL_MEDIA)}, got {tool_media!r}")
    return [
        wire
        for m in messages
        for wire in message_to_wire(m, tool_media=tool_media, reasoning=reasoning)
    ]


def _malformed(exc: Exception, root: str) -> ValueError:
    return ValueError(f"malformed chat-completions {root}: {describe_error(exc, root)}")


def assistant_from_wire(payload: Any) -> AssistantMessage:
    """An ``AssistantMessage`` from a wire ``message`` dict (a response's ``choices[i]``).

    A malformed payload raises the converter's error; ``describe_error`` words it, under
    the caller's own path (``$.choices[0].message``).
    """
    return _assistant(converter.structure(payload, _WireMessage))


def _assistant(wire: _WireMessage) -> AssistantMessage:
    calls = [
        ToolCall(
            clean_text(c.id), clean_text(c.function.name), clean_arguments(c.function.arguments)
        )
        for c in wire.tool_calls or ()
    ]
    thinking = reasoning_text(wire.reasoning_content, wire.reasoning)
    return AssistantMessage(wire.content, calls, reasoning=thinking)


def messages_from_wire(payload: Sequence[Any]) -> list[Message]:
    """A wire ``messages`` array as messages; consecutive ``tool`` items form one message.

    A tool item's name is read from the assistant call it answers. The wire carries no
    ``is_error`` flag and no metadata, so those come back as their defaults. A list
    ``content`` of a user or tool item whose first part is text gives the text and, after
    it, the other parts (so ``messages_to_wire`` output reads back exactly); a system or
    developer item's text parts are joined. A malformed payload is a ``ValueError``
    saying what is wrong where.
    """
    try:
        return _from_wire(converter.structure(payload, list[_WireMessage]), payload)
    except (cattrs.BaseValidationError, StrictTypeError) as exc:
        raise _malformed(exc, "messages") from exc


def _content_parts(item: Mapping[str, Any], index: int) -> list[ContentPart] | None:
    """The parts of a wire item's list ``content`` (``None`` when it is no list)."""
    content = item.get("content")
    if not isinstance(content, list):
        return None
    try:
        parts: list[ContentPart] = converter.structure(content, list[_WirePart])  # type: ignore[arg-type]
    except (cattrs.BaseValidationError, StrictTypeError) as exc:
        raise _malformed(exc, f"messages[{index}].content") from exc
    return parts


def _text_and_parts(
    wire: _WireMessage, item: Mapping[str, Any], index: int
) -> tuple[str, tuple[ContentPart, ...]]:
    parts = _content_parts(item, index)
    return (wire.content, ()) if parts is None else split_parts(parts)


def _from_wire(wires: list[_WireMessage], payload: Sequence[Any]) -> list[Message]:
    names: dict[str, str] = {}
    out: list[Message] = []
    pending: list[ToolResponse] = []
    for index, wire in enumerate(wires):
        if wire.role != "tool" and pending:
            out.append(ToolResponseMessage(pending))
            pending = []
        text = wire.content
        if wire.role in ("system", "developer"):
            out.append(SystemMessage(text, wire.role))
        elif wire.role == "user":
            out.append(UserMessage(*_text_and_parts(wire, payload[index], index)))
        elif wire.role == "assistant":
            message = _assistant(wire)
            names.update((c.id, c.name) for c in message.tool_calls)
            out.append(message)
        else:
            if wire.tool_call_id is None:
                raise ValueError(
                    "malformed chat-completions messages: a 'tool' message has no "
                    f"tool_call_id @ messages[{index}]"
                )
            name = wire.name or names.get(wire.tool_call_id, "")
            data, parts = _text_and_parts(wire, payload[index], index)
            pending.append(ToolResponse(wire.tool_call_id, name, data, parts=parts))
    if pending:
        out.append(ToolResponseMessage(pending))
    return out

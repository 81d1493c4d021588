"""The messages of a conversation: what the model reads and writes, and what tools answer.

Values are frozen; derive new ones with ``attrs.evolve``. ``metadata`` maps are left out
of hashing (they are plain dicts), but take part in equality.

Fields are type-checked when a message is made (``UserMessage(text=[...])`` is a
``TypeError`` there and then), so a malformed message fails where it is built, not when
a checkpoint holding it is read back.

Content parts (``TextPart``, ``ImagePart``, ``AudioPart``, ``FilePart``) are what a
message holds besides its text: a ``UserMessage`` or a ``ToolResponse`` has ``text`` /
``response_data`` first, then ``parts``, in order.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import attrs

from . import _validate as valid

_text = valid.text()
_optional_text = valid.text(optional=True)
_mapping = valid.mapping()


# --- content parts ----------------------------------------------------------------------


def split_data_url(url: str) -> tuple[str, str] | None:
    """The media type and base64 data of a base64 ``data:`` URL, else ``None`` (what a
    provider module sends as inline data)."""
    head, comma, data = url.partition(",")
    if not (comma and head.startswith("data:") and head.endswith(";base64")):
        return None
    return head[5:-7] or "application/octet-stream", data


def _data_url(url: str) -> tuple[str, int] | None:
    """The media type and decoded size of a base64 ``data:`` URL, else ``None``."""
    split = split_data_url(url)
    return None if split is None else (split[0], _decoded_size(split[1]))


def _decoded_size(data: str) -> int:
    """The number of bytes base64 text ``data`` decodes to (without decoding it)."""
    data = data.strip()
    return len(data) * 3 // 4 - (len(data) - len(data.rstrip("=")))


def _short(value: str | None) -> str:
    """The repr of a field that may hold a data URL: long inline data abbreviated."""
    inline = _data_url(value) if value is not None and len(value) > 80 else None
    if inline is None:
        return repr(value)
    return f"'data:{inline[0]};base64,…' ({inline[1]} bytes)"


def _data_url_of(data: bytes, media_type: str) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


@attrs.frozen
class TextPart:
    """Text, as one part among others."""

    text: str = attrs.field(validator=_text)

    def describe(self) -> str:
        """The part as text for a model that reads text only: the text itself."""
        return self.text


@attrs.frozen
class ImagePart:
    """An image: an ``https`` URL, or the image itself as a base64 ``data:`` URL (see
    ``from_bytes``); ``detail`` is OpenAI's ``"auto"``, ``"low"`` or ``"high"``."""

    url: str = attrs.field(validator=_text, repr=_short)
    detail: str | None = attrs.field(default=None, validator=_optional_text)

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str, detail: str | None = None) -> ImagePart:
        """The image ``data`` (e.g. PNG bytes, ``media_type="image/png"``) as a data URL."""
        return cls(_data_url_of(data, media_type), detail)

    def describe(self) -> str:
        """``[image: image/png, 12345 bytes]`` for inline data, else ``[image: <url>]``."""
        inline = _data_url(self.url)
        if inline is None:
            return f"[image: {self.url}]"
        return f"[image: {inline[0]}, {inline[1]} bytes]"


@attrs.frozen
class AudioPart:
    """Audio as base64 text, in ``format`` (OpenAI accepts ``"wav"`` and ``"mp3"``)."""

    data_base64: str = attrs.field(validator=_text, repr=lambda v: f"<{_decoded_size(v)} bytes>")
    format: str = attrs.field(validator=_text)

    def describe(self) -> str:
        """``[audio: wav, 12345 bytes]``."""
        return f"[audio: {self.format}, {_decoded_size(self.data_base64)} bytes]"


def _file_given(instance: FilePart, attribute: attrs.Attribute[Any], value: Any) -> None:
    _optional_text(instance, attribute, value)
    if instance.file_data is None and instance.file_id is None:
        raise ValueError("FilePart needs file_data (a base64 data: URL) or file_id")


@attrs.frozen
class FilePart:
    """A file: its data as a base64 ``data:`` URL (with a ``filename``), or the id of a
    file uploaded to the provider."""

    file_data: str | None = attrs.field(default=None, validator=_optional_text, repr=_short)
    file_id: str | None = attrs.field(default=None, validator=_optional_text)
    filename: str | None = attrs.field(default=None, validator=_file_given)

    @classmethod
    def from_bytes(
        cls, data: bytes, media_type: str = "application/octet-stream", filename: str | None = None
    ) -> FilePart:
        """The file ``data`` as a data URL."""
        return cls(file_data=_data_url_of(data, media_type), filename=filename)

    def describe(self) -> str:
        """``[file: report.pdf, application/pdf, 12345 bytes]``, or ``[file: <file id>]``."""
        facts = [self.filename] if self.filename else []
        inline = _data_url(self.file_data) if self.file_data is not None else None
        if inline is not None:
            facts += [inline[0], f"{inline[1]} bytes"]
        elif self.file_id is not None:
            facts.append(self.file_id)
        return f"[file: {', '.join(facts) or 'inline data'}]"


ContentPart = TextPart | ImagePart | AudioPart | FilePart
PART_TYPES = (TextPart, ImagePart, AudioPart, FilePart)
MEDIA_TYPES = (ImagePart, AudioPart, FilePart)

_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff_media_type(data: bytes) -> str:
    """The media type of ``data`` from its first bytes: PNG, JPEG, GIF, WebP or PDF,
    else ``application/octet-stream``."""
    for magic, media_type in _IMAGE_MAGIC:
        if data.startswith(magic):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith(b"%PDF-"):
        return "application/pdf"
    return "application/octet-stream"


def part_from_bytes(data: bytes, filename: str | None = None) -> ImagePart | FilePart:
    """``data`` as a part: an ``ImagePart`` when it is a PNG, JPEG, GIF or WebP image
    (by its magic number), else a ``FilePart`` (a PDF gets ``application/pdf``)."""
    media_type = sniff_media_type(data)
    if media_type.startswith("image/"):
        return ImagePart.from_bytes(data, media_type)
    return FilePart.from_bytes(data, media_type, filename)


def _to_parts(value: Any) -> tuple[ContentPart, ...]:
    return tuple(value)


# Exactly these types: a subclass would not come back from the wire or a checkpoint as itself.
_PARTS = valid.each(
    valid.satisfies(
        f"one of {', '.join(t.__name__ for t in PART_TYPES)}", test=lambda v: type(v) in PART_TYPES
    )
)


def _parts_field() -> Any:
    return attrs.field(default=(), converter=_to_parts, validator=_PARTS)


def _system_role(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value not in ("system", "developer"):
        raise ValueError(f"SystemMessage.role must be 'system' or 'developer', got {value!r}")


@attrs.frozen
class SystemMessage:
    """Instructions for the model, put first in every request.

    ``role="developer"`` (what newer OpenAI models call system instructions) is kept as
    its own role, on the wire and in checkpoints.
    """

    text: str = attrs.field(validator=_text)
    role: str = attrs.field(default="system", validator=_system_role)


@attrs.frozen
class UserMessage:
    """What the user said: ``text``, then any other content ``parts`` (images, audio,
    files, more text), in order. ``UserMessage("hi")`` is text only."""

    text: str = attrs.field(validator=_text)
    parts: tuple[ContentPart, ...] = _parts_field()


@attrs.frozen
class ToolCall:
    """One call the model asked for; ``arguments`` is the model's raw JSON string."""

    id: str = attrs.field(validator=_text)
    name: str = attrs.field(validator=_text)
    arguments: str = attrs.field(default="{}", validator=_text)


def _to_calls(value: Any) -> tuple[ToolCall, ...]:
    return tuple(value)


def _to_names(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


@attrs.frozen
class AssistantMessage:
    """What the model answered: text, tool calls, or both.

    ``visible_tools`` names the tools the model was shown in the request that produced
    this answer (after every model interceptor), recorded by ``AgentLlmNode`` when the
    answer has tool calls. The tool node runs only those (plus the resolver's); ``None``
    (a message not made by the LLM node, e.g. built by hand) lets every tool run.

    ``finish_reason`` is how the provider said the answer ended (``"stop"``,
    ``"tool_calls"``, ``"length"`` when it was cut at the token limit …; ``None`` when not
    told). It is kept in checkpoints but left out of equality: it says how the answer
    ended, not what it is. ``reasoning`` is the model's visible thinking, when the
    provider sends it (``reasoning_content``: DeepSeek, vLLM, many compatible servers;
    Anthropic's thinking blocks).

    ``provider_data`` is what a provider needs back on later requests and nobody else may
    read (Anthropic's signed thinking blocks): opaque JSON values keyed by the provider
    that made them (``{"anthropic": {...}}``). It is kept in checkpoints and events, sent
    back only to the provider of its key, and never sent to another (a fallback to
    another provider drops it from that provider's requests).
    """

    text: str = attrs.field(default="", validator=_text)
    tool_calls: tuple[ToolCall, ...] = attrs.field(
        default=(),
        converter=_to_calls,
        validator=valid.each(valid.instance_of(ToolCall, "a ToolCall")),
    )
    metadata: Mapping[str, Any] = attrs.field(factory=dict, hash=False, validator=_mapping)
    visible_tools: tuple[str, ...] | None = attrs.field(
        default=None, converter=_to_names, validator=valid.each(_text, optional=True)
    )
    finish_reason: str | None = attrs.field(default=None, eq=False, validator=_optional_text)
    reasoning: str = attrs.field(default="", validator=_text)
    provider_data: Mapping[str, Any] = attrs.field(factory=dict, hash=False, validator=_mapping)


@attrs.frozen
class ToolResponse:
    """The answer to one ``ToolCall``; ``is_error`` marks errors shown to the model.

    ``parts`` holds what the tool returned besides text (an image, a file, a list of
    parts), whole; see ``messages_to_wire`` for how a model gets to see them. ``data``
    (JSON values, or ``None``) is what the tool gave beyond the text, for callers: the
    model sees ``response_data`` (and the parts) only.
    """

    id: str = attrs.field(validator=_text)
    name: str = attrs.field(validator=_text)
    response_data: str = attrs.field(validator=_text)
    is_error: bool = attrs.field(default=False, validator=valid.boolean())
    parts: tuple[ContentPart, ...] = _parts_field()
    data: Any = attrs.field(default=None, eq=False)


def _to_responses(value: Any) -> tuple[ToolResponse, ...]:
    return tuple(value)


@attrs.frozen
class ToolResponseMessage:
    """The answers to the calls of one ``AssistantMessage``, in call order.

    ``metadata["finish_reason"] == "return_direct"`` ends the run after the tools.
    """

    responses: tuple[ToolResponse, ...] = attrs.field(
        converter=_to_responses,
        validator=valid.each(valid.instance_of(ToolResponse, "a ToolResponse")),
    )
    metadata: Mapping[str, Any] = attrs.field(factory=dict, hash=False, validator=_mapping)


Message = SystemMessage | UserMessage | AssistantMessage | ToolResponseMessage

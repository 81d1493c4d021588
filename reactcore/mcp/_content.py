"""An MCP server's content as reactcore's content parts.

A resource's contents (``resources/read``, or embedded in a prompt or a result) and a
prompt's content blocks become ``TextPart``, ``ImagePart``, ``AudioPart`` or
``FilePart``: text as text; a blob whose media type is ``image/*`` (said by the server,
else sniffed from its first bytes) as an image; any other blob as a file named after the
last segment of its URI. Blobs must be base64, as the protocol says: one that is not is
an ``MCPError`` naming the server and the URI.
"""

from __future__ import annotations

import base64
import binascii

import mcp.types as mt

from .._exceptions import MCPError
from .._messages import (
    AudioPart,
    ContentPart,
    FilePart,
    ImagePart,
    TextPart,
    sniff_media_type,
)
from ._results import describe

# Audio media types → the ``format`` of an ``AudioPart`` (what providers take).
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def _decoded(data: str, server: str, where: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MCPError(
            f"MCP server '{server}' sent {where} whose data is not base64", server=server
        ) from exc


def resource_part(
    contents: mt.TextResourceContents | mt.BlobResourceContents, server: str
) -> ContentPart:
    """One item of a resource's contents as a part: text, an image or a file."""
    if isinstance(contents, mt.TextResourceContents):
        return TextPart(contents.text)
    data = _decoded(contents.blob, server, f"the resource {contents.uri}")
    media_type = contents.mime_type or sniff_media_type(data)
    if media_type.startswith("image/"):
        return ImagePart.from_bytes(data, media_type)
    filename = contents.uri.rstrip("/").rpartition("/")[2] or None
    return FilePart.from_bytes(data, media_type, filename)


def block_part(block: mt.ContentBlock, server: str) -> ContentPart:
    """A content block (of a prompt message) as a part: text, an image, audio in a format
    providers take (else a file), an embedded resource's contents; a resource link as its
    description in text."""
    if isinstance(block, mt.TextContent):
        return TextPart(block.text)
    if isinstance(block, mt.ImageContent):
        _decoded(block.data, server, "an image")
        return ImagePart(f"data:{block.mime_type};base64,{block.data}")
    if isinstance(block, mt.AudioContent):
        data = _decoded(block.data, server, "audio")
        audio_format = _AUDIO_FORMATS.get(block.mime_type)
        if audio_format is not None:
            return AudioPart(block.data, audio_format)
        return FilePart.from_bytes(data, block.mime_type)
    if isinstance(block, mt.EmbeddedResource):
        return resource_part(block.resource, server)
    return TextPart(describe(block))

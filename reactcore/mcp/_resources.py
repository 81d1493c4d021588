"""An MCP server's resources as reactcore values, and the ``read_resource`` tool.

``Resource`` and ``ResourceTemplate`` are what ``resources/list`` and
``resources/templates/list`` give; ``ResourceContents`` one item of what
``resources/read`` gives, its content as a reactcore content part (``_content``). They
are made from the SDK's pydantic types here, at the edge, and hold nothing of the SDK.

With ``MCPToolset(resource_tool=True)`` the model may read resources itself: a tool
``read_resource(uri)`` (after the toolset's prefix) whose description lists the
resources and templates the server had when the tools were listed, and whose answer is
the text of the resource, its images and files as parts of the response.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import mcp.types as mt

from .. import _validate as valid
from .._interceptors import ToolCallResponse
from .._messages import PART_TYPES, ContentPart, TextPart
from .._tool_annotations import ToolAnnotations
from .._tools import Tool
from ._content import resource_part
from ._requests import every_page
from ._results import schema_check

if TYPE_CHECKING:
    from ._requests import Connection

_text = valid.text()
_optional_text = valid.text(optional=True)
# How many resources (and templates) the read_resource tool's description names at most.
MAX_LISTED = 50


@attrs.frozen
class Resource:
    """A resource a server lists: its ``uri``, ``name``, and what it says of it."""

    uri: str = attrs.field(validator=_text)
    name: str = attrs.field(validator=_text)
    title: str | None = attrs.field(default=None, validator=_optional_text)
    description: str | None = attrs.field(default=None, validator=_optional_text)
    mime_type: str | None = attrs.field(default=None, validator=_optional_text)
    size: int | None = attrs.field(default=None, validator=valid.integer(minimum=0, optional=True))


@attrs.frozen
class ResourceTemplate:
    """A family of resources a server can read: ``uri_template`` is an RFC 6570 URI
    template (``file:///logs/{day}``); fill it in and ``read_resource`` the URI."""

    uri_template: str = attrs.field(validator=_text)
    name: str = attrs.field(validator=_text)
    title: str | None = attrs.field(default=None, validator=_optional_text)
    description: str | None = attrs.field(default=None, validator=_optional_text)
    mime_type: str | None = attrs.field(default=None, validator=_optional_text)


@attrs.frozen
class ResourceContents:
    """One item of a resource read: its ``uri`` (a read may give several, a folder's
    files say), media type, and content as a part — ``TextPart`` for text, ``ImagePart``
    for an image, ``FilePart`` for any other blob."""

    uri: str = attrs.field(validator=_text)
    part: ContentPart = attrs.field(
        validator=valid.instance_of(PART_TYPES, "a content part (TextPart, ImagePart …)")
    )
    mime_type: str | None = attrs.field(default=None, validator=_optional_text)

    @property
    def text(self) -> str | None:
        """The text, when the content is text; else ``None``."""
        return self.part.text if isinstance(self.part, TextPart) else None


def to_resource(resource: mt.Resource) -> Resource:
    return Resource(
        resource.uri,
        resource.name,
        resource.title,
        resource.description,
        resource.mime_type,
        resource.size,
    )


def to_template(template: mt.ResourceTemplate) -> ResourceTemplate:
    return ResourceTemplate(
        template.uri_template,
        template.name,
        template.title,
        template.description,
        template.mime_type,
    )


def to_contents(result: mt.ReadResourceResult, server: str) -> tuple[ResourceContents, ...]:
    return tuple(
        ResourceContents(item.uri, resource_part(item, server), item.mime_type)
        for item in result.contents
    )


def contents_response(contents: Sequence[ResourceContents]) -> ToolCallResponse:
    """The ``read_resource`` tool's answer: the text of each text item, each other item
    described in brackets in the text and given whole as a part."""
    lines: list[str] = []
    parts: list[ContentPart] = []
    for item in contents:
        if isinstance(item.part, TextPart):
            lines.append(item.part.text)
        else:
            lines.append(f"{item.uri}: {item.part.describe()}")
            parts.append(item.part)
    return ToolCallResponse("\n".join(lines), parts=tuple(parts))


_RESOURCE_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"uri": {"type": "string", "description": "The URI of the resource."}},
    "required": ["uri"],
    "additionalProperties": False,
}


def resource_tool_description(
    server: str, resources: Sequence[Resource], templates: Sequence[ResourceTemplate]
) -> str:
    """What the model reads of the ``read_resource`` tool: what it does, and the
    resources and templates (at most ``MAX_LISTED`` of each) the server lists."""
    lines = [f"Read a resource of the MCP server '{server}' by its URI."]
    if resources:
        lines.append("Resources:")
        lines += [f"- {r.uri}: {_about(r)}" for r in resources[:MAX_LISTED]]
    if templates:
        lines.append("URI templates (fill in the {placeholders}):")
        lines += [f"- {t.uri_template}: {_about(t)}" for t in templates[:MAX_LISTED]]
    return "\n".join(lines)


def _about(item: Resource | ResourceTemplate) -> str:
    name = item.title or item.name
    return f"{name} — {item.description}" if item.description else name


async def resource_tool(
    conn: Connection,
    name: str,
    read: Callable[[str], Awaitable[Sequence[ResourceContents]]],
    options: dict[str, Any],
) -> Tool:
    """The ``read_resource`` tool called ``name``, reading with ``read`` (the toolset's
    ``read_resource``); its description names the resources and templates the server
    lists now (none when it offers no resources). ``options``: the toolset's timeout and
    limiter. Read-only and idempotent, as its annotations say."""
    capabilities = conn.session.server_capabilities
    resources: list[Resource] = []
    templates: list[ResourceTemplate] = []
    if capabilities is not None and capabilities.resources is not None:
        session = conn.session
        found = await every_page(lambda p: session.list_resources(params=p), "resources")
        resources = [to_resource(r) for r in found]
        listing = await every_page(
            lambda p: session.list_resource_templates(params=p), "resource_templates"
        )
        templates = [to_template(t) for t in listing]

    async def read_resource(uri: str) -> ToolCallResponse:
        return contents_response(await read(uri))

    return Tool.from_schema(
        name,
        resource_tool_description(conn.server, resources, templates),
        _RESOURCE_TOOL_SCHEMA,
        read_resource,
        check=schema_check(_RESOURCE_TOOL_SCHEMA, name),
        annotations=ToolAnnotations(read_only=True, idempotent=True),
        **options,
    )

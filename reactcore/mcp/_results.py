"""What the model sees of an MCP tool: checked arguments in, a text answer out.

Arguments are checked against the server's input schema before the call (with
``jsonschema``, which the ``mcp`` SDK depends on), so a wrong call answers the model the way
a local tool's does; a schema that cannot be used (``schema_problem``) keeps its tool
from the model. A result becomes text: ``structuredContent`` as JSON when the server
gave no text, else the text blocks joined; images, audio and resources as a short description.
For callers, the response's ``data`` is the tool's ``structuredContent`` when the tool
declares an ``outputSchema`` (the SDK has checked it against that schema), else the whole
result.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jsonschema  # type: ignore[import-untyped]
import jsonschema.exceptions  # type: ignore[import-untyped]
import mcp.types as mt
import structlog
from referencing import Registry, Specification
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012, specification_with

from .._interceptors import ToolCallResponse
from .._tool_annotations import ToolAnnotations

if TYPE_CHECKING:
    from referencing._core import Resolver  # not re-exported by the package

_log = structlog.get_logger("reactcore.mcp")


def where_invalid(error: Any) -> str:
    """A JSON Schema validation error in words: ``path: message`` (``message`` at the root)."""
    path = ".".join(str(p) for p in error.absolute_path)
    return f"{path}: {error.message}" if path else str(error.message)


def _validator_class(schema: dict[str, Any]) -> Any:
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def _dangling_ref(node: Any, resolver: Resolver[Any], spec: Specification[Any]) -> str | None:
    """The first ``$ref`` under ``node`` that resolves to nothing, else None (values of
    ``enum``, ``const``, ``default`` and ``examples`` are data, not schemas)."""
    if isinstance(node, list):
        return next((r for n in node if (r := _dangling_ref(n, resolver, spec))), None)
    if not isinstance(node, dict):
        return None
    if isinstance(node.get("$id"), str):
        resolver = resolver.in_subresource(spec.create_resource(node))
    ref = node.get("$ref")
    if isinstance(ref, str):
        try:
            resolver.lookup(ref)
        except Unresolvable:
            return ref
    for key, value in node.items():
        if key not in _DATA_KEYWORDS and (found := _dangling_ref(value, resolver, spec)):
            return found
    return None


_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why ``schema`` cannot serve as a tool's input schema (in words), or None.

    It must be valid JSON Schema (its dialect's meta-schema), and every ``$ref`` in it
    must resolve: a provider rejects a whole request carrying a broken schema, and the
    arguments could not be checked against it.
    """
    cls = _validator_class(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        return f"its input schema is not valid JSON Schema: {where_invalid(exc)}"
    spec = specification_with(schema.get("$schema", ""), default=DRAFT202012)
    root = spec.create_resource(schema)
    ref = _dangling_ref(schema, Registry().resolver_with_root(root), spec)
    if ref is not None:
        return f"its input schema refers to {ref!r}, which it does not define"
    return None


def schema_check(schema: dict[str, Any], tool: str) -> Callable[[dict[str, Any]], str | None]:
    """A check of arguments against ``schema`` (one ``schema_problem`` found usable):
    ``None`` when they fit, else the problem, in words for the model.
    """
    cls = _validator_class(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)

    def check(arguments: dict[str, Any]) -> str | None:
        try:
            best = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
        except Unresolvable as exc:  # a reference ``schema_problem`` could not follow
            _log.warning("mcp_schema_unresolvable", tool=tool, ref=str(getattr(exc, "ref", "")))
            return "the tool's input schema refers to a definition it does not have"
        return None if best is None else where_invalid(best)

    return check


def _size(data: str) -> str:
    try:
        n = len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        n = len(data)
    return f"{n} bytes"


def describe(block: mt.ContentBlock) -> str:
    """A content block as the model reads it: text as is, anything else in brackets."""
    if isinstance(block, mt.TextContent):
        return block.text
    if isinstance(block, mt.ImageContent):
        return f"[image: {block.mime_type}, {_size(block.data)}]"
    if isinstance(block, mt.AudioContent):
        return f"[audio: {block.mime_type}, {_size(block.data)}]"
    if isinstance(block, mt.ResourceLink):
        return f"[resource link: {block.name} <{block.uri}>]"
    resource = block.resource
    kind = resource.mime_type or (
        "text" if isinstance(resource, mt.TextResourceContents) else "blob"
    )
    return f"[resource: {resource.uri} ({kind})]"


def result_text(result: mt.CallToolResult) -> str:
    """The text the model gets for ``result`` (without the error marking).

    The blocks in order, text as is; ``structuredContent`` as JSON first when no text
    block is there (servers also send its JSON as text, as the spec asks, and the model
    should not read it twice).
    """
    parts = [describe(b) for b in result.content]
    has_text = any(isinstance(b, mt.TextContent) for b in result.content)
    if result.structured_content is not None and not has_text:
        parts.insert(0, json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def to_response(result: mt.CallToolResult, *, structured: bool = False) -> ToolCallResponse:
    """The tool node's response for a call's result; ``isError`` makes it an error.

    ``structured``: the tool declares an output schema, so its ``structuredContent`` (checked
    against the schema by the SDK) is the response's ``data``, the value the schema
    describes; else ``data`` is the whole result (as the SDK dumps it).
    """
    if structured and not result.is_error:
        data = result.structured_content
    else:
        data = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    text = result_text(result)
    if result.is_error:
        return ToolCallResponse(f"Error: {text}", is_error=True, data=data)
    return ToolCallResponse(text, data=data)


def to_annotations(spec: mt.Tool) -> ToolAnnotations | None:
    """The server's annotations of a tool as reactcore's (``None`` when it gave none)."""
    given = spec.annotations
    if given is None:
        return None
    return ToolAnnotations(
        title=given.title,
        read_only=given.read_only_hint,
        destructive=given.destructive_hint,
        idempotent=given.idempotent_hint,
        open_world=given.open_world_hint,
    )

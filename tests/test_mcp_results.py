"""What the model reads of an MCP result, and how arguments are checked (no server needed)."""

from __future__ import annotations

import mcp.types as mt

from reactcore.mcp._results import result_text, schema_check, schema_problem, to_response


def test_every_kind_of_content_block() -> None:
    """Text as is; audio, resource links and embedded resources as short descriptions, in
    the order the server gave them."""
    result = mt.CallToolResult(
        content=[
            mt.TextContent(type="text", text="two files:"),
            mt.AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
            mt.ResourceLink(type="resource_link", name="report", uri="file:///r.pdf"),
            mt.EmbeddedResource(
                type="resource",
                resource=mt.TextResourceContents(
                    uri="file:///a.txt", mime_type="text/plain", text="hello"
                ),
            ),
            mt.EmbeddedResource(
                type="resource",
                resource=mt.BlobResourceContents(uri="file:///b.bin", blob="AAAA"),
            ),
        ]
    )
    assert result_text(result).split("\n") == [
        "two files:",
        "[audio: audio/wav, 3 bytes]",
        "[resource link: report <file:///r.pdf>]",
        "[resource: file:///a.txt (text/plain)]",
        "[resource: file:///b.bin (blob)]",
    ]


def test_structured_content_without_text_is_json() -> None:
    """``structuredContent`` alone reaches the model as JSON; the response keeps it."""
    result = mt.CallToolResult(content=[], structured_content={"temp": 21.5, "city": "Zürich"})
    response = to_response(result)
    assert response.text == '{"temp": 21.5, "city": "Zürich"}'
    assert not response.is_error
    assert response.data["structuredContent"] == {"temp": 21.5, "city": "Zürich"}


def test_schema_check_subset_servers_use() -> None:
    """The checks MCP servers' schemas ask for: types, required, additionalProperties,
    enum, items, anyOf and formats; the first problem is named with its path."""
    check = schema_check(
        {
            "type": "object",
            "properties": {
                "mode": {"enum": ["fast", "slow"]},
                "ids": {"type": "array", "items": {"type": "integer"}},
                "when": {"type": "string", "format": "date"},
                "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            },
            "required": ["mode"],
            "additionalProperties": False,
        },
        "t",
    )
    assert check({"mode": "fast", "ids": [1, 2], "when": "2026-12-03", "limit": None}) is None
    assert check({}) == "'mode' is a required property"
    assert check({"mode": "quick"}) == "mode: 'quick' is not one of ['fast', 'slow']"
    assert check({"mode": "fast", "ids": [1, "2"]}) == "ids.1: '2' is not of type 'integer'"
    assert check({"mode": "fast", "when": "soon"}) == "when: 'soon' is not a 'date'"
    assert check({"mode": "fast", "limit": "3"}) == (
        "limit: '3' is not valid under any of the given schemas"
    )
    assert check({"mode": "fast", "other": 1}) == (
        "Additional properties are not allowed ('other' was unexpected)"
    )


DANGLING = {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}}


def test_unusable_schemas_are_named() -> None:
    """``schema_problem`` says, in words, why a schema cannot serve as a tool's input
    schema (not valid JSON Schema; a ``$ref`` to nothing), and finds nothing wrong with
    references that resolve or with ``$ref``-like data in ``enum``."""
    assert schema_problem({"type": "no-such-type"}) == (
        "its input schema is not valid JSON Schema: type: 'no-such-type' is not valid under "
        "any of the given schemas"
    )
    assert schema_problem({"type": "object", "properties": 5}) == (
        "its input schema is not valid JSON Schema: properties: 5 is not of type 'object'"
    )
    assert schema_problem(DANGLING) == (
        "its input schema refers to '#/$defs/missing', which it does not define"
    )
    defined = {**DANGLING, "$defs": {"missing": {"type": "string"}}}
    assert schema_problem(defined) is None
    data = {"type": "object", "properties": {"x": {"enum": [{"$ref": "#/nowhere"}]}}}
    assert schema_problem(data) is None


def test_an_unresolvable_reference_answers_in_words() -> None:
    """Should a reference still fail while arguments are checked, the model reads that
    the tool's schema is broken, not ``_WrappedReferencingError``."""
    check = schema_check(DANGLING, "t")
    assert check({"x": 1}) == "the tool's input schema refers to a definition it does not have"

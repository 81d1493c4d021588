"""What a cassette stores of a tool call and its answer, and the answer it replays.

A call is matched by its tool's name and arguments (``call_record``), and — when it runs
again after it paused the run for approval — by the decisions it was resumed with, so a
replay resumed with other decisions fails naming the decision that changed instead of
replaying the recorded one.

An answer (``answer_record``) is its text, error mark, ``data`` and state updates (as
JSON), its content parts and, for a call that paused the run for approval
(``ToolCallResponse.interrupt``), the calls it waits on. Parts and calls are written by
the project's one converter in the checkpoints' own form (parts a union tagged by
``"type"``: ``text``, ``image``, ``audio``, ``file``; inline data stays the base64
``data:`` URL it is, one string, never decoded or escaped), and read back through it
(``answer_of``), so a replayed answer is the recorded one exactly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import cattrs

from ._approval import Edit, Interrupt, Reject, Resume
from ._cassette_match import redact_json, redact_text
from ._exceptions import CassetteError
from ._interceptors import ToolCallRequest, ToolCallResponse
from ._messages import ContentPart, ToolCall
from ._serde import converter
from ._tools import TOOL_DECISIONS

# The part union's hooks on the converter (the checkpoints' tagged form) are registered
# where checkpoints are written: imported for that, before any part is turned to JSON.
from .savers import _document as _document

_PARTS = tuple[ContentPart, ...]
_CALLS = tuple[ToolCall, ...]


def call_record(request: ToolCallRequest, secrets: tuple[str, ...]) -> dict[str, Any]:
    """What a call is matched by: its tool's name and arguments (as JSON when they are),
    and the decisions it runs again with after a pause (only then), redacted."""
    call = request.call
    arguments = _json_or_text(call.arguments)
    what: dict[str, Any] = {"tool": call.name, "arguments": redact_json(arguments, secrets)}
    found: Mapping[str, Resume] = request.config.context.get(TOOL_DECISIONS) or {}
    resume = found.get(call.id)
    if resume is not None:
        what["decisions"] = redact_json(_decisions(resume), secrets)
    return what


def _decisions(resume: Resume) -> dict[str, Any]:
    """A ``Resume`` as JSON: per call id, ``{"decision": "approve"}``, ``{"decision":
    "edit", "arguments": ...}`` (as JSON when they are) or ``{"decision": "reject",
    "message": ...}``."""
    out: dict[str, Any] = {}
    for call_id, decision in resume.decisions.items():
        if isinstance(decision, Edit):
            given = decision.arguments
            arguments = given if isinstance(given, str) else json.dumps(dict(given))
            out[call_id] = {"decision": "edit", "arguments": _json_or_text(arguments)}
        elif isinstance(decision, Reject):
            out[call_id] = {"decision": "reject", "message": decision.message}
        else:
            out[call_id] = {"decision": "approve"}
    return out


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def answer_record(
    name: str, response: ToolCallResponse, secrets: tuple[str, ...]
) -> dict[str, Any]:
    """What a tool call answered, as JSON (see the module); ``CassetteError`` for ``data``
    or state updates that are no JSON."""
    record: dict[str, Any] = {"text": redact_text(response.text, secrets)}
    if response.is_error:
        record["is_error"] = True
    if response.parts:
        record["parts"] = redact_json(converter.unstructure(response.parts, _PARTS), secrets)
    if response.interrupt is not None:
        calls = converter.unstructure(response.interrupt.calls, _CALLS)
        record["interrupt"] = redact_json(calls, secrets)
    for field in ("data", "update"):
        value = getattr(response, field)
        if value is None or (field == "update" and not value):
            continue
        try:
            plain_value = json.loads(json.dumps(converter.unstructure(value)))
        except (TypeError, ValueError) as exc:
            raise CassetteError(
                f"tool '{name}' answered with {field} that is no JSON, which a cassette cannot "
                f"record: {exc}"
            ) from None
        record[field] = redact_json(plain_value, secrets)
    return record


def answer_of(record: Mapping[str, Any], where: str) -> ToolCallResponse:
    """The answer ``answer_record`` wrote; ``CassetteError`` naming ``where`` (the file)
    when its parts or waiting calls are malformed."""
    try:
        parts = converter.structure(record.get("parts", []), _PARTS)
        calls = converter.structure(record.get("interrupt", []), _CALLS)
        return ToolCallResponse(
            str(record.get("text", "")),
            is_error=bool(record.get("is_error", False)),
            update=dict(record.get("update") or {}),
            parts=parts,
            data=record.get("data"),
            interrupt=Interrupt(calls) if calls else None,
        )
    except (cattrs.BaseValidationError, TypeError, ValueError) as exc:
        raise CassetteError(
            f"{where} is a damaged cassette: a malformed tool answer ({exc})"
        ) from None

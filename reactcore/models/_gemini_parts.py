"""The parts of a Gemini model turn, and how they survive the round trip.

A Gemini answer is a list of parts: text, ``thought`` text (with ``includeThoughts``),
``functionCall``s, and parts reactcore does not map (``executableCode`` …); any part may
carry a ``thoughtSignature``, which the API wants back on the same part of the same turn
(for a function-calling turn, on its first ``functionCall``: the API refuses the next
request without it). An ``AssistantMessage`` holds the text and the tool calls; the rest
is its ``provider_data["google"]["parts"]``, a *layout* of the turn in order:

- ``{"ref": "text", "size": n}``: the next ``n`` characters of the message's text;
- ``{"ref": "call", "index": i}``: the message's tool call ``i`` (``"made_id": true`` when
  the model gave the call no id and reactcore made one up: that id is never sent, and the
  call and its response pair by order and name; any other call's id goes with the call
  and with its response);
- ``{"part": {...}}``: a part kept as it came (thoughts, and parts not mapped);

each with the ``thoughtSignature`` its part carried. Consecutive unsigned text (or
thought) parts are joined as one; a signed part stays apart, so each signature goes back
on the very part it came on. A message whose layout holds nothing of that kind (no
thought, signature, made-up id or unmapped part) gets no provider data, and goes back as
its text then its calls.

``model_parts`` rebuilds the turn's parts for a request from the message and its layout.
If the message's text no longer adds up to the layout's sizes (an interceptor edited it)
the text goes as one part, without the text signatures, where the first text was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .._messages import AssistantMessage, ToolCall
from ._wire import call_arguments

PROVIDER = "google"
"""The key of this provider's data on messages (``AssistantMessage.provider_data``)."""
SIGNATURE = "thoughtSignature"


def _signed(entry: dict[str, Any], signature: str | None) -> dict[str, Any]:
    if signature is not None:
        entry[SIGNATURE] = signature
    return entry


@attrs.define
class Layout:
    """The layout of one model turn being read (see the module)."""

    entries: list[dict[str, Any]] = attrs.field(factory=list)
    calls: int = 0
    kept: bool = False

    def text(self, size: int, signature: str | None) -> None:
        """``size`` characters of the message's text came in a part."""
        last = self.entries[-1] if self.entries else None
        if (
            signature is None
            and last is not None
            and last.get("ref") == "text"
            and (SIGNATURE not in last)
        ):
            last["size"] += size
            return
        self.kept |= signature is not None
        self.entries.append(_signed({"ref": "text", "size": size}, signature))

    def thought(self, text: str, signature: str | None) -> None:
        """A thought part (its text cleaned)."""
        self.kept = True
        last = self.entries[-1]["part"] if self.entries and "part" in self.entries[-1] else None
        if signature is None and last is not None and set(last) == {"text", "thought"}:
            last["text"] += text
            return
        self.entries.append({"part": _signed({"text": text, "thought": True}, signature)})

    def call(self, given_id: bool, signature: str | None) -> int:
        """A function call (``given_id``: with the model's own id); its index among the
        turn's calls."""
        entry: dict[str, Any] = {"ref": "call", "index": self.calls}
        if not given_id:
            entry["made_id"] = True
        self.kept |= not given_id or signature is not None
        self.entries.append(_signed(entry, signature))
        self.calls += 1
        return self.calls - 1

    def other(self, part: Mapping[str, Any]) -> None:
        """A part reactcore does not map, kept whole."""
        self.kept = True
        self.entries.append({"part": dict(part)})

    def provider_data(self) -> dict[str, Any]:
        """``{"google": {"parts": …}}`` when the layout holds anything, else ``{}``."""
        return {PROVIDER: {"parts": self.entries}} if self.kept else {}


def layout_of(message: AssistantMessage) -> list[Mapping[str, Any]]:
    """The layout on ``message`` (this provider's data only; entries of other shapes
    left out), empty when there is none."""
    data = message.provider_data.get(PROVIDER)
    found = data.get("parts") if isinstance(data, Mapping) else None
    if not isinstance(found, list):
        return []
    return [e for e in found if isinstance(e, Mapping) and _known(e)]


def _known(entry: Mapping[str, Any]) -> bool:
    if isinstance(entry.get("part"), Mapping):
        return True
    if entry.get("ref") == "text":
        return _count(entry.get("size"))
    return entry.get("ref") == "call" and _count(entry.get("index"))


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _sign(part: dict[str, Any], entry: Mapping[str, Any]) -> dict[str, Any]:
    signature = entry.get(SIGNATURE)
    if isinstance(signature, str):
        part[SIGNATURE] = signature
    return part


def _function_call(call: ToolCall, send_id: bool, ids: set[str]) -> dict[str, Any]:
    function: dict[str, Any] = {"name": call.name, "args": call_arguments(call.arguments)}
    if send_id and call.id:
        ids.add(call.id)
        function = {"id": call.id, **function}
    return {"functionCall": function}


def model_parts(
    message: AssistantMessage, *, call_ids: bool = True
) -> tuple[list[dict[str, Any]], set[str]]:
    """The parts of ``message`` as a ``model`` turn, signatures where they came (see the
    module); and the ids sent with its calls (their responses carry them too).
    ``call_ids=False`` sends no call any id (Vertex AI refuses the field)."""
    layout = layout_of(message)
    calls = message.tool_calls
    text = message.text
    fits = sum(e["size"] for e in layout if e.get("ref") == "text") == len(text)
    parts: list[dict[str, Any]] = []
    ids: set[str] = set()
    used: set[int] = set()
    at = 0
    text_at: int | None = None  # where the text goes as one part, when it does not fit
    for entry in layout:
        ref = entry.get("ref")
        if ref is None:
            parts.append(dict(entry["part"]))
        elif ref == "text" and fits:
            size = entry["size"]
            parts.append(_sign({"text": text[at : at + size]}, entry))
            at += size
        elif ref == "text":
            text_at = len(parts) if text_at is None else text_at
        elif entry["index"] < len(calls) and entry["index"] not in used:
            used.add(entry["index"])
            call = calls[entry["index"]]
            send_id = call_ids and entry.get("made_id") is not True
            parts.append(_sign(_function_call(call, send_id, ids), entry))
    parts += [_function_call(c, call_ids, ids) for i, c in enumerate(calls) if i not in used]
    if text and not fits:
        if text_at is None:  # no text in the layout: before the first call
            text_at = next((i for i, p in enumerate(parts) if "functionCall" in p), len(parts))
        parts.insert(text_at, {"text": text})
    return parts, ids

"""What a ``useChat`` request asks for: the body ``DefaultChatTransport`` sends (``{id,
messages, trigger, messageId}``) checked, and its UI messages as reactcore messages.

UI messages become reactcore messages this way:

- ``user``: its text parts and file parts, in order, as one ``UserMessage`` (the first
  text part is ``text``, the rest ``parts``); a file part whose ``mediaType`` is an
  image becomes an ``ImagePart`` (a ``data:`` URL or an ``http(s)`` URL), ``audio/wav`` or
  ``audio/mpeg`` inline data an ``AudioPart``, any other file a ``FilePart`` (inline
  ``data:`` URLs only: a provider cannot fetch a URL for it).
- ``assistant``: one ``AssistantMessage`` per step (``step-start`` parts split them), its
  text parts joined, each tool part (``tool-<name>``, ``dynamic-tool``) a ``ToolCall``
  with the part's ``input`` as JSON; a tool part with an outcome (``output-available``,
  ``output-error``, ``output-denied``) also answers the call in a ``ToolResponseMessage``
  after the step. Tool parts without an outcome (the client never ran them) are left out
  with their call, so the history never holds an unanswered call.
- ``system`` messages, reasoning, sources, data and custom parts are left out: the
  agent's own instructions stand (a browser does not rewrite them) and the model's past
  reasoning is not sent back.

Malformed shapes are a ``RequestRefused`` (400/422) naming what does not fit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .._approval import Approve, Decision, Reject, Resume
from .._exceptions import RequestRefused
from .._messages import (
    AssistantMessage,
    AudioPart,
    ContentPart,
    FilePart,
    ImagePart,
    Message,
    TextPart,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    split_data_url,
)

OUTCOMES = ("output-available", "output-error", "output-denied")
DENIED = "The user rejected this tool call."
_AUDIO = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def _bad(message: str) -> RequestRefused:
    return RequestRefused(422, "bad_request", message)


@attrs.frozen
class ChatRequest:
    """The checked body of one ``useChat`` request.

    ``chat_id`` is the chat's ``id`` (the thread, scoped to the principal, with a saver);
    ``messages`` the UI messages as sent; ``trigger`` ``"submit-message"`` or
    ``"regenerate-message"``.
    """

    chat_id: str | None
    messages: tuple[Mapping[str, Any], ...]
    trigger: str

    @property
    def last(self) -> Mapping[str, Any] | None:
        """The last UI message, if any."""
        return self.messages[-1] if self.messages else None


def read_request(body: Any, max_messages: int) -> ChatRequest:
    """``body`` as a ``ChatRequest``: 400 when it is not an object with a ``messages``
    list, 413 beyond ``max_messages`` messages, 422 for a message of the wrong shape."""
    if not isinstance(body, Mapping):
        raise RequestRefused(400, "bad_request", "the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise RequestRefused(400, "bad_request", "'messages' must be a list of UI messages")
    if len(messages) > max_messages:
        raise RequestRefused(
            413, "too_many_messages", f"a request may carry at most {max_messages} messages"
        )
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise _bad(f"messages[{index}] must be an object")
        if message.get("role") not in ("system", "user", "assistant"):
            raise _bad(f"messages[{index}].role must be 'system', 'user' or 'assistant'")
        parts = message.get("parts")
        if not isinstance(parts, list) or not all(isinstance(p, Mapping) for p in parts):
            raise _bad(f"messages[{index}].parts must be a list of objects")
        if not all(isinstance(p.get("type"), str) for p in parts):
            raise _bad(f"messages[{index}]: every part needs a 'type' string")
    chat_id = body.get("id")
    if chat_id is not None and (not isinstance(chat_id, str) or not chat_id):
        raise RequestRefused(400, "bad_request", "'id' must be a non-empty string")
    trigger = body.get("trigger", "submit-message")
    if trigger not in ("submit-message", "regenerate-message"):
        raise _bad("'trigger' must be 'submit-message' or 'regenerate-message'")
    return ChatRequest(chat_id, tuple(messages), trigger)


# --- UI messages → reactcore messages ---------------------------------------------------


def _text(part: Mapping[str, Any], where: str) -> str:
    text = part.get("text")
    if not isinstance(text, str):
        raise _bad(f"{where}: a text part needs 'text' (a string)")
    return text


def _file(part: Mapping[str, Any], where: str) -> ContentPart:
    url, media_type = part.get("url"), part.get("mediaType")
    if not isinstance(url, str) or not url or not isinstance(media_type, str):
        raise _bad(f"{where}: a file part needs 'url' and 'mediaType' (strings)")
    filename = part.get("filename") if isinstance(part.get("filename"), str) else None
    inline = split_data_url(url)
    if media_type.startswith("image/"):
        if inline is None and not url.startswith(("https://", "http://")):
            raise _bad(f"{where}: an image must be a base64 data: URL or an http(s) URL")
        return ImagePart(url)
    if inline is None:
        raise _bad(f"{where}: a file other than an image must be sent as a base64 data: URL")
    if media_type in _AUDIO:
        return AudioPart(inline[1], _AUDIO[media_type])
    return FilePart(file_data=url, filename=filename)


def _user(message: Mapping[str, Any], where: str) -> UserMessage:
    text: str | None = None
    parts: list[ContentPart] = []
    for index, part in enumerate(message["parts"]):
        kind, at = part["type"], f"{where}.parts[{index}]"
        if kind == "text":
            if text is None and not parts:
                text = _text(part, at)
            else:
                parts.append(TextPart(_text(part, at)))
        elif kind == "file":
            parts.append(_file(part, at))
    return UserMessage(text or "", tuple(parts))


def tool_name(part: Mapping[str, Any]) -> str | None:
    """The tool a UI tool part calls (``tool-<name>`` or ``dynamic-tool``), else ``None``."""
    kind = part["type"]
    if kind == "dynamic-tool":
        name = part.get("toolName")
        return name if isinstance(name, str) and name else None
    if kind.startswith("tool-") and len(kind) > 5:
        return str(kind[5:])
    return None


def _output_text(output: Any) -> str:
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


def _answer(part: Mapping[str, Any], call: ToolCall) -> ToolResponse:
    state = part["state"]
    if state == "output-available":
        return ToolResponse(call.id, call.name, _output_text(part.get("output")))
    if state == "output-error":
        error = part.get("errorText")
        return ToolResponse(call.id, call.name, str(error or "Error"), is_error=True)
    approval = part.get("approval")
    reason = approval.get("reason") if isinstance(approval, Mapping) else None
    return ToolResponse(call.id, call.name, str(reason or DENIED), is_error=True)


def _call(part: Mapping[str, Any], name: str, where: str) -> ToolCall:
    call_id = part.get("toolCallId")
    if not isinstance(call_id, str) or not call_id:
        raise _bad(f"{where}: a tool part needs 'toolCallId' (a string)")
    arguments = part.get("input")
    raw = json.dumps({} if arguments is None else arguments, ensure_ascii=False)
    return ToolCall(call_id, name, raw)


def _assistant(message: Mapping[str, Any], where: str) -> list[Message]:
    out: list[Message] = []
    texts: list[str] = []
    calls: list[ToolCall] = []
    answers: list[ToolResponse] = []

    def close_step() -> None:
        if texts or calls:
            out.append(AssistantMessage("".join(texts), calls))
        if answers:
            out.append(ToolResponseMessage(answers))
        texts.clear()
        calls.clear()
        answers.clear()

    for index, part in enumerate(message["parts"]):
        kind, at = part["type"], f"{where}.parts[{index}]"
        if kind == "step-start":
            close_step()
        elif kind == "text":
            texts.append(_text(part, at))
        else:
            name = tool_name(part)
            if name is not None and part.get("state") in OUTCOMES:
                call = _call(part, name, at)
                calls.append(call)
                answers.append(_answer(part, call))
    close_step()
    return out


def to_messages(messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    """The UI ``messages`` (checked by ``read_request``) as reactcore messages (see the
    module docstring)."""
    out: list[Message] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if message["role"] == "user":
            out.append(_user(message, where))
        elif message["role"] == "assistant":
            out.extend(_assistant(message, where))
    return out


def approval_answers(message: Mapping[str, Any]) -> Resume | None:
    """The decisions a client's assistant ``message`` carries (its tool parts in state
    ``approval-responded``: ``approved`` → ``Approve``, else ``Reject`` with the client's
    ``reason``), as a ``Resume``; ``None`` when it answers no approval."""
    decisions: dict[str, Decision] = {}
    for part in message["parts"]:
        if tool_name(part) is None or part.get("state") != "approval-responded":
            continue
        approval, call_id = part.get("approval"), part.get("toolCallId")
        if not isinstance(approval, Mapping) or not isinstance(call_id, str) or not call_id:
            raise _bad("an approval-responded tool part needs 'toolCallId' and 'approval'")
        approved, reason = approval.get("approved"), approval.get("reason")
        if not isinstance(approved, bool):
            raise _bad("approval.approved must be a boolean")
        if approved:
            decisions[call_id] = Approve()
        else:
            text = reason if isinstance(reason, str) and reason.strip() else DENIED
            decisions[call_id] = Reject(text)
    return Resume(decisions) if decisions else None

"""AG-UI messages to reactcore messages and back.

In: a client's ``RunAgentInput.messages`` become reactcore messages: ``user`` →
``UserMessage`` (text, or content parts: text, images, audio and documents given inline
or by URL where a reactcore part can hold them), ``assistant`` → ``AssistantMessage``
with its ``toolCalls``, the ``tool`` messages after an assistant message → one
``ToolResponseMessage`` answering its calls in call order, ``system`` / ``developer`` →
``SystemMessage``. ``activity`` and ``reasoning`` messages are the client's display
only and are left out.

A call the messages after its assistant message leave unanswered (the client did not
answer a frontend tool, or a server tool of the same batch never ran because the run
stopped at a frontend call) is answered with an error the model reads, so the
conversation sent to a model is always whole.

Out: the thread's messages as AG-UI messages (``MESSAGES_SNAPSHOT``), with ids made from
their place in the conversation (``m<index>``; a tool response ``m<index>-<call id>``;
an answer's reasoning, a ``reasoning`` message before it, ``m<index>-reasoning``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._exceptions import RequestRefused
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
    split_data_url,
)

if TYPE_CHECKING:
    from ag_ui import core

NOT_ANSWERED = "Error: the client sent no result for this call."
NOT_RUN = (
    "Error: not run: the run stopped for the client's tool calls of the same turn; "
    "call it again if it is still needed."
)


def _refused(message: str) -> RequestRefused:
    return RequestRefused(422, "bad_messages", message)


# --- in -----------------------------------------------------------------------------------


def _source_url(source: Any) -> str:
    if source.type == "data":
        return f"data:{source.mime_type};base64,{source.value}"
    if source.type == "url":
        return str(source.value)
    raise _refused("content parts given as a provider's file id are not supported")


def _part(part: Any) -> ContentPart:
    kind = part.type
    if kind == "text":
        return TextPart(part.text)
    if kind == "image":
        return ImagePart(_source_url(part.source))
    if kind == "audio" and part.source.type == "data":
        subtype = part.source.mime_type.partition("/")[2] or "wav"
        return AudioPart(part.source.value, subtype.removeprefix("x-").replace("mpeg", "mp3"))
    if kind == "document" and part.source.type == "data":
        return FilePart(file_data=_source_url(part.source))
    raise _refused(f"a {kind} part given by {part.source.type} is not supported")


def _user(content: str | Sequence[Any]) -> UserMessage:
    if isinstance(content, str):
        return UserMessage(content)
    parts = tuple(_part(p) for p in content)
    if parts and isinstance(parts[0], TextPart):
        return UserMessage(parts[0].text, parts[1:])
    return UserMessage("", parts)


def _text_of(content: str | Sequence[Any]) -> str:
    if isinstance(content, str):
        return content
    parts: Sequence[Any] = content
    return "".join(p.text for p in parts if p.type == "text")


def _answered(
    assistant: AssistantMessage, responses: Mapping[str, ToolResponse], frontend: Iterable[str]
) -> ToolResponseMessage:
    """The answer to ``assistant``'s calls: the client's ``responses``, and an error for
    every call they leave out (see the module docstring)."""
    names = set(frontend)
    answers = []
    for call in assistant.tool_calls:
        found = responses.get(call.id)
        if found is None:
            text = NOT_ANSWERED if call.name in names else NOT_RUN
            found = ToolResponse(call.id, call.name, text, is_error=True)
        answers.append(found)
    return ToolResponseMessage(answers)


def to_reactcore(
    messages: Sequence[core.Message],
    *,
    before: Message | None = None,
    frontend: Iterable[str] = (),
) -> list[Message]:
    """``messages`` as reactcore messages (see the module docstring); ``before`` is the
    message they follow (the thread's last), whose tool calls the first ``tool`` messages
    answer; ``frontend`` names the client's tools. 422 when a ``tool`` message answers no
    call of the assistant message before it."""
    frontend = tuple(frontend)
    out: list[Message] = []
    waiting = before if isinstance(before, AssistantMessage) and before.tool_calls else None
    responses: dict[str, ToolResponse] = {}

    def close() -> None:
        nonlocal waiting
        if waiting is not None:
            out.append(_answered(waiting, responses, frontend))
        waiting = None
        responses.clear()

    from ag_ui import core

    for message in messages:
        if isinstance(message, core.ToolMessage):
            calls = {c.id: c for c in waiting.tool_calls} if waiting is not None else {}
            call = calls.get(message.tool_call_id)
            if call is None:
                raise _refused(
                    f"tool message {message.id!r} answers {message.tool_call_id!r}, which is "
                    "no call of the assistant message before it"
                )
            text = _text_of(message.content) or message.error or ""
            responses[call.id] = ToolResponse(
                call.id, call.name, text, is_error=message.error is not None
            )
            continue
        if isinstance(message, core.ActivityMessage | core.ReasoningMessage):
            continue
        close()
        if isinstance(message, core.UserMessage):
            out.append(_user(message.content))
        elif isinstance(message, core.SystemMessage | core.DeveloperMessage):
            out.append(SystemMessage(message.content, role=message.role))
        else:
            made = [
                ToolCall(c.id, c.function.name, c.function.arguments or "{}")
                for c in message.tool_calls or ()
            ]
            assistant = AssistantMessage(message.content or "", made)
            out.append(assistant)
            waiting = assistant if made else None
    if messages:  # nothing sent: nothing to answer for (a thread's unfinished run goes on)
        close()
    return out


def new_messages(messages: Sequence[core.Message]) -> Sequence[core.Message]:
    """What a client adds to a thread the server holds: its messages after its last
    assistant message (AG-UI clients send the whole history with every request)."""
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    return messages[last + 1 :]


def without_repeats(held: Sequence[Message], new: Sequence[Message]) -> list[Message]:
    """``new`` less the messages the thread already ends with (a run cancelled before the
    model answered holds the user's message already)."""
    for size in range(min(len(held), len(new)), 0, -1):
        if list(held[-size:]) == list(new[:size]):
            return list(new[size:])
    return list(new)


# --- out ----------------------------------------------------------------------------------


def _source(url: str) -> Any:
    from ag_ui import core

    inline = split_data_url(url)
    if inline is None:
        return core.UrlSource(value=url)
    return core.DataSource(value=inline[1], mime_type=inline[0])


def _part_out(part: ContentPart) -> Any:
    from ag_ui import core

    if isinstance(part, TextPart):
        return core.TextPart(text=part.text)
    if isinstance(part, ImagePart):
        return core.ImagePart(source=_source(part.url))
    if isinstance(part, AudioPart):
        mime = f"audio/{'mpeg' if part.format == 'mp3' else part.format}"
        return core.AudioPart(source=core.DataSource(value=part.data_base64, mime_type=mime))
    if part.file_data is not None:
        return core.DocumentPart(source=_source(part.file_data))
    return core.DocumentPart(source=core.FileSource(value=part.file_id or ""))


def to_ag_ui(messages: Sequence[Message]) -> list[Any]:
    """The conversation ``messages`` as AG-UI messages, for ``MESSAGES_SNAPSHOT``."""
    from ag_ui import core

    out: list[Any] = []
    for index, message in enumerate(messages):
        mid = f"m{index}"
        if isinstance(message, SystemMessage):
            kind = core.DeveloperMessage if message.role == "developer" else core.SystemMessage
            out.append(kind(id=mid, content=message.text))
        elif isinstance(message, UserMessage):
            if message.parts:
                parts: list[Any] = [core.TextPart(text=message.text)] if message.text else []
                parts += [_part_out(p) for p in message.parts]
                out.append(core.UserMessage(id=mid, content=parts))
            else:
                out.append(core.UserMessage(id=mid, content=message.text))
        elif isinstance(message, AssistantMessage):
            if message.reasoning:
                out.append(core.ReasoningMessage(id=f"{mid}-reasoning", content=message.reasoning))
            calls = [
                core.ToolCall(
                    id=c.id, function=core.FunctionCall(name=c.name, arguments=c.arguments)
                )
                for c in message.tool_calls
            ]
            out.append(
                core.AssistantMessage(
                    id=mid, content=message.text or None, tool_calls=calls or None
                )
            )
        else:
            for response in message.responses:
                out.append(
                    core.ToolMessage(
                        id=f"{mid}-{response.id}",
                        content=response.response_data,
                        tool_call_id=response.id,
                        error=response.response_data if response.is_error else None,
                    )
                )
    return out

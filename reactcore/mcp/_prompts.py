"""An MCP server's prompts as reactcore values: ``Prompt`` and the messages of one.

``prompts/list`` gives ``Prompt`` values (with their ``PromptArgument``);
``prompts/get`` a ``PromptResult`` whose messages are reactcore's own: a user message
becomes a ``UserMessage`` (text as its text; an image, audio or an embedded resource as
its one part, ``_content``), an assistant message an ``AssistantMessage`` (which holds
text only: anything else is described in brackets, as a tool result's is). So a prompt
can start a run: ``agent.invoke(list(result.messages))``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import mcp.types as mt

from .. import _validate as valid
from .._messages import AssistantMessage, TextPart, UserMessage
from ._content import block_part
from ._results import describe

_text = valid.text()
_optional_text = valid.text(optional=True)


@attrs.frozen
class PromptArgument:
    """An argument a prompt takes (always a string); ``required`` ones must be given."""

    name: str = attrs.field(validator=_text)
    description: str | None = attrs.field(default=None, validator=_optional_text)
    required: bool = attrs.field(default=False, validator=valid.boolean())
    title: str | None = attrs.field(default=None, validator=_optional_text)


def _to_arguments(value: Any) -> tuple[PromptArgument, ...]:
    return tuple(value)


def _to_messages(value: Any) -> tuple[UserMessage | AssistantMessage, ...]:
    return tuple(value)


@attrs.frozen
class Prompt:
    """A prompt template a server lists: its ``name`` and the ``arguments`` it takes."""

    name: str = attrs.field(validator=_text)
    title: str | None = attrs.field(default=None, validator=_optional_text)
    description: str | None = attrs.field(default=None, validator=_optional_text)
    arguments: tuple[PromptArgument, ...] = attrs.field(
        default=(),
        converter=_to_arguments,
        validator=valid.each(valid.instance_of(PromptArgument, "a PromptArgument")),
    )


@attrs.frozen
class PromptResult:
    """A prompt filled in: its messages, as reactcore messages, and its description."""

    messages: tuple[UserMessage | AssistantMessage, ...] = attrs.field(
        converter=_to_messages,
        validator=valid.each(
            valid.instance_of((UserMessage, AssistantMessage), "a UserMessage or AssistantMessage")
        ),
    )
    description: str | None = attrs.field(default=None, validator=_optional_text)


def to_prompt(prompt: mt.Prompt) -> Prompt:
    arguments = [
        PromptArgument(a.name, a.description, bool(a.required), a.title)
        for a in prompt.arguments or ()
    ]
    return Prompt(prompt.name, prompt.title, prompt.description, arguments)


def to_message(message: mt.PromptMessage, server: str) -> UserMessage | AssistantMessage:
    """One prompt message as a reactcore message (see the module docstring)."""
    block = message.content
    if message.role == "assistant":
        return AssistantMessage(describe(block))
    part = block_part(block, server)
    if isinstance(part, TextPart):
        return UserMessage(part.text)
    return UserMessage("", parts=(part,))


def to_result(result: mt.GetPromptResult, server: str) -> PromptResult:
    return PromptResult([to_message(m, server) for m in result.messages], result.description)


def prompt_arguments(arguments: Mapping[str, str] | None) -> dict[str, str] | None:
    """``arguments`` as the protocol takes them (a map of str to str), else ``TypeError``
    naming the parameter."""
    if arguments is None:
        return None
    if not isinstance(arguments, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in arguments.items()
    ):
        raise TypeError(
            f"get_prompt arguments must be a mapping of str to str (MCP prompt arguments are "
            f"strings), got {arguments!r}"
        )
    return dict(arguments)

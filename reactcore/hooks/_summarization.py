"""Summarising the older part of a long conversation, in the state itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from .. import _validate as valid
from .._batch import has_pending_updates
from .._config import RunnableConfig
from .._llm_node import next_request, side_call
from .._logging import get_logger
from .._loop import unanswered
from .._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResponseMessage,
    UserMessage,
)
from .._result import TOKEN_USAGE
from .._state import MESSAGES, OverAllState, ReplaceAll
from .._tokens import OPTIONAL_COUNTER, TokenCounter, count_tokens
from ..models._infer import as_chat_model
from ..models.base import ChatModel, ModelRequest, Usage
from ._limits import name_field

DEFAULT_PROMPT = """\
You are summarising the earlier part of a conversation between a user and an AI \
assistant that uses tools, so that the assistant can carry on from the summary alone. \
Keep what the rest of the work needs: the user's goal and requests, what was done, the \
facts found (with their figures, names and identifiers), decisions made, and what is \
still open. Be concise and factual, and write only the summary.

<conversation>
{messages}
</conversation>"""

SUMMARY_PREFIX = "Summary of the earlier conversation:\n\n"
"""How a summary message's text begins (the summary follows)."""


def _formats(prompt: str) -> bool:
    try:
        prompt.format(messages="")
    except (KeyError, IndexError, ValueError):
        return False
    return "{messages}" in prompt


_PROMPT = valid.satisfies(
    "a str",
    str,
    limits=[(_formats, "must hold {messages} and no other placeholder (write { } as {{ }})")],
)


def _chat_model(value: Any) -> Any:
    return None if value is None else as_chat_model(value)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def transcript(messages: Sequence[Message], limit: int) -> str:
    """``messages`` as plain text for the summariser, one block per message or tool
    result, each text cut at ``limit`` characters."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, ToolResponseMessage):
            for r in message.responses:
                lines.append(f"[tool result of {r.name}] {_cut(r.response_data, limit)}")
        elif isinstance(message, AssistantMessage):
            if message.text:
                lines.append(f"[assistant] {_cut(message.text, limit)}")
            for c in message.tool_calls:
                lines.append(f"[assistant calls {c.name}] {_cut(c.arguments, limit)}")
        else:
            role = "user" if isinstance(message, UserMessage) else message.role
            parts = "".join(f" {p.describe()}" for p in getattr(message, "parts", ()))
            lines.append(f"[{role}] {_cut(message.text, limit)}{parts}")
    return "\n".join(lines)


def is_summary(message: Message) -> bool:
    """Whether ``message`` is a summary this hook wrote."""
    return isinstance(message, UserMessage) and message.text.startswith(SUMMARY_PREFIX)


@attrs.frozen
class SummarizationHook:
    """Before a model call whose request would pass ``trigger_tokens``
    (``count_tokens``, by ``counter`` or the agent's ``token_counter``), the older part
    of the conversation is summarised by a model call and replaced, in the state, by one
    summary message; the last ``keep_last`` messages stay as they are.

    The summary is a ``UserMessage`` beginning with ``SUMMARY_PREFIX``, put after the
    system messages of the older part (kept whole) and before the kept messages. The
    state is rewritten through the messages key's strategy (``ReplaceAll``), so the
    checkpoint written after the step and a resumed run see the same history. The older
    part never ends between an assistant message and the tool results of its calls
    (``keep_last`` grows to keep them together), and the hook does nothing while calls
    of the last answer are unanswered (mid-batch).

    The summary is asked of ``model`` (a ``ChatModel`` or a provider string; default: the
    agent's model) with ``prompt`` (``{messages}`` is the transcript of the older part,
    each message cut at ``max_message_chars`` characters), whole, outside the
    interceptors, between a ``ModelCallStarted`` and a ``ModelCallFinished`` with
    ``purpose="summary"`` and in a ``chat`` span of its own; its usage is added to the
    conversation's. A failed summary call leaves the history as it was, is logged
    (``summary_failed``), and the run goes on.
    """

    trigger_tokens: int = attrs.field(validator=valid.integer(minimum=1))
    keep_last: int = attrs.field(default=20, validator=valid.integer(minimum=1))
    model: ChatModel | None = attrs.field(
        default=None, converter=_chat_model, validator=valid.chat_model(optional=True)
    )
    counter: TokenCounter | None = attrs.field(default=None, validator=OPTIONAL_COUNTER)
    prompt: str = attrs.field(default=DEFAULT_PROMPT, validator=_PROMPT)
    max_message_chars: int = attrs.field(default=2000, validator=valid.integer(minimum=1))
    name: str = name_field("summarization")

    def split(self, messages: Sequence[Message]) -> int:
        """Where the kept part of ``messages`` starts: ``keep_last`` from the end, earlier
        when that would part tool results from the assistant message that called."""
        cut = max(len(messages) - self.keep_last, 0)
        while cut > 0 and isinstance(messages[cut], ToolResponseMessage):
            cut -= 1
        return cut

    async def before_model(self, state: OverAllState, config: RunnableConfig) -> Any:
        messages: list[Message] = list(state.get(MESSAGES) or ())
        if not messages or unanswered(state) or has_pending_updates(messages[-1]):
            return None
        tokens = count_tokens(next_request(state, config), self.counter)
        if tokens <= self.trigger_tokens:
            return None
        cut = self.split(messages)
        older = messages[:cut]
        kept_system = [m for m in older if isinstance(m, SystemMessage)]
        to_summarise = [m for m in older if not isinstance(m, SystemMessage)]
        if not to_summarise or (len(to_summarise) == 1 and is_summary(to_summarise[0])):
            return None  # nothing new to fold in: the kept part alone is over the trigger
        log = get_logger(hook=self.name)
        text = transcript(to_summarise, self.max_message_chars)
        request = ModelRequest(
            [UserMessage(self.prompt.format(messages=text))],
            context=config.context,
            purpose="summary",
        )
        try:
            response = await side_call(request, config, self.model)
        except Exception as exc:  # the run goes on with the whole history
            log.warning("summary_failed", messages=len(to_summarise), error=type(exc).__name__)
            return None
        summary = response.message.text.strip()
        if not summary:
            log.warning("summary_failed", messages=len(to_summarise), error="an empty answer")
            return None
        history = [*kept_system, UserMessage(SUMMARY_PREFIX + summary), *messages[cut:]]
        update: dict[str, Any] = {MESSAGES: ReplaceAll(history)}
        if response.usage is not None:
            update[TOKEN_USAGE] = (state.get(TOKEN_USAGE) or Usage()) + response.usage
        log.info("conversation_summarised", messages=len(to_summarise), tokens=tokens)
        return update

"""Token accounting: how many tokens a model request takes, before it is sent.

A ``TokenCounter`` counts a list of messages and the tool definitions shown with them.
``ApproximateTokenCounter`` (the default) measures characters and never tokenises;
``TiktokenCounter`` (``reactcore._tiktoken``) tokenises with OpenAI's encodings.

Hooks and interceptors ask through ``count_tokens(request)``: it counts with the run's
counter (the agent's ``token_counter``, which the loop leaves in the run's context) and
corrects the count by what the provider reported for the run's last model call::

    count_tokens(request) = round(count(request) × reported / count(last request))

where ``reported`` is the ``prompt_tokens`` the provider reported for the last model call
of the agent in this run, and ``count(last request)`` what the same counter gives for the
request that call really sent (after every model interceptor). Before the run's first
reported usage the factor is 1. A counter that is off by a steady factor for this
provider (characters per token differ by language and by tokenizer) is so brought back
to the provider's own figures after one call.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from . import _validate as valid
from ._messages import (
    AssistantMessage,
    ContentPart,
    Message,
    SystemMessage,
    TextPart,
    ToolResponseMessage,
)
from .models.base import ModelRequest, ToolSpec, Usage

TOKEN_COUNTER = "_token_counter_"
"""The key, in a run's context, of the agent's ``TokenCounter`` (the loop sets it)."""
LAST_CALL = "_last_model_call_"
"""The key, in a run's context, of the last model call's request and reported usage."""


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of ``messages`` (the system message included, when it is one of
    them) with the definitions of ``tools`` shown beside them."""

    def count(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int: ...


def counter_field(*, optional: bool) -> valid.Validator:
    """A ``TokenCounter``: an object with ``count`` (not a sequence, whose ``count`` is
    another thing)."""
    return valid.satisfies(
        "a TokenCounter (with count(messages, tools))",
        test=lambda v: callable(getattr(v, "count", None)),
        reject=(str, bytes, bytearray, list, tuple, range),
        optional=optional,
    )


COUNTER = counter_field(optional=False)
OPTIONAL_COUNTER = counter_field(optional=True)


@attrs.frozen
class Entry:
    """One entry of a request as a provider's wire carries it: a message, or one tool
    result (each is a message of its own on the wire): its role, its texts, and how many
    images, audio clips and files it holds."""

    role: str
    texts: tuple[str, ...]
    media: int = 0


def _parts(parts: Sequence[ContentPart]) -> tuple[list[str], int]:
    texts = [p.text for p in parts if isinstance(p, TextPart)]
    return texts, len(parts) - len(texts)


def entries(messages: Sequence[Message]) -> Iterator[Entry]:
    """The entries of ``messages``: texts are message texts, tool-call ids, names and
    arguments, tool results and text parts; other parts are counted as media."""
    for message in messages:
        if isinstance(message, ToolResponseMessage):
            for response in message.responses:
                texts, media = _parts(response.parts)
                yield Entry("tool", (response.id, response.response_data, *texts), media)
        elif isinstance(message, AssistantMessage):
            calls = [text for c in message.tool_calls for text in (c.id, c.name, c.arguments)]
            yield Entry("assistant", (message.text, *calls))
        elif isinstance(message, SystemMessage):
            yield Entry(message.role, (message.text,))
        else:
            texts, media = _parts(message.parts)
            yield Entry("user", (message.text, *texts), media)


def request_messages(request: ModelRequest) -> list[Message]:
    """The messages ``request`` sends: its system message first, when it has one."""
    system = request.system_message
    return [system, *request.messages] if system is not None else list(request.messages)


def text_size(text: str) -> int:
    """Characters of ASCII text; UTF-8 bytes of any other (a CJK character is 3 bytes,
    closer to its real token cost than 1 character)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _schema_text(spec: ToolSpec) -> str:
    return json.dumps(spec.parameters, separators=(",", ":"), default=str)


_COUNT = valid.integer(minimum=0)


@attrs.frozen
class ApproximateTokenCounter:
    """A cheap estimate, never a tokenizer: for deciding when to act on a long context,
    not for billing. It is exactly::

        ceil(C / chars_per_token) + tokens_per_message × E + media_tokens × P
            + tokens_per_request

    where ``C`` is the size of every text the request carries (message texts, roles,
    tool-call ids, names and arguments, tool results, text parts, and each tool's name,
    description and JSON Schema), in characters for ASCII text and in UTF-8 bytes for
    any other; ``E`` counts entries (each message, each tool result and each tool
    definition: what the wire carries as one item with its own framing); ``P`` counts
    images, audio clips and files, whose real cost depends on a size or duration the
    counter does not decode. English prose and JSON run near 4 characters a token with
    OpenAI's and Anthropic's tokenizers; ``count_tokens`` corrects the rest from the
    provider's reported usage.
    """

    chars_per_token: float = attrs.field(default=4.0, validator=valid.number(positive=True))
    tokens_per_message: int = attrs.field(default=4, validator=_COUNT)
    media_tokens: int = attrs.field(default=1000, validator=_COUNT)
    tokens_per_request: int = attrs.field(default=3, validator=_COUNT)

    def count(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
        """The estimate for ``messages`` and ``tools`` (see the class docstring)."""
        size = n = media = 0
        for entry in entries(messages):
            n += 1
            media += entry.media
            size += text_size(entry.role) + sum(text_size(t) for t in entry.texts)
        for spec in tools:
            n += 1
            size += text_size(spec.name) + text_size(spec.description)
            size += text_size(_schema_text(spec))
        return (
            math.ceil(size / self.chars_per_token)
            + n * self.tokens_per_message
            + media * self.media_tokens
            + self.tokens_per_request
        )


DEFAULT_COUNTER = ApproximateTokenCounter()


@attrs.define(eq=False)
class _LastCall:
    """The request a model call of the run sent, what the provider said it counted, and
    the correction each counter asked for so far (computed once per counter)."""

    request: ModelRequest
    prompt_tokens: int
    factors: list[tuple[TokenCounter, float]] = attrs.field(factory=list)

    def factor(self, counter: TokenCounter) -> float:
        for known, factor in self.factors:
            if known is counter:
                return factor
        estimate = counter_count(counter, self.request)
        factor = self.prompt_tokens / estimate if estimate > 0 else 1.0
        self.factors.append((counter, factor))
        return factor


def record_call(context: dict[str, Any], request: ModelRequest, usage: Usage | None) -> None:
    """Remember, in the run's ``context``, the request a model call sent and the prompt
    tokens its provider reported (a call without reported usage leaves the last one)."""
    if usage is not None and usage.prompt_tokens > 0:
        context[LAST_CALL] = _LastCall(request, usage.prompt_tokens)


def run_counter(context: Mapping[str, Any]) -> TokenCounter:
    """The run's counter: the agent's ``token_counter``, else the approximate one."""
    counter: TokenCounter = context.get(TOKEN_COUNTER) or DEFAULT_COUNTER
    return counter


def counter_count(counter: TokenCounter, request: ModelRequest) -> int:
    """What ``counter`` says of ``request`` as it stands (no correction)."""
    return counter.count(request_messages(request), request.visible_tool_specs())


def count_tokens(request: ModelRequest, counter: TokenCounter | None = None) -> int:
    """The tokens ``request`` would take: its system message, messages and visible tool
    definitions counted by ``counter`` (default: the run's, see the module docstring),
    times the correction learnt from the run's last reported usage."""
    chosen = run_counter(request.context) if counter is None else counter
    estimate = counter_count(chosen, request)
    last: _LastCall | None = request.context.get(LAST_CALL)
    return estimate if last is None else round(estimate * last.factor(chosen))

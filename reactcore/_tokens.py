"""Token accounting: how many tokens a model request takes, before it is sent.

A ``TokenCounter`` counts a list of messages and the tool definitions shown with them.
``ApproximateTokenCounter`` (the default) measures characters and never tokenises;
``TiktokenCounter`` (``reactcore._tiktoken``) tokenises with OpenAI's encodings.

Hooks and interceptors ask through ``count_tokens(request)``: it counts with the run's
counter (the agent's ``token_counter``, which the loop leaves in the run's context) and
corrects the count by what the provider reported for the run's recent model calls::

    count_tokens(request) = round(fixed + factor × count(request))

A provider's figure differs from a counter's in two ways: by a steady factor (its
tokenizer, against characters) and by a fixed part the counter never sees (a system
prompt of its own for tool use, say, the same whatever the request's size). The pairs
(``count(sent request)``, ``prompt_tokens`` reported) of the run's last ``HISTORY`` calls
that reported usage are fitted by least squares to ``fixed + factor × count``, with
``factor`` kept within ``FACTOR_RANGE`` and ``fixed`` at least 0 (see ``Correction.fit``).
From one call (or calls of nearly one size) the two cannot be told apart: a provider
figure above the count is taken as a fixed part (factor 1), one below as a factor (no
fixed part can be negative). Before the run's first reported usage the count is as
counted. A ratio alone would turn a fixed part into a factor: a small first request
under a large tool-use prompt would multiply every later estimate.
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
CALLS = "_model_calls_usage_"
"""The key, in a run's context, of its last model calls' requests and reported usage."""


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


HISTORY = 8
"""How many of a run's last calls that reported usage the correction is fitted to."""
FACTOR_RANGE = (0.25, 4.0)
"""The least and greatest factor the correction takes (a counter of characters is not off
by more for any tokenizer; a steeper fit comes from noise, not from the provider)."""
_SAME_SIZE = 0.05  # counts spread less than this fraction of their mean: one size


def _clamp(factor: float) -> float:
    low, high = FACTOR_RANGE
    return min(max(factor, low), high)


@attrs.frozen
class Correction:
    """How a counter's count is brought to a provider's figures:
    ``fixed + factor × count``."""

    fixed: float = 0.0
    factor: float = 1.0

    def apply(self, count: int) -> int:
        """``count`` corrected."""
        return round(self.fixed + self.factor * count)

    @classmethod
    def fit(cls, pairs: Sequence[tuple[int, int]]) -> Correction:
        """The correction fitted to ``pairs`` of (count, reported): least squares for
        ``reported = fixed + factor × count`` with ``factor`` in ``FACTOR_RANGE`` and
        ``fixed`` ≥ 0 (through the origin when the free fit's ``fixed`` is negative).
        With no pair, none; from counts of one size (one pair), the difference as a
        fixed part when the provider reported more, else as a factor."""
        if not pairs:
            return cls()
        n = len(pairs)
        mx = sum(x for x, _ in pairs) / n
        my = sum(y for _, y in pairs) / n
        spread = max(x for x, _ in pairs) - min(x for x, _ in pairs)
        if spread <= _SAME_SIZE * mx:
            if my >= mx:
                return cls(my - mx, 1.0)
            return cls(0.0, _clamp(my / mx))
        sxx = sum((x - mx) ** 2 for x, _ in pairs)
        sxy = sum((x - mx) * (y - my) for x, y in pairs)
        factor = _clamp(sxy / sxx)
        if my - factor * mx < 0:
            factor = _clamp(sum(x * y for x, y in pairs) / sum(x * x for x, _ in pairs))
        return cls(max(my - factor * mx, 0.0), factor)


@attrs.define(eq=False)
class _Call:
    """A model call that reported usage: the request it sent, the prompt tokens its
    provider reported, and what each counter asked so far says of the request."""

    request: ModelRequest
    reported: int
    counts: list[tuple[TokenCounter, int]] = attrs.field(factory=list)

    def count(self, counter: TokenCounter) -> int:
        for known, count in self.counts:
            if known is counter:
                return count
        count = counter_count(counter, self.request)
        self.counts.append((counter, count))
        return count


@attrs.define(eq=False)
class _Calls:
    """The run's last ``HISTORY`` calls that reported usage, and the correction each
    counter asked for since the last of them (fitted once per counter)."""

    calls: list[_Call] = attrs.field(factory=list)
    fits: list[tuple[TokenCounter, Correction]] = attrs.field(factory=list)

    def add(self, request: ModelRequest, reported: int) -> None:
        self.calls = [*self.calls[len(self.calls) + 1 - HISTORY :], _Call(request, reported)]
        self.fits.clear()

    def correction(self, counter: TokenCounter) -> Correction:
        for known, correction in self.fits:
            if known is counter:
                return correction
        pairs = [(x, c.reported) for c in self.calls if (x := c.count(counter)) > 0]
        correction = Correction.fit(pairs)
        self.fits.append((counter, correction))
        return correction


def record_call(context: dict[str, Any], request: ModelRequest, usage: Usage | None) -> None:
    """Remember, in the run's ``context``, the request a model call sent and the prompt
    tokens its provider reported (a call without reported usage is left out)."""
    if usage is not None and usage.prompt_tokens > 0:
        calls = context.get(CALLS)
        if calls is None:
            calls = context[CALLS] = _Calls()
        calls.add(request, usage.prompt_tokens)


def run_counter(context: Mapping[str, Any]) -> TokenCounter:
    """The run's counter: the agent's ``token_counter``, else the approximate one."""
    counter: TokenCounter = context.get(TOKEN_COUNTER) or DEFAULT_COUNTER
    return counter


def counter_count(counter: TokenCounter, request: ModelRequest) -> int:
    """What ``counter`` says of ``request`` as it stands (no correction)."""
    return counter.count(request_messages(request), request.visible_tool_specs())


def correction(context: Mapping[str, Any], counter: TokenCounter | None = None) -> Correction:
    """The correction of ``counter`` (default: the run's) learnt from the usage the run's
    calls reported so far (see the module docstring)."""
    calls: _Calls | None = context.get(CALLS)
    chosen = run_counter(context) if counter is None else counter
    return Correction() if calls is None else calls.correction(chosen)


def count_tokens(request: ModelRequest, counter: TokenCounter | None = None) -> int:
    """The tokens ``request`` would take: its system message, messages and visible tool
    definitions counted by ``counter`` (default: the run's, see the module docstring),
    corrected by the fixed part and the factor learnt from the run's reported usage."""
    chosen = run_counter(request.context) if counter is None else counter
    return correction(request.context, chosen).apply(counter_count(chosen, request))

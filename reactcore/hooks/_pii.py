"""Keeping personal data out of the conversation: ``PIIRedactionHook``.

Three points, each where the text first enters the state, so that no checkpoint, event
or later model request ever holds the original:

- ``user_input``: ``before_agent``, before the first model call of a run (the state is
  checkpointed after the ``before_agent`` hooks, never before);
- ``tool_result``: a tool interceptor, as the result comes back and before the node
  records it (a batch checkpoints each call's result as it ends);
- ``model_output``: a model interceptor, on the model's answer before it enters the
  state (and before ``ModelCallFinished`` carries it), the copies of its thinking its
  provider keeps included (``_pii_provider``).

A text larger than ``OFF_LOOP_CHARS`` is scanned in a worker thread, so the event loop
goes on serving every other run meanwhile.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import ipaddress
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Literal, TypeVar

import anyio.to_thread
import attrs

from .. import _validate as valid
from .._config import RunnableConfig
from .._exceptions import PIIDetectedError
from .._interceptors import ModelHandler, ToolCallRequest, ToolCallResponse, ToolHandler
from .._messages import AssistantMessage, TextPart, ToolCall, UserMessage
from .._state import MESSAGES, OverAllState, rewrite
from ..models.base import ModelRequest, ModelResponse
from ._limits import name_field
from ._pii_detect import BUILTIN, Detector, Finding, find, pattern_detector
from ._pii_provider import chars, provider_data, strings

Mode = Literal["redact", "mask", "hash", "block"]
MODES = ("redact", "mask", "hash", "block")
USER_INPUT = "user_input"
TOOL_RESULT = "tool_result"
MODEL_OUTPUT = "model_output"
APPLY_POINTS = (USER_INPUT, TOOL_RESULT, MODEL_OUTPUT)
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_KEEP = 4  # characters a mask leaves visible, at the end
_HASH_CHARS = 12
OFF_LOOP_CHARS = 64 * 1024
"""Text larger than this (in all, for one message or result) is scanned in a worker
thread, so the event loop goes on serving every other run meanwhile."""
T = TypeVar("T")


def _frozen(value: Any) -> Any:
    return frozenset(value) if valid.ITERABLE.accepts(value) else valid.leave(value)


def _names(value: Any) -> Any:
    return tuple(value) if valid.ITERABLE.accepts(value) else valid.leave(value)


def _where(instance: Any, attribute: attrs.Attribute[Any]) -> str:
    return f"{type(instance).__name__}.{attribute.alias}"


def _compiled(where: str, name: Any, pattern: Any) -> re.Pattern[str]:
    """``pattern`` compiled, once its ``name`` and itself are checked."""
    if not isinstance(name, str):
        raise TypeError(f"{where} keys must be str, got {valid.got(name)}")
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"{where} keys must be 1 to 64 letters, digits, '_' or '-', got {name!r:.60}"
        )
    if name in BUILTIN:
        raise ValueError(f"{where} keys must not be built-in detectors' names, got {name!r}")
    if isinstance(pattern, re.Pattern) and isinstance(pattern.pattern, str):
        return pattern
    if not isinstance(pattern, str):
        raise TypeError(
            f"{where}[{name!r}] must be a regex (a str or re.Pattern), got {valid.got(pattern)}"
        )
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(
            f"{where}[{name!r}] must be a valid regex ({exc}), got {pattern!r:.60}"
        ) from None


def _check_patterns(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A map of name → regex (``str`` or ``re.Pattern``); names are not built-in ones."""
    _MAPPING(instance, attribute, value)
    for name, pattern in value.items():
        _compiled(_where(instance, attribute), name, pattern)


def _check_modes(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A map of detector name (one that is on) → mode."""
    _MAPPING(instance, attribute, value)
    where = _where(instance, attribute)
    known = [*instance.patterns, *instance.detectors]
    for name, mode in value.items():
        if name not in known:
            raise ValueError(
                f"{where} keys must be detectors of this hook ({', '.join(known)}), got {name!r}"
            )
        _MODE.spec.check(f"{where}[{name!r}]", mode)


_MAPPING = valid.mapping()
_MODE = valid.one_of(*MODES)


async def _off_loop(size: int, function: Callable[..., T], *args: Any) -> T:
    """``function(*args)``, in a worker thread when it scans more than ``OFF_LOOP_CHARS``
    characters (``size``). The thread is waited for, even when the caller is cancelled:
    the detectors are linear, so it ends soon, and never outlives the call."""
    if size <= OFF_LOOP_CHARS:
        return function(*args)
    return await anyio.to_thread.run_sync(functools.partial(function, *args))


def _text_size(text: str, parts: Sequence[Any]) -> int:
    return len(text) + sum(len(p.text) for p in parts if type(p) is TextPart)


def _mask(value: str) -> str:
    """``value`` with its letters and digits starred but the last four (all of them when
    it has fewer than eight); separators stay."""
    count = sum(c.isalnum() for c in value)
    keep = _KEEP if count >= 2 * _KEEP else 0
    out, seen = [], 0
    for char in value:
        if char.isalnum():
            seen += 1
            out.append(char if seen > count - keep else "*")
        else:
            out.append(char)
    return "".join(out)


def _normal(kind: str, value: str) -> str:
    """The form of ``value`` that is hashed: one value, one hash, however it was written."""
    if kind == "email":
        return value.lower()
    if kind in ("phone", "credit_card"):
        return "".join(c for c in value if c.isdigit())
    if kind == "ipv6":
        return ipaddress.IPv6Address(value).compressed
    return value


@attrs.frozen
class PIIRedactionHook:
    """Finds personal data in the user's input, tools' results and the model's answers
    (``apply_to``, all three by default) and replaces it before it enters the state, so
    checkpoints, events and later model requests never hold it.

    ``detectors`` picks built-in ones — ``email``, ``phone``, ``credit_card`` (Luhn-
    checked), ``ipv4``, ``ipv6``, ``api_key`` (known key prefixes and long random-looking
    tokens); the rules are in the docs — and ``patterns`` adds named regexes of your own
    (``{"employee_id": r"EMP-\\d{6}"}``). What a match becomes is ``mode``, per detector
    ``modes``:

    - ``"redact"``: ``[REDACTED:email]``;
    - ``"mask"``: letters and digits starred but the last four, separators kept
      (``****-****-****-1234``); values shorter than eight are starred whole;
    - ``"hash"``: ``<email:3f2a9c01b4de>``, the first 12 hex digits of the SHA-256 of the
      value (normalised: an e-mail lower-cased, a card or phone number as its digits),
      keyed with ``salt`` (HMAC) when given: the same value gives the same text across
      runs, so a conversation can still tell two values apart;
    - ``"block"``: ``PIIDetectedError`` naming the kind and the point, never the value.

    The user's input is every ``UserMessage`` of the state, checked before the first model
    call of each new run (text and text parts). A tool's result is its text, text parts
    and ``data``, and the message of an exception it raised. The model's answer is its
    text and reasoning, with the copies its provider keeps in ``provider_data`` (redacted
    in place, or dropped where the provider signed them: Anthropic's thinking blocks, a
    signed Gemini thought), not its tool calls' arguments (the tools need them). A thread
    that ran before the hook was added: its user messages are redacted at the next run's
    start, its earlier checkpoints are not rewritten (the docs show how to purge them).
    Large texts (over ``OFF_LOOP_CHARS`` in all) are scanned in a worker thread. Streamed
    ``ModelDelta`` events go out as the model writes, before the answer is whole: they
    are not redacted (run with streaming off when they must not carry it either).

    Hooks run by ``order``: -100 puts this one before other hooks, which then see the
    redacted text.
    """

    mode: Mode = attrs.field(default="redact", validator=_MODE)
    apply_to: Collection[str] = attrs.field(
        default=APPLY_POINTS,
        converter=_frozen,
        validator=valid.each(valid.one_of(*APPLY_POINTS), names=True),
    )
    detectors: Sequence[str] = attrs.field(
        default=tuple(BUILTIN),
        converter=_names,
        validator=valid.each(valid.one_of(*BUILTIN), names=True),
    )
    patterns: Mapping[str, str | re.Pattern[str]] = attrs.field(
        factory=dict, validator=_check_patterns
    )
    modes: Mapping[str, Mode] = attrs.field(factory=dict, validator=_check_modes)
    salt: str = attrs.field(default="", repr=False, validator=valid.text())
    name: str = name_field("pii_redaction")
    order: int = attrs.field(default=-100, validator=valid.integer())
    _found: tuple[tuple[str, Detector], ...] = attrs.field(init=False, repr=False, eq=False)
    _chain: tuple[Any, ...] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        where = f"{type(self).__name__}.patterns"
        own = [(n, pattern_detector(_compiled(where, n, p))) for n, p in self.patterns.items()]
        builtin = [(n, d) for n, d in BUILTIN.items() if n in self.detectors]
        object.__setattr__(self, "_found", (*own, *builtin))
        chain: list[Any] = []
        if TOOL_RESULT in self.apply_to:
            chain.append(_ToolResults(self))
        if MODEL_OUTPUT in self.apply_to:
            chain.append(_ModelOutput(self))
        object.__setattr__(self, "_chain", tuple(chain))

    @property
    def interceptors(self) -> tuple[Any, ...]:
        """The interceptors the hook brings: for tool results, for the model's answers."""
        return self._chain

    def findings(self, text: str) -> list[Finding]:
        """What the hook's detectors find in ``text``: non-overlapping spans, in order."""
        return find(text, self._found)

    def redact(self, text: str, where: str = USER_INPUT, call: ToolCall | None = None) -> str:
        """``text`` with what the detectors find replaced by each one's mode;
        ``PIIDetectedError`` when one in ``"block"`` mode finds something."""
        found = self.findings(text)
        if not found:
            return text
        blocked = sorted({f.kind for f in found if self._mode(f.kind) == "block"})
        if blocked:
            raise self._blocked(blocked, where, call)
        pieces, at = [], 0
        for f in found:
            pieces += [text[at : f.start], self._replacement(f.kind, text[f.start : f.end])]
            at = f.end
        pieces.append(text[at:])
        return "".join(pieces)

    async def before_agent(self, state: OverAllState, config: RunnableConfig) -> Any:
        """The user's messages redacted, before the run's first model call (in a worker
        thread when they are large)."""
        if USER_INPUT not in self.apply_to:
            return None
        messages = list(state.get(MESSAGES) or ())
        size = sum(_text_size(m.text, m.parts) for m in messages if isinstance(m, UserMessage))
        cleaned = await _off_loop(size, self._users, messages)
        if all(a is b for a, b in zip(messages, cleaned, strict=True)):
            return None
        return {MESSAGES: rewrite(messages, cleaned)}

    def _mode(self, kind: str) -> str:
        return self.modes.get(kind, self.mode)

    def _replacement(self, kind: str, value: str) -> str:
        mode = self._mode(kind)
        if mode == "mask":
            return _mask(value)
        if mode == "hash":
            data = _normal(kind, value).encode()
            digest = (
                hmac.new(self.salt.encode(), data, hashlib.sha256)
                if self.salt
                else hashlib.sha256(data)
            )
            return f"<{kind}:{digest.hexdigest()[:_HASH_CHARS]}>"
        return f"[REDACTED:{kind}]"

    def _blocked(self, kinds: list[str], where: str, call: ToolCall | None) -> PIIDetectedError:
        if where == TOOL_RESULT and call is not None:
            place = f"the result of tool {call.name!r} (call {call.id})"
            return PIIDetectedError(
                f"{self.name}: {', '.join(kinds)} found in {place}; blocked",
                kinds=kinds,
                where=where,
                call_id=call.id,
                tool=call.name,
            )
        place = "the model's answer" if where == MODEL_OUTPUT else "the user's input"
        message = f"{self.name}: {', '.join(kinds)} found in {place}; blocked"
        return PIIDetectedError(message, kinds=kinds, where=where)

    def _parts(self, parts: tuple[Any, ...], where: str, call: ToolCall | None) -> tuple[Any, ...]:
        out = tuple(
            attrs.evolve(p, text=self.redact(p.text, where, call)) if type(p) is TextPart else p
            for p in parts
        )
        return parts if out == parts else out

    def _users(self, messages: list[Any]) -> list[Any]:
        return [self._user(m) if isinstance(m, UserMessage) else m for m in messages]

    def _user(self, message: UserMessage) -> UserMessage:
        text = self.redact(message.text)
        parts = self._parts(message.parts, USER_INPUT, None)
        if text == message.text and parts is message.parts:
            return message
        return attrs.evolve(message, text=text, parts=parts)

    def tool_response(self, response: ToolCallResponse, call: ToolCall) -> ToolCallResponse:
        """``response`` with its text, text parts and ``data`` redacted."""
        text = self.redact(response.text, TOOL_RESULT, call)
        parts = self._parts(response.parts, TOOL_RESULT, call)
        data = strings(response.data, functools.partial(self.redact, where=TOOL_RESULT, call=call))
        if text == response.text and parts is response.parts and data is response.data:
            return response
        return attrs.evolve(response, text=text, parts=parts, data=data)

    def tool_error(self, error: Exception, call: ToolCall) -> Exception:
        """``error`` with its message redacted (in its ``args``), for the exception
        processor to turn into the model's error text; an exception whose text does not
        come from its ``args`` is replaced by one whose message says it was withheld."""
        error.args = tuple(
            self.redact(a, TOOL_RESULT, call) if isinstance(a, str) else a for a in error.args
        )
        found = self.findings(str(error))
        if not found:
            return error
        self.redact(str(error), TOOL_RESULT, call)  # raises when a kind found is blocked
        kinds = ", ".join(sorted({f.kind for f in found}))
        return RuntimeError(f"{type(error).__name__}: message withheld: it holds {kinds}")

    def answer(self, response: ModelResponse) -> ModelResponse:
        """The model's ``response`` with its text and reasoning redacted, and the copies of
        them its provider keeps in ``provider_data`` redacted or, where signed, dropped
        (``_pii_provider``); its raw payload dropped when anything changed."""
        message = response.message
        text = self.redact(message.text, MODEL_OUTPUT)
        reasoning = self.redact(message.reasoning, MODEL_OUTPUT)
        data = provider_data(
            message.provider_data,
            functools.partial(self.redact, where=MODEL_OUTPUT),
            text_changed=text != message.text,
        )
        same = text == message.text and reasoning == message.reasoning
        if same and data is message.provider_data:
            return response
        cleaned: AssistantMessage = attrs.evolve(
            message, text=text, reasoning=reasoning, provider_data=data
        )
        return attrs.evolve(response, message=cleaned, raw=None)


@attrs.frozen
class _ToolResults:
    """The hook's tool interceptor: results (and errors) redacted as they come back."""

    hook: PIIRedactionHook

    async def wrap_tool_call(
        self, request: ToolCallRequest, handler: ToolHandler
    ) -> ToolCallResponse:
        try:
            response = await handler(request)
        except PIIDetectedError:
            raise
        except Exception as exc:
            size = chars(exc.args) + len(str(exc))
            cleaned = await _off_loop(size, self.hook.tool_error, exc, request.call)
            if cleaned is exc:
                raise
            raise cleaned from None
        size = _text_size(response.text, response.parts) + chars(response.data)
        return await _off_loop(size, self.hook.tool_response, response, request.call)


@attrs.frozen
class _ModelOutput:
    """The hook's model interceptor: the answer redacted before it enters the state."""

    hook: PIIRedactionHook

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        response = await handler(request)
        message = response.message
        size = len(message.text) + len(message.reasoning) + chars(message.provider_data)
        return await _off_loop(size, self.hook.answer, response)

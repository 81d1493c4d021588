"""Retrying model calls and tool calls with exponential backoff."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import anyio
import attrs

from .. import _validate as valid
from .._backoff import DELAY, FACTOR, JITTER, Backoff
from .._exceptions import ModelHTTPError, ModelStreamError, ModelTimeoutError, ToolArgumentError
from .._interceptors import ModelHandler, ToolCallRequest, ToolCallResponse, ToolHandler
from .._logging import get_logger
from ..models.base import ModelRequest, ModelResponse, report_retry

_RETRY_STATUSES = frozenset({408, 409, 429})


def is_retryable_model_error(error: Exception) -> bool:
    """Timeouts, cut streams, connection errors, 408/409/429 and 5xx: worth another try."""
    if isinstance(error, ModelHTTPError):
        return error.status_code in _RETRY_STATUSES or error.status_code >= 500
    return isinstance(error, ModelTimeoutError | ModelStreamError | OSError)


def error_reason(error: BaseException) -> str:
    """``Type: message`` of a failure, one line of at most 300 characters: the ``reason``
    of a ``ModelCallRetried``."""
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return " ".join(text.split())[:300]


_ATTEMPTS = valid.integer(minimum=1)
_RETRY_ON = valid.satisfies(
    "an exception class or a tuple of them",
    test=lambda v: (
        _exception_class(v) or (isinstance(v, tuple) and all(_exception_class(c) for c in v))
    ),
)


def _exception_class(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, BaseException)


def _make_backoff(self: Any) -> Backoff:
    """The interceptor's ``Backoff``, built at construction."""
    return Backoff(self.initial_delay, self.backoff_factor, self.max_delay, self.jitter)


def _asked_wait(error: Exception) -> float | None:
    """The wait the server asked for with ``error`` (a ``ModelHTTPError``'s ``retry_after``)."""
    return error.retry_after if isinstance(error, ModelHTTPError) else None


@attrs.frozen
class ModelRetryInterceptor:
    """Retries a failed model call: 3 attempts, 1 s then ×2 up to 30 s, with jitter.

    When the server said how long to wait (``ModelHTTPError.retry_after``) the pause is
    never shorter; when it asked for more than ``retry_after_cap`` seconds the error is
    raised at once rather than sleep.
    """

    max_attempts: int = attrs.field(default=3, validator=_ATTEMPTS)
    initial_delay: float = attrs.field(default=1.0, validator=DELAY)
    backoff_factor: float = attrs.field(default=2.0, validator=FACTOR)
    max_delay: float = attrs.field(default=30.0, validator=DELAY)
    jitter: float = attrs.field(default=0.25, validator=JITTER)
    retry_on: Callable[[Exception], bool] = attrs.field(
        default=is_retryable_model_error, validator=valid.function()
    )
    retry_after_cap: float = attrs.field(default=60.0, validator=valid.number(minimum=0))
    _backoff: Backoff = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_backoff", _make_backoff(self))  # once the fields are checked

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        for attempt in range(1, self.max_attempts + 1):
            try:
                return await handler(request)
            except Exception as exc:
                asked = _asked_wait(exc)
                if attempt == self.max_attempts or not self.retry_on(exc):
                    raise
                if asked is not None and asked > self.retry_after_cap:
                    raise
                delay = max(self._backoff.delay(attempt), asked or 0.0)
                get_logger().warning(
                    "model_call_retry",
                    attempt=attempt,
                    delay_s=round(delay, 3),
                    error=type(exc).__name__,
                )
                await report_retry(request.context, attempt, delay, error_reason(exc))
                await anyio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover


@attrs.frozen
class ToolRetryInterceptor:
    """Retries a tool call that raised: 3 attempts (the first included), 1 s then ×2 up to
    60 s, ±25 % jitter. After the last attempt the model gets ``Tool call failed after N
    attempts: <Type>: <message>``. ``tools`` limits it to some tool names; ``retry_on`` to
    some exception types (a ``ToolArgumentError`` is never retried). Retries happen inside
    the call's timeout.

    By default (``idempotent_only=True``) a tool known not to be idempotent is not retried:
    one whose ``Tool.annotations`` (an MCP server's hints, or ``@tool(annotations=...)``)
    say neither ``idempotent`` nor ``read_only`` — MCP's default for ``idempotentHint``
    is false, so a tool with annotations that leave it unsaid counts as not idempotent. Its
    failure goes to the model at once, as without the interceptor. A tool without
    annotations claims nothing and is retried, as before annotations existed.
    ``idempotent_only=False`` retries every tool."""

    max_attempts: int = attrs.field(default=3, validator=_ATTEMPTS)
    initial_delay: float = attrs.field(default=1.0, validator=DELAY)
    backoff_factor: float = attrs.field(default=2.0, validator=FACTOR)
    max_delay: float = attrs.field(default=60.0, validator=DELAY)
    jitter: float = attrs.field(default=0.25, validator=JITTER)
    retry_on: tuple[type[Exception], ...] = attrs.field(default=(Exception,), validator=_RETRY_ON)
    # Given as ``tools=``, kept as ``tool_names``: an interceptor's ``tools`` attribute is
    # read by the agent as tools the interceptor brings.
    tool_names: Collection[str] | None = attrs.field(
        default=None, alias="tools", validator=valid.each(valid.text(), names=True, optional=True)
    )
    idempotent_only: bool = attrs.field(default=True, kw_only=True, validator=valid.boolean())
    _backoff: Backoff = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_backoff", _make_backoff(self))  # once the fields are checked

    def retries(self, request: ToolCallRequest) -> bool:
        """Whether a failure of this call is retried: its tool is among ``tools`` (when
        given) and, with ``idempotent_only``, not known to be non-idempotent."""
        if self.tool_names is not None and request.call.name not in self.tool_names:
            return False
        annotations = request.tool.annotations
        return not self.idempotent_only or annotations is None or annotations.repeatable

    async def wrap_tool_call(
        self, request: ToolCallRequest, handler: ToolHandler
    ) -> ToolCallResponse:
        if not self.retries(request):
            return await handler(request)
        for attempt in range(1, self.max_attempts + 1):
            try:
                return await handler(request)
            except ToolArgumentError:
                raise  # the same arguments would fail again; the node answers with the error
            except self.retry_on as exc:
                if attempt == self.max_attempts:
                    return ToolCallResponse(
                        f"Tool call failed after {attempt} attempts: {type(exc).__name__}: {exc}",
                        is_error=True,
                    )
                await anyio.sleep(self._backoff.delay(attempt))
        raise AssertionError("unreachable")  # pragma: no cover

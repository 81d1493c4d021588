"""The tracing seam: how a tracer (``reactcore.otel``) sees a run, its model calls and its
tool calls. The core knows only these protocols; it never imports a tracing library.

A run is traced when its agent has a tracer, when it runs inside a traced run (an agent
called from a traced agent's tool), or when a global tracer was installed. The agent then
puts the tracer in ``current`` for the run's context, and every step looks there: with
no tracer, a step costs one context-variable read.

The tracer opens its spans as the current context of the task that does the work, so a
sync tool's worker thread (anyio copies the context into it) and anything instrumented
the tool calls (an HTTP client) nest under the tool's span.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ._agent import ReactAgent
    from ._messages import ToolCall, ToolResponse
    from ._result import AgentResult
    from ._run import AgentRun
    from ._scheduler import Job
    from ._tools import Tool
    from .models.base import ChatModel, ModelRequest, ModelResponse


class RunTrace(Protocol):
    """The span of one run, open while the run's loop runs."""

    def ended(self, run: AgentRun, result: AgentResult | None, error: BaseException | None) -> None:
        """The run ended (``run.status``) with ``result`` or ``error``: record how."""


class ModelTrace(Protocol):
    """The span of one model call of the loop (retries and fallbacks included)."""

    def sending(self, model: ChatModel, request: ModelRequest) -> None:
        """The innermost handler sends ``request`` to ``model`` (once per attempt)."""

    def answered(self, response: ModelResponse) -> None:
        """The call's answer (finish reason, usage, and content when opted in)."""


class ToolTrace(Protocol):
    """The span of one tool call, current in the call's task from start to end."""

    def ended(self, job: Job | None, response: ToolResponse | None) -> None:
        """The call ended as ``job.status`` says, with ``response``; both ``None`` when it
        was abandoned (its batch was cancelled or failed around it). Ends the span."""


class Tracer(Protocol):
    """Opens the spans of runs, model calls and tool calls; see the module docstring."""

    def run(self, agent: ReactAgent, run: AgentRun) -> AbstractContextManager[RunTrace]:
        """The run's span, current in the run's task while the context is open."""

    def model_call(
        self, agent: str, model: ChatModel, request: ModelRequest
    ) -> AbstractContextManager[ModelTrace]:
        """A model call's span (to ``model``, as the node sees it), current while the
        context is open."""

    def tool_call(self, agent: str, call: ToolCall, tool: Tool) -> ToolTrace:
        """Start a tool call's span and make it current in the calling task."""

    def exception(self, error: BaseException) -> None:
        """A tool raised ``error`` (turned into an answer for the model): record it."""

    def event(self, name: str, attributes: Mapping[str, Any]) -> None:
        """A warning the library logged (a retry, a fallback, a failure): add it to the
        current span. ``attributes`` hold names, ids and counts, never content."""


current: ContextVar[Tracer | None] = ContextVar("reactcore_tracer", default=None)
model_trace: ContextVar[ModelTrace | None] = ContextVar("reactcore_model_trace", default=None)
_installed: list[Tracer] = []


def install(tracer: Tracer | None) -> None:
    """Make ``tracer`` the one for every run not traced otherwise (``None``: no more)."""
    _installed[:] = [tracer] if tracer is not None else []


def ambient() -> Tracer | None:
    """The tracer of the enclosing traced run, else the installed one, else ``None``."""
    found = current.get()
    if found is None and _installed:
        return _installed[0]
    return found


def tracer_for(provider: Any) -> Tracer | None:
    """The tracer for an agent's ``tracer_provider``: ``None`` for none, a ``Tracer`` as
    it is, else an OpenTelemetry ``TracerProvider`` (this needs the ``otel`` extra)."""
    if provider is None:
        return None
    if callable(getattr(provider, "tool_call", None)):
        tracer: Tracer = provider
        return tracer
    try:
        from .otel import OpenTelemetryTracer
    except ImportError as exc:  # opentelemetry-api is missing
        raise ImportError(
            "tracer_provider needs OpenTelemetry: pip install 'reactcore[otel]'"
        ) from exc
    made: Tracer = OpenTelemetryTracer(provider)
    return made

"""OpenTelemetry spans for reactcore runs, following the GenAI semantic conventions.

Needs the ``otel`` extra (``pip install 'reactcore[otel]'``, i.e. ``opentelemetry-api``).
Turn it on for one agent with ``ReactAgent(..., tracer_provider=provider)``, or for every
agent with ``instrument()``. reactcore never sets a global tracer provider: the
application configures OpenTelemetry (its SDK, exporters, sampling) as it likes.

Spans (``docs/observability.md`` lists every attribute)::

    invoke_agent <agent>            INTERNAL: one per run, current in the run's task
    ├── chat <model>                CLIENT: one per model call (retries and fallbacks
    │                               are events of it, each attempt updates its model)
    ├── execute_tool <tool>         INTERNAL: one per tool call, current in the call's
    ├── execute_tool <tool>         task (and so in its worker thread); parallel calls
    └── …                           are siblings that overlap as the calls did

Message content (prompts, answers, tool arguments and results) is recorded only with
``capture_content=True``, or when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
is ``true``. API keys are never read.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

import attrs
import httpx
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider

from . import _tracing
from . import _validate as valid
from ._exceptions import RunCancelled
from ._messages import AssistantMessage, Message, SystemMessage, ToolResponseMessage, UserMessage
from ._result import TOKEN_USAGE
from ._scheduler import Status as JobStatus
from .models.base import ChatModel, ModelRequest, ModelResponse, Usage
from .models.openai import OpenAIChatModel

if TYPE_CHECKING:
    from ._agent import ReactAgent
    from ._messages import ToolCall, ToolResponse
    from ._result import AgentResult
    from ._run import AgentRun
    from ._scheduler import Job
    from ._tools import Tool

__all__ = ["CAPTURE_CONTENT_ENV", "OpenTelemetryTracer", "instrument", "uninstrument"]

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_SCOPE = "reactcore"
_TOOL_TRACE = otel_context.create_key("reactcore.tool_trace")

# GenAI semantic-convention attribute names.
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
# reactcore's own.
RUN_ID = "reactcore.run.id"
RUN_STATUS = "reactcore.run.status"
MODEL_ATTEMPTS = "reactcore.model.attempts"
MODEL_PURPOSE = "reactcore.model.purpose"
TOOL_OUTCOME = "reactcore.tool.outcome"
TOOL_DURATION = "reactcore.tool.duration"


def _content_from_env() -> bool:
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in ("true", "1", "yes")


def _library_version() -> str:
    try:
        return version("reactcore")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


def error_type(error: BaseException) -> str:
    """``error.type`` for an exception: the class name for reactcore's and builtin ones,
    else ``module.Class``."""
    cls = type(error)
    module = cls.__module__
    if module == "builtins" or module.split(".")[0] == "reactcore":
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"


def _fail(span: Span, kind: str, description: str) -> None:
    span.set_attribute(ERROR_TYPE, kind)
    span.set_status(Status(StatusCode.ERROR, description))


def _usage_attributes(span: Span, usage: Usage | None) -> None:
    if usage is not None:
        span.set_attribute(INPUT_TOKENS, usage.prompt_tokens)
        span.set_attribute(OUTPUT_TOKENS, usage.completion_tokens)


# --- models: provider, server, content ---------------------------------------------------


def _provider(model: Any) -> str:
    """``gen_ai.provider.name``: the name of the host it runs on (``azure.ai.openai``,
    ``groq`` …), else the model's ``telemetry_name`` (the conventions' name for its
    provider), else its ``provider_name`` if it has one; ``openai`` for an
    OpenAI-compatible endpoint (as the conventions say for those); else ``_OTHER``."""
    named = (
        getattr(getattr(model, "host", None), "telemetry_name", None)
        or getattr(model, "telemetry_name", None)
        or getattr(model, "provider_name", None)
    )
    if isinstance(named, str):
        return named
    return "openai" if isinstance(model, OpenAIChatModel) else "_OTHER"


def _model_name(model: Any, request: ModelRequest) -> str | None:
    name = request.options.model or getattr(model, "model", None)
    return name if isinstance(name, str) else None


_servers: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def _server(model: Any) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of the model's ``base_url``, if it has one
    (parsed once per model)."""
    try:
        return _servers[model]
    except (KeyError, TypeError):  # not seen yet; or not weakly referable
        pass
    found = _parse_server(model)
    with suppress(TypeError):
        _servers[model] = found
    return found


def _parse_server(model: Any) -> dict[str, Any]:
    base_url = getattr(model, "base_url", None)
    if not isinstance(base_url, str):
        return {}
    try:
        url = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError):
        return {}
    if not url.host:
        return {}
    port = url.port or (443 if url.scheme == "https" else 80)
    return {SERVER_ADDRESS: url.host, SERVER_PORT: port}


def _arguments(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _assistant_parts(message: AssistantMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if message.text:
        parts.append({"type": "text", "content": message.text})
    for call in message.tool_calls:
        parts.append(
            {
                "type": "tool_call",
                "id": call.id,
                "name": call.name,
                "arguments": _arguments(call.arguments),
            }
        )
    return parts


def message_json(message: Message) -> dict[str, Any]:
    """A message in the conventions' input-messages form (role and parts)."""
    if isinstance(message, UserMessage):
        return {"role": "user", "parts": [{"type": "text", "content": message.text}]}
    if isinstance(message, SystemMessage):
        return {"role": "system", "parts": [{"type": "text", "content": message.text}]}
    if isinstance(message, AssistantMessage):
        return {"role": "assistant", "parts": _assistant_parts(message)}
    assert isinstance(message, ToolResponseMessage)
    parts = [
        {"type": "tool_call_response", "id": r.id, "response": r.response_data}
        for r in message.responses
    ]
    return {"role": "tool", "parts": parts}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


# --- the traces ----------------------------------------------------------------------------


@attrs.define(eq=False)
class _RunTrace:
    span: Span

    def ended(self, run: AgentRun, result: AgentResult | None, error: BaseException | None) -> None:
        status = run.status_nowait()
        self.span.set_attribute(RUN_STATUS, status)
        state = result.state if result is not None else run.state
        usage = state.get(TOKEN_USAGE) if state is not None else None
        _usage_attributes(self.span, usage)
        if isinstance(error, RunCancelled):  # as a cancelled model or tool call says it
            _fail(self.span, "cancelled", str(error))
        elif error is not None:
            self.span.record_exception(error)
            _fail(self.span, error_type(error), f"the run {status}: {error}")


@attrs.define(eq=False)
class _ModelTrace:
    span: Span
    capture: bool
    attempts: int = 0

    def sending(self, model: ChatModel, request: ModelRequest) -> None:
        self.attempts += 1
        self.span.set_attribute(MODEL_ATTEMPTS, self.attempts)
        name = _model_name(model, request)
        if name is not None:
            self.span.set_attribute(REQUEST_MODEL, name)
            self.span.update_name(f"chat {name}")
        self.span.set_attribute(PROVIDER, _provider(model))
        for key, value in _server(model).items():
            self.span.set_attribute(key, value)
        if self.capture:
            messages = [message_json(m) for m in request.messages]
            self.span.set_attribute(INPUT_MESSAGES, _json(messages))
            if request.system_message is not None:
                instructions = [{"type": "text", "content": request.system_message.text}]
                self.span.set_attribute(SYSTEM_INSTRUCTIONS, _json(instructions))

    def answered(self, response: ModelResponse) -> None:
        if response.finish_reason is not None:
            self.span.set_attribute(FINISH_REASONS, (response.finish_reason,))
        _usage_attributes(self.span, response.usage)
        if self.capture:
            output: dict[str, Any] = {
                "role": "assistant",
                "parts": _assistant_parts(response.message),
            }
            if response.finish_reason is not None:
                output["finish_reason"] = response.finish_reason
            self.span.set_attribute(OUTPUT_MESSAGES, _json([output]))


@attrs.define(eq=False)
class _ToolTrace:
    span: Span
    token: Any
    capture: bool
    error: str | None = None

    def failed(self, error: BaseException) -> None:
        self.error = error_type(error)
        self.span.record_exception(error)

    def ended(self, job: Job | None, response: ToolResponse | None) -> None:
        span = self.span
        if job is None or response is None:
            if self.error is not None:  # the tool's error propagated (always_throw)
                span.set_attribute(TOOL_OUTCOME, "error")
                _fail(span, self.error, "the tool failed and its error ended the batch")
            else:
                span.set_attribute(TOOL_OUTCOME, "cancelled")
                _fail(span, "cancelled", "the batch was cancelled before the call ended")
        else:
            span.set_attribute(TOOL_DURATION, job.duration)
            self._outcome(job, response)
        # Abandoned calls end from the batch's task, where this span may not be current.
        if trace.get_current_span() is span:
            otel_context.detach(self.token)
        span.end()

    def _outcome(self, job: Job, response: ToolResponse) -> None:
        span = self.span
        if job.status is JobStatus.TIMED_OUT:
            span.set_attribute(TOOL_OUTCOME, "timed_out")
            _fail(span, "timeout", f"timed out after {job.timeout:g}s")
        elif job.status is JobStatus.CANCELLED:
            span.set_attribute(TOOL_OUTCOME, "cancelled")
            _fail(span, "cancelled", "cancelled by the caller")
        elif getattr(job.result, "interrupt", None) is not None:
            span.set_attribute(TOOL_OUTCOME, "interrupted")  # it runs again on resume
        elif response.is_error:
            span.set_attribute(TOOL_OUTCOME, "error")
            _fail(span, self.error or "tool_error", "the tool failed")
        else:
            span.set_attribute(TOOL_OUTCOME, "ok")
        if self.capture:
            span.set_attribute(TOOL_RESULT, response.response_data)


# --- the tracer ----------------------------------------------------------------------------


@attrs.define(eq=False)
class OpenTelemetryTracer:
    """reactcore's tracer on an OpenTelemetry ``TracerProvider`` (``None``: the global one,
    as the application set it, looked up when each span starts).

    ``capture_content`` records prompts, answers, tool arguments and results (the
    conventions' opt-in attributes); it defaults to the ``CAPTURE_CONTENT_ENV`` variable.
    Give an instance as ``ReactAgent(tracer_provider=...)`` to choose it per agent.
    """

    tracer_provider: TracerProvider | None = attrs.field(
        default=None,
        validator=valid.has_methods(
            "get_tracer", what="an OpenTelemetry TracerProvider (with get_tracer)", optional=True
        ),
    )
    capture_content: bool = attrs.field(
        factory=_content_from_env, kw_only=True, validator=valid.boolean()
    )
    _tracer: trace.Tracer = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        # trace.get_tracer with no provider gives a proxy that follows the global one.
        self._tracer = trace.get_tracer(_SCOPE, _library_version(), self.tracer_provider)

    @contextmanager
    def _current(self, span: Span) -> Iterator[Span]:
        """``span`` as the current span until the block ends, then ended; a block left by
        an exception (a failure, a cancellation) marks it as an error."""
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            yield span
        except BaseException as exc:
            if isinstance(exc, Exception):
                span.record_exception(exc)
                _fail(span, error_type(exc), str(exc) or type(exc).__name__)
            else:  # cancelled (or the process is stopping)
                _fail(span, "cancelled", "cancelled")
            raise
        finally:
            otel_context.detach(token)
            span.end()

    @contextmanager
    def run(self, agent: ReactAgent, run: AgentRun) -> Iterator[_RunTrace]:
        attributes: dict[str, Any] = {
            OPERATION: "invoke_agent",
            PROVIDER: _provider(agent.model),
            AGENT_NAME: agent.name,
            RUN_ID: run.run_id,
        }
        if run.thread_id is not None:
            attributes[CONVERSATION_ID] = run.thread_id
        span = self._tracer.start_span(
            f"invoke_agent {agent.name}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        )
        with self._current(span):
            yield _RunTrace(span)

    @contextmanager
    def model_call(
        self, agent: str, model: ChatModel, request: ModelRequest
    ) -> Iterator[_ModelTrace]:
        name = _model_name(model, request)
        attributes: dict[str, Any] = {
            OPERATION: "chat",
            PROVIDER: _provider(model),
            MODEL_PURPOSE: request.purpose,
        }
        if name is not None:
            attributes[REQUEST_MODEL] = name
        attributes.update(_server(model))
        options = request.options
        for key, value in (
            ("gen_ai.request.temperature", options.temperature),
            ("gen_ai.request.top_p", options.top_p),
            ("gen_ai.request.max_tokens", options.max_tokens),
        ):
            if value is not None:
                attributes[key] = value
        span = self._tracer.start_span(
            f"chat {name}" if name else "chat",
            kind=SpanKind.CLIENT,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        )
        with self._current(span):
            yield _ModelTrace(span, self.capture_content)

    def tool_call(self, agent: str, call: ToolCall, tool: Tool) -> _ToolTrace:
        attributes: dict[str, Any] = {
            OPERATION: "execute_tool",
            TOOL_NAME: call.name,
            TOOL_CALL_ID: call.id,
            TOOL_TYPE: "function",
        }
        if tool.description:
            attributes[TOOL_DESCRIPTION] = tool.description
        if self.capture_content:
            attributes[TOOL_ARGUMENTS] = call.arguments
        span = self._tracer.start_span(
            f"execute_tool {call.name}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        )
        traced = _ToolTrace(span, None, self.capture_content)
        ctx = otel_context.set_value(_TOOL_TRACE, traced, trace.set_span_in_context(span))
        traced.token = otel_context.attach(ctx)
        return traced

    def exception(self, error: BaseException) -> None:
        found = otel_context.get_value(_TOOL_TRACE)
        if isinstance(found, _ToolTrace):
            found.failed(error)

    def event(self, name: str, attributes: Mapping[str, Any]) -> None:
        span = trace.get_current_span()
        if span.is_recording():
            span.add_event(name, _scalars(attributes))


def _scalars(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields an event attribute can hold as they are (strings, numbers, booleans)."""
    return {k: v for k, v in fields.items() if isinstance(v, str | bool | int | float)}


def instrument(
    tracer_provider: TracerProvider | None = None, *, capture_content: bool | None = None
) -> OpenTelemetryTracer:
    """Trace every run of every agent that has no ``tracer_provider`` of its own, from now
    on, with ``tracer_provider`` (``None``: OpenTelemetry's global provider, which the
    application sets; reactcore never does). Returns the tracer installed."""
    content = _content_from_env() if capture_content is None else capture_content
    tracer = OpenTelemetryTracer(tracer_provider, capture_content=content)
    _tracing.install(tracer)
    return tracer


def uninstrument() -> None:
    """Undo ``instrument()``: runs are traced only by their agent's ``tracer_provider``."""
    _tracing.install(None)

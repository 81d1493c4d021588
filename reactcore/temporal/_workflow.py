"""The workflow: a ``ReactAgent`` loop run as Temporal workflow code.

The loop, the hooks, the interceptors and the state merging run here, unchanged, on
Temporal's deterministic event loop (through anyio's asyncio backend). What is not
deterministic runs as activities: the innermost model interceptor and the innermost tool
interceptor (added to the agent here, not by the user) hand each model call and each tool
call to an activity instead of running it. Per-call deadlines, the tools' limiters, the
agent's ``tool_limiter`` and thread slots are not applied in the workflow (a cancel scope
around an activity await deadlocks Temporal's loop, and a limiter shared by workflows would
stay held by one evicted from the cache): each call's timeout is its activity's, and the
limiters are taken in the activity worker. ``max_parallel_tools`` is the workflow's: at
most that many of a batch's activities are in flight.

Cancelling one call and cancelling the run are workflow updates that cancel activities
through Temporal (``ActivityHandle.cancel``), never through an anyio scope; Temporal's own
workflow cancellation is turned into the same. A paused run waits for its ``resume``
update; the events are kept for the ``events`` query.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError
from temporalio.workflow import ActivityCancellationType

from .._approval import Resume
from .._checkpoint import Checkpoint
from .._config import RunnableConfig
from .._events import Event
from .._exceptions import ModelError, ModelHTTPError, RunCancelled, ToolExecutionError
from .._interceptors import ToolCallRequest, ToolCallResponse, ToolHandler
from .._llm_node import MODEL_ITERATION, STREAM, visible_names
from .._loop import Loop, Start, apply_decisions
from .._result import AgentResult
from .._run import AgentRun
from .._run_context import DYNAMIC_TOOLS, dynamic_tools
from .._state import OverAllState
from ..interceptors._retry import ModelRetryInterceptor
from ..models.base import ModelRequest, ModelResponse
from . import _codec as codec

if TYPE_CHECKING:
    from .._agent import ReactAgent
    from ._agent import TemporalAgent

WORKFLOW = "reactcore.ReactAgent"
MODEL_ACTIVITY = "reactcore.model"
TOOL_ACTIVITY = "reactcore.tool"
RUN_CANCELLED = "the run was cancelled"

_REGISTRY: dict[tuple[str, str], TemporalAgent] = {}
_LATEST: dict[str, TemporalAgent] = {}


def register(agent: TemporalAgent, task_queue: str) -> None:
    """Make ``agent`` findable by the workflows this process runs from ``task_queue`` (the
    latest registered of a name wins)."""
    _REGISTRY[task_queue, agent.name] = agent
    _LATEST[agent.name] = agent


def registered(name: str) -> TemporalAgent:
    """The agent ``name`` of this workflow's task queue, else the latest registered of that
    name (a replayer runs histories from a task queue of its own); a non-retryable failure
    if this process has none."""
    found = _REGISTRY.get((workflow.info().task_queue, name)) or _LATEST.get(name)
    if found is None:
        raise ApplicationError(
            f"no agent named {name!r} is registered on this worker", non_retryable=True
        )
    return found


class _NoSaver:
    """The workflow's saver: its history is the durable record, checkpoints are not kept."""

    async def get(self, thread_id: str) -> Checkpoint | None:
        return None

    async def put(self, thread_id: str, checkpoint: Checkpoint) -> None:
        return None

    async def list(self, thread_id: str) -> list[Checkpoint]:
        return []

    async def delete(self, thread_id: str) -> None:
        return None


@attrs.define(eq=False)
class _RecordingRun(AgentRun):
    """The run handle of the workflow: its events are recorded for the ``events`` query."""

    record: Callable[[Event], None] = attrs.field(default=lambda _: None, kw_only=True)

    async def emit(self, event: Event) -> None:
        self.record(event)


def model_retry(agent: ReactAgent) -> ModelRetryInterceptor | None:
    """The agent's own ``ModelRetryInterceptor``: its settings become the model activity's
    retry policy (and it is left out of the workflow's chain, so calls are not retried twice)."""
    found = [i for i in agent.interceptors if isinstance(i, ModelRetryInterceptor)]
    return found[0] if found else None


def model_retry_policy(agent: ReactAgent) -> RetryPolicy:
    """Temporal's retry policy mapped from the agent's ``ModelRetryInterceptor``.

    Without one a failed model call is not retried (as in process) — but a call lost with
    its worker (a heartbeat or start-to-close timeout) always is, on another worker.
    Whether an error is worth retrying is decided in the activity (``retry_on``).
    """
    retry = model_retry(agent)
    if retry is None:
        return RetryPolicy(initial_interval=timedelta(seconds=0.5), maximum_attempts=0)
    return RetryPolicy(
        initial_interval=timedelta(seconds=retry.initial_delay),
        backoff_coefficient=retry.backoff_factor,
        maximum_interval=timedelta(seconds=max(retry.max_delay, retry.initial_delay)),
        maximum_attempts=retry.max_attempts,
    )


def _model_error(exc: ActivityError) -> Exception:
    """The reactcore error a failed model activity stands for."""
    cause = exc.cause
    if isinstance(cause, ApplicationError):
        details = cause.details[0] if cause.details else {}
        if cause.type == "ModelHTTPError" and isinstance(details, Mapping):
            return ModelHTTPError(
                cause.message,
                status_code=int(details.get("status_code", 0)),
                request_id=details.get("request_id"),
                body=str(details.get("body", "")),
            )
        return ModelError(f"{cause.type}: {cause.message}" if cause.type else cause.message)
    return ModelError(f"the model activity failed: {exc.message or exc}")


@attrs.define(eq=False)
class _ModelActivities:
    """The innermost model interceptor of the workflow: each model call is an activity."""

    owner: ReactAgentWorkflow

    async def wrap_model_call(self, request: ModelRequest, handler: Any) -> ModelResponse:
        settings = self.owner.settings
        if request.chat_model is not None and request.chat_model is not settings.agent.model:
            raise TypeError(
                "reactcore.temporal runs model calls with the agent's own model only; an "
                "interceptor chose another (request.chat_model)"
            )
        if request.dynamic_tools:
            added = {t.name: t for t in request.dynamic_tools}
            request.context[DYNAMIC_TOOLS] = {**dynamic_tools(request.context), **added}
        payload = codec.ModelInput(
            settings.name,
            list(request.messages),
            request.system_message,
            list(request.tools),
            list(request.tool_specs),
            request.context.get(MODEL_ITERATION, 0),
            bool(request.context.get(STREAM, True)),
            self.owner.thread_id,
            codec.dump_options(request.options),
        )
        try:
            text = await workflow.execute_activity(
                MODEL_ACTIVITY,
                codec.dumps(payload),
                start_to_close_timeout=timedelta(seconds=settings.model_timeout),
                heartbeat_timeout=timedelta(seconds=settings.heartbeat_timeout),
                retry_policy=model_retry_policy(settings.agent),
                result_type=str,
            )
        except ActivityError as exc:
            raise _model_error(exc) from exc
        out = codec.loads(text, codec.ModelOutput)
        message = out.message
        if message.tool_calls:
            # As the node's own innermost handler does: the tools this request showed.
            message = attrs.evolve(message, visible_tools=visible_names(request))
        return ModelResponse(message, out.usage)


@attrs.define(eq=False)
class _ToolActivities:
    """The innermost tool interceptor of the workflow: each tool call is an activity,
    with the call's timeout (``tool.timeout`` or the node's) as its own."""

    owner: ReactAgentWorkflow

    async def wrap_tool_call(
        self, request: ToolCallRequest, handler: ToolHandler
    ) -> ToolCallResponse:
        settings = self.owner.settings
        node = settings.agent.tool_node
        assert node is not None
        call = request.call
        timeout = request.tool.timeout or node.tool_execution_timeout
        state = codec.dump_state(request.state) if request.tool.wants_context else None
        payload = codec.ToolInput(
            settings.name,
            call,
            timeout,
            self.owner.thread_id,
            state,
            dict(request.config.metadata),
        )
        handle = workflow.start_activity(
            TOOL_ACTIVITY,
            codec.dumps(payload),
            start_to_close_timeout=timedelta(seconds=timeout + settings.timeout_grace),
            heartbeat_timeout=timedelta(seconds=settings.heartbeat_timeout),
            retry_policy=RetryPolicy(
                initial_interval=timedelta(seconds=0.5),
                maximum_attempts=settings.tool_attempts,
            ),
            # A cancelled call resolves once its activity has really stopped (not as soon
            # as the cancel is asked): the ToolCallCancelled event and the model's answer
            # then say the tool is no longer running.
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            result_type=str,
        )
        self.owner.inflight[call.id] = handle
        try:
            text = await handle
        except ActivityError as exc:
            if isinstance(exc.cause, CancelledError) or self.owner.cancel_asked(call.id):
                # The job carries the reason (set by cancel_tool): the node answers with
                # the usual "cancelled by the caller" error. (A cancelled call whose worker
                # was lost ends with a timeout instead: it was cancelled all the same.)
                return ToolCallResponse("", is_error=True)
            cause = exc.cause
            message = cause.message if isinstance(cause, ApplicationError) else str(exc)
            raise ToolExecutionError(message, call=call) from exc
        finally:
            self.owner.inflight.pop(call.id, None)
        out = codec.loads(text, codec.ToolOutput)
        if out.timed_out:
            text = f"Error: Tool execution timed out after {timeout:g}s (tool '{call.name}')"
            return ToolCallResponse(text, is_error=True)
        if out.update is None:
            return ToolCallResponse(out.text, out.is_error)
        update = dict(codec.load_state(out.update).state.data)
        return ToolCallResponse(out.text, out.is_error, update)


@attrs.frozen
class _Cancellation:
    """A hook, first of all: once the run is cancelled no model call or batch starts."""

    owner: ReactAgentWorkflow
    name: str = "_temporal_cancellation_"
    order: int = -(2**31)

    def _check(self) -> None:
        if self.owner.cancelled:
            raise RunCancelled(RUN_CANCELLED)

    async def before_model(self, state: OverAllState, config: RunnableConfig) -> None:
        self._check()

    async def before_tools(self, state: OverAllState, config: RunnableConfig) -> None:
        self._check()


def workflow_agent(owner: ReactAgentWorkflow) -> ReactAgent:
    """The user's agent as the workflow runs it: the same definition, plus the activity
    interceptors (innermost) and the cancellation hook, and no saver.

    Built per run: the activity interceptors and the hook belong to this run, and so does
    everything the nodes hold.
    """
    agent = owner.settings.agent
    retry = model_retry(agent)
    kept = [i for i in agent.interceptors if i is not retry]
    copy = attrs.evolve(
        agent,
        interceptors=[*kept, _ModelActivities(owner), _ToolActivities(owner)],
        hooks=[*agent.hooks, _Cancellation(owner)],
        saver=_NoSaver(),
        tracer_provider=None,
    )
    node = copy.tool_node
    if agent.tool_node is None:
        copy._tool_node = None
    elif node is not None:
        copy._tool_node = attrs.evolve(node, local_limits=False)
    return copy


@workflow.defn(name=WORKFLOW)
class ReactAgentWorkflow:
    """One run of a registered agent (workflow id: the thread id); see the module docstring."""

    def __init__(self) -> None:
        self.settings: TemporalAgent
        self.thread_id = ""
        self.events: list[dict[str, Any]] = []
        self.inflight: dict[str, workflow.ActivityHandle[str]] = {}
        self.cancelled = False
        self.status = "running"
        self._run: _RecordingRun | None = None
        self._agent: ReactAgent | None = None
        self._config = RunnableConfig()
        self._paused: AgentResult | None = None
        self._resume: Resume | None = None
        self._leg = 0  # where the events of the current leg (from the start or a resume) begin

    @workflow.run
    async def run(self, argument: str) -> str:
        """Run the agent from the input to its answer, pausing for approvals on the way.

        Temporal's own workflow cancellation (``temporal workflow cancel``, the UI) is taken
        as ``cancel()``. The run is driven in a task of its own, awaited through a shield:
        Temporal cancels the workflow's main task, and that cancellation must never travel
        through anyio's task groups into an activity await (anyio re-delivers it until the
        await ends, Temporal's await waits for the next activation: a deadlock).
        """
        # asyncio here, not anyio: this is Temporal's event loop, and the shield is the point.
        driving = asyncio.ensure_future(self._drive(argument))
        while True:
            try:
                return await asyncio.shield(driving)
            except asyncio.CancelledError:
                if driving.done():
                    raise
                self._cancel_run()

    async def _drive(self, argument: str) -> str:
        """The run itself: the loop from the input, then again after each approval."""
        given = codec.loads(argument, codec.RunInput)
        self.settings = registered(given.agent)
        self.thread_id = given.thread_id
        agent = self._agent = workflow_agent(self)
        run = self._run = _RecordingRun(
            workflow.uuid4().hex[:12], given.thread_id, record=self._record
        )
        update = dict(codec.load_state(given.update).state.data)
        start = Start(OverAllState({}, agent.key_strategies).merge(update), "model", True)
        while True:
            self._config = RunnableConfig(given.thread_id, given.metadata, {})
            loop = Loop(agent, run, self._config)
            try:
                result = await loop.execute(start)
            except RunCancelled:
                return self._end("cancelled", run.state, loop.model_calls, RUN_CANCELLED)
            except Exception as exc:
                self.status = "failed"
                self.events.append({"type": "RunFailed", "error": f"{type(exc).__name__}: {exc}"})
                raise ApplicationError(
                    f"{type(exc).__name__}: {exc}", type=type(exc).__name__, non_retryable=True
                ) from exc
            if result.interrupt is None:
                return self._end("finished", result.state, result.model_calls)
            resume = await self._paused_for(result)
            if resume is None:
                return self._end("cancelled", result.state, result.model_calls, RUN_CANCELLED)
            calls = result.interrupt.calls
            state = apply_decisions(agent, result.state, calls, resume, self._config)
            start = Start(state, "tools", False, result.model_calls)

    async def _paused_for(self, result: AgentResult) -> Resume | None:
        """Wait for a human's decisions (``None``: the run was cancelled meanwhile)."""
        assert result.interrupt is not None
        self._paused, self.status = result, "interrupted"
        calls = [attrs.asdict(c) for c in result.interrupt.calls]
        self.events.append({"type": "RunInterrupted", "calls": calls})
        await workflow.wait_condition(lambda: self._resume is not None or self.cancelled)
        resume, self._resume, self._paused = self._resume, None, None
        self.status = "running"
        self._leg = len(self.events)
        return None if self.cancelled else resume

    def _end(self, status: str, state: Any, model_calls: int, message: str = "") -> str:
        self.status = status
        self.events.append({"type": "RunFinished" if status == "finished" else "RunFailed"})
        stamp = workflow.now().timestamp()
        checkpoint = codec.dump_state(
            state, thread_id=self.thread_id, model_calls=model_calls, created_at=stamp
        )
        return codec.dumps(codec.RunOutcome(status, checkpoint, message))

    def _record(self, event: Event) -> None:
        data = codec.dump_event(event)
        if data is not None:
            self.events.append(data)

    @workflow.query(name="events")
    def query_events(self, since: int) -> list[dict[str, Any]]:
        """The events from number ``since`` on (at most 500 per answer)."""
        return self.events[since : since + 500]

    @workflow.query(name="status")
    def query_status(self) -> dict[str, Any]:
        """How the run is: running, interrupted (with the calls waiting), or ended."""
        paused = self._paused
        interrupt = paused.interrupt if paused is not None else None
        return {
            "status": self.status,
            "leg": self._leg,
            "interrupt": None
            if interrupt is None
            else codec.dump_state(
                paused.state if paused is not None else OverAllState({}),
                next="tools",
                model_calls=paused.model_calls if paused is not None else 0,
                interrupt=interrupt.calls,
            ),
        }

    @workflow.update(name="cancel_tool")
    def cancel_tool(self, argument: str) -> bool:
        """Cancel the running tool call named in ``argument`` (False if not running)."""
        given = codec.loads(argument, codec.CancelToolInput)
        return self._cancel_call(given.call_id, given.reason)

    def cancel_asked(self, call_id: str) -> bool:
        """Whether ``cancel_tool`` (or ``cancel``) asked to cancel the call ``call_id``."""
        job = self._run._inflight.get(call_id) if self._run is not None else None
        return job is not None and job.cancel_reason is not None

    def _cancel_call(self, call_id: str, reason: str) -> bool:
        handle = self.inflight.get(call_id)
        job = self._run._inflight.get(call_id) if self._run is not None else None
        if handle is None or job is None or not job.running or job.cancel_reason is not None:
            return False
        job.cancel_reason = reason
        handle.cancel()
        return True

    @workflow.update(name="cancel")
    def cancel(self) -> bool:
        """Cancel the run: running calls are cancelled, finished ones kept, no model call
        or batch starts after; the run ends as cancelled. False if it had ended."""
        return self._cancel_run()

    def _cancel_run(self) -> bool:
        if self.status not in ("running", "interrupted") or self.cancelled:
            return False
        self.cancelled = True
        for call_id in list(self.inflight):
            self._cancel_call(call_id, RUN_CANCELLED)
        return True

    @workflow.update(name="resume")
    def resume(self, argument: str) -> None:
        """Go on with a paused run, with a human's decisions (JSON of a ``Resume``)."""
        self._resume = codec.load_resume(argument)

    @resume.validator
    def _check_resume(self, argument: str) -> None:
        paused = self._paused
        if paused is None or paused.interrupt is None or self._agent is None:
            raise ValueError("nothing to approve: the run is not waiting for approval")
        decisions = codec.load_resume(argument)
        apply_decisions(self._agent, paused.state, paused.interrupt.calls, decisions, self._config)

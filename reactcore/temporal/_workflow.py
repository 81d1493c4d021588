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
update; the events are kept for the ``events`` query. How calls become activities is
``_calls``; a long run continues as new (see ``ReactAgentWorkflow``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NoReturn

import attrs
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from .._approval import Resume
from .._checkpoint import Checkpoint
from .._config import RunnableConfig
from .._events import Event
from .._exceptions import RunCancelled
from .._llm_node import MODEL_ITERATION
from .._loop import Loop, Start, apply_decisions
from .._messages import Message
from .._result import AgentResult
from .._run import AgentRun
from .._run_context import RUN_COUNTS
from .._state import MESSAGES, OverAllState
from . import _codec as codec
from ._calls import (
    LOAD_ACTIVITY,
    SAVE_ACTIVITY,
    ModelActivities,
    ToolActivities,
    bounded,
    model_retry,
    without_messages,
)
from ._refs import Conversations

if TYPE_CHECKING:
    from .._agent import ReactAgent
    from ._agent import TemporalAgent

WORKFLOW = "reactcore.ReactAgent"
PAGE_BYTES = 2**20  # messages per page when a continued run reads its conversation back
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


class _GoOn(Exception):
    """Raised by ``_Gate`` before a model call when the run should continue as new."""

    def __init__(self, state: OverAllState) -> None:
        super().__init__("continue as new")
        self.state = state


@attrs.frozen
class _Gate:
    """A hook, first of all: once the run is cancelled no model call or batch starts;
    when the history is long, the run continues as new before its next model call."""

    owner: ReactAgentWorkflow
    name: str = "_temporal_gate_"
    order: int = -(2**31)

    def _check(self) -> None:
        if self.owner.cancelled:
            raise RunCancelled(RUN_CANCELLED)

    async def before_model(self, state: OverAllState, config: RunnableConfig) -> None:
        self._check()
        if self.owner.history_is_long():
            raise _GoOn(state)

    async def before_tools(self, state: OverAllState, config: RunnableConfig) -> None:
        self._check()


def workflow_agent(owner: ReactAgentWorkflow) -> ReactAgent:
    """The user's agent as the workflow runs it: the same definition, plus the activity
    interceptors (innermost) and the gate hook, and no saver.

    Built per run: the activity interceptors and the hook belong to this run, and so does
    everything the nodes hold.
    """
    agent = owner.settings.agent
    retry = model_retry(agent)
    kept = [i for i in agent.interceptors if i is not retry]
    copy = attrs.evolve(
        agent,
        interceptors=[*kept, ModelActivities(owner), ToolActivities(owner)],
        hooks=[*agent.hooks, _Gate(owner)],
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
    """One run of a registered agent (workflow id: the thread id); see the module docstring.

    A long run continues as new (a fresh history) before a model call, once Temporal
    suggests it or the history passes the agent's ``continue_after_events`` or
    ``continue_after_bytes``: the state goes over (its messages by reference when the
    agent has a store), with the model calls, the number of events so far and the run's
    counts (the limit hooks' run counts, the output retries spent: the chain is one run
    for them, as one run in process is); queries
    and updates reach the newest run of the thread, and ``result()`` follows the chain.
    """

    def __init__(self) -> None:
        self.settings: TemporalAgent
        self.thread_id = ""
        self._metadata: dict[str, Any] = {}
        self.events: list[dict[str, Any]] = []
        self.inflight: dict[str, workflow.ActivityHandle[str]] = {}
        self.cancelled = False
        self.status = "running"
        self.conversations = Conversations()
        self._run: _RecordingRun | None = None
        self._agent: ReactAgent | None = None
        self._loop: Loop | None = None
        self._paused: AgentResult | None = None
        self._resume: Resume | None = None
        self._first_event = 0  # the events the earlier runs of the chain recorded
        self._first_call = 0  # the model calls made before this run of the chain
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
        """The run; any error fails it (recorded as ``RunFailed``, and raised as a
        non-retryable ``ApplicationError`` naming it: retrying would fail the same way).
        Continuing as new is no error (``ContinueAsNewError`` is a ``BaseException``)."""
        try:
            return await self._steps(argument)
        except Exception as exc:
            self.status = "failed"
            self.events.append({"type": "RunFailed", "error": f"{type(exc).__name__}: {exc}"})
            if isinstance(exc, ApplicationError):
                raise
            raise ApplicationError(
                f"{type(exc).__name__}: {exc}", type=type(exc).__name__, non_retryable=True
            ) from exc

    async def _steps(self, argument: str) -> str:
        """The loop from the input (or the carried state), then again after each approval;
        continued as new when the history is long."""
        given = codec.loads(argument, codec.RunInput)
        self.settings = registered(given.agent)
        self.thread_id, self._metadata = given.thread_id, given.metadata
        agent = self._agent = workflow_agent(self)
        run = self._run = _RecordingRun(
            workflow.uuid4().hex[:12], given.thread_id, record=self._record
        )
        config = self._new_config()
        retries = 0
        if given.carry is None:
            update = dict(codec.load_state(given.update).state.data)
            start = Start(OverAllState({}, agent.key_strategies).merge(update), "model", True)
        else:
            start = await self._carried(given.carry)
            # The chain is one run: what it counted goes on from where it was.
            config.context[RUN_COUNTS] = dict(given.carry.run_counts)
            retries = given.carry.output_retries
        while True:
            if start.model_calls:
                config.context[MODEL_ITERATION] = start.model_calls - 1
            loop = self._loop = Loop(agent, run, config, output_retries=retries)
            try:
                result = await loop.execute(start)
            except RunCancelled:
                return await self._end("cancelled", run.state, loop.model_calls, RUN_CANCELLED)
            except _GoOn as going:
                return await self._continue(given, going.state, loop)
            if result.interrupt is None:
                return await self._end("finished", result.state, result.model_calls)
            resume = await self._paused_for(result)
            if resume is None:
                return await self._end("cancelled", result.state, result.model_calls, RUN_CANCELLED)
            # As in process, the run goes on after a pause as a new leg, in a context of
            # its own (counting afresh) that holds the decisions for calls that paused.
            config = self._new_config()
            retries = 0
            calls = result.interrupt.calls
            state = apply_decisions(agent, result.state, calls, resume, config)
            start = Start(state, "tools", False, result.model_calls)

    def _new_config(self) -> RunnableConfig:
        """The config of a leg of the run (from its start, a continue-as-new or a resume)."""
        return RunnableConfig(self.thread_id, self._metadata, {})

    # --- by reference, and long runs ----------------------------------------------------

    def conversation(self, messages: Sequence[Message]) -> codec.Conversation | None:
        """``messages`` by reference, if the agent has a store (``None``: inline)."""
        if self.settings.store is None:
            return None
        return self.conversations.of(messages)

    def stored(self, conversation: codec.Conversation | None, messages: int) -> None:
        """An activity has stored ``conversation`` (of ``messages`` messages)."""
        if conversation is not None:
            self.conversations.stored(conversation, messages)

    def history_is_long(self) -> bool:
        """Whether to continue as new now: Temporal suggests it, or the history passed the
        agent's thresholds — once this run has made a model call (reading a long
        conversation back may take a good part of a fresh history)."""
        loop = self._loop
        if loop is None or loop.model_calls <= self._first_call:
            return False
        info = workflow.info()
        return (
            info.is_continue_as_new_suggested()
            or info.get_current_history_length() >= self.settings.continue_after_events
            or info.get_current_history_size() >= self.settings.continue_after_bytes
        )

    async def _saved(self, state: OverAllState) -> tuple[OverAllState, str | None]:
        """``state`` as it is carried or returned, and the key of its messages once stored
        (with the ``reactcore.save`` activity) when the agent has a store."""
        messages = state.get(MESSAGES) or ()
        conversation = self.conversation(messages)
        if conversation is None:
            return state, None
        argument = codec.SaveInput(self.settings.name, conversation)
        await workflow.execute_activity(
            SAVE_ACTIVITY,
            bounded(codec.dumps(argument), "the conversation to save"),
            start_to_close_timeout=timedelta(seconds=self.settings.model_timeout),
            retry_policy=RetryPolicy(initial_interval=timedelta(seconds=0.5)),
        )
        self.stored(conversation, len(messages))
        return without_messages(state, conversation), conversation.key

    async def _continue(self, given: codec.RunInput, state: OverAllState, loop: Loop) -> NoReturn:
        """Continue as new from before the next model call, carrying ``state`` and what
        ``loop`` counted."""
        kept, messages = await self._saved(state)
        checkpoint = codec.dump_state(kept, model_calls=loop.model_calls)
        events = self._first_event + len(self.events)
        counts = dict(loop.config.context.get(RUN_COUNTS) or {})
        carry = codec.Carry(checkpoint, messages, events, counts, loop.output_retries)
        nothing = codec.dump_state(OverAllState({}))
        argument = attrs.evolve(given, update=nothing, carry=carry)
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(bounded(codec.dumps(argument), "the state to carry"))

    async def _carried(self, carry: codec.Carry) -> Start:
        """Where a continued run starts: the carried state (its messages read back from
        the store, in pages), before a model call."""
        assert self._agent is not None
        checkpoint = codec.load_state(carry.checkpoint)
        data = dict(checkpoint.state.data)
        if carry.messages is not None:
            data[MESSAGES] = await self._load(carry.messages)
        self._first_event = self._leg = carry.events
        self._first_call = checkpoint.model_calls
        return Start(
            OverAllState(data, self._agent.key_strategies), "model", False, checkpoint.model_calls
        )

    async def _load(self, key: str) -> list[Message]:
        """The messages of the stored conversation ``key`` (the ``reactcore.load``
        activity, a page at a time: each page is a payload of its own)."""
        texts: list[str] = []
        while True:
            argument = codec.LoadInput(self.settings.name, key, len(texts), PAGE_BYTES)
            page = await workflow.execute_activity(
                LOAD_ACTIVITY,
                codec.dumps(argument),
                start_to_close_timeout=timedelta(seconds=self.settings.model_timeout),
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=0.5)),
                result_type=str,
            )
            out = codec.loads(page, codec.LoadOutput)
            texts.extend(out.messages)
            if out.done:
                return self.conversations.loaded(key, texts)

    async def _paused_for(self, result: AgentResult) -> Resume | None:
        """Wait for a human's decisions (``None``: the run was cancelled meanwhile)."""
        assert result.interrupt is not None
        self._paused, self.status = result, "interrupted"
        calls = [attrs.asdict(c) for c in result.interrupt.calls]
        self.events.append({"type": "RunInterrupted", "calls": calls})
        await workflow.wait_condition(lambda: self._resume is not None or self.cancelled)
        resume, self._resume, self._paused = self._resume, None, None
        self.status = "running"
        self._leg = self._first_event + len(self.events)
        return None if self.cancelled else resume

    async def _end(self, status: str, state: Any, model_calls: int, message: str = "") -> str:
        kept, messages = await self._saved(state)
        self.status = status
        self.events.append({"type": "RunFinished" if status == "finished" else "RunFailed"})
        stamp = workflow.now().timestamp()
        checkpoint = codec.dump_state(
            kept,
            thread_id=self.thread_id,
            model_calls=model_calls,
            created_at=stamp,
        )
        outcome = codec.RunOutcome(status, checkpoint, message, messages)
        return bounded(codec.dumps(outcome), "the run's outcome")

    def _record(self, event: Event) -> None:
        data = codec.dump_event(event)
        if data is not None:
            self.events.append(data)

    @workflow.query(name="events")
    def query_events(self, since: int) -> dict[str, Any]:
        """The events from number ``since`` on (at most 500 per answer), numbered over
        the whole chain of runs: ``{"first": <the number of the first>, "events": [...]}``
        (the events of earlier runs of the chain are gone: from this run's first)."""
        first = max(since, self._first_event)
        at = first - self._first_event
        return {"first": first, "events": self.events[at : at + 500]}

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
        calls = paused.interrupt.calls  # checked on a config of its own: nothing is kept
        apply_decisions(self._agent, paused.state, calls, decisions, self._new_config())

"""``TemporalAgent`` (a ``ReactAgent`` run as a Temporal workflow) and ``TemporalRun``
(the client's handle on one run: result, cancellation, approval, events).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from types import TracebackType
from typing import Any, cast

import anyio
import attrs
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from .. import _validate as valid
from .._agent import ReactAgent
from .._approval import Interrupt, Resume
from .._events import Event, RunFailed, RunFinished, RunInterrupted
from .._exceptions import RunCancelled
from .._handle import RunStatus
from .._input import AgentInput, input_update
from .._messages import Message, ToolCall
from .._result import AgentResult
from .._state import MESSAGES, OverAllState
from . import _codec as codec
from ._refs import Reader
from ._store import PayloadStore
from ._unsupported import check_supported
from ._workflow import WORKFLOW

_positive = valid.number(positive=True)


@attrs.define(eq=False)
class TemporalAgent:
    """``agent`` run as a Temporal workflow on ``task_queue``; the agent is defined as
    usual and left unchanged.

    Workers (``reactcore.temporal.worker``) find it by ``agent.name``. Every model call
    and every tool call is an activity: a tool call's ``start_to_close_timeout`` is its
    timeout (``tool.timeout`` or the agent's ``tool_execution_timeout``) plus
    ``timeout_grace``, a model call's is ``model_timeout``; both heartbeat every
    ``heartbeat_timeout / 3`` seconds, so a call lost with its worker runs again on
    another within about ``heartbeat_timeout`` seconds. A tool call is tried at most
    ``tool_attempts`` times (a tool's error is an answer, not a failure: only a lost
    worker makes another attempt).

    A running activity learns that it was cancelled only from a heartbeat's answer, so a
    tool call heartbeats at least every ``cancel_within`` seconds (1 s), and
    ``reactcore.temporal.worker`` sends heartbeats that often (Temporal otherwise holds
    them back to 80 % of ``heartbeat_timeout``: 8 s by default): ``cancel_tool`` and
    ``cancel`` reach a running tool within about ``cancel_within`` seconds, for one
    heartbeat request per second per running tool call.

    Long runs: with a ``store`` (a ``PayloadStore`` every worker and client of the agent
    shares, e.g. ``FileStore(dir)``), the conversation goes to the model activity by
    reference (only what it adds to the previous call travels in the history), and a
    tool result over ``inline_limit`` bytes is stored and replaced, in the workflow, by
    a marker (the model and the caller get the whole text). Without one, everything is
    inline, as long as each payload stays under Temporal's 2 MB. Either way, a run
    continues as new before a model call once Temporal suggests it or its history
    reaches ``continue_after_events`` events or ``continue_after_bytes`` bytes (the run's
    limits and counts go on over the chain).

    An agent with a hook or interceptor that calls a model itself (``SummarizationHook``,
    ``ToolSelectionInterceptor`` with a model, ``ModelFallbackInterceptor``) is refused
    (``ValueError``): that call would run in workflow code, not as an activity.
    """

    agent: ReactAgent = attrs.field(
        validator=attrs.validators.and_(
            valid.instance_of(ReactAgent, "a ReactAgent"), check_supported
        )
    )
    task_queue: str = attrs.field(
        default="reactcore", kw_only=True, validator=valid.text(non_empty=True)
    )
    model_timeout: float = attrs.field(default=300.0, kw_only=True, validator=_positive)
    heartbeat_timeout: float = attrs.field(default=10.0, kw_only=True, validator=_positive)
    timeout_grace: float = attrs.field(default=5.0, kw_only=True, validator=_positive)
    tool_attempts: int = attrs.field(default=5, kw_only=True, validator=valid.integer(minimum=1))
    cancel_within: float = attrs.field(default=1.0, kw_only=True, validator=_positive)
    store: PayloadStore | None = attrs.field(
        default=None,
        kw_only=True,
        validator=valid.has_methods("get", "put", what="a PayloadStore", optional=True),
    )
    inline_limit: int = attrs.field(default=8192, kw_only=True, validator=valid.integer(minimum=0))
    continue_after_events: int = attrs.field(
        default=10_000, kw_only=True, validator=valid.integer(minimum=1)
    )
    continue_after_bytes: int = attrs.field(
        default=10 * 2**20, kw_only=True, validator=valid.integer(minimum=1)
    )

    @property
    def name(self) -> str:
        """The agent's name: how workers and workflows find it."""
        return self.agent.name

    @property
    def beat_every(self) -> float:
        """Seconds between a model activity's heartbeats."""
        return self.heartbeat_timeout / 3

    @property
    def tool_beat_every(self) -> float:
        """Seconds between a tool activity's heartbeats (its cancellation arrives with one)."""
        return min(self.beat_every, self.cancel_within)

    async def start(
        self,
        client: Client,
        input: AgentInput,
        *,
        thread_id: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> TemporalRun:
        """Start a run: a workflow whose id is ``thread_id`` (one live run per thread)."""
        update = codec.dump_state(OverAllState(input_update(input)))
        argument = codec.RunInput(self.name, update, thread_id, dict(metadata or {}))
        started: WorkflowHandle[Any, str] = await client.start_workflow(
            WORKFLOW,
            codec.dumps(argument),
            id=thread_id,
            task_queue=self.task_queue,
            result_type=str,
        )
        # No run id: queries and updates reach the newest run of the chain (a long run
        # continues as new), and the result is the chain's.
        first = started.first_execution_run_id
        handle = client.get_workflow_handle(
            thread_id, first_execution_run_id=first, result_type=str
        )
        return TemporalRun(self, handle)

    async def invoke(
        self,
        client: Client,
        input: AgentInput,
        *,
        thread_id: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> AgentResult:
        """Start a run and wait for its answer."""
        run = await self.start(client, input, thread_id=thread_id, metadata=metadata)
        return await run.result()

    def get(self, client: Client, thread_id: str) -> TemporalRun:
        """The handle on the run of ``thread_id`` (started earlier, maybe elsewhere)."""
        return TemporalRun(self, client.get_workflow_handle(thread_id, result_type=str))


@attrs.define(eq=False)
class _PolledEvents:
    """``TemporalRun.events()``: the polled events as an ``EventSource`` (an async
    iterator that is also an async context manager, as ``AgentRun.events()`` gives)."""

    _source: AsyncGenerator[Event, None]

    def __aiter__(self) -> _PolledEvents:
        return self

    async def __anext__(self) -> Event:
        return await self._source.__anext__()

    async def aclose(self) -> None:
        """Stop reading (the run is not affected)."""
        await self._source.aclose()

    async def __aenter__(self) -> _PolledEvents:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


_ENDED = {
    WorkflowExecutionStatus.FAILED: "failed",
    WorkflowExecutionStatus.TERMINATED: "failed",
    WorkflowExecutionStatus.TIMED_OUT: "failed",
    WorkflowExecutionStatus.CANCELED: "cancelled",
}


@attrs.define(eq=False)
class TemporalRun:
    """A run in Temporal, seen from a client; any number of clients may hold one. It
    implements ``reactcore.RunHandle``, the protocol it shares with the in-process
    ``AgentRun``: the same members with the same meaning (see ``reactcore._handle``).

    ``result()`` and ``events()`` poll the workflow every ``poll`` seconds (a query, and
    for ``result()`` a describe call: they add nothing to the run's history).
    """

    agent: TemporalAgent
    handle: WorkflowHandle[Any, str]
    _reader: Reader | None = attrs.field(default=None, init=False)

    @property
    def run_id(self) -> str | None:
        """Temporal's run id of the workflow, when this handle knows it (``None`` for a
        handle from ``TemporalAgent.get``)."""
        h = self.handle
        return h.first_execution_run_id or h.result_run_id or h.run_id

    @property
    def thread_id(self) -> str:
        """The thread id, which is the workflow id."""
        return self.handle.id

    async def result(self, *, poll: float = 0.05) -> AgentResult:
        """Wait for the run's end or its pause for approval: its ``AgentResult`` (status
        ``"finished"``, or ``"interrupted"`` with the calls waiting in ``interrupt``);
        ``RunCancelled`` (with the state, finished calls kept) if it was cancelled. A
        failed run raises Temporal's ``WorkflowFailureError``, whose cause names the error."""
        while True:
            if await self._closed():
                return await self._outcome()
            paused = await self._paused()
            if paused is not None:
                return paused
            await anyio.sleep(poll)

    async def _closed(self) -> bool:
        """Whether the workflow has closed (asked of the server: no worker needed)."""
        description = await self.handle.describe()
        return description.status not in (None, WorkflowExecutionStatus.RUNNING)

    async def _paused(self) -> AgentResult | None:
        """The interrupted result if the (running) workflow waits for approval, else ``None``."""
        answer = await self.handle.query("status", result_type=dict)
        if answer["interrupt"] is None:
            return None
        checkpoint = codec.load_state(answer["interrupt"])
        calls: tuple[ToolCall, ...] = checkpoint.interrupt or ()
        state = await self._expanded(checkpoint.state, None)
        return self.agent.agent.result(state, checkpoint.model_calls, Interrupt(calls))

    async def _expanded(self, state: OverAllState, key: str | None) -> OverAllState:
        """``state`` as the caller sees it: its messages read from the store (those of
        the stored conversation ``key``), stored results put back."""
        store = self.agent.store
        if store is None:
            return state
        reader = self._reader = self._reader if self._reader is not None else Reader(store)
        messages: list[Message]
        if key is not None:
            messages = await reader.load(key)
        else:
            messages = [await reader.expanded(m) for m in state.get(MESSAGES) or ()]
        return OverAllState({**state.data, MESSAGES: messages}, state.key_strategies)

    async def _outcome(self) -> AgentResult:
        """The closed workflow's ``AgentResult`` (or its error, raised)."""
        outcome = codec.loads(await self.handle.result(), codec.RunOutcome)
        checkpoint = codec.load_state(outcome.checkpoint)
        state = await self._expanded(checkpoint.state, outcome.messages)
        if outcome.status == "cancelled":
            messages = state.get(MESSAGES) or ()
            raise RunCancelled(outcome.message, messages=messages, state=state)
        return self.agent.agent.result(state, checkpoint.model_calls)

    async def cancel_tool(self, call_id: str, reason: str | None = None) -> bool:
        """Cancel the running tool call ``call_id`` (its activity, through Temporal); the
        model gets ``Error: Tool execution was cancelled by the caller: <reason>`` and the
        run goes on. True if the call was running and is now being cancelled; False for an
        unknown, queued, finished or already cancelled call.

        The activity learns of it at its next heartbeat, within about
        ``TemporalAgent.cancel_within`` seconds (1 s by default) when its worker was made by
        ``reactcore.temporal.worker``; the call's ``ToolCallCancelled`` event (and the
        model's answer) come once the activity has really stopped."""
        argument = codec.dumps(codec.CancelToolInput(call_id, reason or ""))
        return await self._flag("cancel_tool", argument)

    async def cancel(self) -> bool:
        """Cancel the whole run: running calls are cancelled, finished ones kept;
        ``result()`` then raises ``RunCancelled`` (once the running calls have stopped).
        True if the run was live and is now being cancelled, False if it had ended or was
        being cancelled already."""
        return await self._flag("cancel", None)

    async def _flag(self, update: str, argument: str | None) -> bool:
        """The answer of a yes/no update; False once the workflow has ended."""
        args = [] if argument is None else [argument]
        try:
            return bool(await self.handle.execute_update(update, args=args, result_type=bool))
        except RPCError as exc:
            if exc.status is RPCStatusCode.NOT_FOUND:
                return False
            raise

    async def resume(self, decisions: Resume) -> None:
        """Answer the run's pause for approval; the run goes on under this handle.
        ``ValueError`` if it is not waiting or the decisions do not fit (unknown call id,
        edited arguments that do not parse); nothing changes then."""
        try:
            await self.handle.execute_update("resume", codec.dump_resume(decisions))
        except WorkflowUpdateFailedError as exc:
            cause = exc.cause
            raise ValueError(getattr(cause, "message", str(cause))) from exc
        except RPCError as exc:
            if exc.status is not RPCStatusCode.NOT_FOUND:
                raise
            raise ValueError("nothing to approve: the run is not waiting for approval") from exc

    async def status(self) -> RunStatus:
        """``"running"``, ``"interrupted"``, ``"finished"``, ``"cancelled"`` or ``"failed"``."""
        description = await self.handle.describe()
        closed = description.status
        if closed is None or closed is WorkflowExecutionStatus.RUNNING:
            answer = await self.handle.query("status", result_type=dict)
            return cast(RunStatus, answer["status"])
        if closed in _ENDED:
            return cast(RunStatus, _ENDED[closed])
        outcome = codec.loads(await self.handle.result(), codec.RunOutcome)
        return cast(RunStatus, outcome.status)

    async def interrupted(self, *, poll: float = 0.05) -> AgentResult:
        """Wait until the run pauses for approval: its ``AgentResult`` (status
        ``"interrupted"``, the calls waiting in ``interrupt``); ``RuntimeError`` if the run
        ended instead. Bound the wait with ``anyio.fail_after``."""
        while True:
            if await self._closed():
                raise RuntimeError(f"the run ended ({await self.status()}) without a pause")
            paused = await self._paused()
            if paused is not None:
                return paused
            await anyio.sleep(poll)

    def events(self, *, poll: float = 0.05) -> _PolledEvents:
        """The events of the run's current leg (from its start, or from the latest
        ``resume``), read with the ``events`` query every ``poll`` seconds while the run
        goes on: ``async with run.events() as events: async for event in events``. They end
        after ``RunFinished``, ``RunFailed`` or ``RunInterrupted`` (after ``resume``, call
        ``events()`` again). Any number of readers, each from the leg's first event.

        Model deltas are not among them (the model streams inside its activity).
        """
        return _PolledEvents(self._polled(poll))

    async def _polled(self, poll: float) -> AsyncGenerator[Event, None]:
        answer = await self.handle.query("status", result_type=dict)
        seen = int(answer.get("leg", 0))
        while True:
            page = await self.handle.query("events", seen, result_type=dict)
            batch = page["events"]
            seen = page["first"] + len(batch)
            for data in batch:
                kind = data["type"]
                if kind == "RunFinished":
                    yield RunFinished(await self._outcome())
                    return
                if kind == "RunFailed":
                    yield RunFailed(await self._error())
                    return
                if kind == "RunInterrupted":
                    calls = tuple(codec.converter.structure(c, ToolCall) for c in data["calls"])
                    yield RunInterrupted(calls)
                    return
                yield codec.load_event(data)
            if not batch:
                await anyio.sleep(poll)

    async def _error(self) -> BaseException:
        try:
            await self._outcome()
        except BaseException as exc:  # the run's error, handed to the caller as an event
            return exc
        return RuntimeError("the run reported a failure but finished")

"""``TemporalAgent`` (a ``ReactAgent`` run as a Temporal workflow) and ``TemporalRun``
(the client's handle on one run: result, cancellation, approval, events).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import attrs
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from .. import _validate as valid
from .._agent import ReactAgent
from .._approval import Interrupt, Resume
from .._events import Event, RunFailed, RunFinished, RunInterrupted
from .._exceptions import RunCancelled
from .._loop import AgentInput, input_update
from .._messages import ToolCall
from .._result import AgentResult
from .._state import MESSAGES, OverAllState
from . import _codec as codec
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
    """

    agent: ReactAgent = attrs.field(validator=valid.instance_of(ReactAgent, "a ReactAgent"))
    task_queue: str = attrs.field(
        default="reactcore", kw_only=True, validator=valid.text(non_empty=True)
    )
    model_timeout: float = attrs.field(default=300.0, kw_only=True, validator=_positive)
    heartbeat_timeout: float = attrs.field(default=10.0, kw_only=True, validator=_positive)
    timeout_grace: float = attrs.field(default=5.0, kw_only=True, validator=_positive)
    tool_attempts: int = attrs.field(default=5, kw_only=True, validator=valid.integer(minimum=1))

    @property
    def name(self) -> str:
        """The agent's name: how workers and workflows find it."""
        return self.agent.name

    @property
    def beat_every(self) -> float:
        """Seconds between an activity's heartbeats."""
        return self.heartbeat_timeout / 3

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
        handle: WorkflowHandle[Any, str] = await client.start_workflow(
            WORKFLOW,
            codec.dumps(argument),
            id=thread_id,
            task_queue=self.task_queue,
            result_type=str,
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
class TemporalRun:
    """A run in Temporal, seen from a client; any number of clients may hold one."""

    agent: TemporalAgent
    handle: WorkflowHandle[Any, str]

    @property
    def thread_id(self) -> str:
        """The thread id, which is the workflow id."""
        return self.handle.id

    async def result(self) -> AgentResult:
        """Wait for the run's end: its ``AgentResult``; ``RunCancelled`` (with the state,
        finished calls kept) if it was cancelled. A failed run raises Temporal's
        ``WorkflowFailureError``, whose cause names the error."""
        outcome = codec.loads(await self.handle.result(), codec.RunOutcome)
        checkpoint = codec.load_state(outcome.checkpoint)
        state = checkpoint.state
        if outcome.status == "cancelled":
            messages = state.get(MESSAGES) or ()
            raise RunCancelled(outcome.message, messages=messages, state=state)
        return self.agent.agent.result(state, checkpoint.model_calls)

    async def cancel_tool(self, call_id: str, reason: str | None = None) -> bool:
        """Cancel the running tool call ``call_id`` (its activity, through Temporal); the
        model gets ``Error: Tool execution was cancelled by the caller: <reason>`` and the
        run goes on. False for an unknown, queued or finished call."""
        argument = codec.dumps(codec.CancelToolInput(call_id, reason or ""))
        return await self._flag("cancel_tool", argument)

    async def cancel(self) -> bool:
        """Cancel the whole run: running calls are cancelled, finished ones kept;
        ``result()`` then raises ``RunCancelled``. False if the run had ended."""
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

    async def resume(self, resume: Resume) -> None:
        """Answer the run's pause for approval; ``ValueError`` if it is not waiting or the
        decisions do not fit (unknown call id, edited arguments that do not parse)."""
        try:
            await self.handle.execute_update("resume", codec.dump_resume(resume))
        except WorkflowUpdateFailedError as exc:
            cause = exc.cause
            raise ValueError(getattr(cause, "message", str(cause))) from exc

    async def status(self) -> str:
        """``"running"``, ``"interrupted"``, ``"finished"``, ``"cancelled"`` or ``"failed"``."""
        answer = await self.handle.query("status", result_type=dict)
        return str(answer["status"])

    async def interrupted(self, *, poll: float = 0.05) -> AgentResult:
        """Wait until the run pauses for approval: its ``AgentResult`` (status
        ``"interrupted"``, the calls waiting in ``interrupt``); ``RuntimeError`` if the run
        ended instead. Bound the wait with ``anyio.fail_after``."""
        while True:
            answer = await self.handle.query("status", result_type=dict)
            if answer["interrupt"] is not None:
                checkpoint = codec.load_state(answer["interrupt"])
                calls: tuple[ToolCall, ...] = checkpoint.interrupt or ()
                return self.agent.agent.result(
                    checkpoint.state, checkpoint.model_calls, Interrupt(calls)
                )
            if answer["status"] not in ("running", "interrupted"):
                raise RuntimeError(f"the run ended ({answer['status']}) without a pause")
            await anyio.sleep(poll)

    async def events(self, *, poll: float = 0.05) -> AsyncIterator[Event]:
        """The run's events, from the first, read with the ``events`` query every ``poll``
        seconds while the run goes on; it ends after ``RunFinished`` or ``RunFailed``.

        Model deltas are not among them (the model streams inside its activity). A
        ``RunInterrupted`` is followed by the run's further events once it is resumed.
        """
        seen = 0
        while True:
            batch = await self.handle.query("events", seen, result_type=list)
            seen += len(batch)
            for data in batch:
                kind = data["type"]
                if kind == "RunFinished":
                    yield RunFinished(await self.result())
                    return
                if kind == "RunFailed":
                    yield RunFailed(await self._error())
                    return
                if kind == "RunInterrupted":
                    calls = tuple(codec.converter.structure(c, ToolCall) for c in data["calls"])
                    yield RunInterrupted(calls)
                    continue
                yield codec.load_event(data)
            if not batch:
                await anyio.sleep(poll)

    async def _error(self) -> BaseException:
        try:
            await self.result()
        except BaseException as exc:  # the run's error, handed to the caller as an event
            return exc
        return RuntimeError("the run reported a failure but finished")

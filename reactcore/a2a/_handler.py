"""``RunHandler``: the A2A SDK's ``RequestHandler`` answered by reactcore runs — the SDK's
JSON-RPC dispatcher (A2A 1.0 and the v0.3 method names) parses and encodes, this maps
each request to the run handle (``served.running``, ``run.cancel``, ``Resume``) and the
saver (``_tasks``), and never keeps a task model of its own.

- ``SendMessage`` / ``SendStreamingMessage`` without a task id start a task (a run on
  the task's thread); with the id of a task waiting for approval, the message answers it
  (a data part ``{"decisions": {...}}``, or the text ``approve`` / ``reject`` when one call
  waits) and the run goes on from its checkpoint. Sends block until the run stops
  (``returnImmediately`` is not honoured: no run outlives the request that started it).
- The stream: the task (``working``), then status updates while the run goes (each text
  delta as an agent message with metadata ``{"reactcore": "delta"}``; each tool call's
  start and end as a data part ``{"reactcore_event": <reactcore's JSON of the event>}``),
  then the answer artifact and ``completed``, or ``input-required`` / ``canceled`` /
  ``failed``.
- ``CancelTask``: the live run is cancelled (``run.cancel()``; its finished tool calls
  kept in the checkpoint); a run another replica holds is asked to stop through the saver
  (``request_cancel``); a task waiting for approval is marked cancelled.
- Every failure reaches the client as an A2A error with a fixed message (never a stack,
  never an exception's text); another principal's task is ``TaskNotFoundError``.

The streaming run lives in the request's task group (``GROUP`` in the call context, from
``_app``), not in the handler's async generator, which only reads a memory stream: no
cancel scope is held across a ``yield``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import attrs
from a2a.auth.user import User
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    A2AError,
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from anyio.streams.memory import MemoryObjectSendStream
from google.protobuf.json_format import MessageToDict

from .._approval import Approve, Reject, Resume
from .._config import RunnableConfig
from .._events import (
    Event,
    ModelDelta,
    RunFailed,
    RunFinished,
    RunInterrupted,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallTimedOut,
)
from .._exceptions import RequestRefused, RunCancelled
from .._logging import get_logger
from .._messages import ToolCall, UserMessage
from .._result import AgentResult
from .._results import to_json_text
from .._shapes import to_json
from .._state import MESSAGES
from ..savers._leases import request_cancel
from ..serving._body import decisions_from_json
from ._tasks import (
    CONTEXT,
    FAILED_TEXT,
    Tasks,
    agent_message,
    answer_artifact,
    data_part,
    input_required,
    new_id,
    status,
    thread_of,
)

if TYPE_CHECKING:
    from ..serving._app import Served
    from ..serving._live import LiveRun

GROUP = "reactcore.a2a.group"
"""The call context's state key of the request's task group (set by ``_app``)."""

CLEANUP = 10.0
"""Seconds a stopping run gets to end and be marked, shielded from cancellation."""

TERMINAL = (
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_REJECTED,
)
TOOL_EVENTS = (ToolCallStarted, ToolCallFinished, ToolCallCancelled, ToolCallTimedOut)

_log = get_logger(component="a2a")


class Principal(User):
    """The principal ``authorize`` named, as the SDK's call context carries it."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._name


def principal_of(context: Any) -> str:
    user = getattr(context, "user", None)
    if not isinstance(user, Principal):  # the app authorizes every request before this
        raise InternalError(message="internal error")
    return user.user_name


def a2a_error(exc: RequestRefused) -> A2AError:
    """A refusal of the shared serving layer as the A2A error a client understands."""
    if exc.status == 404:
        return TaskNotFoundError()
    if exc.status in (400, 413, 422):
        return InvalidParamsError(message=exc.message)
    return InvalidRequestError(message=exc.message)


@contextmanager
def answered() -> Iterator[None]:
    """Every failure as an A2A error: ``A2AError`` as itself, ``RequestRefused`` mapped,
    anything else a bare ``InternalError`` (logged here, never sent)."""
    try:
        yield
    except A2AError:
        raise
    except RequestRefused as exc:
        raise a2a_error(exc) from None
    except Exception as exc:
        _log.error("a2a_request_failed", error=type(exc).__name__)
        _log.debug("a2a_request_failed_detail", error=repr(exc))
        raise InternalError(message="internal error") from None


@attrs.frozen
class Turn:
    """One message to run: a new task, or the answer to a task's pause."""

    task_id: str
    context_id: str
    input: Any
    message: Message


def _integral(value: Any) -> Any:
    """JSON numbers read back from a protobuf ``Value`` (always doubles) as ints where whole."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def decisions_of(message: Message, pending: tuple[ToolCall, ...]) -> Resume:
    """The decisions ``message`` gives for the ``pending`` calls (see the module docstring)."""
    for part in message.parts:
        if part.HasField("data"):
            value = _integral(MessageToDict(part.data))
            if isinstance(value, Mapping) and "decisions" in value:
                return decisions_from_json(value["decisions"])
    words = " ".join(p.text for p in message.parts if p.HasField("text")).strip().lower()
    if words in ("approve", "reject") and len(pending) == 1:
        decision = Approve() if words == "approve" else Reject()
        return Resume({pending[0].id: decision})
    raise InvalidParamsError(
        message='the task waits for approval: answer with a data part {"decisions": '
        '{"<call id>": {"type": "approve"}}}'
        + (" or the text approve / reject" if len(pending) == 1 else "")
    )


def result_text(result: AgentResult) -> str:
    if result.output is not None and not isinstance(result.output, str):
        return to_json_text(result.output)
    return result.output if isinstance(result.output, str) else result.text


@attrs.define(eq=False)
class RunHandler(RequestHandler):
    """See the module docstring."""

    served: Served
    tasks: Tasks

    # --- reading -------------------------------------------------------------------------

    def _live(self, principal: str, task_id: str) -> LiveRun | None:
        try:
            return self.served.runs.find(principal, task_id)
        except RequestRefused:
            return None

    async def _task(
        self, principal: str, task_id: str, history_length: int | None = None
    ) -> Task | None:
        live = self._live(principal, task_id)
        checkpoint = await self.tasks.checkpoint(principal, task_id)
        if checkpoint is None:
            if live is None:
                return None
            task = Task(id=task_id, context_id=live.thread_id or task_id)
        else:
            task = self.tasks.task(task_id, checkpoint, history_length)
        if live is not None:
            task.status.CopyFrom(self._live_status(task, live))
        return task

    def _live_status(self, task: Task, live: LiveRun) -> Any:
        state = live.run.status_nowait()
        if state == "running":
            return status(TaskState.TASK_STATE_WORKING)
        if state == "cancelled":
            return status(TaskState.TASK_STATE_CANCELED)
        if state == "failed":
            message = agent_message(task.id, task.context_id, Part(text=FAILED_TEXT))
            return status(TaskState.TASK_STATE_FAILED, message)
        return task.status

    async def on_get_task(self, params: GetTaskRequest, context: Any) -> Task | None:
        with answered():
            principal = principal_of(context)
            length = params.history_length if params.HasField("history_length") else None
            return await self._task(principal, params.id, length)

    # --- cancelling ----------------------------------------------------------------------

    async def on_cancel_task(self, params: CancelTaskRequest, context: Any) -> Task | None:
        with answered():
            principal = principal_of(context)
            task_id = params.id
            live = self._live(principal, task_id)
            if live is not None:
                await live.run.cancel()
                with anyio.move_on_after(CLEANUP):
                    await live.run.wait()
                return await self._task(principal, task_id)
            task = await self._task(principal, task_id)
            if task is None:
                return None
            if task.status.state in TERMINAL:
                raise TaskNotCancelableError(message="the task has ended")
            thread_id = thread_of(principal, task_id)
            if task.status.state == TaskState.TASK_STATE_WORKING and await request_cancel(
                self.tasks.saver, thread_id
            ):
                # Another replica runs it: that replica marks it once its run stopped.
                with anyio.move_on_after(CLEANUP):
                    await self.tasks.wait_marked(principal, task_id)
            else:  # paused, or left unfinished by a replica that is gone
                await self.tasks.mark(principal, task_id, "canceled")
            task.status.CopyFrom(status(TaskState.TASK_STATE_CANCELED))
            return task

    # --- sending -------------------------------------------------------------------------

    async def _turn(self, principal: str, params: SendMessageRequest) -> Turn:
        message = params.message
        if not message.parts:
            raise InvalidParamsError(message="the message has no parts")
        if len(message.parts) > self.served.limits.max_messages:
            raise InvalidParamsError(
                message=f"a message may carry at most {self.served.limits.max_messages} parts"
            )
        if message.task_id:
            return await self._answer(principal, message)
        text = "\n".join(p.text for p in message.parts if p.HasField("text")).strip()
        if not text:
            raise InvalidParamsError(message="send the task as a text part")
        context_id = message.context_id or new_id()
        task_id = new_id()
        start = {MESSAGES: [UserMessage(text)], CONTEXT: context_id}
        return Turn(task_id, context_id, start, message)

    async def _answer(self, principal: str, message: Message) -> Turn:
        task_id = message.task_id
        live = self._live(principal, task_id)
        checkpoint = await self.tasks.checkpoint(principal, task_id)
        if checkpoint is None:
            if live is None:
                raise TaskNotFoundError()
            raise UnsupportedOperationError(message="the task is running")
        task = self.tasks.task(task_id, checkpoint)
        if live is not None or task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
            name = TaskState.Name(task.status.state).removeprefix("TASK_STATE_").lower()
            state = "running" if live is not None else name
            raise UnsupportedOperationError(
                message=f"the task is {state}: only a task waiting for input takes a message"
            )
        decisions = decisions_of(message, checkpoint.interrupt or ())
        return Turn(task_id, task.context_id, decisions, message)

    @asynccontextmanager
    async def _running(self, principal: str, turn: Turn) -> AsyncIterator[LiveRun]:
        config = RunnableConfig(
            thread_id=thread_of(principal, turn.task_id),
            metadata={"principal": principal, "a2a_task": turn.task_id},
        )
        try:
            started = self.served.running(
                principal, turn.input, config, thread_id=turn.context_id, run_id=turn.task_id
            )
            live = await started.__aenter__()
        except RequestRefused as exc:
            raise a2a_error(exc) from None
        except ValueError as exc:  # decisions that do not fit the pending calls
            raise InvalidParamsError(message=str(exc)) from None
        try:
            yield live
        except BaseException as exc:
            if not await started.__aexit__(type(exc), exc, exc.__traceback__):
                raise
        else:
            await started.__aexit__(None, None, None)

    async def _drive(
        self,
        principal: str,
        turn: Turn,
        live: LiveRun,
        emit: Callable[[Event], Awaitable[None]] | None,
    ) -> None:
        """Follow ``live``'s run to its stop (its events to ``emit``); a run still going
        when this ends (the client left) is cancelled; a cancelled or failed run's thread
        is marked so (``Tasks.mark``)."""
        run = live.run
        try:
            if emit is not None:
                async with run.events() as events:
                    async for event in events:
                        await emit(event)
            await run.wait()
        finally:
            with anyio.move_on_after(CLEANUP, shield=True):
                if not run.done:
                    await run.cancel()
                    await run.wait()
                outcome = {"cancelled": "canceled", "failed": "failed"}.get(run.status_nowait())
                if outcome is not None:
                    await self.tasks.mark(principal, turn.task_id, outcome)

    async def on_message_send(self, params: SendMessageRequest, context: Any) -> Task | Message:
        with answered():
            principal = principal_of(context)
            turn = await self._turn(principal, params)
            async with self._running(principal, turn) as live:
                await self._drive(principal, turn, live, None)
                task = await self._task(principal, turn.task_id)
            return task or Task(id=turn.task_id, context_id=turn.context_id)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: Any
    ) -> AsyncGenerator[Any]:
        with answered():
            principal = principal_of(context)
            turn = await self._turn(principal, params)
            group: anyio.abc.TaskGroup = context.state[GROUP]
            send, receive = anyio.create_memory_object_stream[Any](16)
            try:
                await group.start(self._stream, principal, turn, send)
            except BaseException:
                send.close()
                receive.close()
                raise
        with receive:
            async for item in receive:
                yield item

    async def _stream(
        self,
        principal: str,
        turn: Turn,
        send: MemoryObjectSendStream[Any],
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        with send:
            async with self._running(principal, turn) as live:
                task_status.started()
                task = Task(id=turn.task_id, context_id=turn.context_id)
                task.status.CopyFrom(status(TaskState.TASK_STATE_WORKING))
                user = Message()
                user.CopyFrom(turn.message)
                user.task_id, user.context_id, user.role = task.id, task.context_id, Role.ROLE_USER
                task.history.append(user)
                try:
                    await send.send(task)
                    await self._drive(principal, turn, live, partial(self._emit, turn, send))
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass  # the client left: _drive cancelled the run
                except Exception as exc:
                    _log.error("a2a_stream_failed", error=type(exc).__name__)
                    _log.debug("a2a_stream_failed_detail", error=repr(exc))

    async def _emit(self, turn: Turn, send: MemoryObjectSendStream[Any], event: Event) -> None:
        task_id, context_id = turn.task_id, turn.context_id

        def update(state: TaskState, message: Message | None = None) -> Any:
            return TaskStatusUpdateEvent(
                task_id=task_id, context_id=context_id, status=status(state, message)
            )

        working = TaskState.TASK_STATE_WORKING
        if isinstance(event, ModelDelta):
            if event.text:
                delta = agent_message(task_id, context_id, Part(text=event.text), reactcore="delta")
                await send.send(update(working, delta))
        elif isinstance(event, TOOL_EVENTS):
            try:
                document = to_json(event)
            except TypeError:
                return  # a tool answer JSON cannot hold: not shown in the stream
            part = data_part({"reactcore_event": document})
            await send.send(update(working, agent_message(task_id, context_id, part)))
        elif isinstance(event, RunFinished):
            text = result_text(event.result)
            artifact = TaskArtifactUpdateEvent(
                task_id=task_id,
                context_id=context_id,
                artifact=answer_artifact(text),
                last_chunk=True,
            )
            await send.send(artifact)
            done = agent_message(task_id, context_id, Part(text=text))
            await send.send(update(TaskState.TASK_STATE_COMPLETED, done))
        elif isinstance(event, RunInterrupted):
            paused = TaskStatusUpdateEvent(
                task_id=task_id,
                context_id=context_id,
                status=input_required(task_id, context_id, event.calls),
            )
            await send.send(paused)
        elif isinstance(event, RunFailed):
            if isinstance(event.error, RunCancelled):
                await send.send(update(TaskState.TASK_STATE_CANCELED))
            else:
                failed = agent_message(task_id, context_id, Part(text=FAILED_TEXT))
                await send.send(update(TaskState.TASK_STATE_FAILED, failed))

    # --- what this server does not offer -------------------------------------------------

    async def on_list_tasks(self, params: ListTasksRequest, context: Any) -> ListTasksResponse:
        raise UnsupportedOperationError(message="listing tasks is not supported")

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: Any
    ) -> AsyncGenerator[Any]:
        raise UnsupportedOperationError(message="resubscribing is not supported")
        yield  # an async generator, as the SDK's dispatcher expects

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: Any
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError()

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: Any
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError()

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: Any
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError()

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: Any
    ) -> None:
        raise PushNotificationNotSupportedError()

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: Any
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError()

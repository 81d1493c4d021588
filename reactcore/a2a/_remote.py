"""``RemoteAgent``: an agent behind an A2A server, called from a reactcore run as a tool
(``as_tool()``), the way ``agent.as_tool()`` calls an agent in process.

Each call sends the task as a new A2A task (``SendStreamingMessage``, through the A2A
SDK's client) and answers with the remote task's result. What ties the call to the
remote task:

- progress: the remote stream's events come into the calling run's events as
  ``SubagentEvent``s (the subagents' mechanism), their path naming the call, the tool
  and the remote task id: text the remote agent streams as ``ModelDelta``s, and, from a
  reactcore server (``a2a_app``), its tool calls' start and end events as themselves;
- cancellation: when the call is cancelled (``run.cancel_tool``, its timeout, the run
  cancelled), ``CancelTask`` goes to the remote agent for the task, in a shielded scope
  of at most ``cancel_timeout`` seconds, before the call ends;
- the answer: a ``completed`` task's artifacts (else its status message) are the tool's
  result; ``failed``, ``rejected`` and ``canceled`` are an error the model sees;
- ``input-required`` (or ``auth-required``): the call ends with a result saying the
  remote agent waits for input, with its message; the remote task stays paused (the
  calling run is not paused: the model decides what to do, e.g. tell its user).
"""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import attrs
import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from google.protobuf.json_format import MessageToDict

from .. import _validate as valid
from .._events import Event, ModelDelta, SubagentCall
from .._interceptors import ToolCallResponse
from .._logging import get_logger
from .._run_context import CALLER, Caller
from .._shapes import event_from_json
from .._subagent import Task, passed_up
from .._tools import Tool, ToolContext, check_tool_name

if TYPE_CHECKING:
    from a2a.client import Client

Headers = Mapping[str, str] | Callable[[], Mapping[str, str] | Awaitable[Mapping[str, str]]]
"""Headers of every request: a mapping, or a callable (sync or async) giving them per
call (a token provider: ``lambda: {"authorization": f"Bearer {token()}"}``)."""

_ERRORS = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_REJECTED: "rejected the task",
    TaskState.TASK_STATE_CANCELED: "cancelled the task",
}
_WAITING = (TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED)
_ENDED = (*_ERRORS, TaskState.TASK_STATE_COMPLETED, *_WAITING)

_log = get_logger(component="a2a")


def _text(message: Message) -> str:
    return "".join(p.text for p in message.parts if p.HasField("text"))


def _check_headers(_: object, __: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not callable(value) and not isinstance(value, Mapping):
        raise TypeError(
            "RemoteAgent: headers must be a mapping, a callable giving one, or None, "
            f"got {valid.got(value)}"
        )


def _check_url(_: object, __: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise TypeError(f"RemoteAgent: url must be an http(s) URL (a str), got {valid.got(value)}")


def _check_transport(_: object, __: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, httpx.AsyncBaseTransport):
        raise TypeError(
            f"RemoteAgent: transport must be an httpx.AsyncBaseTransport, got {valid.got(value)}"
        )


@attrs.frozen
class RemoteAgent:
    """An A2A agent at ``url`` (the base its agent card is found under,
    ``<url>/.well-known/agent-card.json``); see the module docstring.

    ``headers`` go with every request (see ``Headers``); ``timeout`` bounds each HTTP
    read (a streamed task may run longer: it is the longest silence); ``cancel_timeout``
    bounds the ``CancelTask`` sent when a call is cancelled; ``transport`` is the httpx
    transport (``httpx.ASGITransport(app)`` serves an app in process).
    """

    url: str = attrs.field(validator=_check_url)
    headers: Headers | None = attrs.field(default=None, kw_only=True, validator=_check_headers)
    timeout: float = attrs.field(default=300.0, kw_only=True, validator=valid.number(positive=True))
    cancel_timeout: float = attrs.field(
        default=5.0, kw_only=True, validator=valid.number(positive=True)
    )
    transport: httpx.AsyncBaseTransport | None = attrs.field(
        default=None, kw_only=True, validator=_check_transport
    )

    def as_tool(
        self,
        name: str = "remote_agent",
        description: str | None = None,
        *,
        timeout: float | None = None,
    ) -> Tool:
        """A tool whose every call hands its task to this remote agent (see the module
        docstring); ``timeout``: the call's own, as any tool's (cancelling the remote
        task when it runs out)."""
        check_tool_name(name)
        valid.text(optional=True).spec.check("as_tool: description", description)
        if description is None:
            description = (
                f"Hand a task to the remote agent at {self.url}: it works on it on its own "
                "and answers with its result."
            )
        call = _RemoteCall(self, name)
        return Tool.from_input_type(name, description, Task, call, timeout=timeout)

    async def _headers(self) -> dict[str, str]:
        given = self.headers
        if given is None:
            return {}
        if not callable(given):
            return dict(given)
        made = given()
        if inspect.isawaitable(made):
            made = await made
        return dict(made)


@attrs.define(eq=False)
class _Progress:
    """What a call has seen of its remote task so far."""

    task_id: str = ""
    state: TaskState = TaskState.TASK_STATE_UNSPECIFIED
    status_text: str = ""
    artifacts: dict[str, str] = attrs.field(factory=dict)
    reply: str | None = None

    @property
    def ended(self) -> bool:
        return self.reply is not None or self.state in _ENDED

    def answer(self, name: str) -> str | ToolCallResponse:
        if self.reply is not None:
            return self.reply
        data = {"task_id": self.task_id, "state": TaskState.Name(self.state)}
        if self.state == TaskState.TASK_STATE_COMPLETED:
            return "\n".join(t for t in self.artifacts.values() if t) or self.status_text
        if self.state in _WAITING:
            return ToolCallResponse(
                f"The remote agent {name} waits for input to go on (task {self.task_id}): "
                f"{self.status_text}",
                data=data,
            )
        what = _ERRORS.get(self.state, "ended without an answer")
        detail = f": {self.status_text}" if self.status_text else ""
        return ToolCallResponse(f"The remote agent {name} {what}{detail}", is_error=True, data=data)


@attrs.define(eq=False)
class _RemoteCall:
    """The function of a ``RemoteAgent`` tool."""

    remote: RemoteAgent
    name: str

    async def __call__(self, value: Task, context: ToolContext) -> str | ToolCallResponse:
        caller: Caller | None = context.config.context.get(CALLER)
        remote = self.remote
        http = httpx.AsyncClient(
            headers=await remote._headers(),
            timeout=httpx.Timeout(remote.timeout, connect=min(remote.timeout, 30.0)),
            transport=remote.transport,
        )
        async with http:
            factory = ClientFactory(ClientConfig(httpx_client=http, streaming=True))
            client = await factory.create_from_url(remote.url)
            message = Message(
                message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text=value.input)]
            )
            progress = _Progress()
            stream = client.send_message(SendMessageRequest(message=message))
            try:
                async for response in stream:
                    for event in self._see(progress, response):
                        if caller is not None:
                            above = SubagentCall(context.call.id, self.name, progress.task_id)
                            await caller.run.emit(passed_up(above, event))
            except anyio.get_cancelled_exc_class():
                with anyio.move_on_after(remote.cancel_timeout, shield=True):
                    await self._cancel(client, progress)
                raise
            finally:
                with anyio.move_on_after(remote.cancel_timeout, shield=True):
                    await stream.aclose()  # type: ignore[attr-defined]
        return progress.answer(self.name)

    async def _cancel(self, client: Client, progress: _Progress) -> None:
        if not progress.task_id or progress.ended:
            return
        try:
            await client.cancel_task(CancelTaskRequest(id=progress.task_id))
        except Exception as exc:  # the call is being cancelled anyway: say so, go on
            _log.warning("a2a_remote_cancel_failed", task_id=progress.task_id, error=repr(exc))

    def _see(self, progress: _Progress, response: StreamResponse) -> list[Event]:
        """Update ``progress`` with one streamed response; the events it brings."""
        events: list[Event] = []
        if response.HasField("message"):
            progress.reply = _text(response.message)
        elif response.HasField("task"):
            task = response.task
            progress.task_id = task.id
            self._status(progress, task.status)
            for artifact in task.artifacts:
                progress.artifacts[artifact.artifact_id] = "".join(
                    p.text for p in artifact.parts if p.HasField("text")
                )
        elif response.HasField("status_update"):
            update = response.status_update
            progress.task_id = progress.task_id or update.task_id
            self._status(progress, update.status)
            if update.status.state not in _ENDED and update.status.HasField("message"):
                events.extend(self._progress_events(update.status.message))
        elif response.HasField("artifact_update"):
            chunk = response.artifact_update
            key = chunk.artifact.artifact_id
            text = "".join(p.text for p in chunk.artifact.parts if p.HasField("text"))
            progress.artifacts[key] = (
                (progress.artifacts.get(key, "") + text) if chunk.append else text
            )
        return events

    def _status(self, progress: _Progress, status: Any) -> None:
        progress.state = status.state
        if status.HasField("message"):
            progress.status_text = _text(status.message)

    def _progress_events(self, message: Message) -> list[Event]:
        """A working status message's parts as events: reactcore's own events from a
        reactcore server, any text as a ``ModelDelta``."""
        events: list[Event] = []
        for part in message.parts:
            if part.HasField("text") and part.text:
                events.append(ModelDelta(text=part.text))
            elif part.HasField("data"):
                document = MessageToDict(part.data)
                if isinstance(document, dict) and "reactcore_event" in document:
                    try:
                        events.append(event_from_json(json.dumps(document["reactcore_event"])))
                    except ValueError:
                        continue  # not an event this reactcore knows: not passed up
        return events

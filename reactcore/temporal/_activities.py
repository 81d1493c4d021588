"""The activities: one model call, one tool call, on whichever worker picks them up.

Both heartbeat while they run (so a lost worker is noticed within the heartbeat timeout
and the call runs again elsewhere: at-least-once), and both are cancelled through
Temporal (the heartbeat carries the cancellation in). With a payload store, they read
the conversation from it and store large results in it (``_refs``); two more activities
store a conversation (``reactcore.save``) and read one back, a page at a time
(``reactcore.load``), for a run that ends or continues as new.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import attrs
from temporalio import activity
from temporalio.exceptions import ApplicationError

from .._config import RunnableConfig
from .._exceptions import ModelHTTPError, PayloadMissing
from .._interceptors import ToolCallRequest, ToolCallResponse
from .._llm_node import MODEL_ITERATION, STREAM, call_model
from .._messages import Message
from .._scheduler import Job, Status, run_limited
from .._state import MESSAGES, OverAllState
from .._tools import TOOL_DECISIONS
from ..models.base import ModelRequest
from . import _codec as codec
from ._calls import LOAD_ACTIVITY, MODEL_ACTIVITY, SAVE_ACTIVITY, TOOL_ACTIVITY, model_retry
from ._refs import Reader

if TYPE_CHECKING:
    from ._agent import TemporalAgent

_T = TypeVar("_T")


async def _heartbeating(work: Callable[[], Awaitable[_T]], every: float) -> _T:
    """``await work()`` while heartbeating every ``every`` seconds; its exception is
    raised as itself (not in a group)."""
    outcome: list[_T] = []
    failure: list[Exception] = []

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await anyio.sleep(every)

    async with anyio.create_task_group() as tg:
        tg.start_soon(beat)
        try:
            outcome.append(await work())
        except Exception as exc:
            failure.append(exc)
        finally:
            tg.cancel_scope.cancel()
    if failure:
        raise failure[0]
    return outcome[0]


def _model_failure(agent: TemporalAgent, error: Exception) -> ApplicationError:
    """``error`` as Temporal's failure: retryable when the agent's retry settings say so
    (never a 4xx other than 408/409/429 with the default ``retry_on``)."""
    retry = model_retry(agent.agent)
    retryable = retry is not None and retry.retry_on(error)
    details: dict[str, Any] = {}
    if isinstance(error, ModelHTTPError):
        details = {
            "status_code": error.status_code,
            "request_id": error.request_id,
            "body": error.body,
        }
    elif retry is None:
        retryable = False
    return ApplicationError(
        str(error), details, type=type(error).__name__, non_retryable=not retryable
    )


def _missing(error: PayloadMissing) -> ApplicationError:
    """A missing store entry as Temporal's failure: not retryable (it will not appear)."""
    return ApplicationError(str(error), type="PayloadMissing", non_retryable=True)


@attrs.define(eq=False)
class Activities:
    """The activities for a set of agents (by name), as a worker registers them; one
    ``Reader`` (with its cache) per payload store."""

    agents: Mapping[str, TemporalAgent]
    _readers: dict[int, Reader] = attrs.field(factory=dict, init=False)

    def _agent(self, name: str) -> TemporalAgent:
        found = self.agents.get(name)
        if found is None:
            raise ApplicationError(f"no agent named {name!r} on this worker", non_retryable=True)
        return found

    def _reader(self, agent: TemporalAgent) -> Reader:
        store = agent.store
        if store is None:
            raise ApplicationError(
                f"agent {agent.name!r} has no payload store on this worker", non_retryable=True
            )
        found = self._readers.get(id(store))
        if found is None or found.store is not store:
            found = self._readers[id(store)] = Reader(store)
        return found

    async def _messages(
        self, agent: TemporalAgent, conversation: codec.Conversation | None, inline: list[Message]
    ) -> list[Message]:
        """The messages sent: ``inline``, or those of ``conversation`` from the store."""
        if conversation is None:
            return inline
        try:
            return await self._reader(agent).messages(conversation)
        except PayloadMissing as exc:
            raise _missing(exc) from exc

    @activity.defn(name=SAVE_ACTIVITY)
    async def save(self, argument: str) -> None:
        """Store a conversation (a run ending or continuing as new refers to it)."""
        given = codec.loads(argument, codec.SaveInput)
        await self._reader(self._agent(given.agent)).save(given.conversation)

    @activity.defn(name=LOAD_ACTIVITY)
    async def load(self, argument: str) -> str:
        """A page of a stored conversation's messages (their JSON, as stored: results
        stay markers), from ``offset``, about ``max_bytes`` (at least one message)."""
        given = codec.loads(argument, codec.LoadInput)
        reader = self._reader(self._agent(given.agent))
        try:
            keys = await reader.keys(given.key)
            texts: list[str] = []
            size = 0
            for key in keys[given.offset :]:
                text = (await reader.texts([key]))[0]
                if texts and size + len(text) > given.max_bytes:
                    break
                texts.append(text)
                size += len(text)
        except PayloadMissing as exc:
            raise _missing(exc) from exc
        done = given.offset + len(texts) >= len(keys)
        return codec.dumps(codec.LoadOutput(texts, done))

    @activity.defn(name=MODEL_ACTIVITY)
    async def model(self, argument: str) -> str:
        """Call the agent's model with the request the workflow built."""
        given = codec.loads(argument, codec.ModelInput)
        agent = self._agent(given.agent)
        request = ModelRequest(
            await self._messages(agent, given.conversation, given.messages),
            given.system,
            tools=given.tools,
            tool_specs=given.tool_specs,
            options=codec.load_options(given.options),
            context={MODEL_ITERATION: given.iteration, STREAM: given.stream},
        )
        try:
            response = await _heartbeating(
                functools.partial(call_model, agent.agent.model, request), agent.beat_every
            )
        except Exception as exc:
            raise _model_failure(agent, exc) from exc
        return codec.dumps(codec.ModelOutput(response.message, response.usage))

    @activity.defn(name=TOOL_ACTIVITY)
    async def tool(self, argument: str) -> str:
        """Run one tool call under its timeout and the tool's own limiter (sync tools in a
        worker thread); its errors become the text the model sees, as in process. The
        whole response goes back (text, parts, data, update, interrupt); a call run
        again after it paused the run gets the decisions (``ToolContext.decisions``)."""
        given = codec.loads(argument, codec.ToolInput)
        agent = self._agent(given.agent)
        node = agent.agent.tool_node
        context: dict[str, Any] = {}
        if given.decisions is not None:  # it runs again after it paused the run
            context[TOOL_DECISIONS] = {given.call.id: codec.load_resume(given.decisions)}
        config = RunnableConfig(given.thread_id, given.metadata, context)
        found = node.resolve(given.call.name, config) if node is not None else None
        if node is None or found is None:
            text = f"Tool not available on this worker: {given.call.name}"
            return codec.dumps(codec.ToolOutput(text, is_error=True))
        if given.state is not None:
            state = codec.load_state(given.state).state
            if given.conversation is not None:
                messages = await self._messages(agent, given.conversation, [])
                state = OverAllState({**state.data, MESSAGES: messages}, state.key_strategies)
        else:
            state = OverAllState({}, agent.agent.key_strategies)
        request = ToolCallRequest(given.call, state, config, found)
        handler = node._guarded(functools.partial(node._execute, True))

        async def work() -> ToolCallResponse | None:
            # The scheduler's own rules: the tool's limiter, then the shared one, each
            # once; the deadline from when they are held; slots lent to nested calls (a
            # sub-agent's tools sharing the limiter take turns on this call's slot).
            job = Job(lambda _: handler(request), given.timeout, found.limiter)
            shared = () if node.tool_limiter is None else (node.tool_limiter,)
            await run_limited(job, shared)
            return job.result if job.status is Status.DONE else None

        response = await _heartbeating(work, agent.tool_beat_every)
        if response is None:
            return codec.dumps(codec.ToolOutput("", is_error=True, timed_out=True))
        update = codec.dump_state(OverAllState(dict(response.update))) if response.update else None
        text = response.text
        if agent.store is not None:
            text = await self._reader(agent).result_text(text, agent.inline_limit)
        interrupt = response.interrupt.calls if response.interrupt is not None else None
        output = codec.ToolOutput(
            text, response.is_error, update, False, response.parts, response.data, interrupt
        )
        try:
            return codec.dumps(output)
        except (TypeError, ValueError) as exc:  # data that is not JSON: it cannot cross
            raise ApplicationError(
                f"tool {given.call.name!r} returned ToolCallResponse.data that is not JSON "
                f"values ({exc}): it cannot go back to the workflow",
                type="TypeError",
                non_retryable=True,
            ) from exc

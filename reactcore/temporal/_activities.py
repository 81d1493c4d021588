"""The activities: one model call, one tool call, on whichever worker picks them up.

Both heartbeat while they run (so a lost worker is noticed within the heartbeat timeout
and the call runs again elsewhere: at-least-once), and both are cancelled through
Temporal (the heartbeat carries the cancellation in).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import attrs
from temporalio import activity
from temporalio.exceptions import ApplicationError

from .._config import RunnableConfig
from .._exceptions import ModelHTTPError
from .._interceptors import ToolCallRequest, ToolCallResponse
from .._llm_node import MODEL_ITERATION, STREAM, call_model
from .._state import OverAllState
from ..models.base import ModelRequest
from . import _codec as codec
from ._workflow import MODEL_ACTIVITY, TOOL_ACTIVITY, model_retry

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


@attrs.define(eq=False)
class Activities:
    """The activities for a set of agents (by name), as a worker registers them."""

    agents: Mapping[str, TemporalAgent]

    def _agent(self, name: str) -> TemporalAgent:
        found = self.agents.get(name)
        if found is None:
            raise ApplicationError(f"no agent named {name!r} on this worker", non_retryable=True)
        return found

    @activity.defn(name=MODEL_ACTIVITY)
    async def model(self, argument: str) -> str:
        """Call the agent's model with the request the workflow built."""
        given = codec.loads(argument, codec.ModelInput)
        agent = self._agent(given.agent)
        request = ModelRequest(
            given.messages,
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
        worker thread); its errors become the text the model sees, as in process."""
        given = codec.loads(argument, codec.ToolInput)
        agent = self._agent(given.agent)
        node = agent.agent.tool_node
        config = RunnableConfig(given.thread_id, given.metadata, {})
        found = node.resolve(given.call.name, config) if node is not None else None
        if node is None or found is None:
            text = f"Tool not available on this worker: {given.call.name}"
            return codec.dumps(codec.ToolOutput(text, is_error=True))
        if given.state is not None:
            state = codec.load_state(given.state).state
        else:
            state = OverAllState({}, agent.agent.key_strategies)
        request = ToolCallRequest(given.call, state, config, found)
        handler = node._guarded(functools.partial(node._execute, True))

        async def work() -> ToolCallResponse | None:
            limiters = (found.limiter, node.tool_limiter)
            return await _limited(limiters, functools.partial(handler, request), given.timeout)

        response = await _heartbeating(work, agent.tool_beat_every)
        if response is None:
            return codec.dumps(codec.ToolOutput("", is_error=True, timed_out=True))
        update = codec.dump_state(OverAllState(dict(response.update))) if response.update else None
        return codec.dumps(codec.ToolOutput(response.text, response.is_error, update))


async def _limited(
    limiters: Sequence[anyio.CapacityLimiter | None],
    work: Callable[[], Awaitable[ToolCallResponse]],
    seconds: float,
) -> ToolCallResponse | None:
    """``work()`` holding ``limiters`` (in order, as the scheduler takes them), within
    ``seconds`` from when it holds them (``None``: it timed out)."""
    async with AsyncExitStack() as stack:
        for limiter in limiters:
            if limiter is not None:
                await stack.enter_async_context(limiter)
        with anyio.move_on_after(seconds):
            return await work()
    return None

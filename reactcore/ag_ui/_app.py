"""``ag_ui_app``: an agent served over AG-UI — ``POST /`` takes a ``RunAgentInput`` and
answers AG-UI events as server-sent events; the steering endpoints of
``reactcore.serving`` sit beside it, keyed by the client's ``runId``.

What a request runs (``threadId`` is scoped to the principal, as every served thread):

- **Without a saver** the client's messages are the conversation (AG-UI clients send the
  whole history every time).
- **With a saver, on a thread it holds**, the thread is the conversation: the client's
  messages after its last assistant message are the new input (less any the thread
  already ends with), and the stream starts with a ``MESSAGES_SNAPSHOT`` of the thread.
  A thread whose last run did not finish (its client left) is finished first by a
  request bringing nothing new; one bringing new messages is refused until then.
- **A thread paused for approval** is resumed by ``RunAgentInput.resume`` (one entry per
  pending call, ``interruptId`` = the call id, ``payload`` ``{"type": "approve"}`` /
  ``{"type": "edit", "arguments": …}`` / ``{"type": "reject", "reason": …}``; status
  ``cancelled`` rejects); a request without it gets the pause again (``RUN_FINISHED``
  with the interrupt outcome) and runs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .._approval import Resume
from .._exceptions import RequestRefused
from .._logging import get_logger
from .._loop import ended_for_good
from .._messages import Message
from .._state import MESSAGES, OverAllState
from ..serving._body import decisions_from_json, read_json
from ..serving._live import relay
from ..serving._principals import client_id
from ..serving._response import EventStreamResponse, Write, guarded
from ._frontend import CLIENT_TOOLS, FrontendTools, client_tools
from ._messages import new_messages, to_reactcore, without_repeats
from ._state import SharedState
from ._stream import AgUiStream

_log = get_logger(component="ag_ui")
AG_UI_INPUT = "ag_ui_input"
"""The run's context key holding the request's ``RunAgentInput`` (``ag_ui.core``): a tool
reads ``context.config.context["ag_ui_input"].forwarded_props``, ``.context`` …."""

if TYPE_CHECKING:
    from ag_ui import core
    from starlette.applications import Starlette
    from starlette.requests import Request

    from .._checkpoint import Checkpoint
    from .._config import RunnableConfig
    from .._input import AgentInput
    from ..savers import Saver
    from ..serving._app import Served


def _validation_error(exc: Exception) -> RequestRefused:
    """A malformed ``RunAgentInput``: where and what, never the values sent."""
    errors: list[Any] = getattr(exc, "errors", lambda: [])()
    said = [
        f"{'.'.join(str(p) for p in e.get('loc', ())) or 'body'}: {e.get('msg', 'invalid')}"
        for e in errors[:5]
    ]
    return RequestRefused(422, "bad_input", "not a RunAgentInput: " + "; ".join(said))


def _parse(body: Any) -> core.RunAgentInput:
    from ag_ui import core
    from pydantic import ValidationError

    if not isinstance(body, Mapping):
        raise RequestRefused(400, "bad_request", "the request body must be a JSON object")
    try:
        return core.RunAgentInput.model_validate(body)
    except ValidationError as exc:
        raise _validation_error(exc) from None


def _decisions(entries: Sequence[core.ResumeEntry]) -> Resume:
    """``RunAgentInput.resume`` as decisions (see the module docstring)."""
    given: dict[str, Any] = {}
    for entry in entries:
        if entry.status == "cancelled":
            given[entry.interrupt_id] = {"type": "reject"}
        else:
            given[entry.interrupt_id] = entry.payload or {"type": "approve"}
    return decisions_from_json(given)


@attrs.frozen
class _Plan:
    """What one request runs: the run's input (``None``: the thread's unfinished run goes
    on), the thread's messages to snapshot, and the checkpoint of a thread waiting for
    approval (``paused``: nothing runs, the pause is said again)."""

    input: AgentInput | Resume | None
    snapshot: Sequence[Message] | None = None
    paused: Checkpoint | None = None


@attrs.define(eq=False)
class _Endpoint:
    """``POST /`` of the app."""

    served: Served
    shared: SharedState

    async def __call__(self, request: Request) -> EventStreamResponse:
        served = self.served
        principal = await served.starting(request)
        given = _parse(await read_json(request, served.limits.max_body_bytes))
        if len(given.messages) > served.limits.max_messages:
            raise RequestRefused(
                413, "too_many_messages", f"more than {served.limits.max_messages} messages"
            )
        thread_id = client_id(given.thread_id, "threadId")
        run_id = client_id(given.run_id, "runId")
        node = served.agent.tool_node
        tools = client_tools(given.tools, dict.fromkeys(node.tool_names if node else ()))
        # Tools read the request (its ``context``, ``forwardedProps``) from the run's context.
        config = served.config(principal, thread_id, **{CLIENT_TOOLS: tools, AG_UI_INPUT: given})
        plan = await self._plan(given, config.thread_id, tools)

        async def produce(write: Write) -> None:
            stream = AgUiStream(
                write,
                thread_id,
                run_id,
                self.shared,
                tools,
                served.limits.pause_timeout,
                scoped_thread=config.thread_id,
            )
            try:
                await self._stream(stream, principal, plan, config, thread_id, run_id)
            except RequestRefused as exc:
                await stream.error(exc)
            except Exception as exc:  # a bug here: logged, and the client told no more
                _log.error("ag_ui_stream_failed", error=type(exc).__name__)
                _log.debug("ag_ui_stream_failed_detail", error=repr(exc))
                await stream.error(RequestRefused(500, "internal", "internal error"))

        return EventStreamResponse(produce, keep_running=served.keep_running)

    async def _plan(
        self, given: core.RunAgentInput, scoped: str | None, tools: Mapping[str, Any]
    ) -> _Plan:
        saver = self.served.agent.saver
        checkpoint = await saver.get(scoped) if saver is not None and scoped else None
        if given.resume:
            if checkpoint is None or not checkpoint.interrupt:
                raise RequestRefused(409, "not_paused", "the thread is not waiting for a decision")
            return _Plan(_decisions(given.resume), list(checkpoint.state.get(MESSAGES) or ()))
        extra = self.shared.from_client(given.state)
        if checkpoint is None:
            messages = to_reactcore(given.messages, frontend=tools)
            if not messages:
                raise RequestRefused(422, "bad_messages", "there are no messages to answer")
            return _Plan({MESSAGES: messages, **extra})
        held: list[Message] = list(checkpoint.state.get(MESSAGES) or ())
        if checkpoint.interrupt:
            return _Plan(None, held, checkpoint)
        fresh = self._fresh(given, held, tools)
        if checkpoint.next != "end":
            if not fresh:
                return _Plan(None, held)  # the same history again: finish the stopped run
            # New messages: the stopped run ends for good (``unfinished="cancel"``, as
            # the run will do it), and they follow its closed batch.
            strategies = self.served.agent.key_strategies
            closed = ended_for_good(OverAllState(checkpoint.state.data, strategies))
            held = list(closed.get(MESSAGES) or ())
            fresh = self._fresh(given, held, tools)
        return _Plan({MESSAGES: fresh, **extra}, [*held, *fresh])

    def _fresh(
        self, given: core.RunAgentInput, held: list[Message], tools: Mapping[str, Any]
    ) -> list[Message]:
        """The client's messages the thread ``held`` does not have yet."""
        before = held[-1] if held else None
        fresh = to_reactcore(new_messages(given.messages), before=before, frontend=tools)
        return without_repeats(held, fresh)

    async def _stream(
        self,
        stream: AgUiStream,
        principal: str,
        plan: _Plan,
        config: RunnableConfig,
        thread_id: str,
        run_id: str,
    ) -> None:
        served = self.served
        if plan.paused is not None:
            await stream.run_started()
            await stream.messages_snapshot(plan.snapshot or ())
            stream.last = _pause_of(plan.paused)
            await stream.finish()
            return
        async with served.running(principal, plan.input, config, thread_id, run_id) as live:
            stream.state = lambda: live.run.state
            if isinstance(plan.input, Resume):
                stream.batch = set(plan.input.decisions)
            await stream.run_started()
            if plan.snapshot is not None:
                await stream.messages_snapshot(plan.snapshot)
            await relay(live, stream, served.limits.pause_timeout)
            await stream.finish()


def _pause_of(checkpoint: Checkpoint) -> Any:
    from .._events import RunInterrupted

    return RunInterrupted(tuple(checkpoint.interrupt or ()))


def ag_ui_app(
    agent: object,
    *,
    authorize: object,
    saver: Saver | None = None,
    limits: object = None,
    keep_running: object = False,
    share_state: object = None,
) -> Starlette:
    """An ASGI app serving ``agent`` over AG-UI (see the module docstring and
    ``docs/ag-ui.md``): ``POST /`` streams a run, ``runs/{runId}/…`` steers it.

    Args:
        agent: The ``ReactAgent`` to serve; one agent serves every request.
        authorize: ``authorize(request) -> principal`` (sync or async): who the client is;
            threads and runs are scoped to it (``reactcore.serving``).
        saver: Replaces the agent's saver (threads persist between requests only with one).
        limits: ``reactcore.serving.Limits``; the defaults when ``None``.
        keep_running: Let a run go on to its end when its client leaves (its events are
            dropped); by default the run is cancelled then, its finished calls kept.
        share_state: What of the agent state the client sees: ``None`` (nothing), state
            keys, or a callable ``state -> dict`` (``STATE_SNAPSHOT`` / ``STATE_DELTA``).
    """
    try:
        import ag_ui.encoder  # noqa: F401 - checked here, used per request
        from starlette.applications import Starlette
        from starlette.routing import Route
    except ImportError as exc:
        raise ImportError(
            f"ag_ui_app needs the ag-ui extra: pip install 'reactcore[ag-ui]' ({exc})"
        ) from exc

    from .._agent import ReactAgent
    from .._validate import got
    from ..serving._app import Served

    shared = SharedState.of(share_state)
    if not isinstance(agent, ReactAgent):
        raise TypeError(f"agent must be a ReactAgent, got {got(agent)}")
    # The client's tools: shown to the model, and the run ends at their calls.
    agent = attrs.evolve(agent, hooks=[*agent.hooks, FrontendTools()])
    served = Served.of(
        agent, authorize=authorize, saver=saver, limits=limits, keep_running=keep_running
    )
    routes = [
        Route("/", guarded(_Endpoint(served, shared)), methods=["POST"]),
        *served.steering_routes(),
    ]
    app = Starlette(routes=routes)
    app.state.served = served
    return app

"""Elicitation: a server's ``elicitation/create`` (it asks the user for input during a
call), answered through the run's human-in-the-loop machinery.

During a tool call of an agent run that can pause (the agent has a saver and the config a
``thread_id``), the run pauses as it does for approval: ``result.status ==
"interrupted"``, and ``result.interrupt.calls`` lists the request as a call
``<call id>/elicitation-<n>`` named ``mcp_elicitation`` whose arguments are the JSON
``{"server", "message", "schema"}`` (the n-th request of that call). The tool call is
stopped (the server is told, as for any cancelled call), then the server's pending request
is answered ``cancel``. The caller answers with ``Resume({"<call id>/elicitation-1": ...})``:

- ``Edit(content)`` accepts with ``content`` (a mapping or a JSON object), checked against
  the requested schema when resuming: a misfit is a ``ValueError`` then, the run still
  paused;
- ``Approve()`` accepts with no content (``{}``, checked the same way);
- ``Reject()`` declines.

Resuming runs the tool call again, on the session as it is then: the server's original
request did not survive the pause (a request lives only as long as its call, and never
beyond its session), so the server asks again and gets the answer at once, the n-th
request of the call answered by the decision for ``elicitation-<n>``. This is what
happens after a crash too: a process resumed from the saver re-runs the call, as for any
call cut short (MCP calls are at least once). A request the decisions do not cover
pauses the run again, listing it with the call's requests answered before it (which the
call, run again, will ask again): a tool asking twice pauses twice, and the second
``Resume`` answers both.

Without a pausable run (no saver, no thread, a request outside any call, or over stdio
with several calls in flight: see ``_inflight``), ``elicitation_policy(request)`` answers
(an ``ElicitationAnswer``; sync or async), else the request is declined. URL-mode
requests are never paused for: the policy answers them, else they are declined.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

import attrs
import mcp.types as mt
import structlog

from .. import _validate as valid
from .._approval import Approve, Decision, Edit, Interrupt, Reject, Resume
from .._config import RunnableConfig
from .._interceptors import ToolCallResponse
from .._messages import ToolCall
from .._run_context import CALLER
from ._inflight import Calls, InFlight, hand_over
from ._results import schema_check, schema_problem

KIND = "elicitation"
TOOL_NAME = "mcp_elicitation"
"""The name of the calls an elicitation pause lists (``result.interrupt.calls``)."""

_log = structlog.get_logger("reactcore.mcp")


@attrs.frozen
class ElicitationRequest:
    """What a server asks the user: ``message``, and ``schema`` (a flat JSON Schema
    object) for the answer's content; ``url`` for a URL-mode request (then ``schema`` is
    empty). ``call`` is the tool call it came during (``None`` outside one)."""

    server: str
    message: str
    schema: Mapping[str, Any] = attrs.field(factory=dict)
    url: str | None = None
    call: ToolCall | None = None


@attrs.frozen
class ElicitationAnswer:
    """An answer to an elicitation: ``"accept"`` with ``content`` (checked against the
    requested schema), ``"decline"`` or ``"cancel"``."""

    action: Literal["accept", "decline", "cancel"] = attrs.field(
        validator=valid.one_of("accept", "decline", "cancel")
    )
    content: Mapping[str, Any] | None = attrs.field(
        default=None, validator=valid.mapping(optional=True)
    )


ElicitationPolicy = Callable[[ElicitationRequest], ElicitationAnswer | Awaitable[ElicitationAnswer]]


def _misfit(schema: Mapping[str, Any], content: Mapping[str, Any]) -> str | None:
    """Why ``content`` does not fit ``schema`` (in words), or None."""
    whole = dict(schema)
    problem = schema_problem(whole)
    if problem is not None:
        return problem.replace("its input schema", "the requested schema")
    return schema_check(whole, "elicitation")(dict(content))


def _content(decision: Decision) -> dict[str, Any] | None:
    """The content an accepting decision gives (``Approve``: none), ``ValueError`` for an
    ``Edit`` that is not a JSON object."""
    if isinstance(decision, Approve):
        return {}
    assert isinstance(decision, Edit)
    given = decision.arguments
    if isinstance(given, str):
        try:
            given = json.loads(given)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the answer is not valid JSON: {exc.msg}") from exc
    if not isinstance(given, Mapping):
        raise ValueError("the answer must be a JSON object")
    return dict(given)


def check_decisions(inside: Sequence[ToolCall], decisions: Resume, config: RunnableConfig) -> None:
    """Check, when resuming, the answers to the elicitations a call paused for: an
    ``Edit`` or ``Approve`` must fit the requested schema (``ValueError`` otherwise)."""
    asked = {c.id: c for c in inside if c.name == TOOL_NAME}
    for call_id, decision in decisions.decisions.items():
        call = asked.get(call_id)
        if call is None or isinstance(decision, Reject):
            continue
        schema = json.loads(call.arguments).get("schema") or {}
        try:
            content = _content(decision)
            assert content is not None
            problem = _misfit(schema, content)
        except ValueError as exc:
            problem = str(exc)
        if problem is not None:
            raise ValueError(
                f"the answer to {call_id} does not fit the requested schema: {problem}"
            )


def waiting_for(waiting: tuple[ToolCall, ...]) -> ToolCallResponse:
    """The answer of a call paused for the elicitations ``waiting`` (the run pauses)."""
    asked = ", ".join(json.loads(c.arguments)["message"] for c in waiting)
    return ToolCallResponse(f"waiting for input: {asked}", interrupt=Interrupt(waiting))


def _answer(action: str, content: Mapping[str, Any] | None = None) -> mt.ElicitResult:
    return mt.ElicitResult(action=action, content=dict(content) if content is not None else None)  # type: ignore[arg-type]


def _pausable(config: RunnableConfig) -> bool:
    caller = config.context.get(CALLER)
    return caller is not None and caller.saver is not None and config.thread_id is not None


@attrs.frozen
class Elicitor:
    """A toolset's answer to ``elicitation/create`` (see the module docstring)."""

    policy: ElicitationPolicy | None
    calls: Calls
    server: Callable[[], str]  # the server's name, as the toolset says it now

    async def __call__(
        self, context: Any, params: mt.ElicitRequestParams
    ) -> mt.ElicitResult | mt.ErrorData:
        """The SDK's ``elicitation_callback``."""
        server = self.server()
        flight = self.calls.find()
        request = ElicitationRequest(
            server,
            params.message,
            getattr(params, "requested_schema", None) or {},
            getattr(params, "url", None),
            flight.context.call if flight is not None else None,
        )
        if flight is None or request.url is not None:
            return await self._by_policy(request)

        async def work() -> mt.ElicitResult | mt.ErrorData:
            return await self._in_call(flight, request)

        answer = await hand_over(flight, work)
        return answer if answer is not None else _answer("cancel")

    async def _in_call(
        self, flight: InFlight, request: ElicitationRequest
    ) -> mt.ElicitResult | mt.ErrorData:
        arguments = {"server": request.server, "message": request.message}
        asked = json.dumps({**arguments, "schema": dict(request.schema)})
        call = flight.ask(KIND, TOOL_NAME, asked)
        given = flight.context.decisions
        decision = given.decisions.get(call.id) if given is not None else None
        if decision is not None:
            if isinstance(decision, Reject):
                return _answer("decline")
            return self._checked(request, ElicitationAnswer("accept", _content(decision)))
        if not _pausable(flight.context.config):
            return await self._by_policy(request)
        # The requests answered before it are asked again when the call runs again.
        flight.pause(*flight.asked[KIND])
        await flight.stopped.wait()  # the server hears of the cancellation first
        _log.info("mcp_elicitation_paused", server=request.server, call_id=call.id)
        return _answer("cancel")

    async def _by_policy(self, request: ElicitationRequest) -> mt.ElicitResult | mt.ErrorData:
        if self.policy is None:
            return _answer("decline")
        answer = self.policy(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if not isinstance(answer, ElicitationAnswer):  # the server gets an error
            raise TypeError(
                f"elicitation_policy must return an ElicitationAnswer, got {valid.got(answer)}"
            )
        return self._checked(request, answer)

    @staticmethod
    def _checked(
        request: ElicitationRequest, answer: ElicitationAnswer
    ) -> mt.ElicitResult | mt.ErrorData:
        if answer.action != "accept":
            return _answer(answer.action)
        content = answer.content or {}
        problem = _misfit(request.schema, content) if request.url is None else None
        if problem is not None:
            _log.warning("mcp_elicitation_misfit", server=request.server, problem=problem)
            message = f"the client's answer does not fit the requested schema: {problem}"
            return mt.ErrorData(code=mt.INVALID_PARAMS, message=message)
        return _answer("accept", content if request.url is None else None)

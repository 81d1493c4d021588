"""``ai_sdk_app``: an agent served as the AI SDK's UI message stream, what ``useChat``'s
default transport (``DefaultChatTransport``) reads.

``POST /`` takes the transport's body (``{id, messages, trigger, messageId}``) and answers
server-sent events ``data: <chunk JSON>`` (header ``x-vercel-ai-ui-message-stream: v1``)
ending with ``data: [DONE]``; the chunks are ``UIMessageStream``'s. The ``start`` chunk's
``messageMetadata`` holds ``runId``: the steering endpoints beside the stream
(``runs/{runId}/…``, see ``reactcore.serving``) cancel one tool call, the run, or answer
an approval while the stream is open.

Which conversation a request continues:

- Without a saver (or without a chat ``id``), the request's messages are the whole
  conversation; nothing is kept between requests.
- With a saver, the chat ``id`` names the thread (scoped to the principal). A new thread
  starts from the request's messages; a thread that has a checkpoint already holds the
  history, so only the request's last message (the new user turn) is added, never the
  earlier ones again. Regenerating the last answer of a saved chat is refused (409): the
  thread cannot be rewound.

Approvals (``HumanInTheLoopHook``; pausing needs a saver, as everywhere in reactcore): the
pause is sent as ``tool-approval-request`` chunks (``approvalId`` = the call id). By
default the stream ends there (``finish`` with ``finishReason: "tool-calls"``): the client
answers natively (``addToolApprovalResponse``; its next request's last message has the
tool parts in state ``approval-responded``), and that request resumes the thread with
those decisions (``Approve``, or ``Reject`` with the client's reason), streaming on into
the same assistant message. With ``wait_for_decisions=True`` the stream stays open at the
pause up to ``Limits.pause_timeout``, waiting for ``POST runs/{runId}/decisions``, and goes
on in the same stream; after that time it ends as by default, and the next request can
still answer natively.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .._approval import Resume
from .._config import RunnableConfig
from .._events import Event
from .._exceptions import RequestRefused
from .._logging import get_logger
from .._messages import Message
from .._validate import got
from ..serving._body import read_json
from ..serving._live import relay
from ..serving._response import EventStreamResponse, Write, guarded
from ._requests import ChatRequest, approval_answers, read_request, to_messages, tool_name
from ._stream import Chunk, UIMessageStream

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from ..savers import Saver
    from ..serving._app import Served

HEADERS = {"x-vercel-ai-ui-message-stream": "v1", "x-accel-buffering": "no"}
DONE = b"data: [DONE]\n\n"

_log = get_logger(component="ai_sdk")


def frame(chunk: Chunk) -> bytes:
    """One chunk as a server-sent event: ``data: <JSON>`` (a value JSON cannot hold, in a
    tool's ``data``, as its ``str``: one odd output does not end the stream)."""
    text = json.dumps(chunk, separators=(",", ":"), ensure_ascii=False, default=str)
    return f"data: {text}\n\n".encode()


@attrs.frozen
class _Plan:
    """What a request runs: its input, config, the assistant message it streams into, the
    calls whose approvals it answers, the calls the client already shows."""

    input: list[Message] | Resume
    config: RunnableConfig
    message_id: str
    awaiting: frozenset[str] = frozenset()
    known: frozenset[str] = frozenset()


def _conflict(code: str, message: str) -> RequestRefused:
    return RequestRefused(409, code, message)


async def _resume_plan(served: Served, last: Mapping[str, Any], config: RunnableConfig) -> _Plan:
    answers = approval_answers(last)
    if answers is None:
        raise RequestRefused(
            422,
            "bad_request",
            "the last message must be the user's, or an assistant message answering approvals",
        )
    saver = served.agent.saver
    if saver is None or config.thread_id is None:
        raise _conflict(
            "needs_saver",
            "answering an approval in a new request needs a service with a saver and a chat "
            "id; without one, send the decisions to POST runs/{runId}/decisions while the "
            "stream is open",
        )
    checkpoint = await saver.get(config.thread_id)
    pending = {c.id for c in checkpoint.interrupt} if checkpoint and checkpoint.interrupt else set()
    decisions = {k: v for k, v in answers.decisions.items() if k in pending}
    if not decisions:
        raise _conflict("not_paused", "this chat is not waiting for those approvals")
    known = {
        str(p["toolCallId"])
        for p in last["parts"]
        if tool_name(p) is not None and isinstance(p.get("toolCallId"), str)
    }
    message_id = last.get("id")
    return _Plan(
        Resume(decisions),
        config,
        message_id if isinstance(message_id, str) and message_id else _new_id(),
        frozenset(decisions),
        frozenset(known),
    )


def _new_id() -> str:
    return f"msg-{uuid.uuid4().hex}"


async def _plan(served: Served, principal: str, chat: ChatRequest) -> _Plan:
    config = served.config(principal, chat.chat_id)
    last = chat.last
    if last is None:
        raise RequestRefused(422, "bad_request", "'messages' must not be empty")
    if last["role"] == "assistant":
        return await _resume_plan(served, last, config)
    saver = served.agent.saver
    checkpoint = None
    if saver is not None and config.thread_id is not None:
        checkpoint = await saver.get(config.thread_id)
    if checkpoint is None:
        messages = to_messages(chat.messages)
    else:
        if chat.trigger == "regenerate-message":
            raise _conflict("cannot_regenerate", "a saved chat's answers cannot be regenerated")
        if checkpoint.interrupt:
            raise _conflict("waits_for_approval", "this chat waits for the approval of a tool call")
        messages = to_messages([last])
    if not messages:
        raise RequestRefused(422, "bad_request", "the request has no user message to answer")
    return _Plan(messages, config, _new_id())


def _endpoint(served: Served, wait_for_decisions: bool) -> Any:
    async def chat(request: Request) -> EventStreamResponse:
        principal = await served.starting(request)
        body = await read_json(request, served.limits.max_body_bytes)
        request_ = read_request(body, served.limits.max_messages)
        plan = await _plan(served, principal, request_)
        chat_id = request_.chat_id
        wait = served.limits.pause_timeout if wait_for_decisions else 0.0

        async def produce(write: Write) -> None:
            stream = UIMessageStream(set(plan.awaiting), set(plan.known))

            async def send(chunks: list[Chunk]) -> None:
                for chunk in chunks:
                    await write(frame(chunk))

            async def emit(event: Event) -> None:
                await send(stream.chunks(event))

            try:
                async with served.running(principal, plan.input, plan.config, chat_id) as live:
                    await send(stream.start(plan.message_id, live.run_id, chat_id))
                    await relay(live, emit, wait)
                    if stream.paused:
                        await send(stream.paused_end())
            except RequestRefused as exc:
                await send([{"type": "error", "errorText": exc.message}])
            except Exception as exc:
                _log.error("chat_failed", error=type(exc).__name__)
                _log.debug("chat_failed_detail", error=repr(exc))
                await send([{"type": "error", "errorText": "internal error"}])
            await write(DONE)

        return EventStreamResponse(produce, headers=HEADERS, keep_running=served.keep_running)

    return guarded(chat)


def _no_stream(served: Served) -> Any:
    async def reconnect(request: Request) -> Response:
        from starlette.responses import Response

        await served.principal(request)
        return Response(status_code=204)

    return guarded(reconnect)


def ai_sdk_app(
    agent: object,
    *,
    authorize: object,
    saver: Saver | None = None,
    limits: object = None,
    keep_running: object = False,
    wait_for_decisions: object = False,
) -> Starlette:
    """An ASGI app answering ``useChat`` (the AI SDK's ``DefaultChatTransport``) with
    ``agent``'s runs as UI message streams, steered through ``runs/…`` beside it (see
    the module docstring).

    Args:
        agent: The ``ReactAgent`` to serve; one agent serves every request.
        authorize: ``authorize(request) -> principal`` (sync or async): who the client is;
            chats (threads) and runs are scoped to it (``reactcore.serving``).
        saver: Replaces the agent's saver. With one, a chat's history lives in the saver
            (the chat ``id`` is its thread) and approvals are answered by the next request.
        limits: ``reactcore.serving.Limits``; the defaults when ``None``. ``max_messages``
            bounds the UI messages of a request (413 beyond).
        keep_running: Let a run go on to its end when its client leaves (its chunks are
            dropped); by default the run is cancelled then, its finished calls kept.
        wait_for_decisions: Keep a stream paused for approval open (up to
            ``Limits.pause_timeout``) for ``POST runs/{runId}/decisions``; by default it
            ends at the pause and the client's next request answers.
    """
    from starlette.applications import Starlette
    from starlette.routing import Route

    from ..serving._app import Served

    if not isinstance(wait_for_decisions, bool):
        raise TypeError(f"wait_for_decisions must be a bool, got {got(wait_for_decisions)}")
    served = Served.of(
        agent, authorize=authorize, saver=saver, limits=limits, keep_running=keep_running
    )
    routes = [
        Route("/", _endpoint(served, wait_for_decisions), methods=["POST"]),
        *served.steering_routes(),
        Route("/{chat_id}/stream", _no_stream(served), methods=["GET"]),
    ]
    app = Starlette(routes=routes)
    app.state.served = served
    return app

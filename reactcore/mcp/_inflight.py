"""The tool calls of a toolset in flight, and a server's requests handed to the one they
belong to.

A server asks the client things (``sampling/createMessage``, ``elicitation/create``) while
one of its tools runs. The SDK calls our callback in its own receive task, outside the
tool call: what the answer needs (the run's config, the call's cancel scope, its trace
span) belongs to the call's task. So each call runs its body beside a small loop that does
the work handed to it (``InFlight.run``), and the callback hands the work over
(``hand_over``) and waits for its answer.

Which call a request belongs to: the call whose context the SDK's dispatcher runs the
callback in, when the transport carries the sender's context (streamable HTTP: a request
arrives on the stream of the call's own POST); else the only call of the toolset in
flight. With several calls in flight over stdio the protocol does not say which one
asked: the request is then treated as one made outside any call. A request of a call that
has ended (the server had not yet heard of its cancellation) is one outside any call
too; over stdio, should another call of the toolset be the only one in flight by then, it
would be taken for that call's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, TypeVar

import anyio
import attrs
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .._messages import ToolCall
from .._tools import ToolContext

T = TypeVar("T")
_CURRENT: ContextVar[InFlight | None] = ContextVar("reactcore_mcp_call", default=None)


@attrs.define(eq=False)
class _Job:
    work: Callable[[], Awaitable[Any]]
    done: anyio.Event = attrs.field(factory=anyio.Event)
    result: Any = None
    error: Exception | None = None


@attrs.define(eq=False)
class InFlight:
    """One tool call running on the server: its ``ToolContext``, the work the server's
    requests handed to it, the requests it was asked (``asked``, by kind, in order) and
    what it paused for (``paused``)."""

    context: ToolContext
    _send: MemoryObjectSendStream[_Job] = attrs.field(alias="send")
    _pending: list[_Job] = attrs.field(factory=list)
    asked: dict[str, list[ToolCall]] = attrs.field(factory=dict)
    stop: anyio.CancelScope | None = None
    stopped: anyio.Event = attrs.field(factory=anyio.Event)
    paused: list[ToolCall] = attrs.field(factory=list)

    def pause(self, *waiting: ToolCall) -> None:
        """Stop the call's body: the run is to pause for ``waiting`` (``Calls.run`` gives
        them). Await ``stopped`` before answering the server: the server then hears of
        the cancellation first (over stdio, in order), and does not go on asking."""
        self.paused.extend(waiting)
        assert self.stop is not None
        self.stop.cancel()

    def ask(self, kind: str, name: str, arguments: str) -> ToolCall:
        """This request of ``kind`` as a call ``<kind>-<n>`` (the n-th of the call, from
        1), kept in ``asked[kind]``, in order."""
        asked = self.asked.setdefault(kind, [])
        asked.append(ToolCall(f"{kind}-{len(asked) + 1}", name, arguments))
        return asked[-1]


@attrs.define(eq=False)
class Calls:
    """A toolset's calls in flight."""

    _live: set[InFlight] = attrs.field(factory=set)

    async def run(
        self, context: ToolContext, body: Callable[[InFlight], Awaitable[T]]
    ) -> T | Paused:
        """What ``body(flight)`` returns, the server's requests meanwhile worked on in this
        task's context and cancel scope; ``Paused`` when the work paused the call
        (``flight.pause``): the body was cancelled, the work handed over answered first.
        What the body raises is raised as itself."""
        send, receive = anyio.create_memory_object_stream[_Job](16)
        flight = InFlight(context, send)
        self._live.add(flight)
        token = _CURRENT.set(flight)
        try:
            failed: Exception | None = None
            async with anyio.create_task_group() as group:
                group.start_soon(_work, flight, receive)
                with anyio.CancelScope() as flight.stop:
                    try:
                        result = await body(flight)
                    except Exception as exc:  # raised below as itself, not in a group
                        failed = exc
                flight.stopped.set()
                if flight.paused:
                    send.close()  # the work that paused answers, then the loop ends
                else:
                    group.cancel_scope.cancel()
            if failed is not None:
                raise failed
            if flight.paused:
                return Paused(tuple(flight.paused))
            return result
        finally:
            _CURRENT.reset(token)
            self._live.discard(flight)
            send.close()
            for job in flight._pending:  # never answered: their callbacks stop waiting
                job.done.set()

    def find(self) -> InFlight | None:
        """The call the request being answered belongs to (see the module docstring)."""
        found = _CURRENT.get()
        if found is not None:  # the transport said: this call (None if it has ended)
            return found if found in self._live else None
        return next(iter(self._live)) if len(self._live) == 1 else None


@attrs.frozen
class Paused:
    """What ``Calls.run`` gives when the call paused (``InFlight.pause``): what it waits
    for."""

    waiting: tuple[ToolCall, ...]


async def hand_over(flight: InFlight, work: Callable[[], Awaitable[T]]) -> T | None:
    """``work()`` done in ``flight``'s task; ``None`` when the call ended or paused
    first. What
    ``work`` raises is raised here (the SDK answers the server with an error), not in the
    call."""
    job = _Job(work)
    try:
        flight._send.send_nowait(job)
    except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
        return None
    flight._pending.append(job)
    await job.done.wait()
    if job.error is not None:
        raise job.error
    result: T | None = job.result
    return result


async def _work(flight: InFlight, receive: MemoryObjectReceiveStream[_Job]) -> None:
    async with receive:
        async for job in receive:
            try:
                # A paused call is being stopped: what the server asks meanwhile (it may
                # go on before it hears of the cancellation) is not worked on.
                if not flight.paused:
                    job.result = await job.work()
            except Exception as exc:
                job.error = exc
            finally:
                job.done.set()

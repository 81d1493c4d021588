"""The seed's parallel tool execution, ported to Python threads: the bench's baseline.

The seed (Spring AI Alibaba's ``AgentToolNode.executeToolCallsParallel``, quoted in
``/work/shared/seed``) runs a batch of tool calls like this, and so does ``SeedToolNode``:

1. every call is submitted at once to a shared thread pool
   (``CompletableFuture.runAsync(task, executor)`` → ``ThreadPoolExecutor.submit``);
2. the pooled task first takes a permit of a ``Semaphore(maxParallelTools)`` created for
   the batch — so a call waiting for a permit occupies a pool thread while it waits —
   then runs the tool as one blocking call, and releases the permit;
3. each call's future gets the batch timeout from the moment it was submitted
   (``orTimeout(toolExecutionTimeout)``): time spent queued for a thread or a permit
   counts against it;
4. the caller waits for every future (``allOf(...).join()``) and collects the responses in
   call order; a future that timed out answers ``Error: Tool execution timed out``
   (``extractErrorMessage``); a response that arrives after its future timed out is
   dropped (the ``compareAndSet(index, null, …)`` on ``AtomicReferenceArray``); an
   empty slot answers ``Error: Tool did not return a valid result``.

What is faithful:

- The pool is sized like the seed's default ``ParallelNode`` executor: ``max(2 × CPUs,
  4)`` core threads, so at most that many calls run, whatever ``max_parallel_tools`` says.
- A timeout does not stop the call. Java's ``orTimeout`` completes the future
  exceptionally but leaves the pooled task running, holding its thread and its permit
  until the tool returns; here the pooled function keeps running the same way. The batch
  returns on time, the work goes on behind it (``wait_idle`` waits for it).
- Every tool is a blocking call on a pool thread. In the seed an ``AsyncToolCallback``
  returns a ``CompletableFuture`` that the pool thread ``join()``s; here an async tool's
  coroutine runs to completion on a fresh event loop in the pool thread
  (``anyio.run(..., backend="asyncio")``), which is what a blocking call to it does.
- Tool errors become ``Error: <message>`` responses; an unknown tool name fails the call
  (the seed's base handler throws ``IllegalStateException``) and answers the same way.

What differs (none of it affects the bench's tools):

- The pool is handed in (``executor=``), as the seed takes it from the run's config, or
  else made and owned by the node (the seed falls back to one JVM-wide pool). Python's
  ``ThreadPoolExecutor`` queue is unbounded where the seed's holds 1000 tasks, then grows
  the pool to ``4 × CPUs`` and finally runs tasks in the caller's thread
  (``CallerRunsPolicy``): only batches of more than about 1000 queued calls would tell.
- Not ported: interceptors, state updates (``ToolStateCollector``), ``returnDirect``,
  partial responses, ``CancellableAsyncToolCallback`` tokens, an async tool's own inner
  ``getTimeout()`` and ``InterruptedException`` (Python threads cannot be interrupted).
- Arguments are read with reactcore's ``Tool.parse_arguments`` and results written with
  reactcore's JSON text, so both sides do the same work per call outside the scheduling.
- The caller cannot cancel a batch: ``apply`` blocks its thread until every future is done
  or timed out, like ``allOf(...).join()``. The bench drives it from the event loop with
  ``anyio.to_thread.run_sync``; cancelling that abandons the driving thread, and the calls
  go on running.
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import attrs

from .._messages import AssistantMessage, ToolCall, ToolResponse, ToolResponseMessage
from .._results import to_json_text
from .._state import MESSAGES
from .._tools import Tool

TIMED_OUT = "Error: Tool execution timed out"
NO_RESULT = "Error: Tool did not return a valid result"


def default_pool_size() -> int:
    """The seed's default pool: ``max(2 × CPUs, 4)`` core threads (``ParallelNode``)."""
    return max(2 * (os.cpu_count() or 1), 4)


def seed_pool(size: int | None = None) -> concurrent.futures.ThreadPoolExecutor:
    """A pool like the seed's default executor (``size`` threads, default as it sizes it)."""
    return concurrent.futures.ThreadPoolExecutor(
        size or default_pool_size(), thread_name_prefix="parallel-node-action-thread"
    )


@attrs.define(eq=False)
class _Slots:
    """The ordered responses of one batch; the first response written to a slot wins."""

    slots: list[ToolResponse | None]
    lock: threading.Lock = attrs.field(factory=threading.Lock)

    def offer(self, index: int, response: ToolResponse) -> None:
        with self.lock:
            if self.slots[index] is None:
                self.slots[index] = response


@attrs.define(eq=False)
class SeedToolNode:
    """The seed's parallel path: ``node.apply(state)`` blocks until the batch is answered.

    ``apply`` returns ``{"messages": ToolResponseMessage}``, the responses in call order.
    ``executor`` is the thread pool to use (shared, like the seed's ``ParallelNode``
    pool); without one the node makes its own of ``pool_size`` threads and shuts it down
    in ``close`` (or at the end of ``with``).
    """

    tools: Sequence[Tool]
    max_parallel_tools: int = attrs.field(default=5, validator=attrs.validators.ge(1))
    tool_execution_timeout: float = 300.0
    pool_size: int = attrs.field(factory=default_pool_size, validator=attrs.validators.ge(1))
    executor: concurrent.futures.ThreadPoolExecutor | None = None
    _index: Mapping[str, Tool] = attrs.field(init=False)
    _pool: concurrent.futures.ThreadPoolExecutor = attrs.field(init=False)
    _outstanding: set[concurrent.futures.Future[None]] = attrs.field(factory=set, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    def __attrs_post_init__(self) -> None:
        self._index = {t.name: t for t in reversed(self.tools)}  # the first of a name wins
        self._pool = self.executor or seed_pool(self.pool_size)

    def __enter__(self) -> SeedToolNode:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Wait for every pooled call (timed-out ones too); stop the pool if it is ours."""
        if self.executor is None:
            self._pool.shutdown(wait=True)
        else:
            self.wait_idle()

    def wait_idle(self) -> None:
        """Block until every call submitted so far has ended, timed-out ones included."""
        with self._lock:
            pending = list(self._outstanding)
        concurrent.futures.wait(pending)

    def apply(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """Answer the tool calls of the last message (an ``AssistantMessage``)."""
        last = state[MESSAGES][-1]
        if not isinstance(last, AssistantMessage):
            raise TypeError(f"the last message must be an AssistantMessage, not {last!r}")
        return {MESSAGES: ToolResponseMessage(self.run_calls(last.tool_calls))}

    def run_calls(self, calls: Sequence[ToolCall]) -> list[ToolResponse]:
        """Run ``calls`` as the seed does (see the module docstring); responses in order."""
        semaphore = threading.Semaphore(self.max_parallel_tools)
        slots = _Slots([None] * len(calls))
        submitted: list[tuple[float, concurrent.futures.Future[None]]] = []
        for index, call in enumerate(calls):
            task = functools.partial(self._pooled, semaphore, slots, index, call)
            future = self._pool.submit(task)
            with self._lock:
                self._outstanding.add(future)
            future.add_done_callback(self._forget)
            submitted.append((time.monotonic() + self.tool_execution_timeout, future))
        for index, (deadline, future) in enumerate(submitted):
            try:
                future.result(timeout=max(0.0, deadline - time.monotonic()))
            except concurrent.futures.TimeoutError:
                slots.offer(index, _error(calls[index], TIMED_OUT))
            except Exception as exc:  # the seed's exceptionally(...): any failure answers
                slots.offer(index, _error(calls[index], f"Error: {exc}"))
        return [
            response if response is not None else _error(call, NO_RESULT)
            for call, response in zip(calls, slots.slots, strict=True)
        ]

    def _forget(self, future: concurrent.futures.Future[None]) -> None:
        with self._lock:
            self._outstanding.discard(future)

    def _pooled(
        self, semaphore: threading.Semaphore, slots: _Slots, index: int, call: ToolCall
    ) -> None:
        """The pooled task: a permit, then the tool as one blocking call."""
        with semaphore:
            slots.offer(index, self._execute(call))

    def _execute(self, call: ToolCall) -> ToolResponse:
        found = self._index.get(call.name)
        if found is None:
            return _error(call, f"Error: No ToolCallback found for tool name: {call.name}")
        try:
            kwargs = found.parse_arguments(call.arguments)
            if found.is_async:
                result = anyio.run(functools.partial(found.func, **kwargs), backend="asyncio")
            else:
                result = found.func(**kwargs)
            text = to_json_text(result)
        except Exception as exc:
            return _error(call, f"Error: {exc}")
        return ToolResponse(call.id, call.name, text)


def _error(call: ToolCall, text: str) -> ToolResponse:
    return ToolResponse(call.id, call.name, text, is_error=True)

"""``AgentToolNode``: the acting half of a ReAct agent.

Given a state whose last message is an ``AssistantMessage`` with tool calls (or a partial
``ToolResponseMessage`` answering some of them), it resolves each call to a tool, runs the
calls through the interceptor chain and the scheduler, and answers with one
``ToolResponseMessage`` in call order plus the state updates the tools made, merged by key
strategy in call order — the same in sequential and parallel mode.

Only tools the model was shown may run: the assistant message records them
(``visible_tools``) and a call of a tool the node knows but the model was not shown is
answered "not available" without running anything (see ``AgentToolNode.resolve``). Each
call needs its own id; tool names are unique.

A call may pause the run rather than answer (``ToolCallResponse.interrupt``): the update
then answers only the calls that ended, keeps their state updates aside, and maps each
call that paused to what it waits for under ``_paused_calls_`` (see ``_batch``).
"""

from __future__ import annotations

import collections
import functools
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import anyio
import attrs

from . import _validate as valid
from ._batch import PENDING_UPDATES, Batch, has_pending_updates, pending_calls, trace_exception
from ._config import RunnableConfig
from ._exception_processor import DefaultToolExceptionProcessor, ToolExceptionProcessor
from ._exceptions import CassetteError, PIIDetectedError, ToolArgumentError
from ._interceptors import (
    ToolCallRequest,
    ToolCallResponse,
    ToolHandler,
    ToolInterceptor,
    chain_tool_interceptors,
)
from ._logging import get_logger
from ._messages import AssistantMessage, ToolCall, ToolResponse
from ._results import tool_output
from ._run_context import dynamic_tools
from ._scheduler import Job, Status, run_parallel, run_sequential
from ._state import OverAllState, frozen_mapping
from ._threads import ThreadBudget, run_in_thread
from ._tools import TOOLS, Tool, ToolContext, index_tools
from ._tracing import current

CALL_OBSERVER = "_call_observer_"
# In a run's context: the run's resolution of an assistant message's calls (set by the
# loop), so the hooks deciding on calls and the node running them see the same tools.
CALL_RESOLVER = "_call_resolver_"
ToolResolver = Callable[[str], Tool | None]


def _index_tools(tools: Iterable[Tool | Callable[..., Any]], where: str) -> Mapping[str, Tool]:
    return MappingProxyType(index_tools([(where, tools)]))


_positive = valid.number(positive=True)
_at_least_one = valid.integer(minimum=1)
_flag = valid.boolean()
LIMITER = valid.instance_of(anyio.CapacityLimiter, "an anyio.CapacityLimiter", optional=True)


def _frozen_context(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return frozen_mapping(value) if isinstance(value, Mapping) else valid.leave(value)


_TOOL_INTERCEPTORS = valid.each(
    valid.has_methods("wrap_tool_call", what="a tool interceptor (with wrap_tool_call)")
)


DEFAULT_TOOL_THREADS = 40  # anyio's own default thread limiter


def thread_budget(max_tool_threads: int | None, max_parallel_tools: int) -> int:
    """The worker threads a node may keep alive: ``max_tool_threads`` when given, else
    ``max(40, max_parallel_tools)`` — an explicit parallelism is never undercut by an
    implicit default."""
    if max_tool_threads is not None:
        return max_tool_threads
    return max(DEFAULT_TOOL_THREADS, max_parallel_tools)


def _threads_for_parallelism(
    instance: Any, attribute: attrs.Attribute[Any], value: int | None
) -> None:
    """``max_tool_threads``: at least 1, and in parallel mode not below
    ``max_parallel_tools`` (``ValueError`` naming both)."""
    if value is None:
        return
    _at_least_one(instance, attribute, value)
    parallel = instance.max_parallel_tools
    if instance.parallel_tool_execution and value < parallel:
        raise ValueError(
            f"max_tool_threads={value} is below max_parallel_tools={parallel}: a batch of "
            f"{parallel} sync calls could never all run at once (calls that wait for one "
            "another would deadlock until their timeout); raise max_tool_threads, lower "
            "max_parallel_tools, or leave max_tool_threads out (it is then "
            f"max({DEFAULT_TOOL_THREADS}, max_parallel_tools))"
        )


def _call_fields(request: ToolCallRequest | None) -> dict[str, Any]:
    """What a thread's log events say of its call."""
    return {} if request is None else {"call_id": request.call.id, "tool": request.call.name}


def _refuse_shared_ids(assistant: AssistantMessage) -> None:
    """``ValueError`` when two calls of ``assistant`` share an id: each call must get
    exactly one answer (the LLM node re-keys such ids as a model's answer enters)."""
    counts = collections.Counter(c.id for c in assistant.tool_calls)
    if len(counts) < len(assistant.tool_calls):
        shared = sorted(i for i, n in counts.items() if n > 1)
        raise ValueError(
            "AgentToolNode cannot answer tool calls that share an id: "
            f"{', '.join(repr(i) for i in shared)} (each call needs its own id)"
        )


def _return_direct(resolved: Iterable[Tool | None]) -> bool:
    """Whether every called tool that may run is return_direct (and there is one)."""
    found = [t for t in resolved if t is not None]
    return bool(found) and all(t.return_direct for t in found)


def resolved_names(assistant: AssistantMessage, config: RunnableConfig) -> dict[str, str]:
    """Each call of ``assistant`` (by id) → the name of the tool that will run it.

    What hooks keyed by tool name (approval, call limits) must look at: the name the
    ``Tool`` carries after resolution (the node's tools, the run's dynamic tools, then the
    ``tool_resolver``), not the name the model wrote — a forgiving resolver that maps
    ``send-email`` to ``send_email`` gives ``send_email``. A call no tool answers (it will
    run nothing: answered "not available") keeps the model's name, as does every call
    outside an agent's run (no resolution in ``config.context``).
    """
    found = resolved_tools(assistant, config)
    names = {}
    for c in assistant.tool_calls:
        tool = found.get(c.name)
        names[c.id] = tool.name if tool is not None else c.name
    return names


def resolved_tools(
    assistant: AssistantMessage, config: RunnableConfig
) -> Mapping[str, Tool | None]:
    """Each tool name ``assistant`` called → the ``Tool`` that will run it (see
    ``resolved_names``); empty outside an agent's run (no resolution in ``config.context``)."""
    resolve = config.context.get(CALL_RESOLVER)
    found: Mapping[str, Tool | None] = resolve(assistant) if resolve is not None else {}
    return found


@attrs.define(eq=False)
class AgentToolNode:
    """Runs the tool calls of the last assistant message; ``await node(state, config)``.

    Sequential by default (sync tools inline, or in a worker thread with
    ``wrap_sync_tools_as_async``); with ``parallel_tool_execution`` and two or more calls,
    one task per call in a task group, at most ``max_parallel_tools`` at a time in each
    batch, sync tools always in worker threads. Each call gets ``tool.timeout`` or
    ``tool_execution_timeout`` seconds from when it starts running.

    Shared by every run of the node: ``tool_limiter`` (a cap on its calls in flight, if
    given) and the thread budget — at most ``max_tool_threads`` worker threads alive,
    threads abandoned by timed-out or cancelled calls included until they end
    (``abandoned_threads``). Left out (``None``), the budget is ``max(40,
    max_parallel_tools)``, so one batch's sync calls can always all run at once; in
    parallel mode an explicit ``max_tool_threads`` below ``max_parallel_tools`` is a
    ``ValueError``. Several runs of the node share the budget: their sync calls may queue
    for a thread (queueing never counts against a call's timeout).
    """

    tools: Sequence[Tool | Callable[..., Any]] = attrs.field(default=(), validator=TOOLS)
    agent_name: str = attrs.field(default="agent", kw_only=True, validator=valid.text())
    parallel_tool_execution: bool = attrs.field(default=False, kw_only=True, validator=_flag)
    max_parallel_tools: int = attrs.field(default=5, kw_only=True, validator=_at_least_one)
    tool_limiter: anyio.CapacityLimiter | None = attrs.field(
        default=None, kw_only=True, validator=LIMITER
    )
    max_tool_threads: int | None = attrs.field(
        default=None, kw_only=True, validator=_threads_for_parallelism
    )
    tool_execution_timeout: float = attrs.field(default=300.0, kw_only=True, validator=_positive)
    wrap_sync_tools_as_async: bool = attrs.field(default=False, kw_only=True, validator=_flag)
    tool_interceptors: Sequence[ToolInterceptor] = attrs.field(
        default=(), kw_only=True, validator=_TOOL_INTERCEPTORS
    )
    tool_resolver: ToolResolver | None = attrs.field(
        default=None, kw_only=True, validator=valid.function(optional=True)
    )
    tool_context: Mapping[str, Any] = attrs.field(
        factory=dict, kw_only=True, converter=_frozen_context, validator=valid.mapping()
    )
    exception_processor: ToolExceptionProcessor = attrs.field(
        factory=DefaultToolExceptionProcessor, kw_only=True, validator=valid.function()
    )
    enable_acting_log: bool = attrs.field(default=False, kw_only=True, validator=_flag)
    # False when the calls run elsewhere and are limited there (reactcore.temporal: each
    # call is an activity with its own timeout): no per-call deadline, no tool limiters,
    # no tool_limiter, no thread slots — only the batch's max_parallel_tools.
    local_limits: bool = attrs.field(default=True, kw_only=True, validator=_flag)

    _index: Mapping[str, Tool] = attrs.field(init=False)
    _limiters: tuple[anyio.CapacityLimiter, ...] = attrs.field(init=False)
    _threads: ThreadBudget = attrs.field(init=False)
    _inline: ToolHandler = attrs.field(init=False)
    _threaded: ToolHandler = attrs.field(init=False)
    log: Any = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        self._index = _index_tools(self.tools, "the node's tools")
        # A batch is bounded by max_parallel_tools on its own; the shared cap, if given, is
        # held by every call of every run (in both modes).
        self._limiters = (self.tool_limiter,) if self.tool_limiter is not None else ()
        chain = functools.partial(chain_tool_interceptors, list(self.tool_interceptors))
        self._inline = self._guarded(
            chain(functools.partial(self._execute, self.wrap_sync_tools_as_async))
        )
        self._threaded = self._guarded(chain(functools.partial(self._execute, True)))
        self.log = get_logger(agent=self.agent_name)
        # One budget for every run of the node: what bounds its worker threads.
        self._threads = ThreadBudget(
            thread_budget(self.max_tool_threads, self.max_parallel_tools),
            self.log,
            _call_fields,
            log_ends=self.enable_acting_log,
        )

    @property
    def abandoned_threads(self) -> int:
        """Worker threads still running for calls that timed out or were cancelled.

        They count in the thread budget until they end (at the tool's return or its next
        ``check_cancelled()``); each one was logged once as ``tool_thread_abandoned``.
        """
        return self._threads.abandoned

    @property
    def tool_threads(self) -> int:
        """The thread budget: ``max_tool_threads``, or ``max(40, max_parallel_tools)``."""
        return self._threads.total

    @property
    def tool_names(self) -> list[str]:
        """The names of the node's own tools, in order."""
        return list(self._index)

    def resolve(
        self, name: str, config: RunnableConfig, visible: Collection[str] | None = None
    ) -> Tool | None:
        """The tool called ``name`` that may run, or ``None``.

        The node's tools, then the run's dynamic tools, then the resolver. ``visible`` is
        the set of tools the model was shown (``AssistantMessage.visible_tools``): a tool
        the node knows but the model was not shown is hidden and never resolved (an
        interceptor hid it, e.g. by permission); a name unknown to the node and to the
        dynamic tools still goes to the resolver, whose tools are never listed to the
        model, so no interceptor can have hidden them — unless the resolver answers with
        one of the node's or dynamic tools (under another name), which stays hidden.
        ``None`` lets every tool run.
        """
        found = self._index.get(name) or dynamic_tools(config.context).get(name)
        if found is not None:
            return found if visible is None or name in visible else None
        if self.tool_resolver is None:
            return None
        found = self.tool_resolver(name)
        if found is None or visible is None or found.name in visible:
            return found
        # The resolver gave one of the node's (or the run's dynamic) tools under another
        # name: the model was not shown it, so it stays hidden.
        known = self._index.get(found.name) or dynamic_tools(config.context).get(found.name)
        return None if known is not None else found

    def resolve_calls(
        self, assistant: AssistantMessage, config: RunnableConfig
    ) -> dict[str, Tool | None]:
        """Each call name of ``assistant`` → the tool that may run it, or ``None``
        (``resolve``, with the tools the model was shown)."""
        visible = assistant.visible_tools
        return {c.name: self.resolve(c.name, config, visible) for c in assistant.tool_calls}

    async def __call__(
        self, state: Mapping[str, Any], config: RunnableConfig | None = None
    ) -> dict[str, Any]:
        """The partial state update answering the pending tool calls (``{}`` if none)."""
        state = state if isinstance(state, OverAllState) else OverAllState(state)
        config = config if config is not None else RunnableConfig()
        assistant, previous = pending_calls(state)
        _refuse_shared_ids(assistant)
        # Each name resolved once per batch, by the one rule (see ``resolve``); in a run,
        # as the run resolved it for its hooks (approval and limits saw these tools).
        resolve = config.context.get(CALL_RESOLVER)
        found = resolve(assistant) if resolve is not None else self.resolve_calls(assistant, config)
        batch = Batch(
            self,
            state,
            assistant,
            previous,
            _return_direct(found.values()),
            config.context.get(CALL_OBSERVER),
            found,
        )
        batch.tracer = current.get()
        if previous is not None:
            batch.done.update((r.id, r) for r in previous.responses)
            batch.updates.update(previous.metadata.get(PENDING_UPDATES, {}))
        missing = [c for c in assistant.tool_calls if c.id not in batch.done]
        if not missing:
            # All answered: finish a batch that stopped with updates kept aside, else nothing.
            return batch.update() if has_pending_updates(previous) else {}
        await self._run(batch, missing, config)
        return batch.paused_update() if batch.paused else batch.update()

    def _not_available(
        self, call: ToolCall, config: RunnableConfig, visible: Sequence[str] | None
    ) -> ToolResponse:
        """The answer to a call of a tool that is unknown or hidden from the model: the
        same text either way, listing only the tools the model was shown."""
        known = self._index.get(call.name) or dynamic_tools(config.context).get(call.name)
        names = visible if visible is not None else [*self._index, *dynamic_tools(config.context)]
        names = list(dict.fromkeys(names))
        reason = "hidden" if known is not None else "unknown"
        self.log.warning("tool_not_available", call_id=call.id, tool=call.name, reason=reason)
        listed = ", ".join(names) or "none"
        text = f"Error: Tool not available: {call.name}. Available tools: {listed}"
        return ToolResponse(call.id, call.name, text, is_error=True)

    async def _run(self, batch: Batch, calls: Sequence[ToolCall], config: RunnableConfig) -> None:
        parallel = self.parallel_tool_execution and len(calls) > 1
        invoke = self._threaded if parallel else self._inline
        # Without a log or a run to tell, calls are recorded after the batch: no two
        # awaited hooks per call on the hot path.
        observer = (
            batch
            if self.enable_acting_log or batch.observer is not None or batch.tracer is not None
            else None
        )
        jobs: list[Job] = []
        visible = batch.assistant.visible_tools
        for call in calls:
            found = batch.tools[call.name]
            if found is None:
                batch.done[call.id] = self._not_available(call, config, visible)
                continue
            request = ToolCallRequest(call, batch.state, config, found)
            timeout = found.timeout or self.tool_execution_timeout
            limiter = found.limiter
            # A call that will run in a thread takes its thread slot while it queues.
            threaded = not found.is_async and (parallel or self.wrap_sync_tools_as_async)
            threads = self._threads if threaded else None
            if not self.local_limits:
                timeout, limiter, threads = math.inf, None, None
            jobs.append(Job(invoke, timeout, limiter, request, observer, threads))
        shared = self._limiters if self.local_limits else ()
        try:
            if parallel:
                await run_parallel(jobs, self.max_parallel_tools, shared)
            else:
                await run_sequential(jobs, shared)
        finally:
            if batch.traces:
                batch.abandon_traces()
        if observer is None:
            for job in jobs:
                if job.status is not None:
                    self.log_end(job, batch.record(job))

    def response(self, job: Job) -> ToolResponse:
        """The answer the model gets for an ended job."""
        call: ToolCall = job.key.call
        if job.status is Status.DONE:
            result: ToolCallResponse = job.result
            return ToolResponse(
                call.id, call.name, result.text, result.is_error, result.parts, data=result.data
            )
        if job.status is Status.TIMED_OUT:
            text = f"Error: Tool execution timed out after {job.timeout:g}s (tool '{call.name}')"
        else:
            reason = f": {job.cancel_reason}" if job.cancel_reason else ""
            text = f"Error: Tool execution was cancelled by the caller{reason}"
        return ToolResponse(call.id, call.name, text, is_error=True)

    def log_end(self, job: Job, response: ToolResponse) -> None:
        """Log how a call ended: timeouts always (warning), the rest with the acting log."""
        call: ToolCall = job.key.call
        if job.status is Status.TIMED_OUT:
            self.log.warning(
                "tool_call_timed_out", call_id=call.id, tool=call.name, timeout=job.timeout
            )
        elif not self.enable_acting_log:
            return
        elif job.status is Status.DONE:
            self.log.info(
                "tool_call_finished",
                call_id=call.id,
                tool=call.name,
                duration_ms=round(job.duration * 1000, 3),
                is_error=response.is_error,
            )
        else:
            self.log.info(
                "tool_call_cancelled", call_id=call.id, tool=call.name, reason=job.cancel_reason
            )

    def _guarded(self, handler: ToolHandler) -> ToolHandler:
        """``handler`` wrapped in the one place where a call's errors become responses (or,
        if the exception processor says so, raise); a ``PIIDetectedError`` or a
        ``CassetteError`` (a replay gone another way than its recording) always raises."""

        async def call(request: ToolCallRequest) -> ToolCallResponse:
            try:
                return await handler(request)
            except ToolArgumentError as exc:
                trace_exception(exc)
                return ToolCallResponse(f"Error: {exc}", is_error=True)
            except (PIIDetectedError, CassetteError):
                raise  # a verdict on the call, not the tool's failure: the run ends
            except Exception as exc:
                trace_exception(exc)
                self.log.warning(
                    "tool_call_failed",
                    call_id=request.call.id,
                    tool=request.call.name,
                    error=type(exc).__name__,
                )
                return ToolCallResponse(self.exception_processor(request, exc), is_error=True)

        return call

    async def _execute(self, threaded: bool, request: ToolCallRequest) -> ToolCallResponse:
        """Call the tool itself: the innermost handler of the interceptor chain."""
        tool = request.tool
        kwargs = tool.parse_arguments(request.call.arguments)
        context = None
        if tool.wants_context:
            context = ToolContext(request.call, request.config, self.tool_context, request.state)
            tool.bind(kwargs, context)
        if tool.is_async:
            result = await tool.func(**kwargs)
        elif threaded:
            result = await run_in_thread(self._threads, functools.partial(tool.func, **kwargs))
        else:
            result = tool.func(**kwargs)
        if isinstance(result, ToolCallResponse):
            # A tool that says itself what the model sees (an error, data kept aside).
            return result if context is None else attrs.evolve(result, update=context.update)
        text, parts = tool_output(result)
        if context is None:
            return ToolCallResponse(text, parts=parts)
        return ToolCallResponse(text, update=context.update, parts=parts)

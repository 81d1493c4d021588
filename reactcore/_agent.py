"""``ReactAgent``: an agent's configuration, and the ways to run it — ``invoke``,
``start`` (a handle on the live run) and ``stream`` (its events).

The loop itself (``_loop``) alternates reasoning (``AgentLlmNode``) and acting
(``AgentToolNode``) with hooks around both. It is plain Python, not a graph engine.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any, Self

import anyio
import anyio.abc
import anyio.lowlevel
import attrs
import sniffio

from . import _validate as valid
from ._approval import Interrupt, Resume
from ._checkpoint import Lease, Saver, claim_thread, request_cancel
from ._config import RunnableConfig, as_config
from ._events import Event, RunFailed, RunFinished, RunInterrupted
from ._exception_processor import DefaultToolExceptionProcessor, ToolExceptionProcessor
from ._exceptions import ModelTruncatedError, RunCancelled
from ._hooks import Hook, order_hooks
from ._input import AgentInput, check_input
from ._interceptors import ModelInterceptor, ToolInterceptor
from ._llm_node import AgentLlmNode
from ._logging import get_logger
from ._loop import Loop, apply_decisions, final_text, returned_direct, starting_point
from ._messages import AssistantMessage
from ._output import OUTPUT_MODES, OutputMode, final_answer_tool, parse_output, response_format
from ._result import AgentResult
from ._run import AgentRun, EventStream, released
from ._state import MESSAGES, KeyStrategy, OverAllState
from ._subagent import subagent_tool
from ._tokens import COUNTER, ApproximateTokenCounter, TokenCounter
from ._tool_node import LIMITER, AgentToolNode, ToolResolver
from ._tools import Tool, index_tools
from ._toolset import Toolset, chain_resolvers
from ._tracing import Tracer, ambient, current, tracer_for
from .models._infer import as_chat_model
from .models.base import LENGTH, ChatModel


def _split_interceptors(
    interceptors: Iterable[Any],
) -> tuple[list[ModelInterceptor], list[ToolInterceptor]]:
    model: list[ModelInterceptor] = []
    tools: list[ToolInterceptor] = []
    for interceptor in interceptors:
        has_model = callable(getattr(interceptor, "wrap_model_call", None))
        has_tool = callable(getattr(interceptor, "wrap_tool_call", None))
        if not (has_model or has_tool):
            raise TypeError(
                f"{interceptor!r} is not an interceptor: it has neither wrap_model_call nor "
                "wrap_tool_call"
            )
        if has_model:
            model.append(interceptor)
        if has_tool:
            tools.append(interceptor)
    return model, tools


def _gather_tools(
    hooks: Sequence[Hook], interceptors: Sequence[Any], tools: Iterable[Any]
) -> list[Tool]:
    """Hook tools, then interceptor tools, then the agent's, in that order.

    Two different tools with one name are a ``ValueError`` naming both functions and
    where each came from (no tool silently shadows another); the same tool brought twice
    (e.g. by a hook and listed by the agent too) is one tool.
    """
    sources: list[tuple[str, Iterable[Any]]] = [
        (f"hook {getattr(h, 'name', type(h).__name__)!r}", getattr(h, "tools", ())) for h in hooks
    ]
    sources += [(f"interceptor {type(i).__name__}", getattr(i, "tools", ())) for i in interceptors]
    sources.append(("the agent's tools", tools))
    return list(index_tools(sources).values())


TOOLS = valid.each(
    valid.satisfies(
        "a Tool, a function or a Toolset",
        test=lambda v: isinstance(v, Tool) or callable(v) or isinstance(v, Toolset),
    )
)
HOOKS = valid.each(
    valid.satisfies(
        "a hook (an object with a str name)",
        test=lambda v: isinstance(getattr(v, "name", None), str),
    )
)
INTERCEPTORS = valid.each(
    valid.satisfies(
        "an interceptor",
        test=lambda v: (
            callable(getattr(v, "wrap_model_call", None))
            or callable(getattr(v, "wrap_tool_call", None))
        ),
        hint=lambda v: "; it has neither wrap_model_call nor wrap_tool_call",
    )
)
SAVER = valid.has_methods(
    "get", "put", "list", "delete", what="a Saver (with get, put, list and delete)", optional=True
)
TRACER_PROVIDER = valid.satisfies(
    "a Tracer (with tool_call) or an OpenTelemetry TracerProvider (with get_tracer)",
    test=lambda v: (
        callable(getattr(v, "tool_call", None)) or callable(getattr(v, "get_tracer", None))
    ),
    optional=True,
)


@attrs.define(eq=False)
class ReactAgent:
    """A ReAct agent: ``await agent.invoke("question")`` → ``AgentResult``.

    The options follow Spring AI Alibaba's builder, with the defaults it has (sequential
    tools, 5 at most in parallel in one batch, 300 s per tool call). Every option after
    ``model`` is keyword-only; a wrong value is refused here, naming the option.

    Args:
        name: The agent's name: in logs, events, spans, and the tool name of
            ``as_tool()``.
        model: A ``ChatModel``, or a provider string such as ``"openai:gpt-4.1"`` or
            ``"anthropic:claude-sonnet-4-5"`` (the agent then builds the client).
        tools: Tools (``@tool`` functions, ``Tool`` values, plain functions) and
            ``Toolset``s (e.g. ``MCPToolset``) the model may call.
        system_prompt: The system message of every model request; ``{name}``
            placeholders are filled from state values, once.
        instruction: A message placed before the conversation in every request, with
            ``{name}`` placeholders filled from state values (rendered once).
        hooks: Hooks run around the model and the tools (``before_agent``,
            ``before_model``, ``after_model``, ``before_tools``, ``after_agent``), e.g.
            ``HumanInTheLoopHook``, ``ModelCallLimitHook``, ``SummarizationHook``.
        interceptors: Objects with ``wrap_model_call`` and/or ``wrap_tool_call``
            wrapping every model or tool call (retries, fallbacks, tool selection …).
        parallel_tool_execution: Run the calls of one model answer concurrently, in one
            task group (``False``: one after another, in order).
        parallel_tool_calls: Whether the model is told it may ask for several calls at
            once; by default the same as ``parallel_tool_execution``; ``None`` sends
            nothing.
        max_parallel_tools: At most this many calls of one batch run at once (a
            per-batch limit).
        max_tool_threads: The worker threads for sync tools, shared by all runs of the
            agent; ``None``: ``max(40, max_parallel_tools)``. Abandoned threads count
            until they end.
        tool_limiter: An ``anyio.CapacityLimiter`` shared with other agents or
            services: every call of every batch holds one of its slots while it runs.
        tool_execution_timeout: Seconds one tool call may run; the clock starts when
            the call starts, not while it waits for a slot.
        wrap_sync_tools_as_async: In the sequential path, run sync tools in worker
            threads too (the parallel path always does).
        output_key: A state key the final answer (or structured output) is stored
            under.
        output_schema: A JSON Schema text the answer must follow, written into the
            prompt.
        output_type: A type (an attrs class, a dataclass, a ``TypedDict`` …) the final
            answer is parsed into: ``AgentResult.output``.
        output_mode: How ``output_type`` is asked for: ``"response_format"`` (the
            provider's structured output) or ``"tool"`` (a ``final_answer`` tool).
        output_retries: How many times a malformed structured answer is sent back to
            the model before ``OutputParseError``.
        max_iterations: The most model calls in one run (``MaxIterationsExceeded``);
            ``None``: no limit.
        exception_processor: Turns a tool's exception into the text the model reads
            (default: ``DefaultToolExceptionProcessor``, which never raises).
        tool_context: Values every tool can read from its ``ToolContext``.
        tool_resolver: A callable mapping a tool name the agent does not know to a
            ``Tool`` at run time (or ``None``); its tools are never listed to the model.
        enable_logging: Add the INFO log events of reasoning and acting (model calls,
            tool calls); argument values are logged at DEBUG only.
        model_error_as_message: Turn a model call that fails after retries into the
            final answer's text instead of raising.
        saver: Where checkpoints go (``MemorySaver``, ``SqliteSaver``,
            ``PostgresSaver``): runs with a ``thread_id`` then resume and continue
            conversations.
        max_buffered_events: The bound of a run's event buffer: a slow reader of
            ``run.events()`` holds the run back; before a reader attaches, events past
            the bound are dropped (``AgentRun.dropped_events`` counts them).
        tracer_provider: An OpenTelemetry ``TracerProvider`` (or a reactcore
            ``Tracer``): spans for runs, model calls and tool calls.
        token_counter: Counts the tokens of a request, for summarisation and context
            limits (default: ``ApproximateTokenCounter``).
    """

    name: str = attrs.field(validator=valid.text(non_empty=True))
    model: ChatModel = attrs.field(converter=as_chat_model, validator=valid.chat_model())
    tools: Sequence[Tool | Callable[..., Any] | Toolset] = attrs.field(
        default=(), kw_only=True, validator=TOOLS
    )
    system_prompt: str | None = attrs.field(
        default=None, kw_only=True, validator=valid.text(optional=True)
    )
    instruction: str | None = attrs.field(
        default=None, kw_only=True, validator=valid.text(optional=True)
    )
    hooks: Sequence[Hook] = attrs.field(default=(), kw_only=True, validator=HOOKS)
    interceptors: Sequence[Any] = attrs.field(default=(), kw_only=True, validator=INTERCEPTORS)
    parallel_tool_execution: bool = attrs.field(
        default=False, kw_only=True, validator=valid.boolean()
    )
    # Told to the model as ChatOptions.parallel_tool_calls (when it has tools); None: not sent.
    parallel_tool_calls: bool | None = attrs.field(
        default=attrs.Factory(lambda self: self.parallel_tool_execution, takes_self=True),
        kw_only=True,
        validator=valid.boolean(optional=True),
    )
    max_parallel_tools: int = attrs.field(
        default=5, kw_only=True, validator=valid.integer(minimum=1)
    )
    # None: max(40, max_parallel_tools) worker threads, shared by every run of the agent.
    max_tool_threads: int | None = attrs.field(
        default=None, kw_only=True, validator=valid.integer(minimum=1, optional=True)
    )
    tool_limiter: anyio.CapacityLimiter | None = attrs.field(
        default=None, kw_only=True, validator=LIMITER
    )
    tool_execution_timeout: float = attrs.field(
        default=300.0, kw_only=True, validator=valid.number(positive=True)
    )
    wrap_sync_tools_as_async: bool = attrs.field(
        default=False, kw_only=True, validator=valid.boolean()
    )
    output_key: str | None = attrs.field(
        default=None, kw_only=True, validator=valid.text(non_empty=True, optional=True)
    )
    output_schema: str | None = attrs.field(
        default=None, kw_only=True, validator=valid.text(optional=True)
    )
    output_type: type | None = attrs.field(
        default=None, kw_only=True, validator=valid.type_form(optional=True)
    )
    output_mode: OutputMode = attrs.field(
        default="response_format", kw_only=True, validator=valid.one_of(*OUTPUT_MODES)
    )
    output_retries: int = attrs.field(default=1, kw_only=True, validator=valid.integer(minimum=0))
    max_iterations: int | None = attrs.field(
        default=25, kw_only=True, validator=valid.integer(minimum=1, optional=True)
    )
    exception_processor: ToolExceptionProcessor | None = attrs.field(
        default=None, kw_only=True, validator=valid.function(optional=True)
    )
    tool_context: Mapping[str, Any] = attrs.field(
        factory=dict, kw_only=True, validator=valid.mapping()
    )
    tool_resolver: ToolResolver | None = attrs.field(
        default=None, kw_only=True, validator=valid.function(optional=True)
    )
    enable_logging: bool = attrs.field(default=False, kw_only=True, validator=valid.boolean())
    model_error_as_message: bool = attrs.field(
        default=False, kw_only=True, validator=valid.boolean()
    )
    saver: Saver | None = attrs.field(default=None, kw_only=True, validator=SAVER)
    max_buffered_events: int = attrs.field(
        default=256, kw_only=True, validator=valid.integer(minimum=1)
    )
    tracer_provider: Any = attrs.field(default=None, kw_only=True, validator=TRACER_PROVIDER)
    token_counter: TokenCounter = attrs.field(
        factory=ApproximateTokenCounter, kw_only=True, validator=COUNTER
    )

    _hooks: list[Hook] = attrs.field(init=False)
    _strategies: dict[str, KeyStrategy] = attrs.field(init=False)
    _llm: AgentLlmNode = attrs.field(init=False)
    _tool_node: AgentToolNode | None = attrs.field(init=False)
    _log: Any = attrs.field(init=False)
    _tracer: Tracer | None = attrs.field(init=False)
    _warned_without_saver: bool = attrs.field(default=False, init=False)
    # Whether ``model`` was built here from a provider string (set by __attrs_pre_init__):
    # the agent then owns its HTTP client and closes it in ``aclose``.
    _owns_model: bool = attrs.field(init=False)
    _closed: bool = attrs.field(default=False, init=False)

    def __attrs_pre_init__(self, name: Any, model: Any, **options: Any) -> None:
        self._owns_model = isinstance(model, str)

    def __attrs_post_init__(self) -> None:
        self._hooks = order_hooks(self.hooks)
        needing = [h.name for h in self._hooks if getattr(h, "requires_saver", False)]
        if needing and self.saver is None:
            raise ValueError(
                f"hook {needing[0]!r} pauses runs and resumes them from checkpoints: "
                "give the agent a saver (saver=MemorySaver() or SqliteSaver(path))"
            )
        hook_interceptors = [i for h in self._hooks for i in getattr(h, "interceptors", ())]
        interceptors = [*hook_interceptors, *self.interceptors]
        model_chain, tool_chain = _split_interceptors(interceptors)
        # Toolsets add their tools to each model request (outermost, so tool selection
        # sees them) and resolve them by name; they are not made into tools here.
        toolsets = [t for t in self.tools if isinstance(t, Toolset)]
        model_chain = [*toolsets, *model_chain]
        own_resolver = [self.tool_resolver] if self.tool_resolver is not None else []
        resolver = chain_resolvers([*own_resolver, *(t.resolve for t in toolsets)])
        plain = [t for t in self.tools if not isinstance(t, Toolset)]
        answer_tool = []
        if self.output_type is not None and self.output_mode == "tool":
            answer_tool = [final_answer_tool(self.output_type)]
        tools = _gather_tools(self._hooks, interceptors, [*plain, *answer_tool])
        if resolver is None:  # a resolver's (or a toolset's) tools are known only at run time
            for hook in self._hooks:
                if callable(check := getattr(hook, "check_tools", None)):
                    check([t.name for t in tools])
        self._strategies = {}
        for hook in self._hooks:
            self._strategies.update(getattr(hook, "key_strategies", {}))
        if self.output_key is not None:
            self._strategies[self.output_key] = KeyStrategy.REPLACE
        self._llm = AgentLlmNode(
            self.model,
            agent_name=self.name,
            system_prompt=self.system_prompt,
            instruction=self.instruction,
            output_schema=self.output_schema,
            output_type=None if answer_tool else self.output_type,
            response_format=(
                response_format(self.output_type)
                if self.output_type is not None and self.output_mode == "response_format"
                else None
            ),
            output_key=self.output_key,
            parallel_tool_calls=self.parallel_tool_calls,
            tools=tools,
            model_interceptors=model_chain,
            enable_reasoning_log=self.enable_logging,
            model_error_as_message=self.model_error_as_message,
        )
        self._tool_node = None
        # No tools, no tool node (as in the seed) — unless tools can come later: from the
        # resolver, or as dynamic tools a model interceptor adds.
        if tools or resolver is not None or model_chain:
            self._tool_node = AgentToolNode(
                tools,
                agent_name=self.name,
                parallel_tool_execution=self.parallel_tool_execution,
                max_parallel_tools=self.max_parallel_tools,
                max_tool_threads=self.max_tool_threads,
                tool_limiter=self.tool_limiter,
                tool_execution_timeout=self.tool_execution_timeout,
                wrap_sync_tools_as_async=self.wrap_sync_tools_as_async,
                tool_interceptors=tool_chain,
                tool_resolver=resolver,
                tool_context=self.tool_context,
                exception_processor=self.exception_processor or DefaultToolExceptionProcessor(),
                enable_acting_log=self.enable_logging,
            )
        self._log = get_logger(agent=self.name)
        self._tracer = tracer_for(self.tracer_provider)

    @property
    def tool_node(self) -> AgentToolNode | None:
        """The acting node (``None`` when the agent has no tools)."""
        return self._tool_node

    @property
    def abandoned_threads(self) -> int:
        """Worker threads of timed-out or cancelled tool calls that still run (all runs);
        they count against the thread budget (``max_tool_threads``) until they end."""
        return 0 if self._tool_node is None else self._tool_node.abandoned_threads

    @property
    def llm_node(self) -> AgentLlmNode:
        """The reasoning node."""
        return self._llm

    @property
    def hooks_in_order(self) -> list[Hook]:
        """The hooks, in the order they run."""
        return self._hooks

    @property
    def key_strategies(self) -> dict[str, KeyStrategy]:
        """The state keys with a strategy of their own (from hooks and ``output_key``)."""
        return dict(self._strategies)

    def as_tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        input: type | None = None,
        timeout: float | None = None,
    ) -> Tool:
        """This agent as a tool of another agent (a subagent): each call runs it, inside
        the call, and answers with its final output (its text, or its structured output
        as JSON). See ``docs/subagents.md``.

        ``name`` defaults to the agent's name, ``description`` to a sentence naming it.
        ``input`` is what the tool takes: by default one ``input`` string, the task the
        calling model writes; or a class with fields (an attrs class, a dataclass, a
        ``TypedDict``, a pydantic model), whose fields the calling model fills in and
        whose JSON is the child's first message. ``timeout`` (seconds) bounds each run,
        instead of the calling agent's ``tool_execution_timeout``.

        The child run lives in the call's cancel scope (``cancel_tool``, the parent's
        cancellation and the timeout stop it and its tools); its events reach the
        parent's stream as ``SubagentEvent``; its usage adds to the parent's; with a
        saver it checkpoints under a thread derived from the parent's, so resuming the
        parent resumes it; its pauses for approval pause the parent.
        """
        return subagent_tool(self, name=name, description=description, input=input, timeout=timeout)

    async def invoke(
        self,
        input: AgentInput | Resume | None,
        config: RunnableConfig | Mapping[str, Any] | None = None,
    ) -> AgentResult:
        """Run the agent until it answers (or pauses for approval): ``start`` + ``result``.

        ``input`` is a string, a message, a list of messages or a state dict; ``None``
        resumes the unfinished run of ``config.thread_id``; ``Resume(...)`` answers a
        pause for approval; anything else is a ``TypeError`` naming ``input``, raised
        before the thread is claimed, a model called or a checkpoint written (as by
        ``start``, ``stream`` and ``invoke_sync``). ``config`` is a ``RunnableConfig`` or a
        mapping of its fields (``{"thread_id": "t1"}``). Errors are raised as themselves.
        """
        async with self.start(input, config) as run:
            run.no_reader()  # the handle stays here: the run builds no events
            return await run.result()

    def invoke_sync(
        self,
        input: AgentInput | Resume | None,
        config: RunnableConfig | Mapping[str, Any] | None = None,
        *,
        backend: str = "asyncio",
        backend_options: dict[str, Any] | None = None,
    ) -> AgentResult:
        """``invoke`` from synchronous code (scripts, notebooks' plain cells, tests):
        runs it in a new event loop of ``backend`` (``"asyncio"`` or ``"trio"``) through
        ``anyio.run`` and returns its ``AgentResult``; errors are raised as themselves.

        ``RuntimeError`` when called where an event loop already runs (an async function,
        a Jupyter cell): ``await agent.invoke(...)`` there. A sync tool's worker thread has
        no running loop, so it may call this.
        """
        try:
            running = sniffio.current_async_library()
        except sniffio.AsyncLibraryNotFoundError:
            running = None
        if running is not None:
            raise RuntimeError(
                f"invoke_sync() cannot run inside a running event loop ({running}): "
                "use `await agent.invoke(...)` there"
            )
        return anyio.run(
            functools.partial(self.invoke, input, config),
            backend=backend,
            backend_options=backend_options,
        )

    @asynccontextmanager
    async def start(
        self,
        input: AgentInput | Resume | None,
        config: RunnableConfig | Mapping[str, Any] | None = None,
    ) -> AsyncIterator[AgentRun]:
        """Start a run in a task group this context owns, and give its handle.

        Leaving the block before the run ended cancels the run; nothing it started keeps
        running after the block. A run paused for approval is resumed in the block with
        ``await run.resume(Resume(...))``: the next leg runs in the same task group.
        With a saver and a ``thread_id``, the run owns the thread
        until it ends: entering raises ``ThreadBusy`` when another live run owns it (at
        once, or after ``config.wait_for_thread`` seconds).
        """
        check_input(input)
        given = as_config(config)
        if given.thread_id is not None and self.saver is None:
            self._without_saver(given.thread_id)

        def own_copy() -> RunnableConfig:
            # Each run (and each leg after a pause) works in its own copy of the context:
            # run-scoped entries (counters, dynamic tools, listeners) never leak into the
            # caller's dict or the next run.
            return attrs.evolve(given, context=dict(given.context))

        config = own_copy()
        run_id = uuid.uuid4().hex[:12]
        run = AgentRun(run_id, config.thread_id, self.max_buffered_events)
        failure: BaseException | None = None
        tracer = self._tracer or ambient()
        drive = self._drive if tracer is None else functools.partial(self._traced, tracer)
        # The buffer's ends nobody will read are closed once the group has ended.
        async with released(run), anyio.create_task_group() as tg:

            async def restart(decisions: Resume) -> None:
                paused = run._result
                assert paused is not None and paused.interrupt is not None
                leg = own_copy()
                # Checked first, as Temporal's resume validator does: a bad decision is a
                # ValueError here and the run stays paused.
                apply_decisions(self, paused.state, paused.interrupt.calls, decisions, leg)
                run.next_leg()
                await tg.start(drive, run, decisions, leg)

            try:
                # The run owns its thread from here (ThreadBusy if another live run does).
                await tg.start(drive, run, input, config)
            except Exception as exc:
                failure = exc
            else:
                run._restart = restart
                try:
                    yield run
                except (anyio.get_cancelled_exc_class(), GeneratorExit):
                    raise
                except BaseException as exc:
                    # Raised after the group, so the caller gets it as itself, not in a group.
                    failure = exc
                finally:
                    run._restart = None
                    if not run.done:
                        run.cancel_nowait()
        if failure is None:
            # KeyboardInterrupt, SystemExit … never stay inside a run nobody asked about.
            failure = run.unraised_fatal_error
        if failure is not None:
            raise failure

    @asynccontextmanager
    async def stream(
        self,
        input: AgentInput | Resume | None,
        config: RunnableConfig | Mapping[str, Any] | None = None,
    ) -> AsyncIterator[EventStream]:
        """The live events of a new run: ``async with agent.stream(x) as events``.

        A context manager, not an async generator: yielding from inside the run's task
        group would break cancellation. Leaving the block early cancels the run.
        """
        async with self.start(input, config) as run, run.events() as events:
            yield events

    async def cancel_thread(self, thread_id: str) -> bool:
        """Ask the live run of ``thread_id`` to stop, wherever it runs (this process, or
        another one sharing the saver); whether one owns the thread.

        The owning run sees the request within its saver's polling delay and ends as a
        cancelled run (``RunCancelled``), its finished tool calls kept in the checkpoint.
        """
        if self.saver is None:
            raise ValueError("cancel_thread needs a saver: runs are found through it")
        return await request_cancel(self.saver, thread_id)

    def _without_saver(self, thread_id: str) -> None:
        """Say, once per agent, that a ``thread_id`` is ignored: without a saver nothing is
        kept between runs, and each run sees only its own messages."""
        if self._warned_without_saver:
            return
        self._warned_without_saver = True
        self._log.warning(
            "thread_id_without_saver",
            thread_id=thread_id,
            reason="the agent has no saver: runs keep no checkpoints, and a later run of "
            "the thread does not see this one (give the agent saver=MemorySaver() or "
            "SqliteSaver(path))",
        )

    async def aclose(self) -> None:
        """Close what the agent made: the model client it built from a provider string
        (``ReactAgent("a", "openai:gpt-4.1")``), with its connections. A model object
        given to the agent stays its maker's to close (``await model.aclose()``, or
        ``async with model``). Idempotent; ``async with agent:`` calls it when the block
        ends. A run started after it fails: the client is closed."""
        close = getattr(self.model, "aclose", None) if self._owns_model else None
        if self._closed or close is None:
            await anyio.lowlevel.checkpoint()
            return
        self._closed = True
        with anyio.CancelScope(shield=True):  # a cancelled caller still closes the client
            await close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _owning(self, run: AgentRun, config: RunnableConfig) -> AbstractAsyncContextManager[object]:
        """The run's claim on its thread (none without a saver or a thread id)."""
        if self.saver is None or config.thread_id is None:
            return nullcontext()

        def stop() -> None:  # asked from elsewhere (cancel_thread): the run ends as cancelled
            run.cancel_nowait()

        return claim_thread(
            self.saver,
            config.thread_id,
            owner=run.run_id,
            wait=config.wait_for_thread,
            on_cancel=stop,
        )

    async def _drive(
        self,
        run: AgentRun,
        value: AgentInput | Resume | None,
        config: RunnableConfig,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Own the thread (failing ``start`` if it is busy), run the loop, release the
        thread, then end the handle: a caller who saw the end may start the next run.

        A run stopped because another owner took its thread over ends with ``LeaseLost``
        (not as cancelled: nobody asked it to stop, and it must not be resumed by its
        caller beside the new owner)."""
        async with self._owning(run, config) as claim:
            task_status.started()
            event, result, error = await self._execute(run, value, config)
            lost = claim.lost if isinstance(claim, Lease) else None
            if lost is not None and isinstance(error, RunCancelled):
                event, error = RunFailed(lost), lost
        await run.finish(event, result, error)

    async def _execute(
        self, run: AgentRun, value: AgentInput | Resume | None, config: RunnableConfig
    ) -> tuple[Event, AgentResult | None, BaseException | None]:
        """Run the loop in the run's scope; say how it ended, never raise into the group."""
        log = self._log.bind(run_id=run.run_id) if self.enable_logging else None
        result: AgentResult | None = None
        try:
            with run.scope:
                start = await starting_point(self, value, config)
                result = await Loop(self, run, config).execute(start)
        except anyio.get_cancelled_exc_class():
            # Cancelled from outside (the caller's scope): end the handle, then propagate.
            error = _cancelled(run, "the run was cancelled from outside")
            run.finish_nowait(RunFailed(error), error)
            raise
        except BaseException as exc:
            # An error, or KeyboardInterrupt, SystemExit … from a tool, hook or model: the
            # run failed, and ``result()`` (and ``start``) raise it as itself. Never raised
            # into the task group: it would come out wrapped in a group (and on asyncio a
            # KeyboardInterrupt escaping a task stops the event loop).
            if log is not None:
                log.warning("agent_run_failed", error=type(exc).__name__)
            return RunFailed(exc), None, exc
        if result is None:
            error = _cancelled(run, "the run was cancelled")
            return RunFailed(error), None, error
        if result.status == "interrupted":
            return RunInterrupted(result.interrupt.calls, result), result, None
        if log is not None:
            log.info("agent_run_finished", model_calls=result.model_calls)
        return RunFinished(result), result, None

    async def _traced(
        self,
        tracer: Tracer,
        run: AgentRun,
        value: AgentInput | Resume | None,
        config: RunnableConfig,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """``_drive`` inside the run's span, with ``tracer`` current for the run's steps."""
        token = current.set(tracer)
        try:
            with tracer.run(self, run) as trace:
                try:
                    await self._drive(run, value, config, task_status=task_status)
                finally:
                    trace.ended(run, run._result, run._error)
        finally:
            current.reset(token)

    def result(
        self, state: OverAllState, model_calls: int, interrupt: Interrupt | None = None
    ) -> AgentResult:
        """The ``AgentResult`` of a run that ended (or paused) in ``state``."""
        if interrupt is not None:
            return AgentResult(state, "", None, model_calls, "interrupted", interrupt)
        text = final_text(state)
        last = last_answer(state)
        finish = last.finish_reason if last is not None else None
        output = None
        structured = self.output_type is not None or self.output_schema is not None
        if structured and not returned_direct(state) and finish == LENGTH:
            assert last is not None
            raise ModelTruncatedError(
                "the final answer was cut at the model's token limit (finish_reason "
                "'length'), so it is not parsed as the structured output (raise max_tokens)",
                answer=last,
            )
        if self.output_type is not None and not returned_direct(state):
            output = parse_output(text, self.output_type)
        return AgentResult(state, text, output, model_calls, finish_reason=finish)


def last_answer(state: OverAllState) -> AssistantMessage | None:
    """The last assistant message of the conversation, if any."""
    for message in reversed(state.get(MESSAGES) or ()):
        if isinstance(message, AssistantMessage):
            return message
    return None


def _cancelled(run: AgentRun, message: str) -> RunCancelled:
    state = run.state
    messages = list(state.get(MESSAGES) or ()) if state is not None else []
    return RunCancelled(message, messages=messages, state=state)

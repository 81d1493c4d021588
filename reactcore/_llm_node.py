"""``AgentLlmNode``: the reasoning half of a ReAct agent.

It builds a ``ModelRequest`` from the state (system prompt first, the rendered instruction
before the conversation, the output schema on the last user message, the tools the model
may see), passes it through the model interceptors, calls the model — streaming by
default — and answers with the assistant message as a partial state update.
"""

from __future__ import annotations

import contextvars
import itertools
import json
import string
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
import attrs

from . import _validate as valid
from ._config import RunnableConfig
from ._events import ModelCallFinished, ModelCallStarted
from ._exceptions import CassetteError
from ._interceptors import ModelHandler, ModelInterceptor, chain_model_interceptors
from ._logging import get_logger
from ._messages import AssistantMessage, Message, SystemMessage, ToolCall, UserMessage
from ._result import TOKEN_USAGE
from ._run_context import DYNAMIC_TOOLS, dynamic_tools
from ._schema import json_schema
from ._state import MESSAGES, OverAllState
from ._tokens import record_call
from ._tools import TOOLS, Tool, ToolNameClash, index_tools, name_clash
from ._tracing import ModelTrace, Tracer, current, model_trace
from .models._infer import as_chat_model
from .models.base import (
    ChatModel,
    ChatOptions,
    ChunkAssembler,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ToolSpec,
    Usage,
)

MODEL_ITERATION = "_MODEL_ITERATION_"
INSTRUCTION = "_INSTRUCTION_"
STREAM = "_stream_"
CHUNK_LISTENER = "_chunk_listener_"
RUN_ID = "run_id"
MODEL_NODE = "_model_node_"
"""The key, in a run's context, of the agent's ``AgentLlmNode`` (the loop sets it)."""
EMIT = "_emit_"
"""The key, in a run's context, of the function sending the run's events (the loop sets it)."""

ChunkListener = Callable[[ModelChunk], Awaitable[None]]


@attrs.define
class _Sent:
    """The last request the innermost handler sent during one node call."""

    request: ModelRequest | None = None


_SENT: contextvars.ContextVar[_Sent | None] = contextvars.ContextVar("_sent", default=None)


def unique_call_ids(calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
    """``calls`` with every id non-empty and unique within the message, deterministically.

    The first call with an id keeps it; an empty id becomes ``call_<index>`` and a
    repeated one ``<id>_<n>`` (the smallest ``n`` from 2 not taken by another id of the
    message). Approvals, cancellation and the pairing of responses are keyed by id, so
    two calls under one id could be answered or approved as one.
    """
    taken = {c.id for c in calls if c.id}
    if len(taken) == len(calls):
        return tuple(calls)  # the usual case: nothing to re-key
    used: set[str] = set()
    out: list[ToolCall] = []
    for index, c in enumerate(calls):
        if not c.id or c.id in used:
            base = c.id or f"call_{index}"
            suffixed = (f"{base}_{n}" for n in itertools.count(2))
            candidates = itertools.chain([base], suffixed) if not c.id else suffixed
            c = attrs.evolve(c, id=next(i for i in candidates if i not in used | taken))
        used.add(c.id)
        out.append(c)
    return tuple(out)


def visible_names(request: ModelRequest) -> tuple[str, ...]:
    """The names of the tools ``request`` shows the model (known or dynamic), in order."""
    return tuple(dict.fromkeys(s.name for s in request.visible_tool_specs()))


class _StateValues(Mapping[str, Any]):
    """The state values an instruction may name: lists and ``messages`` left out."""

    def __init__(self, state: Mapping[str, Any]) -> None:
        self._state = state

    def _usable(self, key: str) -> bool:
        return (
            key != MESSAGES
            and key in self._state
            and not isinstance(self._state[key], list | tuple)
        )

    def __getitem__(self, key: str) -> Any:
        if not self._usable(key):
            raise KeyError(key)
        return self._state[key]

    def __iter__(self) -> Any:
        return (k for k in self._state if self._usable(k))

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _Template(string.Formatter):
    """``{name}`` placeholders filled from state values; ``{{``/``}}`` escape braces."""

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        if not field_name.isidentifier():
            raise ValueError(
                f"instruction placeholders must be plain names of state keys, got {{{field_name}}}"
            )
        return super().get_field(field_name, args, kwargs)


def render_instruction(template: str, state: Mapping[str, Any]) -> str:
    """The instruction with its placeholders filled; a missing value → ``ValueError``."""
    try:
        return _Template().vformat(template, (), _StateValues(state))
    except KeyError as exc:
        raise ValueError(
            f"the instruction needs {{{exc.args[0]}}} but the state has no usable value "
            f"{exc.args[0]!r} (lists and 'messages' cannot be used)"
        ) from None


def _schema_text(output_schema: str | None, output_type: type | None) -> str | None:
    if output_schema is not None:
        return output_schema
    if output_type is not None:
        return json.dumps(json_schema(output_type))
    return None


def with_output_schema(messages: Sequence[Message], schema: str) -> list[Message]:
    """``messages`` with the schema instruction on the last user message, once."""
    out = list(messages)
    note = f"\n\nAnswer with JSON only, following this JSON Schema:\n{schema}"
    for i in range(len(out) - 1, -1, -1):
        message = out[i]
        if isinstance(message, UserMessage):
            if schema not in message.text:
                out[i] = attrs.evolve(message, text=message.text + note)
            break
    return out


def _conversation(state: Mapping[str, Any]) -> list[Message]:
    messages = state.get(MESSAGES)
    if messages:
        return list(messages)
    given = state.get("input")
    if given is None:
        raise ValueError("AgentLlmNode needs state 'messages' or 'input'; the state has neither")
    return [given if isinstance(given, UserMessage) else UserMessage(str(given))]


async def call_model(model: ChatModel, request: ModelRequest) -> ModelResponse:
    """One answer from ``model``: streamed (the default) or whole, as the run asks.

    Streamed chunks go to the run's chunk listener, if any, as they arrive.
    """
    if not request.context.get(STREAM, True):
        return await model.call(request)
    listener: ChunkListener | None = request.context.get(CHUNK_LISTENER)
    assembler = ChunkAssembler()
    async with model.stream(request) as chunks:
        async for chunk in chunks:
            chunk = assembler.add(chunk)  # tool-call fragments at their call's index
            if listener is not None:
                await listener(chunk)
    return assembler.result()


_TEXT = valid.text(optional=True)
_MODEL_INTERCEPTORS = valid.each(
    valid.has_methods("wrap_model_call", what="a model interceptor (with wrap_model_call)")
)


@attrs.define(eq=False)
class AgentLlmNode:
    """Calls the model on the conversation; ``await node(state, config)`` → partial update.

    The update holds the assistant message under ``messages`` (and under ``output_key``
    when set), the summed token usage under ``_TOKEN_USAGE_``, and the rendered
    instruction under ``_INSTRUCTION_`` the first time.
    """

    model: ChatModel = attrs.field(converter=as_chat_model, validator=valid.chat_model())
    agent_name: str = attrs.field(default="agent", kw_only=True, validator=valid.text())
    system_prompt: str | None = attrs.field(default=None, kw_only=True, validator=_TEXT)
    instruction: str | None = attrs.field(default=None, kw_only=True, validator=_TEXT)
    output_schema: str | None = attrs.field(default=None, kw_only=True, validator=_TEXT)
    output_type: type | None = attrs.field(
        default=None, kw_only=True, validator=valid.type_form(optional=True)
    )
    output_key: str | None = attrs.field(default=None, kw_only=True, validator=_TEXT)
    response_format: Mapping[str, Any] | None = attrs.field(
        default=None, kw_only=True, validator=valid.mapping(optional=True)
    )
    parallel_tool_calls: bool | None = attrs.field(
        default=None, kw_only=True, validator=valid.boolean(optional=True)
    )
    tools: Sequence[Tool] = attrs.field(default=(), kw_only=True, validator=TOOLS)
    model_interceptors: Sequence[ModelInterceptor] = attrs.field(
        default=(), kw_only=True, validator=_MODEL_INTERCEPTORS
    )
    enable_reasoning_log: bool = attrs.field(default=False, kw_only=True, validator=valid.boolean())
    model_error_as_message: bool = attrs.field(
        default=False, kw_only=True, validator=valid.boolean()
    )

    _schema: str | None = attrs.field(init=False)
    _own: dict[str, Tool] = attrs.field(init=False)
    _specs: tuple[ToolSpec, ...] = attrs.field(init=False)
    _handler: ModelHandler = attrs.field(init=False)
    _log: Any = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._schema = _schema_text(self.output_schema, self.output_type)
        self._own = index_tools([("the node's tools", self.tools)])
        self._specs = tuple(ToolSpec.of(t) for t in self._own.values())
        self._handler = chain_model_interceptors(list(self.model_interceptors), self._invoke)
        self._log = get_logger(agent=self.agent_name)

    async def __call__(
        self, state: Mapping[str, Any], config: RunnableConfig | None = None
    ) -> dict[str, Any]:
        """The partial update with the model's answer."""
        state = state if isinstance(state, OverAllState) else OverAllState(state)
        config = config if config is not None else RunnableConfig()
        iteration = config.context.get(MODEL_ITERATION, -1) + 1
        config.context[MODEL_ITERATION] = iteration
        config.context[STREAM] = bool(config.metadata.get(STREAM, True))
        update: dict[str, Any] = {}
        request = self.build_request(state, config, update)
        start = anyio.current_time()
        log = (
            self._log.bind(run_id=config.context.get(RUN_ID))
            if RUN_ID in config.context
            else self._log
        )
        if self.enable_reasoning_log:
            log.info("model_call_started", iteration=iteration, messages=len(request.messages))
        tracer = current.get()
        sent = _Sent()
        # Restored by value, not with a token: a run left unfinished in a Temporal worker's
        # cache is closed by the garbage collector, in another context, where a token of
        # this one is refused (ValueError) and would escape from the closing coroutine.
        previous = _SENT.get()
        _SENT.set(sent)
        try:
            if tracer is None:
                response = await self._handler(request)
            else:
                response = await self._traced(tracer, request)
        except Exception as exc:
            if not self.model_error_as_message or isinstance(exc, ToolNameClash | CassetteError):
                raise
            log.warning("model_call_failed", iteration=iteration, error=type(exc).__name__)
            response = ModelResponse(AssistantMessage(f"Exception: {exc}"))
        finally:
            _SENT.set(previous)
        record_call(config.context, sent.request or request, response.usage)
        response = attrs.evolve(response, message=self._entering(response.message, request, sent))
        if self.enable_reasoning_log:
            log.info(
                "model_call_finished",
                iteration=iteration,
                duration_ms=round((anyio.current_time() - start) * 1000, 3),
                usage=None if response.usage is None else attrs.asdict(response.usage),
                tool_calls=len(response.message.tool_calls),
            )
        return self._update(state, response, update)

    def build_request(
        self, state: OverAllState, config: RunnableConfig, update: dict[str, Any]
    ) -> ModelRequest:
        """The request for this turn; records a first-time rendered instruction in ``update``."""
        messages = _conversation(state)
        instruction = state.get(INSTRUCTION)
        if instruction is None and self.instruction is not None:
            instruction = update[INSTRUCTION] = render_instruction(self.instruction, state)
        if instruction:
            messages.insert(0, UserMessage(instruction))
        if self._schema is not None:
            messages = with_output_schema(messages, self._schema)
        system = SystemMessage(self.system_prompt) if self.system_prompt else None
        return ModelRequest(
            messages,
            system,
            tools=[s.name for s in self._specs],
            tool_specs=self._specs,
            options=ChatOptions(
                response_format=self.response_format,
                parallel_tool_calls=self.parallel_tool_calls,
            ),
            context=config.context,
        )

    def _entering(
        self, message: AssistantMessage, built: ModelRequest, sent: _Sent
    ) -> AssistantMessage:
        """The answer as it enters the state: with the tools the model was shown.

        The innermost handler tags the answer it got with the request it sent; an answer
        an interceptor rebuilt gets the last request sent in this call, and one no model
        produced (an interceptor answered itself) the request as the node built it.
        """
        if not message.tool_calls:
            return message
        if message.visible_tools is None:
            request = sent.request if sent.request is not None else built
            message = attrs.evolve(message, visible_tools=visible_names(request))
        calls = unique_call_ids(message.tool_calls)
        if calls != message.tool_calls:
            self._log.warning(
                "tool_call_ids_rekeyed",
                ids=[
                    [a.id, b.id]
                    for a, b in zip(message.tool_calls, calls, strict=True)
                    if a.id != b.id
                ],
            )
            message = attrs.evolve(message, tool_calls=calls)
        return message

    def _update(
        self, state: OverAllState, response: ModelResponse, update: dict[str, Any]
    ) -> dict[str, Any]:
        update[MESSAGES] = [response.message]
        if self.output_key is not None:
            update[self.output_key] = response.message
        used = state.get(TOKEN_USAGE) or Usage()
        update[TOKEN_USAGE] = used + response.usage if response.usage is not None else used
        return update

    async def intercepted(self, request: ModelRequest) -> ModelResponse:
        """``request`` answered through the node's model interceptors, without the span,
        events and bookkeeping of a turn (``side_call`` adds what a side call needs)."""
        return await self._handler(request)

    async def _traced(self, tracer: Tracer, request: ModelRequest) -> ModelResponse:
        """The interceptor chain inside the model call's span."""
        with tracer.model_call(self.agent_name, self.model, request) as trace:
            token = model_trace.set(trace)
            try:
                response = await self._handler(request)
            finally:
                model_trace.reset(token)
            trace.answered(response)
        return response

    async def _invoke(self, request: ModelRequest) -> ModelResponse:
        """The innermost handler: hand dynamic tools to the tool node, then call the model."""
        if request.dynamic_tools:
            added = index_tools([("a model interceptor's dynamic tools", request.dynamic_tools)])
            for name, t in added.items():
                own = self._own.get(name)
                if own is not None and own is not t:
                    where = "a model interceptor's dynamic tools"
                    raise name_clash(name, (own, "the agent's tools"), (t, where))
            # A dynamic tool of an earlier request of the run may be replaced by a new one.
            request.context[DYNAMIC_TOOLS] = {**dynamic_tools(request.context), **added}
        model = request.chat_model or self.model
        trace = model_trace.get()
        if trace is not None:
            trace.sending(model, request)  # the request actually sent, once per attempt
        sent = _SENT.get()
        if sent is not None:
            sent.request = request
        response = await call_model(model, request)
        if not response.message.tool_calls:
            return response
        # Tagged here, with the request this answer really came from (whatever retries or
        # fallbacks happened around it); the tool node runs only these tools.
        message = attrs.evolve(response.message, visible_tools=visible_names(request))
        return attrs.evolve(response, message=message)


def next_request(state: Mapping[str, Any], config: RunnableConfig) -> ModelRequest:
    """The request the agent's model node would build from ``state`` now, before the
    model interceptors: the system prompt, the instruction, the conversation and the
    agent's tools. What a hook counts: ``count_tokens(next_request(state, config))``.

    Outside a run of an agent (a hook called on its own), the state's messages alone.
    """
    node: AgentLlmNode | None = config.context.get(MODEL_NODE)
    if node is None:
        return ModelRequest(state.get(MESSAGES) or (), context=config.context)
    whole = state if isinstance(state, OverAllState) else OverAllState(state)
    return node.build_request(whole, config, {})


async def side_call(
    request: ModelRequest,
    config: RunnableConfig,
    model: ChatModel | None = None,
    *,
    intercepted: bool = False,
) -> ModelResponse:
    """A model call made on the run's behalf that is not a turn of the loop (a summary):
    ``request`` answered whole by ``model`` (default: the agent's), in a span of its own,
    between a ``ModelCallStarted`` and a ``ModelCallFinished`` carrying
    ``request.purpose`` and the iteration of the turn it comes before. It is not counted
    in ``model_calls``. Raises what the model raises (no ``ModelCallFinished`` then);
    ``ValueError`` with no model to ask.

    ``intercepted``: the request goes through the agent's model interceptors, as the
    loop's own turns do (a call an MCP server asks for); else through none. Made from a
    tool call, the span nests under the call's.
    """
    context = config.context
    node: AgentLlmNode | None = context.get(MODEL_NODE)
    chosen = model if model is not None else node.model if node is not None else None
    if chosen is None:
        raise ValueError("no model to ask: pass one (outside a run there is no agent's model)")
    emit: Callable[[Any], Awaitable[None]] | None = context.get(EMIT)
    iteration = context.get(MODEL_ITERATION, -1) + 1
    if emit is not None:
        await emit(ModelCallStarted(iteration, request.purpose))
    through = node is not None and intercepted

    async def ask(trace: ModelTrace | None) -> ModelResponse:
        if through:
            assert node is not None
            # Whole, never streamed: its chunks are not the turn's the caller streams.
            whole = {**context, STREAM: False}
            return await node.intercepted(attrs.evolve(request, chat_model=chosen, context=whole))
        if trace is not None:
            trace.sending(chosen, request)
        return await chosen.call(request)

    tracer = current.get()
    if tracer is None:
        response = await ask(None)
    else:
        agent = node.agent_name if node is not None else "agent"
        with tracer.model_call(agent, chosen, request) as trace:
            token = model_trace.set(trace)
            try:
                response = await ask(trace)
            finally:
                model_trace.reset(token)
            trace.answered(response)
    if emit is not None:
        await emit(ModelCallFinished(response.message, response.usage, request.purpose))
    return response

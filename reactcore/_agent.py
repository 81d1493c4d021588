"""``ReactAgent``: the loop that alternates reasoning (``AgentLlmNode``) and acting
(``AgentToolNode``), with hooks around both.

::

    before_agent → [before_model → model → after_model → tools?] … → after_agent

The loop is plain Python, not a graph engine: small, and easy to step through.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
import cattrs
import structlog

from ._config import RunnableConfig
from ._exception_processor import DefaultToolExceptionProcessor, ToolExceptionProcessor
from ._exceptions import MaxIterationsExceeded, OutputParseError
from ._hooks import Hook, JumpTarget, Position, order_hooks, run_hooks
from ._interceptors import ModelInterceptor, ToolInterceptor
from ._llm_node import MODEL_ITERATION, AgentLlmNode
from ._messages import AssistantMessage, Message, ToolResponseMessage, UserMessage
from ._models.base import ChatModel
from ._result import AgentResult
from ._serde import converter, describe_error
from ._state import MESSAGES, KeyStrategy, OverAllState
from ._tool_node import DYNAMIC_TOOLS, RETURN_DIRECT, AgentToolNode, ToolResolver, pending_calls
from ._tools import Tool

AgentInput = str | Message | Sequence[Message] | Mapping[str, Any]
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


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
    """Hook tools, then interceptor tools, then the agent's; the first of a name wins."""
    found: dict[str, Tool] = {}
    sources = [getattr(h, "tools", ()) for h in hooks]
    sources += [getattr(i, "tools", ()) for i in interceptors]
    sources.append(tools)
    for source in sources:
        for value in source:
            t = value if isinstance(value, Tool) else Tool.from_function(value)
            found.setdefault(t.name, t)
    return list(found.values())


def initial_state(value: AgentInput, strategies: Mapping[str, KeyStrategy]) -> OverAllState:
    """The state a run starts from: a string or message(s) become ``messages``."""
    if isinstance(value, str):
        return OverAllState({MESSAGES: [UserMessage(value)]}, strategies)
    if isinstance(value, Mapping):
        return OverAllState(value, strategies)
    if isinstance(value, Sequence):
        return OverAllState({MESSAGES: list(value)}, strategies)
    return OverAllState({MESSAGES: [value]}, strategies)


def final_text(state: Mapping[str, Any]) -> str:
    """The run's answer: the last assistant text, or the return_direct tool results."""
    messages = state.get(MESSAGES) or ()
    last = messages[-1] if messages else None
    if isinstance(last, ToolResponseMessage):
        texts = [r.response_data for r in last.responses]
        return texts[0] if len(texts) == 1 else json.dumps(texts, ensure_ascii=False)
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            return message.text
    return ""


def parse_output(text: str, output_type: type) -> Any:
    """``text`` (JSON, optionally in a code fence) structured as ``output_type``."""
    fenced = _FENCE.match(text)
    raw = fenced.group(1) if fenced else text
    try:
        return converter.structure(json.loads(raw), output_type)
    except json.JSONDecodeError as exc:
        raise OutputParseError(
            f"the final answer is not JSON for {output_type.__name__}: {exc.msg}", raw=text
        ) from exc
    except (cattrs.BaseValidationError, TypeError, ValueError) as exc:
        raise OutputParseError(
            f"the final answer does not fit {output_type.__name__}: "
            f"{describe_error(exc, 'output')}",
            raw=text,
        ) from exc


def _pending_calls(state: OverAllState) -> bool:
    """Whether the last assistant message has calls still unanswered."""
    try:
        assistant, partial = pending_calls(state)
    except ValueError:
        return False
    answered = {r.id for r in partial.responses} if partial else set()
    return any(c.id not in answered for c in assistant.tool_calls)


def _returned_direct(state: OverAllState) -> bool:
    messages = state.get(MESSAGES) or ()
    last = messages[-1] if messages else None
    return isinstance(last, ToolResponseMessage) and (
        last.metadata.get("finish_reason") == RETURN_DIRECT
    )


def _non_empty(instance: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("a ReactAgent needs a non-empty name")


@attrs.define(eq=False)
class ReactAgent:
    """A ReAct agent: ``await agent.invoke("question")`` → ``AgentResult``.

    See the README for every option; they follow the seed's builder, with the defaults
    it has (sequential tools, 5 at most in parallel, 300 s per tool call).
    """

    name: str = attrs.field(validator=_non_empty)
    model: ChatModel
    tools: Sequence[Tool | Callable[..., Any]] = attrs.field(default=(), kw_only=True)
    system_prompt: str | None = attrs.field(default=None, kw_only=True)
    instruction: str | None = attrs.field(default=None, kw_only=True)
    hooks: Sequence[Hook] = attrs.field(default=(), kw_only=True)
    interceptors: Sequence[Any] = attrs.field(default=(), kw_only=True)
    parallel_tool_execution: bool = attrs.field(default=False, kw_only=True)
    max_parallel_tools: int = attrs.field(default=5, kw_only=True)
    tool_execution_timeout: float = attrs.field(default=300.0, kw_only=True)
    wrap_sync_tools_as_async: bool = attrs.field(default=False, kw_only=True)
    output_key: str | None = attrs.field(default=None, kw_only=True)
    output_schema: str | None = attrs.field(default=None, kw_only=True)
    output_type: type | None = attrs.field(default=None, kw_only=True)
    max_iterations: int | None = attrs.field(default=25, kw_only=True)
    exception_processor: ToolExceptionProcessor | None = attrs.field(default=None, kw_only=True)
    tool_context: Mapping[str, Any] = attrs.field(factory=dict, kw_only=True)
    tool_resolver: ToolResolver | None = attrs.field(default=None, kw_only=True)
    enable_logging: bool = attrs.field(default=False, kw_only=True)
    model_error_as_message: bool = attrs.field(default=False, kw_only=True)

    _hooks: list[Hook] = attrs.field(init=False)
    _strategies: dict[str, KeyStrategy] = attrs.field(init=False)
    _llm: AgentLlmNode = attrs.field(init=False)
    _tool_node: AgentToolNode | None = attrs.field(init=False)
    _log: Any = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._hooks = order_hooks(self.hooks)
        hook_interceptors = [i for h in self._hooks for i in getattr(h, "interceptors", ())]
        interceptors = [*hook_interceptors, *self.interceptors]
        model_chain, tool_chain = _split_interceptors(interceptors)
        tools = _gather_tools(self._hooks, interceptors, self.tools)
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
            output_type=self.output_type,
            output_key=self.output_key,
            tools=tools,
            model_interceptors=model_chain,
            enable_reasoning_log=self.enable_logging,
            model_error_as_message=self.model_error_as_message,
        )
        self._tool_node = None
        if tools:
            self._tool_node = AgentToolNode(
                tools,
                agent_name=self.name,
                parallel_tool_execution=self.parallel_tool_execution,
                max_parallel_tools=self.max_parallel_tools,
                tool_execution_timeout=self.tool_execution_timeout,
                wrap_sync_tools_as_async=self.wrap_sync_tools_as_async,
                tool_interceptors=tool_chain,
                tool_resolver=self.tool_resolver,
                tool_context=self.tool_context,
                exception_processor=self.exception_processor or DefaultToolExceptionProcessor(),
                enable_acting_log=self.enable_logging,
            )
        self._log = structlog.get_logger("reactcore", agent=self.name)

    @property
    def tool_node(self) -> AgentToolNode | None:
        """The acting node (``None`` when the agent has no tools)."""
        return self._tool_node

    @property
    def llm_node(self) -> AgentLlmNode:
        """The reasoning node."""
        return self._llm

    async def invoke(self, input: AgentInput, config: RunnableConfig | None = None) -> AgentResult:
        """Run the agent on ``input`` until it answers; see ``AgentResult``."""
        config = config if config is not None else RunnableConfig()
        state = initial_state(input, self._strategies)
        return await self.run_loop(state, config)

    async def run_loop(self, state: OverAllState, config: RunnableConfig) -> AgentResult:
        """The loop itself, from ``state``: hooks, model, tools, until the end."""
        config.context.pop(MODEL_ITERATION, None)
        config.context.pop(DYNAMIC_TOOLS, None)
        run_id = config.context.setdefault("run_id", uuid.uuid4().hex[:12])
        log = self._log.bind(run_id=run_id) if self.enable_logging else None
        state, step = await self._hooks_at("before_agent", state, config)
        model_calls = 0
        step = step or "model"
        while step != "end":
            if step == "tools":
                state, step = await self._act(state, config)
                continue
            if self.max_iterations is not None and model_calls >= self.max_iterations:
                raise MaxIterationsExceeded(
                    f"agent {self.name!r} made {model_calls} model calls without a final answer "
                    f"(max_iterations={self.max_iterations})",
                    messages=state.get(MESSAGES) or (),
                )
            state, jump = await self._hooks_at("before_model", state, config)
            if jump not in (None, "model"):
                step = jump
                continue
            state = state.merge(await self._llm(state, config))
            model_calls += 1
            state, jump = await self._hooks_at("after_model", state, config)
            step = jump or ("tools" if self._tool_node and _pending_calls(state) else "end")
        state, _ = await self._hooks_at("after_agent", state, config)
        if log is not None:
            log.info("agent_run_finished", model_calls=model_calls)
        return self._result(state, model_calls)

    async def _act(
        self, state: OverAllState, config: RunnableConfig
    ) -> tuple[OverAllState, JumpTarget]:
        if self._tool_node is None or not _pending_calls(state):
            return state, "model"
        state = state.merge(await self._tool_node(state, config))
        return state, "end" if _returned_direct(state) else "model"

    async def _hooks_at(
        self, position: Position, state: OverAllState, config: RunnableConfig
    ) -> tuple[OverAllState, JumpTarget | None]:
        state, jump, _ = await run_hooks(position, self._hooks, state, config)
        return state, jump

    def _result(self, state: OverAllState, model_calls: int) -> AgentResult:
        text = final_text(state)
        output = None
        if self.output_type is not None and not _returned_direct(state):
            output = parse_output(text, self.output_type)
        return AgentResult(state, text, output, model_calls)

"""Subagents: ``agent.as_tool()``, a ``Tool`` whose every call runs the agent (the child)
inside a tool call of another agent's run (the parent), and answers with its result.

The child run is started in the call's own task, so it lives in the call's cancel scope:
``run.cancel_tool(call_id)`` on the parent, the parent's cancellation and the call's
timeout stop the child and its tool calls, their cleanup done before the call ends.
What else ties the two runs together:

- events: the child's events are passed up into the parent's stream as
  ``SubagentEvent(path, event)``, ``path`` naming the call and the child's run at each
  level;
- usage: the child's token usage is added to the parent's (``ToolContext.add_usage``);
- tracing: the child's run span nests under the call's ``execute_tool`` span;
- checkpoints: with a saver (the child's own, else the parent's) and a parent thread, the
  child checkpoints under a thread of its own, derived from the parent's thread, the
  position of the calling message and the call id (``child_thread_id``), so a parent
  resumed after a crash resumes the child where it was. The name is not unique over the
  parent's life (a summarised history repeats positions, a model may number its call
  ids), so the child's state records the task it was started for (``TASK``): a child
  thread is reused only by a call resumed from the parent's checkpoint, and only for its
  own task; one left by an earlier call is deleted and the call starts its child afresh;
- approval: a child paused for a human pauses the parent, its calls listed among the
  parent's as ``<call id>/<child call id>``; the decisions given to the parent reach the
  child when the call runs again (``ToolCallResponse.interrupt``, ``ToolContext.decisions``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import attrs

from . import _validate as valid
from ._approval import SCOPE, Edit, Resume
from ._batch import pending_calls
from ._checkpoint import Checkpoint, Saver
from ._config import RunnableConfig, check_thread_id
from ._events import Event, SubagentCall, SubagentEvent
from ._interceptors import ToolCallResponse
from ._llm_node import MODEL_ITERATION
from ._logging import get_logger
from ._messages import ToolCall, UserMessage
from ._result import AgentResult
from ._results import to_json_text
from ._run_context import CALLER, Caller
from ._state import MESSAGES, OverAllState
from ._tools import Tool, ToolContext, check_tool_name

if TYPE_CHECKING:
    from ._agent import ReactAgent
    from ._input import AgentInput


# In a child's state: the digest of the task it was started for (``task_digest``).
TASK = "_subagent_task_"


@attrs.frozen
class Task:
    """A subagent tool's default input: the task, as the calling model writes it."""

    input: Annotated[
        str,
        "The task: what to do, with everything needed to do it (the agent sees nothing "
        "else of this conversation).",
    ]


def child_thread_id(parent: str, position: int, call_id: str) -> str:
    """The thread of the child run of call ``call_id`` in the message at ``position`` of
    the parent thread ``parent``: ``<parent>/<position>/<call id>`` (the position tells two
    turns apart whose calls have one id, as a model that numbers its calls gives).

    An id that breaks ``check_thread_id`` (too long, a NUL in the call id) is hashed:
    ``<the parent's first 200 characters>/<sha256 of the whole>``, at most 865 bytes.
    """
    composed = f"{parent}/{position}/{call_id}"
    try:
        return check_thread_id(composed)
    except ValueError:
        digest = hashlib.sha256(composed.encode("utf-8", "surrogatepass")).hexdigest()
        return f"{parent[:200]}/{digest}"


def task_digest(agent: str, call: ToolCall, task: str) -> str:
    """What identifies the task of a child run: agent ``agent`` started by ``call`` with
    ``task`` as its first message (sha256, hex). A resumed parent's call gives the same
    digest; another task that lands on the same child thread gives another."""
    identity = json.dumps([agent, call.name, call.id, task], ensure_ascii=False)
    return hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()


def passed_up(above: SubagentCall, event: Event) -> SubagentEvent:
    """``event`` of the child run ``above`` as its parent's stream carries it."""
    if isinstance(event, SubagentEvent):
        return SubagentEvent((above, *event.path), event.event)
    return SubagentEvent((above,), event)


def _position(state: Mapping[str, Any]) -> int:
    """Where the calling assistant message is in the parent's conversation."""
    messages: Sequence[Any] = state.get(MESSAGES) or ()
    _, partial = pending_calls(state)
    return len(messages) - (2 if partial is not None else 1)


def _find_tool(agent: ReactAgent, name: str) -> Tool | None:
    """The tool ``name`` of ``agent``, or of one of its subagents (depth first)."""
    node = agent.tool_node
    if node is None:
        return None
    config = RunnableConfig()
    found = node.resolve(name, config)
    if found is not None:
        return found
    for tool in (node.resolve(n, config) for n in node.tool_names):
        func = tool.func if tool is not None else None
        if isinstance(func, Subagent) and (deeper := _find_tool(func.agent, name)) is not None:
            return deeper
    return None


@attrs.define(eq=False)
class Subagent:
    """The function of a subagent tool: each call runs ``agent`` (see the module docstring).

    ``check_decisions`` is what the loop asks, when the parent is resumed, to check the
    decisions for the calls waiting in the child before anything runs.
    """

    agent: ReactAgent
    input_type: Any = Task
    # The agent with the parent's saver, for a child without one: (saver, agent).
    _inherited: tuple[Saver, ReactAgent] | None = attrs.field(default=None, init=False)

    async def __call__(self, value: Any, context: ToolContext) -> Any:
        caller: Caller | None = context.config.context.get(CALLER)
        agent = self._agent_for(caller.saver if caller is not None else None)
        config = RunnableConfig(
            thread_id=self._thread(agent, context), metadata=context.config.metadata
        )
        task = value.input if isinstance(value, Task) else to_json_text(value)
        digest = task_digest(agent.name, context.call, task)
        # A call the model made in this run (the run's context counts its model calls) is
        # new: no child thread can be its yet. Else it was resumed from a checkpoint.
        new = MODEL_ITERATION in context.config.context
        checkpoint = await self._checkpoint(agent, config.thread_id, digest, new)
        if checkpoint is not None and checkpoint.next == "end":
            # It finished before the parent recorded its answer (the parent stopped
            # in between): its result, without running anything again.
            state = OverAllState(checkpoint.state.data, agent.key_strategies)
            result = agent.result(state, checkpoint.model_calls)
        else:
            start = self._input(task, digest, checkpoint, context)
            result = await self._run(agent, start, config, caller, context.call.id)
        if result.status == "interrupted":
            return self._paused(result, config, caller)
        context.add_usage(result.usage)
        return result.output if result.output is not None else result.text

    def check_decisions(
        self, waiting: Sequence[ToolCall], decisions: Resume, config: RunnableConfig
    ) -> None:
        """``ValueError`` for an edit of a call waiting in this agent (or deeper) whose
        arguments its tool would refuse: checked when the parent is resumed."""
        by_id = {c.id: c for c in waiting}
        for call_id, decision in decisions.decisions.items():
            call = by_id.get(call_id)
            if call is None or not isinstance(decision, Edit):
                continue
            tool = _find_tool(self.agent, call.name)
            if tool is None and SCOPE in call_id:
                # Not a tool call: what waits inside one of the child's calls (an MCP
                # server's question); that call's tool checks it when the child resumes.
                continue
            if tool is None:
                raise ValueError(f"cannot edit call {call_id}: tool {call.name!r} is not available")
            raw = decision.arguments
            tool.parse_arguments(raw if isinstance(raw, str) else json.dumps(dict(raw)))

    def _agent_for(self, saver: Saver | None) -> ReactAgent:
        """The child, with the parent's saver when it has none of its own."""
        if self.agent.saver is not None or saver is None:
            return self.agent
        if self._inherited is None or self._inherited[0] is not saver:
            self._inherited = (saver, attrs.evolve(self.agent, saver=saver))
        return self._inherited[1]

    def _thread(self, agent: ReactAgent, context: ToolContext) -> str | None:
        parent = context.config.thread_id
        if agent.saver is None or parent is None:
            return None
        position = _position(context._source)  # the batch's state, not a copy of it
        return child_thread_id(parent, position, context.call.id)

    async def _checkpoint(
        self, agent: ReactAgent, thread_id: str | None, digest: str, new: bool
    ) -> Checkpoint | None:
        """The latest checkpoint of the child thread, if it is this call's: the call was
        resumed (not ``new``) and the checkpoint is of its task (``digest``).

        Any other is stale — an earlier call's that got the same thread name, once a
        summarised history repeated the calling message's position, be it the same task
        word for word: the thread is deleted (that call has ended: its answer, if it had
        one, is in the parent's history) and the task starts afresh under the name.
        """
        if agent.saver is None or thread_id is None:
            return None
        checkpoint = await agent.saver.get(thread_id)
        if checkpoint is None or (not new and checkpoint.state.get(TASK) == digest):
            return checkpoint
        get_logger(agent=self.agent.name).warning(
            "subagent_stale_thread_deleted", thread_id=thread_id, next=checkpoint.next
        )
        await agent.saver.delete(thread_id)
        return None

    def _input(
        self, task: str, digest: str, checkpoint: Checkpoint | None, context: ToolContext
    ) -> AgentInput | Resume | None:
        """A new child run's input (its task, and the task's digest kept in its state);
        else how to go on with the one the checkpoint holds."""
        if checkpoint is None:
            return {MESSAGES: [UserMessage(task)], TASK: digest}
        if checkpoint.interrupt:
            return context.decisions or Resume({})
        return None  # stopped midway (the parent crashed or was cancelled): resume it

    async def _run(
        self,
        agent: ReactAgent,
        start: AgentInput | Resume | None,
        config: RunnableConfig,
        caller: Caller | None,
        call_id: str,
    ) -> AgentResult:
        async with agent.start(start, config) as run:
            if caller is not None:
                above = SubagentCall(call_id, agent.name, run.run_id)
                async with run.events() as events:
                    async for event in events:
                        await caller.run.emit(passed_up(above, event))
            return await run.result()

    def _paused(
        self, result: AgentResult, config: RunnableConfig, caller: Caller | None
    ) -> ToolCallResponse:
        if config.thread_id is None or caller is None or caller.saver is None:
            names = ", ".join(f"{c.name} ({c.id})" for c in result.interrupt.calls)
            raise ValueError(
                f"agent {self.agent.name!r} paused for approval of {names}, but the calling "
                "run keeps no checkpoints to pause in: give the calling agent a saver and "
                "run it with a thread_id"
            )
        names = ", ".join(c.name for c in result.interrupt.calls)
        return ToolCallResponse(f"waiting for approval: {names}", interrupt=result.interrupt)


def subagent_tool(
    agent: ReactAgent,
    *,
    name: str | None,
    description: str | None,
    input: Any,
    timeout: float | None,
) -> Tool:
    """``agent.as_tool(...)``: see ``ReactAgent.as_tool``."""
    valid.text(non_empty=True, optional=True).spec.check("as_tool: name", name)
    valid.text(optional=True).spec.check("as_tool: description", description)
    valid.type_form(optional=True).spec.check("as_tool: input", input)
    if name is None:
        try:
            check_tool_name(agent.name)
        except ValueError as exc:
            raise ValueError(f"as_tool: {exc}; give it one with as_tool(name=...)") from None
    tool_name = name if name is not None else agent.name
    if description is None:
        description = (
            f"Hand a task to the {agent.name} agent: it works on it on its own and answers "
            "with its result."
        )
    function = Subagent(agent, input if input is not None else Task)
    return Tool.from_input_type(
        tool_name, description, function.input_type, function, timeout=timeout
    )

"""One run of the agent loop: its steps, its events, its checkpoints, and where it
starts from (a new conversation, a finished one going on, or an unfinished one resumed).

::

    before_agent → [before_model → model → after_model → before_tools → tools?] … → after_agent
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from ._approval import (
    SCOPE,
    Decision,
    Edit,
    Interrupt,
    Reject,
    Resume,
    outer_call,
    scoped,
    unscoped,
)
from ._batch import (
    PAUSED,
    PENDING_UPDATES,
    RETURN_DIRECT,
    Batch,
    has_pending_updates,
    paused_by,
    pending_calls,
)
from ._checkpoint import Checkpoint, NextStep, Saver
from ._config import RunnableConfig
from ._events import (
    ModelCallFinished,
    ModelCallRetried,
    ModelCallStarted,
    ModelDelta,
    StateUpdated,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallTimedOut,
)
from ._exceptions import MaxIterationsExceeded, OutputParseError
from ._hooks import HookOutcome, JumpTarget, Position, run_hooks
from ._input import AgentInput, check_conversation, input_update
from ._llm_node import CHUNK_LISTENER, EMIT, MODEL_ITERATION, MODEL_NODE, RUN_ID
from ._messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
)
from ._output import FINAL_ANSWER, parse_output, retry_message, take_final_answer
from ._result import TOKEN_USAGE, AgentResult
from ._run import AgentRun
from ._run_context import CALLER, Caller
from ._scheduler import Job, Status
from ._state import MESSAGES, OverAllState
from ._tokens import TOKEN_COUNTER
from ._tool_node import CALL_OBSERVER, CALL_RESOLVER
from ._tools import TOOL_DECISIONS, Tool
from .models.base import LENGTH, RETRY_LISTENER, ModelChunk, Usage

if TYPE_CHECKING:
    from ._agent import ReactAgent

APPROVED = "_approved_calls_"


def unanswered(state: Mapping[str, Any]) -> list[ToolCall]:
    """The calls of the last assistant message that have no response yet."""
    try:
        assistant, partial = pending_calls(state)
    except ValueError:
        return []
    answered = {r.id for r in partial.responses} if partial else set()
    return [c for c in assistant.tool_calls if c.id not in answered]


def returned_direct(state: Mapping[str, Any]) -> bool:
    """Whether the last step was a batch of return_direct tools (the run ends there)."""
    messages = state.get(MESSAGES) or ()
    last = messages[-1] if messages else None
    return isinstance(last, ToolResponseMessage) and (
        last.metadata.get("finish_reason") == RETURN_DIRECT
    )


def final_text(state: Mapping[str, Any]) -> str:
    """The run's answer: the last assistant text, or the return_direct tool results."""
    messages: Sequence[Message] = state.get(MESSAGES) or ()
    last = messages[-1] if messages else None
    if isinstance(last, ToolResponseMessage) and returned_direct(state):
        texts = [r.response_data for r in last.responses]
        return texts[0] if len(texts) == 1 else json.dumps(texts, ensure_ascii=False)
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            return str(message.text)
    return ""


@attrs.frozen
class Start:
    """Where a run starts: the state, the step, and whether it is a new run."""

    state: OverAllState
    step: JumpTarget
    fresh: bool
    model_calls: int = 0


async def starting_point(
    agent: ReactAgent, value: AgentInput | Resume | None, config: RunnableConfig
) -> Start:
    """The state and step to run from, after the thread's latest checkpoint.

    New input on an unfinished thread, or nothing to resume, is a ``ValueError`` naming
    what is pending: nothing is dropped silently.
    """
    strategies = agent.key_strategies
    checkpoint = None
    if agent.saver is not None and config.thread_id is not None:
        checkpoint = await agent.saver.get(config.thread_id)
    where = f"thread {config.thread_id!r}"
    if checkpoint is None:
        if value is None or isinstance(value, Resume):
            raise ValueError(f"nothing to resume: {_no_checkpoint(agent, config)}")
        return Start(OverAllState({}, strategies).merge(input_update(value)), "model", True)
    state = OverAllState(checkpoint.state.data, strategies)
    pending = checkpoint.next != "end"
    if isinstance(value, Resume):
        if not checkpoint.interrupt:
            raise ValueError(f"nothing to approve: {where} is not waiting for approval")
        state = apply_decisions(agent, state, checkpoint.interrupt, value, config)
        return Start(state, "tools", False, checkpoint.model_calls)
    if value is None:
        if not pending:
            raise ValueError(f"nothing to resume: the last run of {where} finished")
        if checkpoint.interrupt:
            ids = ", ".join(c.id for c in checkpoint.interrupt)
            raise ValueError(f"{where} waits for approval of calls {ids}; resume with Resume(...)")
        return Start(state, checkpoint.next, False, checkpoint.model_calls)
    if pending and config.unfinished == "cancel" and not checkpoint.interrupt:
        state = ended_for_good(state)
    elif pending:
        calls = ", ".join(f"{c.name} ({c.id})" for c in unanswered(state)) or "none"
        raise ValueError(
            f"{where} has an unfinished run (next step: {checkpoint.next}; pending tool calls: "
            f"{calls}); resume it with invoke(None, config) before sending new input"
        )
    return Start(state.merge(input_update(value)), "model", True)


ENDED_TEXT = (
    "Error: Tool execution was cancelled by the caller: the run ended before this call finished"
)


def ended_for_good(state: OverAllState) -> OverAllState:
    """``state`` with its unfinished batch closed (``RunnableConfig.unfinished="cancel"``):
    every unanswered call answered as cancelled, the finished calls' answers and their
    state updates (kept aside while the batch could go on) applied in call order."""
    last = (state.get(MESSAGES) or [None])[-1]
    if not unanswered(state) and not has_pending_updates(last):
        return state  # stopped between steps: nothing of a batch is left open
    assistant, previous = pending_calls(state)
    # Only the batch's answers and updates are used: no node runs a call here.
    batch = Batch(None, state, assistant, previous, False, None)  # type: ignore[arg-type]
    if previous is not None:
        batch.done.update((r.id, r) for r in previous.responses)
        batch.updates.update(previous.metadata.get(PENDING_UPDATES, {}))
    for call in assistant.tool_calls:
        if call.id not in batch.done:
            batch.done[call.id] = ToolResponse(call.id, call.name, ENDED_TEXT, is_error=True)
    return state.merge(batch.update())


def _no_checkpoint(agent: ReactAgent, config: RunnableConfig) -> str:
    """Why a run cannot resume: what is missing, and how to give it."""
    if agent.saver is None:
        return (
            "an agent without a saver keeps no checkpoints (give it saver=MemorySaver() or "
            "SqliteSaver(path))"
        )
    if config.thread_id is None:
        return (
            "the config has no thread_id: name the thread to resume, "
            "invoke(None, RunnableConfig(thread_id=...))"
        )
    return f"thread {config.thread_id!r} has no checkpoint"


def apply_decisions(
    agent: ReactAgent,
    state: OverAllState,
    waiting: Sequence[ToolCall],
    resume: Resume,
    config: RunnableConfig,
) -> OverAllState:
    """The state with a human's decisions applied: approvals recorded, edited arguments
    checked and written into the history, rejections answered as error responses."""
    by_id = {c.id: c for c in waiting}
    unknown = sorted(set(resume.decisions) - set(by_id))
    if unknown:
        raise ValueError(
            f"no pending call with id {', '.join(unknown)}; pending: {', '.join(by_id)}"
        )
    assistant, partial = pending_calls(state)
    calls = {c.id: c for c in assistant.tool_calls}
    # Decisions for calls waiting inside a call (a subagent's: ``c1/a1``) go to that call
    # when it runs again (``ToolContext.decisions``); every call that paused runs again.
    inner = unscoped(resume.decisions, calls)
    inside: dict[str, list[ToolCall]] = {}
    for c in waiting:
        outer = None if c.id in calls else outer_call(c.id, calls)
        if outer is not None:
            inner.setdefault(outer, Resume({}))
            unscoped_id = c.id.removeprefix(f"{outer}{SCOPE}")
            inside.setdefault(outer, []).append(attrs.evolve(c, id=unscoped_id))
    for outer, decisions in inner.items():
        _check_inner(agent, assistant, calls[outer], inside.get(outer, []), decisions, config)
    config.context[TOOL_DECISIONS] = inner
    own: dict[str, Decision] = {k: v for k, v in resume.decisions.items() if k in calls}
    rejected: list[ToolResponse] = []
    approved = list(state.get(APPROVED) or [])
    for call_id, decision in own.items():
        call = calls[call_id]
        if isinstance(decision, Reject):
            rejected.append(ToolResponse(call.id, call.name, decision.message, is_error=True))
            continue
        if isinstance(decision, Edit):
            calls[call_id] = call = _edited(agent, assistant, call, decision, config)
        approved.append(call_id)
    messages = list(state[MESSAGES])
    index = messages.index(partial) - 1 if partial is not None else len(messages) - 1
    messages[index] = attrs.evolve(
        assistant, tool_calls=[calls[c.id] for c in assistant.tool_calls]
    )
    if rejected:
        earlier = list(partial.responses) if partial is not None else []
        order = [c.id for c in assistant.tool_calls]
        merged = sorted([*earlier, *rejected], key=lambda r: order.index(r.id))
        answer = ToolResponseMessage(merged, partial.metadata if partial else {})
        if partial is not None:
            messages[-1] = answer
        else:
            messages.append(answer)
    data = {**state.data, MESSAGES: messages, APPROVED: approved}
    return OverAllState(data, state.key_strategies)


def _check_inner(
    agent: ReactAgent,
    assistant: AssistantMessage,
    call: ToolCall,
    inside: Sequence[ToolCall],
    decisions: Resume,
    config: RunnableConfig,
) -> None:
    """Check the decisions for the calls waiting inside ``call`` (``inside``, their own
    ids) where its tool can (``check_decisions``, as a subagent's tool has): a bad edit is
    a ``ValueError`` now, while the run is still paused, not an error the model reads
    later."""
    node = agent.tool_node
    tool = node.resolve(call.name, config, assistant.visible_tools) if node else None
    check = getattr(tool.func, "check_decisions", None) if tool is not None else None
    if callable(check):
        check(inside, decisions, config)


def _edited(
    agent: ReactAgent,
    assistant: AssistantMessage,
    call: ToolCall,
    edit: Edit,
    config: RunnableConfig,
) -> ToolCall:
    raw = edit.arguments if isinstance(edit.arguments, str) else json.dumps(dict(edit.arguments))
    node = agent.tool_node
    # The tool node's rule: a tool hidden from the model is not available, edited or not.
    found = node.resolve(call.name, config, assistant.visible_tools) if node else None
    if found is None:
        raise ValueError(f"cannot edit call {call.id}: tool {call.name!r} is not available")
    found.parse_arguments(raw)  # ToolArgumentError (a ValueError) says what is wrong
    return attrs.evolve(call, arguments=raw)


@attrs.define(eq=False)
class _CallEvents:
    """Reports a batch's calls to the run: events, the cancellable jobs, checkpoints."""

    loop: Loop
    base: OverAllState

    async def call_started(self, call: ToolCall, job: Job) -> None:
        run = self.loop.run
        run.track(call.id, job)
        if run.wants_events:  # built only when someone may read it
            await run.emit(ToolCallStarted(call.id, call.name, call.arguments))

    async def call_ended(
        self,
        call: ToolCall,
        response: ToolResponse,
        job: Job,
        partial: Callable[[], dict[str, Any]],
    ) -> None:
        run = self.loop.run
        run.track(call.id, None)
        if paused_by(job) is not None:
            return  # no answer and no end event: the leg ends with RunInterrupted

        def now() -> OverAllState:
            return self.base.merge(partial())

        run.state_later(now)  # the state so far, for RunCancelled, if it comes to that
        await self.loop.save(now, "tools")
        if not run.wants_events:
            return
        if job.status is Status.TIMED_OUT:
            await run.emit(ToolCallTimedOut(call.id, call.name, job.timeout, response))
        elif job.status is Status.CANCELLED:
            reason = job.cancel_reason or None
            cancelled = ToolCallCancelled(call.id, call.name, reason, response, job.duration)
            await run.emit(cancelled)
        else:
            duration = job.duration
            await run.emit(
                ToolCallFinished(call.id, call.name, response.is_error, duration, response)
            )


@attrs.define(eq=False)
class Loop:
    """The loop of one run; ``await Loop(...).execute(start)`` → ``AgentResult``."""

    agent: ReactAgent
    run: AgentRun
    config: RunnableConfig
    model_calls: int = 0
    steps: int = 0
    output_retries: int = 0
    _saving: anyio.Lock = attrs.field(factory=anyio.Lock, init=False)
    _resolved: tuple[AssistantMessage, Mapping[str, Tool | None]] | None = attrs.field(
        default=None, init=False
    )

    def resolve_calls(self, assistant: AssistantMessage) -> Mapping[str, Tool | None]:
        """The tools that will run the calls of ``assistant`` (by call name), resolved once
        per assistant message: the hooks that decide on the calls (approval, limits) and
        the tool node that runs them see the same tools, even if a resolver (a toolset
        whose tools change) would answer differently later."""
        node = self.agent.tool_node
        if node is None:
            return {}
        if self._resolved is None or self._resolved[0] is not assistant:
            self._resolved = (assistant, node.resolve_calls(assistant, self.config))
        return self._resolved[1]

    async def execute(self, start: Start) -> AgentResult:
        """Run from ``start`` to the end, an interrupt, or an error."""
        context = self.config.context
        context[CHUNK_LISTENER] = self._on_chunk
        context[RETRY_LISTENER] = self._on_retry
        context[RUN_ID] = self.run.run_id
        context[CALL_RESOLVER] = self.resolve_calls
        context[MODEL_NODE] = self.agent.llm_node
        context[EMIT] = self.run.emit
        context[TOKEN_COUNTER] = self.agent.token_counter
        context[CALLER] = Caller(self.run, self.agent.saver)
        state, step = start.state, start.step
        self.model_calls = start.model_calls
        self.run.state = state
        if start.fresh:
            outcome = await self.hooks("before_agent", state)
            state, step = outcome.state, outcome.jump or "model"
            await self.save(state, step if step != "end" else "model")
        while step != "end":
            if step == "tools":
                outcome = await self.hooks("before_tools", state)
                state = outcome.state
                if outcome.interrupt:
                    return await self.interrupted(state, outcome.interrupt)
                if outcome.jump is not None:
                    step = outcome.jump
                    continue
                state, step, paused = await self.act(state)
                if paused:
                    return await self.interrupted(state, paused)
            else:
                state, step = await self.think(state)
            if step != "end":
                await self.save(state, step)
        state = (await self.hooks("after_agent", state)).state
        await self.save(state, "end")
        return self.agent.result(state, self.model_calls)

    async def think(self, state: OverAllState) -> tuple[OverAllState, JumpTarget]:
        """The model step: hooks around one model call; where to go next."""
        limit = self.agent.max_iterations
        if limit is not None and self.model_calls >= limit:
            raise MaxIterationsExceeded(
                f"agent {self.agent.name!r} made {self.model_calls} model calls without a final "
                f"answer (max_iterations={limit})",
                messages=state.get(MESSAGES) or (),
            )
        outcome = await self.hooks("before_model", state)
        state = outcome.state
        if outcome.jump not in (None, "model"):
            assert outcome.jump is not None
            return state, outcome.jump
        await self.run.emit(ModelCallStarted(self.config.context.get(MODEL_ITERATION, -1) + 1))
        before: Usage = state.get(TOKEN_USAGE) or Usage()
        update = await self.agent.llm_node(state, self.config)
        self.model_calls += 1
        state = self.updated(state, update)
        usage: Usage = state.get(TOKEN_USAGE) or Usage()
        message = update[MESSAGES][-1]
        used = None if usage == before else usage - before
        await self.run.emit(ModelCallFinished(message, used))
        await self.run.emit(StateUpdated("model", tuple(update)))
        outcome = await self.hooks("after_model", state)
        state = outcome.state
        if outcome.jump is not None:
            return state, outcome.jump
        return await self.answered(state)

    async def answered(self, state: OverAllState) -> tuple[OverAllState, JumpTarget]:
        """Where the model's answer leads: its tool calls, or the end — once a structured
        answer fits ``output_type``; one that does not goes back to the model with the
        error, ``output_retries`` times, before the run raises ``OutputParseError``."""
        agent, calls = self.agent, unanswered(state)
        output_type = agent.output_type
        final = next((c for c in calls if c.name == FINAL_ANSWER), None)
        if output_type is not None and agent.output_mode == "tool" and final is not None:
            taken = take_final_answer(pending_calls(state)[0], final, output_type)
            state = self.updated(state, {MESSAGES: taken.messages})
            await self.run.emit(StateUpdated("output", (MESSAGES,)))
            if taken.error is None:
                return state, "end"
            self.spend_output_retry(taken.error)
            return state, "tools" if unanswered(state) else "model"
        if agent.tool_node is not None and calls:
            return state, "tools"
        if output_type is None or self.output_retries >= agent.output_retries:
            return state, "end"  # a last answer that does not fit raises in agent.result
        last = (state.get(MESSAGES) or [None])[-1]
        if isinstance(last, AssistantMessage) and last.finish_reason == LENGTH:
            return state, "end"  # cut at the token limit: agent.result raises, no retry
        try:
            parse_output(final_text(state), output_type)
        except OutputParseError as exc:
            self.spend_output_retry(exc)
            state = self.updated(state, {MESSAGES: [retry_message(exc, agent.output_mode)]})
            await self.run.emit(StateUpdated("output", (MESSAGES,)))
            return state, "model"
        return state, "end"

    def spend_output_retry(self, error: OutputParseError) -> None:
        """Count one more asking again; raise ``error`` when none is left."""
        if self.output_retries >= self.agent.output_retries:
            raise error
        self.output_retries += 1

    async def act(
        self, state: OverAllState
    ) -> tuple[OverAllState, JumpTarget, tuple[ToolCall, ...]]:
        """The tool step: the pending calls of the last answer; where to go next, and the
        calls to pause the run for, when some call paused it (a subagent's approval)."""
        node = self.agent.tool_node
        messages: Sequence[Message] = state.get(MESSAGES) or ()
        unfinished = bool(messages) and has_pending_updates(messages[-1])
        if node is None or not (unanswered(state) or unfinished):
            return state, "model", ()
        context = self.config.context
        context[CALL_OBSERVER] = _CallEvents(self, state)
        try:
            update = await node(state, self.config)
        finally:
            del context[CALL_OBSERVER]
            context.pop(TOOL_DECISIONS, None)  # the decisions were for this batch's calls
        paused: Mapping[str, Interrupt] = update.pop(PAUSED, {})
        if approved := state.get(APPROVED):
            # Approvals are for this batch only; a call that paused is still in it.
            update[APPROVED] = [i for i in approved if i in paused]
        state = self.updated(state, update)
        await self.run.emit(StateUpdated("tools", tuple(update)))
        waiting = tuple(scoped(i, c) for i, interrupt in paused.items() for c in interrupt.calls)
        return state, "end" if returned_direct(state) else "model", waiting

    def updated(self, state: OverAllState, update: Mapping[str, Any]) -> OverAllState:
        state = state.merge(update)
        self.run.state = state
        return state

    async def hooks(self, position: Position, state: OverAllState) -> HookOutcome:
        outcome = await run_hooks(position, self.agent.hooks_in_order, state, self.config)
        if outcome.keys:
            self.run.state = outcome.state
            await self.run.emit(StateUpdated(position, outcome.keys))
        return outcome

    async def interrupted(self, state: OverAllState, calls: tuple[ToolCall, ...]) -> AgentResult:
        await self.save(state, "tools", calls)
        result = self.agent.result(state, self.model_calls, Interrupt(calls))
        return result

    async def save(
        self,
        state: OverAllState | Callable[[], OverAllState],
        next_step: NextStep,
        interrupt: tuple[ToolCall, ...] | None = None,
    ) -> None:
        """Write a checkpoint, when the agent has a saver and the run a thread id.

        ``state`` may be a function giving the state as of the moment of writing: calls
        of a batch end concurrently, and the last checkpoint written must hold them all.
        A conversation holding something that is not a message is a ``TypeError``, not
        written (``check_conversation``): the thread stays at its last good checkpoint.
        """
        saver: Saver | None = self.agent.saver
        if saver is None or self.config.thread_id is None:
            return
        # Written whole even if the run is cancelled meanwhile: it may record a finished
        # tool call that must never run again. One write at a time, in order.
        with anyio.CancelScope(shield=True):
            async with self._saving:
                current = state() if callable(state) else state
                check_conversation(current, whole=self.steps == 0)
                self.steps += 1
                checkpoint = Checkpoint(
                    self.config.thread_id,
                    current,
                    next_step,
                    self.steps,
                    self.run.run_id,
                    self.model_calls,
                    interrupt,
                    time.time(),
                )
                await saver.put(self.config.thread_id, checkpoint)

    async def _on_retry(self, attempt: int, delay_s: float, reason: str, model: str | None) -> None:
        await self.run.emit(ModelCallRetried(attempt, delay_s, reason, model))

    async def _on_chunk(self, chunk: ModelChunk) -> None:
        if chunk.reasoning:
            await self.run.emit(ModelDelta(reasoning=chunk.reasoning))
        if chunk.text:
            await self.run.emit(ModelDelta(text=chunk.text))
        for delta in chunk.tool_calls:
            await self.run.emit(ModelDelta(tool_call=delta))

"""A2A tasks as views of reactcore threads: which thread a task is, what state the task is
in (read from the thread's latest checkpoint, or from the live run), and the A2A values
(``Task``, status messages, the answer artifact) that say so.

A task ``T`` of principal ``P`` is the thread ``scoped_thread_id(P, "a2a/T")``: every
replica over the same saver finds it, and another principal naming ``T`` reaches another
thread (none), so it gets "task not found". Nothing else is stored: the task's context id
lives in the thread's state (``CONTEXT``), and how a stopped run ended (cancelled, failed)
in its latest checkpoint's metadata (``OUTCOME``), written once the run has stopped.

| thread (latest checkpoint)             | task state       |
|----------------------------------------|------------------|
| a live run in this app                 | ``working``      |
| ``next == "end"``                      | ``completed``    |
| marked cancelled / failed              | ``canceled`` / ``failed`` |
| paused for approval (``interrupt``)    | ``input-required`` |
| stopped, unmarked (running elsewhere)  | ``working``      |
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import attrs
from a2a.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)
from google.protobuf import struct_pb2
from google.protobuf.json_format import ParseDict

from .._messages import AssistantMessage, ToolCall, UserMessage
from .._results import to_json_text
from .._state import MESSAGES, OverAllState
from ..serving import scoped_thread_id

if TYPE_CHECKING:
    from .._agent import ReactAgent
    from .._checkpoint import Checkpoint, Saver

CONTEXT = "_a2a_context_"
"""The state key holding a task's A2A context id."""

OUTCOME = "a2a_outcome"
"""The checkpoint metadata key saying how a stopped run ended: "canceled" or "failed"."""

ANSWER = "answer"
"""The artifact id (and name) of a task's answer."""

FAILED_TEXT = "the agent failed; the task cannot go on"


def new_id() -> str:
    return uuid.uuid4().hex


def thread_of(principal: str, task_id: str) -> str:
    """The saver's thread of ``principal``'s task ``task_id`` (see the module docstring)."""
    return scoped_thread_id(principal, f"a2a/{task_id}")


def data_part(value: Any) -> Part:
    """A data part holding the JSON value ``value``."""
    return Part(data=ParseDict(value, struct_pb2.Value()))


def agent_message(task_id: str, context_id: str, *parts: Part, **metadata: Any) -> Message:
    """A message of the agent on task ``task_id``."""
    message = Message(
        message_id=new_id(),
        role=Role.ROLE_AGENT,
        task_id=task_id,
        context_id=context_id,
        parts=list(parts),
    )
    if metadata:
        message.metadata.update(metadata)
    return message


def pending_json(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    """The calls waiting for a decision, as the input-required message's data part lists
    them (``arguments`` parsed when they are JSON)."""
    out = []
    for call in calls:
        try:
            arguments: Any = json.loads(call.arguments) if call.arguments else {}
        except ValueError:
            arguments = call.arguments
        out.append({"id": call.id, "name": call.name, "arguments": arguments})
    return out


def status(
    state: TaskState, message: Message | None = None
) -> TaskStatus:  # a fresh timestamp on every status
    value = TaskStatus(state=state)
    value.timestamp.GetCurrentTime()
    if message is not None:
        value.message.CopyFrom(message)
    return value


def input_required(task_id: str, context_id: str, calls: Sequence[ToolCall]) -> TaskStatus:
    """``input-required``: the calls waiting, named in text and listed in a data part."""
    names = ", ".join(f"{c.name} ({c.id})" for c in calls)
    text = (
        f"waiting for approval: {names}. Answer with a data part "
        '{"decisions": {"<call id>": {"type": "approve"}}} (or "edit" with "arguments", '
        '"reject" with "reason")' + ("; or the text approve / reject" if len(calls) == 1 else "")
    )
    message = agent_message(
        task_id, context_id, Part(text=text), data_part({"pending": pending_json(calls)})
    )
    return status(TaskState.TASK_STATE_INPUT_REQUIRED, message)


def answer_text(agent: ReactAgent, checkpoint: Checkpoint) -> str:
    """The final answer a finished thread holds."""
    state = OverAllState(checkpoint.state.data, agent.key_strategies)
    result = agent.result(state, checkpoint.model_calls)
    if result.output is not None and not isinstance(result.output, str):
        return to_json_text(result.output)
    return result.output if isinstance(result.output, str) else result.text


def answer_artifact(text: str) -> Artifact:
    return Artifact(artifact_id=ANSWER, name=ANSWER, parts=[Part(text=text)])


def history(task_id: str, context_id: str, state: Mapping[str, Any]) -> list[Message]:
    """The thread's conversation as A2A messages: the user's, and the agent's texts."""
    out = []
    for message in state.get(MESSAGES) or ():
        if isinstance(message, UserMessage) and message.text:
            role = Role.ROLE_USER
        elif isinstance(message, AssistantMessage) and message.text:
            role = Role.ROLE_AGENT
        else:
            continue
        out.append(
            Message(
                message_id=new_id(),
                role=role,
                task_id=task_id,
                context_id=context_id,
                parts=[Part(text=message.text)],
            )
        )
    return out


@attrs.define(eq=False)
class Tasks:
    """The tasks of one app's agent, read from and marked in its saver."""

    agent: ReactAgent
    saver: Saver

    async def checkpoint(self, principal: str, task_id: str) -> Checkpoint | None:
        return await self.saver.get(thread_of(principal, task_id))

    def task(
        self,
        task_id: str,
        checkpoint: Checkpoint,
        history_length: int | None = None,
    ) -> Task:
        """The task a thread's latest ``checkpoint`` shows (see the module docstring)."""
        context_id = str(checkpoint.state.get(CONTEXT) or task_id)
        task = Task(id=task_id, context_id=context_id)
        if checkpoint.next == "end":
            text = answer_text(self.agent, checkpoint)
            task.artifacts.append(answer_artifact(text))
            message = agent_message(task_id, context_id, Part(text=text))
            task.status.CopyFrom(status(TaskState.TASK_STATE_COMPLETED, message))
        elif checkpoint.metadata.get(OUTCOME) == "canceled":
            task.status.CopyFrom(status(TaskState.TASK_STATE_CANCELED))
        elif checkpoint.metadata.get(OUTCOME) == "failed":
            message = agent_message(task_id, context_id, Part(text=FAILED_TEXT))
            task.status.CopyFrom(status(TaskState.TASK_STATE_FAILED, message))
        elif checkpoint.interrupt:
            task.status.CopyFrom(input_required(task_id, context_id, checkpoint.interrupt))
        else:
            task.status.CopyFrom(status(TaskState.TASK_STATE_WORKING))
        messages = history(task_id, context_id, checkpoint.state)
        if history_length is not None:
            messages = messages[-history_length:] if history_length else []
        task.history.extend(messages)
        return task

    async def mark(self, principal: str, task_id: str, outcome: str) -> None:
        """Record in the thread's latest checkpoint that its run stopped with ``outcome``
        ("canceled", "failed"); nothing when it finished or paused. Written whole even
        when the caller is being cancelled."""
        thread_id = thread_of(principal, task_id)
        with anyio.CancelScope(shield=True):
            latest = await self.saver.get(thread_id)
            if latest is None or latest.next == "end" or latest.metadata.get(OUTCOME):
                return
            if latest.interrupt and outcome != "canceled":
                return
            metadata = {**latest.metadata, OUTCOME: outcome}
            marked = attrs.evolve(latest, metadata=metadata, checkpoint_id=None)
            await self.saver.put(thread_id, marked)

    async def wait_marked(self, principal: str, task_id: str, poll: float = 0.05) -> None:
        """Wait until the thread's run stopped on another replica and was marked (or
        finished): the saver is polled, as its own cancel requests are."""
        while True:
            latest = await self.checkpoint(principal, task_id)
            if latest is None or latest.next == "end" or latest.metadata.get(OUTCOME):
                return
            await anyio.sleep(poll)

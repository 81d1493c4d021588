"""Forks and time travel: what each checkpoint of a thread did (``history``), and the
edits a fork can start with (``replace_answer``, ``drop_tool_result``,
``change_arguments``).

A **fork** is a new thread that starts at a checkpoint of another one
(``await saver.fork(thread_id, checkpoint_id, new_thread_id)``): it reads its parent's
records and message log up to that checkpoint, and stores only what it adds after it.
A run on the fork goes on from there (``invoke(None, config)`` when the checkpoint was
mid-run, new input when it was the end of a run). With ``edit=``, the fork's first own
checkpoint is the forked one changed by the edit: a function of the checkpoint giving
the checkpoint to go on from. The edits here change the conversation and say where the
loop goes on (``next``); any function of the same shape works.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

import anyio
import attrs

from .._config import check_thread_id
from .._messages import AssistantMessage, Message, ToolResponseMessage, UserMessage
from .._state import MESSAGES, OverAllState
from ._protocol import Checkpoint, NextStep, ThreadStatus, thread_status

Edit = Callable[[Checkpoint], Checkpoint]
"""An edit of a fork's starting checkpoint: the checkpoint, changed (see ``fork``)."""

EDITED = "edited"
"""The metadata key of a fork's edited checkpoint (its value: what the edit did)."""

Node = Literal["input", "model", "tools", "hook", "edit"]


@attrs.frozen
class CallRef:
    """A tool call a message asked for (an assistant message) or answered (a tool
    response message), by ``id`` and tool ``name``."""

    id: str
    name: str


@attrs.frozen
class AddedMessage:
    """A message a step added to the conversation: its ``kind`` (``"system"``,
    ``"user"``, ``"assistant"``, ``"tool"``) and the tool ``calls`` it asked for or
    answered."""

    kind: str
    calls: tuple[CallRef, ...] = ()


@attrs.frozen
class HistoryStep:
    """One checkpoint of a thread as ``saver.history(thread_id)`` gives it: what its
    step did.

    ``node``: what ran to make it (the step the checkpoint before said was next):
    ``"input"`` (a run started with new input, and its ``before_agent`` hooks ran),
    ``"model"`` (the model answered, with the hooks around it), ``"tools"`` (tool calls
    of a batch were answered: a batch may store several checkpoints, as its calls end),
    ``"hook"`` (in the model's step, hooks changed the state or jumped, and the model
    was not asked), ``"edit"`` (a fork's edited first checkpoint).

    ``added``: the messages it added; ``removed``: how many messages of the
    conversation before it were dropped or replaced (a summary, a partial tool answer
    completed, an edit); ``changed``: the other state keys whose value changed.
    ``status`` is the thread's status had it stopped there; ``next`` where the loop goes
    on from it. ``checkpoint_id`` names it for ``get`` and ``fork``.
    """

    checkpoint_id: str
    step: int
    run_id: str
    node: Node
    added: tuple[AddedMessage, ...]
    removed: int
    changed: tuple[str, ...]
    status: ThreadStatus
    next: NextStep
    created_at: float


def _added(message: Message) -> AddedMessage:
    if isinstance(message, AssistantMessage):
        return AddedMessage("assistant", tuple(CallRef(c.id, c.name) for c in message.tool_calls))
    if isinstance(message, ToolResponseMessage):
        return AddedMessage("tool", tuple(CallRef(r.id, r.name) for r in message.responses))
    return AddedMessage("user" if isinstance(message, UserMessage) else "system")


def _messages(checkpoint: Checkpoint | None) -> Sequence[Message]:
    if checkpoint is None:
        return ()
    found = checkpoint.state.get(MESSAGES)
    return found if isinstance(found, Sequence) else ()


def _step(before: Checkpoint | None, checkpoint: Checkpoint) -> HistoryStep:
    old, new = _messages(before), _messages(checkpoint)
    common = 0
    while common < min(len(old), len(new)) and old[common] == new[common]:
        common += 1
    added = tuple(_added(m) for m in new[common:])
    previous = before.state if before is not None else OverAllState({})
    changed = tuple(
        key
        for key in checkpoint.state
        if key != MESSAGES and (key not in previous or previous[key] != checkpoint.state[key])
    )
    node: Node
    if EDITED in checkpoint.metadata:
        node = "edit"
    elif before is None or before.next == "end":
        node = "input"  # a run started with new input (its first checkpoint: after hooks)
    elif before.next == "tools":
        node = "tools"
    elif any(a.kind == "assistant" for a in added):
        node = "model"
    else:
        node = "hook"  # the model step's hooks changed the state, or jumped, instead
    assert checkpoint.checkpoint_id is not None
    return HistoryStep(
        checkpoint.checkpoint_id,
        checkpoint.step,
        checkpoint.run_id,
        node,
        added,
        len(old) - common,
        changed,
        thread_status(checkpoint),
        checkpoint.next,
        checkpoint.created_at,
    )


def history_of(checkpoints: Sequence[Checkpoint]) -> builtins.list[HistoryStep]:
    """What each of a thread's ``checkpoints`` (oldest first, as ``list`` gives them)
    did, from the difference with the one before."""
    return [_step(checkpoints[i - 1] if i else None, c) for i, c in enumerate(checkpoints)]


# --- edits ------------------------------------------------------------------------------


def _edited(
    checkpoint: Checkpoint, messages: builtins.list[Message], next_step: NextStep, what: str
) -> Checkpoint:
    state = checkpoint.state
    data = {**state.data, MESSAGES: messages}
    metadata = {**checkpoint.metadata, EDITED: what}
    return attrs.evolve(
        checkpoint,
        state=OverAllState(data, state.key_strategies),
        next=next_step,
        interrupt=None,
        metadata=metadata,
    )


def _last_assistant(messages: Sequence[Message], call_id: str | None = None) -> int:
    """The index of the last assistant message (``ValueError`` when there is none, or,
    with ``call_id``, when it did not ask for that call)."""
    index = next(
        (i for i in reversed(range(len(messages))) if isinstance(messages[i], AssistantMessage)),
        None,
    )
    if index is None:
        raise ValueError("the checkpoint holds no assistant message to edit")
    last = messages[index]
    assert isinstance(last, AssistantMessage)
    if call_id is not None and all(c.id != call_id for c in last.tool_calls):
        asked = ", ".join(c.id for c in last.tool_calls) or "none"
        raise ValueError(
            f"call_id {call_id!r} is not a call of the checkpoint's last assistant message "
            f"(its calls: {asked}); fork at the checkpoint where it is the last batch"
        )
    return index


def _without_result(messages: Sequence[Message], start: int, call_id: str) -> list[Message]:
    """``messages`` with the response to ``call_id`` after ``start`` dropped (a tool
    response message left empty is dropped whole)."""
    kept: list[Message] = list(messages[: start + 1])
    for message in messages[start + 1 :]:
        if isinstance(message, ToolResponseMessage):
            responses = tuple(r for r in message.responses if r.id != call_id)
            if not responses:
                continue
            if len(responses) != len(message.responses):
                message = attrs.evolve(message, responses=responses)
        kept.append(message)
    return kept


def replace_answer(answer: AssistantMessage) -> Edit:
    """An edit replacing the model's last answer by ``answer`` (and dropping what came
    after it): the run goes on with ``answer``'s tool calls (``next="tools"``), or ends
    there when it asks for none (``next="end"``: send new input)."""
    if not isinstance(answer, AssistantMessage):
        raise TypeError(f"answer must be an AssistantMessage, got {type(answer).__name__}")

    def edit(checkpoint: Checkpoint) -> Checkpoint:
        messages = _messages(checkpoint)
        index = _last_assistant(messages)
        kept = [*messages[:index], answer]
        return _edited(checkpoint, kept, "tools" if answer.tool_calls else "end", "answer")

    return edit


def drop_tool_result(call_id: str) -> Edit:
    """An edit dropping the result of tool call ``call_id`` (a call of the last
    assistant message): the run goes on by running that call again
    (``next="tools"``); the other results of its batch are kept."""
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(f"call_id must be a non-empty string, got {call_id!r}")

    def edit(checkpoint: Checkpoint) -> Checkpoint:
        messages = _messages(checkpoint)
        index = _last_assistant(messages, call_id)
        kept = _without_result(messages, index, call_id)
        return _edited(checkpoint, kept, "tools", f"dropped result of {call_id}")

    return edit


def change_arguments(call_id: str, arguments: Mapping[str, Any] | str) -> Edit:
    """An edit giving tool call ``call_id`` (a call of the last assistant message) new
    ``arguments`` (a mapping, or its JSON text) and dropping its result, if any: the
    run goes on by running the call with them (``next="tools"``)."""
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(f"call_id must be a non-empty string, got {call_id!r}")
    text = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"arguments must be a JSON object, got {arguments!r}") from exc
    if not isinstance(parsed, dict):
        raise ValueError(f"arguments must be a JSON object, got {arguments!r}")

    def edit(checkpoint: Checkpoint) -> Checkpoint:
        messages = _messages(checkpoint)
        index = _last_assistant(messages, call_id)
        asked = messages[index]
        assert isinstance(asked, AssistantMessage)
        calls = tuple(
            attrs.evolve(c, arguments=text) if c.id == call_id else c for c in asked.tool_calls
        )
        kept = _without_result(messages, index, call_id)
        kept[index] = attrs.evolve(asked, tool_calls=calls)
        return _edited(checkpoint, kept, "tools", f"changed arguments of {call_id}")

    return edit


def forked(parent: Checkpoint, new_thread_id: str, edit: Edit | None) -> Checkpoint | None:
    """The fork's first own checkpoint: ``parent`` changed by ``edit`` (checked to be a
    checkpoint), under the new thread; ``None`` without an edit."""
    if edit is None:
        return None
    if not callable(edit):
        raise TypeError(f"edit must be a function of a Checkpoint, got {type(edit).__name__}")
    mine = attrs.evolve(parent, thread_id=new_thread_id, checkpoint_id=None)
    result = edit(mine)
    if not isinstance(result, Checkpoint):
        raise TypeError(f"edit must return a Checkpoint, got {type(result).__name__}")
    metadata = result.metadata if EDITED in result.metadata else {**result.metadata, EDITED: True}
    return attrs.evolve(result, thread_id=new_thread_id, checkpoint_id=None, metadata=metadata)


def taken(thread_id: str) -> str:
    """Why a fork cannot be made under ``thread_id``: it holds a thread already."""
    return (
        f"new_thread_id {thread_id!r} names a thread that exists already: choose another, "
        "or delete it first"
    )


class ForkingMethods:
    """``fork`` and ``history``, the same for every saver of reactcore: a saver gives
    ``_make_fork`` (store the fork itself) and the methods of ``Saver``."""

    get: Callable[..., Awaitable[Checkpoint | None]]
    put: Callable[[str, Checkpoint], Awaitable[None]]
    list: Callable[[str], Awaitable[builtins.list[Checkpoint]]]
    delete: Callable[[str], Awaitable[None]]

    async def _make_fork(
        self, thread_id: str, checkpoint_id: str, new_thread_id: str
    ) -> Checkpoint:
        raise NotImplementedError

    async def fork(
        self,
        thread_id: str,
        checkpoint_id: str,
        new_thread_id: str,
        *,
        edit: Edit | None = None,
    ) -> Checkpoint:
        """Start thread ``new_thread_id`` at checkpoint ``checkpoint_id`` of ``thread_id``
        (an id of ``list`` or ``history``); its latest checkpoint (``checkpoint_id``
        and history up to there are the parent's).

        The fork stores only what it adds: it reads its parent's history up to the
        checkpoint; its own checkpoints go on from there. A run goes on from it with
        ``invoke(None, RunnableConfig(thread_id=new_thread_id))`` when the checkpoint was
        mid-run, or with new input when it was the end of a run. ``edit``: a function of
        the checkpoint (with the new thread id) giving the one to go on from
        (``replace_answer``, ``drop_tool_result``, ``change_arguments``, or your own),
        stored as the fork's first own checkpoint, marked ``metadata["edited"]``.

        Raised: ``ValueError`` when a thread id breaks the rule of ``check_thread_id``,
        ``new_thread_id`` holds a thread already, or ``checkpoint_id`` names no
        checkpoint of ``thread_id``; ``TypeError`` when ``edit`` is no function or gives
        no ``Checkpoint``; what ``edit`` raises (nothing is stored then).
        """
        check_thread_id(thread_id)
        try:
            check_thread_id(new_thread_id)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"new_thread_id: {exc}") from None
        if not isinstance(checkpoint_id, str):
            raise TypeError(f"checkpoint_id must be a str, got {type(checkpoint_id).__name__}")
        if edit is not None:
            parent = await self.get(thread_id, checkpoint_id)
            if parent is None:
                raise ValueError(
                    f"checkpoint_id {checkpoint_id!r} names no checkpoint of thread "
                    f"{thread_id!r} (the ids of saver.list or saver.history)"
                )
            edited = forked(parent, new_thread_id, edit)
        made = await self._make_fork(thread_id, checkpoint_id, new_thread_id)
        if edit is None:
            return made
        assert edited is not None
        try:
            await self.put(new_thread_id, edited)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.delete(new_thread_id)  # no fork without its edit
            raise
        latest = await self.get(new_thread_id)
        assert latest is not None
        return latest

    async def history(self, thread_id: str) -> builtins.list[HistoryStep]:
        """What each checkpoint of ``thread_id`` did, oldest first (see
        ``HistoryStep``); a fork's starts with its parent's up to where it forked."""
        return history_of(await self.list(thread_id))

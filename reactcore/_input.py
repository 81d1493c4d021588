"""What a run takes as input, checked before anything runs.

``check_input`` is the one check of every way in: ``ReactAgent.invoke``, ``invoke_sync``,
``start``, ``stream``, a subagent's call (``agent.as_tool()``, through ``start``) and
``TemporalAgent.start`` (through ``input_update``). Anything but the accepted types is a
``TypeError`` naming ``input``, what it takes and what was given, raised before the
thread is claimed, a model is called or a checkpoint is written: a value that is not a
message never reaches the conversation, where it would fail only at the model call (``not
a message: 42``) or poison a durable thread (a checkpoint holding it loads back, but no
step after it can be written).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, get_args

from ._approval import Resume
from ._messages import PART_TYPES, Message, UserMessage
from ._state import MESSAGES
from ._validate import got

AgentInput = str | Message | Sequence[Message] | Mapping[str, Any]
"""New input of a run: a str (one ``UserMessage``), a message, a list of messages, or a
state dict (a ``Mapping`` with str keys, merged into the state; its ``messages``, if any,
a message or a list of messages)."""

ACCEPTED = "a str, a Message, a list of Messages or a state dict (a Mapping with str keys)"
RESUMING = ", None (resume the thread's unfinished run) or a Resume"
MESSAGE = "a Message (SystemMessage, UserMessage, AssistantMessage or ToolResponseMessage)"


def _hint(value: Any) -> str:
    """What to do instead, for the mistakes that have an obvious fix."""
    if isinstance(value, bytes | bytearray):
        return "; decode bytes to a str first"
    if isinstance(value, str):  # an item of a list: text is a message only when wrapped
        return "; wrap text in a message: UserMessage(text)"
    if isinstance(value, PART_TYPES):
        return "; put content parts in a message: UserMessage(text, parts=[...])"
    if isinstance(value, Mapping) and "role" in value:
        return '; messages are Message values (UserMessage("..."), …), not provider dicts'
    return ""


_MESSAGE_CLASSES = frozenset(get_args(Message))


def _stranger(items: Sequence[Any]) -> int | None:
    """The index of the first item of ``items`` that is not a message, if any."""
    if _MESSAGE_CLASSES.issuperset(map(type, items)):
        return None  # the usual case, at C speed: every item's class is a message class
    return next((i for i, item in enumerate(items) if not isinstance(item, Message)), None)


def _check_messages(items: Sequence[Any], where: str) -> None:
    """``TypeError`` for the first item of ``items`` that is not a message."""
    index = _stranger(items)
    if index is not None:
        item = items[index]
        raise TypeError(f"{where}[{index}] must be {MESSAGE}, got {got(item)}{_hint(item)}")


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray)


def check_input(value: Any, *, resuming: bool = True) -> None:
    """Raise a ``TypeError`` naming ``input`` unless ``value`` is ``AgentInput`` (or, with
    ``resuming``, ``None`` or a ``Resume``); see the module docstring."""
    if isinstance(value, str | Message):
        return
    if resuming and (value is None or isinstance(value, Resume)):
        return
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise TypeError(f"input: a state dict's keys must be str, got {got(key)}")
        given = value.get(MESSAGES)
        if given is None or isinstance(given, Message):
            return
        if not _is_list(given):
            raise TypeError(
                f"input[{MESSAGES!r}] must be a Message or a list of Messages, got {got(given)}"
                f"{_hint(given)}"
            )
        _check_messages(given, f"input[{MESSAGES!r}]")
        return
    if _is_list(value):
        _check_messages(value, "input")
        return
    accepted = ACCEPTED + RESUMING if resuming else ACCEPTED
    raise TypeError(f"input must be {accepted}, got {got(value)}{_hint(value)}")


def input_update(value: AgentInput) -> dict[str, Any]:
    """A caller's input as a state update, once checked (``check_input``): text and
    messages go to ``messages``."""
    check_input(value, resuming=False)
    if isinstance(value, str):
        return {MESSAGES: [UserMessage(value)]}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence):
        return {MESSAGES: list(value)}
    return {MESSAGES: [value]}


def check_conversation(state: Mapping[str, Any], *, whole: bool) -> None:
    """``TypeError`` when the ``messages`` of ``state`` hold something that is not a
    message: checked ``whole``, or only at the end (constant time).

    What the loop checks before each checkpoint, so that no thread is stored with a
    conversation no later step could be written onto or sent to a model (a thread that
    could neither resume nor take new input): whole at a run's first write, then at the
    end of the list, since a saver refuses a list that mixes messages with other values
    and only one holding no message at all could otherwise be stored.
    """
    given = state.get(MESSAGES)
    if given is None:
        return
    if not _is_list(given):
        raise TypeError(f"state key {MESSAGES!r} must be a list of Messages, got {got(given)}")
    if whole:
        index = _stranger(given)
    else:
        index = len(given) - 1 if given and not isinstance(given[-1], Message) else None
    if index is not None:
        raise TypeError(
            f"state key {MESSAGES!r} must hold only messages, got {got(given[index])} at "
            f"[{index}] (put there by a hook or a state update); the checkpoint was not written"
        )

"""What the provider modules' wire mappings share: checked reading of an answer's JSON (a
field of the right type, or a ``ModelError`` — ``ModelStreamError`` in a stream — saying
what is missing where), a call's arguments as a JSON object, and joining a request's
consecutive turns of one role, and the shape of a conversation of content blocks (the
Anthropic Messages API's and Bedrock Converse's) with its tool loop."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._exceptions import ModelError
from .._messages import (
    AssistantMessage,
    ContentPart,
    Message,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from ._http import loads


def malformed(what: str, where: str, error: type[ModelError]) -> ModelError:
    """``error`` saying the answer has no ``what`` at JSON path ``where``."""
    return error(f"malformed answer: expected {what} @ {where}")


def field(
    payload: Mapping[str, Any], key: str, kind: type, where: str, error: type[ModelError]
) -> Any:
    """``payload[key]``, which must be a ``kind`` (a bool is no int), else ``error``."""
    value = payload.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise malformed(f"{kind.__name__} {key!r}", where, error)
    return value


def json_object(value: Any, where: str, error: type[ModelError]) -> dict[str, Any]:
    """``value``, which must be a JSON object, else ``error``."""
    if type(value) is not dict:
        raise malformed("an object", where, error)
    return value


def token_count(payload: Mapping[str, Any], key: str) -> int:
    """``payload[key]`` when it is an int (a token count), else 0."""
    value = payload.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def call_arguments(arguments: str) -> dict[str, Any]:
    """A call's JSON arguments as an object (``{}`` when they are not one: the tool node
    has told the model so already)."""
    try:
        value = loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def join_turn(turns: list[dict[str, Any]], role: str, key: str, items: list[Any]) -> None:
    """Add a turn of ``role`` holding ``items`` (under ``key``: ``content``, ``parts``) to
    ``turns``, joined to the last one when it has the same role; none when it is empty."""
    if not items:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1][key].extend(items)
    else:
        turns.append({"role": role, key: items})


Block = dict[str, Any]


def block_turns(
    messages: Iterable[Message],
    user: Callable[[str, Iterable[ContentPart]], list[Block]],
    assistant: Callable[[AssistantMessage], list[Block]],
    result: Callable[[ToolResponse], Block],
    is_result: Callable[[Mapping[str, Any]], bool],
) -> list[dict[str, Any]]:
    """The conversation (without system messages) as turns of content blocks, each message
    made into blocks by ``user``, ``assistant`` and ``result`` (one per tool response):
    consecutive turns of one role joined, turns without blocks left out, and a user turn's
    tool results (``is_result``) first, each kind in order — the APIs take a tool call only
    when the next user turn starts with its results, and a user message sent between the
    call and its results (steering, a hook) is joined into that turn, after them."""
    out: list[dict[str, Any]] = []
    for message in messages:
        match message:
            case UserMessage(text=text, parts=parts):
                role, blocks = "user", user(text, parts)
            case AssistantMessage():
                role, blocks = "assistant", assistant(message)
            case ToolResponseMessage(responses=responses):
                role, blocks = "user", [result(r) for r in responses]
            case _:
                continue
        join_turn(out, role, "content", blocks)
    for turn in out:
        if turn["role"] == "user":
            turn["content"].sort(key=lambda block: not is_result(block))
    return out


def turn_in_progress(
    turns: list[dict[str, Any]], is_result: Callable[[Mapping[str, Any]], bool]
) -> list[dict[str, Any]]:
    """The assistant turns of the assistant turn a request continues: a tool loop is one
    turn, from the first answer after the user's last own message (anything but tool
    results, ``is_result``) on. Empty when the conversation does not end with tool
    results."""

    def only_results(turn: Mapping[str, Any]) -> bool:
        return all(is_result(block) for block in turn["content"])

    if not turns or turns[-1]["role"] != "user" or not only_results(turns[-1]):
        return []
    start = len(turns)
    while start > 0 and (turns[start - 1]["role"] == "assistant" or only_results(turns[start - 1])):
        start -= 1
    return [t for t in turns[start:] if t["role"] == "assistant"]

"""The one cattrs ``Converter`` and every conversion at the edges.

- tool arguments and structured output: strict structuring (no ``"5"`` → ``5``, no
  ``5.7`` → ``5``, no extra keys), with errors that name the parameter;
- results: any value a tool returns, as JSON text;
- the OpenAI chat-completions wire format (plain dicts), through private attrs classes
  that mirror it, so a malformed provider payload fails with a readable error.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, NewType, get_args, get_origin

import attrs
import cattrs
import cattrs.cols
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

converter = cattrs.Converter(forbid_extra_keys=True)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


class StrictTypeError(TypeError):
    """A value of the wrong JSON type; the message says what was expected and got."""


def _strict_int(value: Any, _: type) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise StrictTypeError(f"expected an integer, got {_type_name(value)} {value!r}")


def _strict_float(value: Any, _: type) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise StrictTypeError(f"expected a number, got {_type_name(value)} {value!r}")


def _strict_str(value: Any, _: type) -> str:
    if isinstance(value, str):
        return value
    raise StrictTypeError(f"expected a string, got {_type_name(value)} {value!r}")


def _strict_bool(value: Any, _: type) -> bool:
    if isinstance(value, bool):
        return value
    raise StrictTypeError(f"expected a boolean, got {_type_name(value)} {value!r}")


def _same_json(value: Any, option: Any) -> bool:
    # ``True == 1`` in Python, but a JSON boolean is never a number.
    return bool(value == option) and isinstance(value, bool) == isinstance(option, bool)


def _one_of(options: Iterable[Any], value: Any) -> StrictTypeError:
    allowed = ", ".join(json.dumps(o, default=repr) for o in options)
    return StrictTypeError(f"expected one of {allowed}, got {_type_name(value)} {value!r}")


def _is_literal(tp: Any) -> bool:
    return get_origin(tp) is Literal


def _is_enum(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


def _strict_literal(value: Any, tp: Any) -> Any:
    for option in get_args(tp):
        if _same_json(value, option):
            return option
    raise _one_of(get_args(tp), value)


def _strict_enum(value: Any, tp: type[enum.Enum]) -> enum.Enum:
    for member in tp:
        if _same_json(value, member.value):
            return member
    raise _one_of((m.value for m in tp), value)


def _is_array(tp: Any) -> bool:
    origin, args = get_origin(tp), get_args(tp)
    return origin is list or (origin is tuple and len(args) == 2 and args[1] is Ellipsis)


def _strict_array(tp: Any, conv: cattrs.BaseConverter) -> Callable[[Any, Any], Any]:
    factory = cattrs.cols.list_structure_factory
    if get_origin(tp) is tuple:
        factory = cattrs.cols.homogenous_tuple_structure_factory
    items = factory(tp, conv)

    def structure(value: Any, _: Any) -> Any:
        # A string or an object is iterable too, but is no JSON array.
        if not isinstance(value, list | tuple):
            raise StrictTypeError(f"expected an array, got {_type_name(value)}")
        return items(value, tp)

    return structure


def _is_object(tp: Any) -> bool:
    return get_origin(tp) is dict


def _strict_object(tp: Any, conv: cattrs.BaseConverter) -> Callable[[Any, Any], Any]:
    entries = cattrs.cols.mapping_structure_factory(tp, conv)

    def structure(value: Any, _: Any) -> Any:
        if not isinstance(value, Mapping):
            raise StrictTypeError(f"expected an object, got {_type_name(value)}")
        return entries(value, tp)

    return structure


converter.register_structure_hook(int, _strict_int)
converter.register_structure_hook(float, _strict_float)
converter.register_structure_hook(str, _strict_str)
converter.register_structure_hook(bool, _strict_bool)
converter.register_structure_hook_func(_is_literal, _strict_literal)
converter.register_structure_hook_func(_is_enum, _strict_enum)
converter.register_structure_hook_factory(_is_array, _strict_array)
converter.register_structure_hook_factory(_is_object, _strict_object)
# A tool response's ``data`` is written only when there is some: the stored layout of
# every other response stays what it was.
converter.register_unstructure_hook(
    ToolResponse,
    make_dict_unstructure_fn(ToolResponse, converter, data=override(omit_if_default=True)),
)


def _format_one(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, StrictTypeError):
        return str(exc)
    if isinstance(exc, KeyError):
        return "required, missing"
    if isinstance(exc, ForbiddenExtraKeysError):
        return f"unexpected {', '.join(sorted(exc.extra_fields))}"
    expected = getattr(type_, "__name__", None) or repr(type_)
    return f"expected {expected} ({type(exc).__name__}: {exc})"


def describe_error(exc: BaseException, root: str) -> str:
    """One line saying what is wrong where, from a cattrs structuring error."""
    if isinstance(exc, ClassValidationError | IterableValidationError):
        return "; ".join(cattrs.transform_error(exc, path=root, format_exception=_format_one))
    return f"{_format_one(exc, None)} @ {root}"


def to_json_text(value: Any) -> str:
    """A tool's result as text for the model: strings pass through, the rest is JSON.

    A value JSON cannot hold (a set, a datetime, NaN) raises ``TypeError`` /
    ``ValueError``, which the tool node turns into an error response naming the tool.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    return _ENCODER.encode(converter.unstructure(value))


# One encoder: json.dumps with non-default options would build a new one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


# --- the OpenAI chat-completions wire format -------------------------------------------


@attrs.frozen
class _WireFunction:
    name: str
    arguments: str = "{}"


@attrs.frozen
class _WireToolCall:
    id: str
    function: _WireFunction
    type: Literal["function"] = "function"


_Content = NewType("_Content", str)
"""A wire ``content`` read as text (see ``_content_text``)."""


@attrs.frozen
class _WireMessage:
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: _Content = _Content("")
    tool_calls: list[_WireToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None


def _wire_hook(cls: type) -> Callable[[Any, Any], Any]:
    # Providers add fields (refusal, annotations, audio …); the wire tolerates them.
    fields: Callable[[Any, Any], Any] = make_dict_structure_fn(
        cls, converter, _cattrs_forbid_extra_keys=False
    )

    def structure(value: Any, tp: Any) -> Any:
        if not isinstance(value, Mapping):
            raise StrictTypeError(f"expected an object, got {_type_name(value)}")
        return fields(value, tp)

    return structure


def _content_text(content: Any, _: Any = None) -> _Content:
    """Text of a wire ``content``: a string, null, or a list of ``{"type": "text"}`` parts."""
    if content is None:
        return _Content("")
    if isinstance(content, str):
        return _Content(content)
    if isinstance(content, list) and all(
        isinstance(part, dict) and isinstance(part.get("text", ""), str) for part in content
    ):
        return _Content("".join(part.get("text", "") for part in content))
    raise StrictTypeError(f"expected message content as a string or parts, got {content!r}")


converter.register_structure_hook(_Content, _content_text)

for _cls in (_WireFunction, _WireToolCall, _WireMessage):
    converter.register_structure_hook(_cls, _wire_hook(_cls))


def message_to_wire(message: Message) -> list[dict[str, Any]]:
    """One message as wire dicts (a ``ToolResponseMessage`` becomes one per response)."""
    match message:
        case SystemMessage(text=text):
            return [{"role": "system", "content": text}]
        case UserMessage(text=text):
            return [{"role": "user", "content": text}]
        case AssistantMessage(text=text, tool_calls=calls):
            # Content may be null only beside tool calls; without them it is required.
            wire: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
            if calls:
                wire["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in calls
                ]
            return [wire]
        case ToolResponseMessage(responses=responses):
            return [
                {"role": "tool", "tool_call_id": r.id, "content": r.response_data}
                for r in responses
            ]
    raise TypeError(f"not a message: {message!r}")


def messages_to_wire(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """A conversation as the ``messages`` array of a chat-completions request."""
    return [wire for message in messages for wire in message_to_wire(message)]


def _malformed(exc: Exception, root: str) -> ValueError:
    return ValueError(f"malformed chat-completions {root}: {describe_error(exc, root)}")


def assistant_from_wire(payload: Any) -> AssistantMessage:
    """An ``AssistantMessage`` from a wire ``message`` dict (a response's ``choices[i]``).

    A malformed payload raises the converter's error; ``describe_error`` words it, under
    the caller's own path (``$.choices[0].message``).
    """
    return _assistant(converter.structure(payload, _WireMessage))


def _assistant(wire: _WireMessage) -> AssistantMessage:
    calls = [ToolCall(c.id, c.function.name, c.function.arguments) for c in wire.tool_calls or ()]
    return AssistantMessage(wire.content, calls)


def messages_from_wire(payload: Sequence[Any]) -> list[Message]:
    """A wire ``messages`` array as messages; consecutive ``tool`` items form one message.

    A tool item's name is read from the assistant call it answers. The wire carries no
    ``is_error`` flag and no metadata, so those come back as their defaults. A malformed
    payload is a ``ValueError`` saying what is wrong where.
    """
    try:
        return _from_wire(converter.structure(payload, list[_WireMessage]))
    except (cattrs.BaseValidationError, StrictTypeError) as exc:
        raise _malformed(exc, "messages") from exc


def _from_wire(wires: list[_WireMessage]) -> list[Message]:
    names: dict[str, str] = {}
    out: list[Message] = []
    pending: list[ToolResponse] = []
    for index, wire in enumerate(wires):
        if wire.role != "tool" and pending:
            out.append(ToolResponseMessage(pending))
            pending = []
        text = wire.content
        if wire.role in ("system", "developer"):
            out.append(SystemMessage(text))
        elif wire.role == "user":
            out.append(UserMessage(text))
        elif wire.role == "assistant":
            message = _assistant(wire)
            names.update((c.id, c.name) for c in message.tool_calls)
            out.append(message)
        else:
            if wire.tool_call_id is None:
                raise ValueError(
                    "malformed chat-completions messages: a 'tool' message has no "
                    f"tool_call_id @ messages[{index}]"
                )
            name = wire.name or names.get(wire.tool_call_id, "")
            pending.append(ToolResponse(wire.tool_call_id, name, text))
    if pending:
        out.append(ToolResponseMessage(pending))
    return out

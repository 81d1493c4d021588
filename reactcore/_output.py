"""Structured output the model is held to: how ``output_type`` reaches the model, how its
answer is parsed, and what the model reads when the answer does not fit.

Three ways to ask (``ReactAgent(output_mode=...)``):

- ``"response_format"`` (the default): the request carries ``response_format: {"type":
  "json_schema", "json_schema": {"name", "schema", "strict"}}``, which OpenAI-compatible
  endpoints that support it hold the model to; ``strict`` is true when the schema meets
  the strict subset (every property required, no open objects), false otherwise. The
  schema is also written in the prompt, for endpoints that ignore the field.
- ``"tool"``: the model is given a tool ``final_answer`` whose parameters are the schema,
  for endpoints without ``response_format``; its arguments are the answer.
- ``"prompt"``: the schema in the prompt only.

An answer that does not parse or fit is sent back to the model with the error (up to
``output_retries`` times); after that the run raises ``OutputParseError``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import attrs
import cattrs

from ._exceptions import OutputParseError
from ._messages import AssistantMessage, ToolCall, ToolResponse, ToolResponseMessage, UserMessage
from ._schema import is_strict, json_schema
from ._serde import converter, describe_error
from ._tools import Tool

OutputMode = Literal["response_format", "tool", "prompt"]
OUTPUT_MODES: tuple[str, ...] = ("response_format", "tool", "prompt")
FINAL_ANSWER = "final_answer"

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


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


def _schema_name(output_type: type) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", output_type.__name__)[:64] or "output"


def response_format(output_type: type) -> dict[str, Any]:
    """The chat-completions ``response_format`` holding the model to ``output_type``."""
    schema = json_schema(output_type)
    spec = {"name": _schema_name(output_type), "schema": schema, "strict": is_strict(schema)}
    return {"type": "json_schema", "json_schema": spec}


def final_answer_tool(output_type: type) -> Tool:
    """The tool whose arguments are the final answer (``output_mode="tool"``).

    The loop takes its calls before the tool node would run them (``final_answer``);
    the function is there only so that a call that reaches a node answers sensibly.
    """
    if not attrs.has(output_type):
        raise TypeError(
            f'output_mode="tool" needs an attrs class as output_type (the tool\'s arguments '
            f"are its fields), got {output_type!r}"
        )

    def answer(**arguments: Any) -> str:
        return "Final answer recorded."

    description = (
        f"Give your final answer by calling this tool once: its arguments are the answer "
        f"({output_type.__name__}). Do not answer in text."
    )
    return Tool(FINAL_ANSWER, description, json_schema(output_type), answer, is_async=False)


def retry_message(error: OutputParseError, mode: str) -> UserMessage:
    """What the model reads when its answer did not fit: the error, and what to do."""
    # In the other modes the prompt's schema note follows this message (the last user one).
    how = (
        f" Call the {FINAL_ANSWER} tool with arguments that fit its schema."
        if mode == "tool"
        else ""
    )
    return UserMessage(f"Your answer could not be used: {error}. Answer again.{how}")


@attrs.frozen
class FinalAnswer:
    """What the loop does with a model answer that calls ``final_answer``: the messages
    to add, and whether the answer was usable (else ``error`` says why)."""

    messages: list[Any]
    error: OutputParseError | None


def take_final_answer(
    assistant: AssistantMessage, call: ToolCall, output_type: type
) -> FinalAnswer:
    """Check ``call``'s arguments against ``output_type``.

    Usable: every call of the turn is answered (the others are not run), and the answer
    follows as an assistant message holding the arguments, so the run's text is the JSON
    and ``output`` parses from it. Not usable: the call is answered with the error, and
    the other calls are left for the tool node.
    """
    try:
        parse_output(call.arguments, output_type)
    except OutputParseError as exc:
        text = f"Error: {exc}. Call {FINAL_ANSWER} again with arguments that fit its schema."
        response = ToolResponse(call.id, FINAL_ANSWER, text, is_error=True)
        return FinalAnswer([ToolResponseMessage([response])], exc)
    responses = [
        ToolResponse(c.id, c.name, "Final answer recorded.")
        if c.id == call.id
        else ToolResponse(c.id, c.name, "Error: not run: the final answer ended the run.", True)
        for c in assistant.tool_calls
    ]
    answer = AssistantMessage(call.arguments, metadata={FINAL_ANSWER: call.id})
    return FinalAnswer([ToolResponseMessage(responses), answer], None)

"""Structured output the model is held to: with ``output_type`` an attrs class, the agent
sends its JSON Schema as ``response_format`` (and in the prompt), parses the answer into
the class (``result.output``), and asks again with the error when an answer does not fit
(``output_retries=1``), before raising ``OutputParseError``. For endpoints without
``response_format``, ``output_mode="tool"`` gives the model a ``final_answer`` tool whose
arguments are the answer.

    python examples/structured_output.py
"""

from __future__ import annotations

import anyio
import attrs

from reactcore import AssistantMessage, OutputParseError, ReactAgent, ToolCall, UserMessage
from reactcore.testing import ScriptedChatModel


@attrs.frozen
class Trip:
    city: str
    days: int
    highlights: list[str]


GOOD = '{"city": "Lisbon", "days": 3, "highlights": ["Alfama", "Belém"]}'
BAD = '{"city": "Lisbon", "days": "three", "highlights": []}'


async def main() -> None:
    # What a model typically answers: JSON in a code fence (the fence is optional).
    model = ScriptedChatModel([f"```json\n{GOOD}\n```"])
    agent = ReactAgent("planner", model, output_type=Trip)
    result = await agent.invoke("Plan three days in Lisbon.")
    trip: Trip = result.output
    print(f"output: {trip!r}")
    print(f"{trip.days} days in {trip.city}: {', '.join(trip.highlights)}")
    request = model.requests[0]
    assert request.options.response_format is not None
    spec = request.options.response_format["json_schema"]
    print(f"response_format: json_schema {spec['name']!r}, strict={spec['strict']}")
    asked = request.messages[-1]
    assert isinstance(asked, UserMessage)
    print("the model was asked:", *asked.text.splitlines(), sep="\n  ")

    # An answer that does not fit: the model is told why, and its second answer is used.
    model = ScriptedChatModel([BAD, GOOD])
    result = await ReactAgent("planner", model, output_type=Trip).invoke("Plan Lisbon.")
    told = model.requests[1].messages[-1]
    assert isinstance(told, UserMessage)
    print(f"asked again with: {told.text.splitlines()[0]}")
    print(f"second answer: {result.output!r} ({result.model_calls} model calls)")

    # Answers that never fit: after the retry, OutputParseError names what is wrong.
    model = ScriptedChatModel([BAD, BAD])
    try:
        await ReactAgent("planner", model, output_type=Trip).invoke("Plan Lisbon.")
    except OutputParseError as exc:
        print(f"OutputParseError: {exc}")

    # output_mode="tool": the answer comes as the arguments of a final_answer call.
    call = ToolCall("call_1", "final_answer", GOOD)
    model = ScriptedChatModel([AssistantMessage("", [call])])
    agent = ReactAgent("planner", model, output_type=Trip, output_mode="tool")
    result = await agent.invoke("Plan Lisbon.")
    print(f"tools the model saw: {list(model.requests[0].tools)}")
    print(f"from final_answer: {result.output!r}")


if __name__ == "__main__":
    anyio.run(main)

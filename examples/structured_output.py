"""Structured output: with ``output_type`` an attrs class, the agent asks the model for
JSON following that class's schema, and ``result.output`` is the parsed object.

    python examples/structured_output.py
"""

from __future__ import annotations

import anyio
import attrs

from reactcore import OutputParseError, ReactAgent, UserMessage
from reactcore.testing import ScriptedChatModel


@attrs.frozen
class Trip:
    city: str
    days: int
    highlights: list[str]


async def main() -> None:
    # What a model typically answers: JSON in a code fence (the fence is optional).
    answer = '```json\n{"city": "Lisbon", "days": 3, "highlights": ["Alfama", "Belém"]}\n```'
    model = ScriptedChatModel([answer])
    agent = ReactAgent("planner", model, output_type=Trip)
    result = await agent.invoke("Plan three days in Lisbon.")
    trip: Trip = result.output
    print(f"output: {trip!r}")
    print(f"{trip.days} days in {trip.city}: {', '.join(trip.highlights)}")
    asked = model.requests[0].messages[-1]
    assert isinstance(asked, UserMessage)
    print("the model was asked:", *asked.text.splitlines(), sep="\n  ")

    # An answer that does not fit the class fails, naming what is wrong.
    model = ScriptedChatModel(['{"city": "Lisbon", "days": "three", "highlights": []}'])
    agent = ReactAgent("planner", model, output_type=Trip)
    try:
        await agent.invoke("Plan three days in Lisbon.")
    except OutputParseError as exc:
        print(f"OutputParseError: {exc}")


if __name__ == "__main__":
    anyio.run(main)

"""The README's agent: offline on a scripted model, or on any OpenAI-compatible endpoint
when REACTCORE_MODEL and OPENAI_BASE_URL / OPENAI_API_KEY are set."""

import os

import anyio

from reactcore import AssistantMessage, ChatModel, ReactAgent, ToolCall, tool
from reactcore.testing import ScriptedChatModel


@tool
async def weather(city: str) -> str:
    """Today's weather in a city."""
    await anyio.sleep(0.1)  # a real tool would call an API here
    return f"{city}: 18 °C, light rain"


def model() -> ChatModel | str:
    if "REACTCORE_MODEL" in os.environ:  # a real endpoint, configured by the environment
        return f"openai:{os.environ['REACTCORE_MODEL']}"  # the agent builds the client
    calls = [
        ToolCall(f"c{i}", "weather", f'{{"city": "{c}"}}') for i, c in enumerate(["Oslo", "Lima"])
    ]
    return ScriptedChatModel([AssistantMessage("", calls), "Rain in both Oslo and Lima."])


async def main() -> None:
    # The agent closes the client it built from a provider string when the block ends.
    async with ReactAgent(
        "forecaster", model(), tools=[weather], parallel_tool_execution=True
    ) as agent:
        result = await agent.invoke("Compare the weather in Oslo and Lima.")
    print(result.text)


anyio.run(main)

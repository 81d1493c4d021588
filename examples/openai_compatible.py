"""An agent on a real model, behind any OpenAI-compatible chat-completions endpoint
(OpenAI, vLLM, Ollama, llama.cpp, a gateway...), calling a tool.

    REACTCORE_MODEL=gpt-4o-mini OPENAI_API_KEY=sk-... python examples/openai_compatible.py
    REACTCORE_MODEL=llama3.1 OPENAI_BASE_URL=http://localhost:11434/v1 \\
        python examples/openai_compatible.py "What is 12 times 34?"
"""

from __future__ import annotations

import os
import sys

import anyio

from reactcore import ModelError, OpenAIChatModel, ReactAgent, tool

USAGE = (
    "set REACTCORE_MODEL (e.g. gpt-4o-mini) and OPENAI_API_KEY, or OPENAI_BASE_URL for "
    "another OpenAI-compatible server (e.g. http://localhost:11434/v1)"
)


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers exactly."""
    return a * b


async def main(model_name: str, question: str) -> int:
    # base_url and api_key default to OPENAI_BASE_URL and OPENAI_API_KEY.
    async with OpenAIChatModel(model_name) as model:
        agent = ReactAgent(
            "calculator",
            model,
            tools=[multiply],
            system_prompt="Use the multiply tool for any multiplication.",
        )
        try:
            result = await agent.invoke(question)
        except ModelError as exc:
            print(f"the model failed: {exc}", file=sys.stderr)
            return 1
    print(result.text)
    usage = result.usage
    print(f"({result.model_calls} model calls, {usage.total_tokens} tokens)")
    return 0


if __name__ == "__main__":
    model_name = os.environ.get("REACTCORE_MODEL")
    has_endpoint = os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")
    if not (model_name and has_endpoint):
        print(USAGE, file=sys.stderr)
        sys.exit(2)
    question = " ".join(sys.argv[1:]) or "What is 17 times 23?"
    sys.exit(anyio.run(main, model_name, question))

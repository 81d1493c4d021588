"""Per-call overhead on Azure OpenAI: reactcore's Azure client (``azure_model``, api-key)
beside the official ``openai.AsyncAzureOpenAI`` on the same loopback Azure server.

Both send the same small chat-completions request to
``/openai/deployments/{deployment}/chat/completions?api-version=…`` on
``serve_azure_openai`` (uvicorn on 127.0.0.1, real sockets, kept-alive connections) and
read Azure's answer: whole (``call`` / ``create``), and streamed (``stream`` into a
``ChunkAssembler`` / ``create(stream=True)`` read to the end, ~40 events whose first
has no choices). Each side makes ``--calls`` calls per repeat, in turn; the table gives
the median seconds per call of each and the ratio SDK / reactcore (above 1: reactcore
is faster). The server's own time is in both. asyncio only (the SDK's home backend).

    python benchmarks/bench_azure.py [--quick] [--repeat N] [--json PATH]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CallPlan, model_side, per_call_medians, per_call_script

from reactcore import ModelRequest, UserMessage
from reactcore.models import azure_model
from reactcore.testing import azure_reply, azure_stream_reply, serve_azure_openai

KEY = "azure-bench-key"
VERSION = "2024-10-21"
DEPLOYMENT = "gpt-4o-bench"
ANSWER = "The weather in Paris is sunny, with a light breeze from the west; 21 degrees."


async def measure(endpoint: str, plan: CallPlan, stream: bool) -> tuple[float, float]:
    import openai  # a benchmark dependency, as the SDK's tests have it

    request = ModelRequest([UserMessage("What is the weather in Paris?")])
    messages: Any = [{"role": "user", "content": "What is the weather in Paris?"}]
    async with (
        azure_model(DEPLOYMENT, endpoint=endpoint, api_key=KEY, api_version=VERSION) as ours,
        openai.AsyncAzureOpenAI(azure_endpoint=endpoint, api_key=KEY, api_version=VERSION) as sdk,
    ):

        async def sdk_side() -> None:
            if not stream:
                await sdk.chat.completions.create(model=DEPLOYMENT, messages=messages)
                return
            events = await sdk.chat.completions.create(
                model=DEPLOYMENT, messages=messages, stream=True
            )
            async for _ in events:
                pass

        ours_s, sdk_s = await per_call_medians([model_side(ours, request, stream), sdk_side], plan)
    return ours_s, sdk_s


def reply(stream: bool) -> Any:
    return azure_stream_reply(ANSWER, chunk_size=2) if stream else azure_reply(ANSWER)


def main(argv: list[str] | None = None) -> None:
    per_call_script(__doc__ or "", serve_azure_openai, reply, measure, argv)


if __name__ == "__main__":
    main()

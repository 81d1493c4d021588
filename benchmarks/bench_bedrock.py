"""Per-call overhead on Amazon Bedrock: reactcore's ``BedrockModel`` (SigV4 through
botocore's signer, httpx) beside boto3's ``bedrock-runtime`` client on the same loopback
Bedrock server.

Both send the same small Converse request to ``/model/{modelId}/converse`` and
``/converse-stream`` on ``serve_bedrock`` (uvicorn on 127.0.0.1, real sockets,
kept-alive connections; it recomputes every request's SigV4 signature with botocore, in
both sides' time) and read the answer: whole (``call`` / ``converse``), and streamed
(``stream`` into a ``ChunkAssembler`` / ``converse_stream`` read to the end, ~40
event-stream frames). boto3 is synchronous: each of its calls runs in a worker thread
(``anyio.to_thread.run_sync``), as an async program has to run it — the thread hop is
part of its cost. Each side makes ``--calls`` calls per repeat, in turn; the table gives
the median seconds per call of each and the ratio SDK / reactcore (above 1: reactcore
is faster). asyncio only.

    python benchmarks/bench_bedrock.py [--quick] [--repeat N] [--json PATH]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CallPlan, model_side, per_call_medians, per_call_script

from reactcore import ModelRequest, UserMessage
from reactcore.models import BedrockModel
from reactcore.testing import (
    TEST_ACCESS_KEY_ID,
    TEST_SECRET_ACCESS_KEY,
    BedrockStreamReply,
    bedrock_reply,
    serve_bedrock,
)

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
REGION = "us-east-1"
ANSWER = "The weather in Paris is sunny, with a light breeze from the west; 21 degrees."
QUESTION = "What is the weather in Paris?"


async def measure(endpoint: str, plan: CallPlan, stream: bool) -> tuple[float, float]:
    import boto3  # a benchmark dependency, as the tests have it
    from botocore.config import Config

    request = ModelRequest([UserMessage(QUESTION)])
    messages = [{"role": "user", "content": [{"text": QUESTION}]}]
    sdk = boto3.client(
        "bedrock-runtime",
        region_name=REGION,
        endpoint_url=endpoint,
        aws_access_key_id=TEST_ACCESS_KEY_ID,
        aws_secret_access_key=TEST_SECRET_ACCESS_KEY,
        config=Config(retries={"max_attempts": 1}),
    )

    def sdk_call() -> None:
        if not stream:
            sdk.converse(modelId=MODEL, messages=messages)
            return
        answer: Any = sdk.converse_stream(modelId=MODEL, messages=messages)
        for _ in answer["stream"]:
            pass

    async with BedrockModel(
        MODEL,
        base_url=endpoint,
        region=REGION,
        aws_access_key_id=TEST_ACCESS_KEY_ID,
        aws_secret_access_key=TEST_SECRET_ACCESS_KEY,
    ) as ours:

        async def sdk_side() -> None:
            await anyio.to_thread.run_sync(sdk_call)

        try:
            ours_s, sdk_s = await per_call_medians(
                [model_side(ours, request, stream), sdk_side], plan
            )
        finally:
            sdk.close()
    return ours_s, sdk_s


def reply(stream: bool) -> Any:
    return BedrockStreamReply.of(ANSWER, chunk_size=2) if stream else bedrock_reply(ANSWER)


def main(argv: list[str] | None = None) -> None:
    per_call_script(__doc__ or "", serve_bedrock, reply, measure, argv)


if __name__ == "__main__":
    main()

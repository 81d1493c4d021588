"""Per-call overhead on Google Vertex AI: reactcore's ``VertexGeminiModel`` beside
``google-genai`` (``vertexai=True``, its async client ``client.aio``), and
``VertexAnthropicModel`` beside ``anthropic.AsyncAnthropicVertex``, each pair on the same
loopback Vertex server.

Every side authenticates as Application Default Credentials say: a service-account file
(``GOOGLE_APPLICATION_CREDENTIALS``) whose ``token_uri`` is the server's own token
endpoint — one token, fetched at the warm-up and cached — and sends the same small request
to ``serve_vertex_gemini`` (``:generateContent`` / ``:streamGenerateContent?alt=sse``) or
``serve_vertex_anthropic`` (``:rawPredict`` / ``:streamRawPredict``): uvicorn on
127.0.0.1, real sockets, kept-alive connections, the token checked on every request (in
both sides' time). Whole answers (``call`` / ``generate_content`` / ``create``), and
streamed ones (``stream`` into a ``ChunkAssembler`` / ``generate_content_stream`` /
``create(stream=True)`` read to the end; ~20 Gemini chunks, ~45 Anthropic events). Each
side makes ``--calls`` calls per repeat, in turn; the table gives the median seconds per
call of each and the ratio SDK / reactcore (above 1: reactcore is faster). asyncio only.

    python benchmarks/bench_vertex.py [--quick] [--repeat N] [--json PATH]
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    CallPlan,
    Side,
    model_side,
    parse,
    per_call_medians,
    per_call_row,
    print_per_call,
)

from reactcore import ChatModel, ModelRequest, UserMessage
from reactcore.models import VertexAnthropicModel, VertexGeminiModel
from reactcore.testing import (
    AnthropicSSEReply,
    GeminiSSEReply,
    VertexAIServer,
    anthropic_message_reply,
    gemini_reply,
    serve_vertex_anthropic,
    serve_vertex_gemini,
)

ANSWER = "The weather in Paris is sunny, with a light breeze from the west; 21 degrees."
QUESTION = "What is the weather in Paris?"
REQUEST = ModelRequest([UserMessage(QUESTION)])
LOCATION = "us-central1"
REGION = "us-east5"
GEMINI = "gemini-2.5-flash"
CLAUDE = "claude-sonnet-4-5@20250929"

SDKSide = Callable[[VertexAIServer, bool], AbstractAsyncContextManager[Side]]


@asynccontextmanager
async def genai_side(server: VertexAIServer, stream: bool) -> AsyncIterator[Side]:
    from google import genai  # benchmark dependencies, as the tests have them
    from google.genai import types

    client = genai.Client(
        vertexai=True,
        project=server.project,
        location=LOCATION,
        http_options=types.HttpOptions(base_url=server.base_url),
    ).aio

    async def side() -> None:
        if not stream:
            await client.models.generate_content(model=GEMINI, contents=QUESTION)
            return
        async for _ in await client.models.generate_content_stream(model=GEMINI, contents=QUESTION):
            pass

    try:
        yield side
    finally:
        await client.aclose()


@asynccontextmanager
async def anthropic_side(server: VertexAIServer, stream: bool) -> AsyncIterator[Side]:
    import anthropic

    messages: Any = [{"role": "user", "content": QUESTION}]
    async with anthropic.AsyncAnthropicVertex(
        region=REGION, project_id=server.project, base_url=server.base_url
    ) as client:

        async def side() -> None:
            if not stream:
                await client.messages.create(model=CLAUDE, max_tokens=1024, messages=messages)
                return
            events = await client.messages.create(
                model=CLAUDE, max_tokens=1024, messages=messages, stream=True
            )
            async for _ in events:
                pass

        yield side


async def measure(
    ours: ChatModel, sdk: SDKSide, server: VertexAIServer, plan: CallPlan, stream: bool
) -> list[float]:
    async with ours, sdk(server, stream) as sdk_call:
        return await per_call_medians([model_side(ours, REQUEST, stream), sdk_call], plan)


@contextmanager
def credentials(server: VertexAIServer, folder: str) -> Iterator[None]:
    """The server's service account as Application Default Credentials for the block."""
    before = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    path = server.auth.write_service_account(Path(folder) / "service-account.json")
    os.environ["GOOGLE_APPLICATION_CREDENTIALS"] = str(path)
    try:
        yield
    finally:
        if before is None:
            del os.environ["GOOGLE_APPLICATION_CREDENTIALS"]
        else:
            os.environ["GOOGLE_APPLICATION_CREDENTIALS"] = before


def main(argv: list[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", CallPlan(calls=50, repeat=3), CallPlan(), argv)
    rows = []
    for stream in (False, True):
        mode = "streamed" if stream else "whole"
        gemini = GeminiSSEReply.of(ANSWER, chunk_size=4) if stream else gemini_reply(ANSWER)
        claude = (
            AnthropicSSEReply.of(ANSWER, chunk_size=2)
            if stream
            else anthropic_message_reply(ANSWER)
        )
        cases: list[tuple[str, Any, Any, Callable[[VertexAIServer], ChatModel], SDKSide]] = [
            (
                "Gemini",
                serve_vertex_gemini,
                gemini,
                lambda s: VertexGeminiModel(
                    GEMINI, base_url=s.base_url, location=LOCATION, project=s.project
                ),
                genai_side,
            ),
            (
                "Claude",
                serve_vertex_anthropic,
                claude,
                lambda s: VertexAnthropicModel(
                    CLAUDE, base_url=s.base_url, location=REGION, project=s.project
                ),
                anthropic_side,
            ),
        ]
        for name, serve, reply, model, sdk in cases:
            with (
                tempfile.TemporaryDirectory() as folder,
                serve(lambda _, reply=reply: reply) as server,
                credentials(server, folder),
            ):
                ours, theirs = anyio.run(
                    measure, model(server), sdk, server, plan, stream, backend="asyncio"
                )
            rows.append(per_call_row(f"{name} {mode}", plan.calls, ours, theirs))
    print_per_call(rows, args.json)


if __name__ == "__main__":
    main()

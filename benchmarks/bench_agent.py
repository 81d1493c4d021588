"""Benchmark: the agent loop, the OpenAI client and its SSE parser, each beside a baseline
measured in the same run.

- ``loop``: a ``ReactAgent`` over a ``ScriptedChatModel`` that asks for one no-op async
  tool call per turn for T turns, then answers (a no-op hook at every position, events
  on). Streaming on (the default) and off (``metadata={"_stream_": False}``), and
  streaming with a reader draining the events. Baselines: a hand-written loop calling
  the scripted model (``call()``, or ``stream()`` into a ``ChunkAssembler``) and awaiting
  the tool function directly. µs per iteration (one model call and one tool call).
- ``http``: ``OpenAIChatModel.call`` and ``.stream`` (consumed fully) against a local
  uvicorn server, N sequential requests, beside a raw ``httpx.AsyncClient`` POST (JSON
  decoded) and a raw streamed POST read line by line — the same client, the same body
  (``request_body``), the same headers. The server's connections get ``TCP_NODELAY``
  (see ``tcp_nodelay_server``): without it every request waits ~44 ms for a delayed ACK.
  The server runs in a thread of this process: its work shares the GIL with the client's,
  and is in both sides of the ratio.
- ``sse``: a long pre-built SSE body through the client's own parser (``SSEDecoder``,
  ``parse_chunk``) and a ``ChunkAssembler``, no network, beside ``json.loads`` of each
  event's data; ops/s is chunks per second.

Columns: median wall time over the repeats (interleaved, after one warm-up run of each
case), µs per operation, operations per second, and the ratio to the baseline named.

    python benchmarks/bench_agent.py [--quick] [--backend asyncio|trio|both]
                                     [--repeat R] [--json PATH]
"""

from __future__ import annotations

import json
import socket
import unittest.mock
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import anyio
import attrs
import httpx
from _common import Case, Prepare, Row, Run, backends, fmt, measure, parse

from reactcore import (
    AssistantMessage,
    ChunkAssembler,
    Message,
    ModelChunk,
    OpenAIChatModel,
    ReactAgent,
    RunnableConfig,
    SystemMessage,
    Tool,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    Usage,
    UserMessage,
    testing,
)
from reactcore._llm_node import STREAM, call_model
from reactcore.models._http import SSEDecoder
from reactcore.models.base import ModelRequest, ToolCallDelta, ToolSpec
from reactcore.models.openai import _DONE, parse_chunk, request_body
from reactcore.testing import (
    HTTPReply,
    OpenAICompatibleServer,
    ScriptedChatModel,
    SSEReply,
    chunk_json,
    serve_openai_compatible,
)

MODEL = "bench-model"
API_KEY = "sk-bench"


@attrs.frozen
class Plan:
    turns: int  # loop: iterations per run
    requests: int  # http: sequential requests per run
    sse_chunks: int  # sse: chunk events in the body
    repeat: int


FULL = Plan(turns=200, requests=200, sse_chunks=20_000, repeat=5)
QUICK = Plan(turns=50, requests=50, sse_chunks=2_000, repeat=3)


def repeated(n: int, once: Run) -> Prepare:
    """A run of ``n`` sequential awaits of ``once``."""

    async def run() -> None:
        for _ in range(n):
            await once()

    return lambda: run


# --- loop: the agent beside a hand-written loop ------------------------------------------


async def noop() -> None:
    """The tool: does nothing, so the time measured is the loop's."""


@attrs.frozen
class PassiveHook:
    """A hook at every position that changes nothing: the hook machinery runs."""

    name: str = "passive"

    async def before_agent(self, state: Any, config: Any) -> None: ...
    async def after_agent(self, state: Any, config: Any) -> None: ...
    async def before_model(self, state: Any, config: Any) -> None: ...
    async def after_model(self, state: Any, config: Any) -> None: ...
    async def before_tools(self, state: Any, config: Any) -> None: ...


def script(turns: int) -> list[AssistantMessage]:
    """One no-op call per turn, then the answer."""
    calls = [AssistantMessage("", [ToolCall(f"call_{i}", "noop", "{}")]) for i in range(turns)]
    return [*calls, AssistantMessage("done")]


def agent_case(turns: int, *, stream: bool, read_events: bool = False) -> Prepare:
    replies = script(turns)
    config = RunnableConfig(metadata={STREAM: stream})

    def prepare() -> Run:
        agent = ReactAgent(
            "bench",
            ScriptedChatModel(replies),
            tools=[noop],
            hooks=[PassiveHook()],
            max_iterations=None,
        )

        async def run() -> None:
            if read_events:
                async with agent.stream("go", config) as events:
                    async for _ in events:
                        pass
            else:
                result = await agent.invoke("go", config)
                assert result.model_calls == turns + 1, result.model_calls

        return run

    return prepare


def bare_case(turns: int, *, stream: bool) -> Prepare:
    """The least a loop does: ask the model, await the tool, keep the messages.

    ``call_model`` is ``model.call``, or ``model.stream`` into a ``ChunkAssembler``.
    """
    replies = script(turns)
    tools: dict[str, Callable[..., Awaitable[Any]]] = {"noop": noop}
    context = {STREAM: stream}

    def prepare() -> Run:
        model = ScriptedChatModel(replies)

        async def run() -> None:
            messages: list[Message] = [UserMessage("go")]
            while True:
                response = await call_model(model, ModelRequest(messages, context=context))
                messages.append(response.message)
                calls = response.message.tool_calls
                if not calls:
                    return
                answers = []
                for call in calls:
                    result = await tools[call.name](**json.loads(call.arguments))
                    answers.append(ToolResponse(call.id, call.name, json.dumps(result)))
                messages.append(ToolResponseMessage(answers))

        return run

    return prepare


def loop_cases(plan: Plan) -> list[Case]:
    t = plan.turns
    return [
        Case("bare call()", t, bare_case(t, stream=False)),
        Case("bare stream()", t, bare_case(t, stream=True)),
        Case("agent, stream off", t, agent_case(t, stream=False), "bare call()"),
        Case("agent, stream on", t, agent_case(t, stream=True), "bare stream()"),
        Case(
            "agent, stream on, events read",
            t,
            agent_case(t, stream=True, read_events=True),
            "bare stream()",
        ),
    ]


# --- http: OpenAIChatModel beside raw httpx, against a local server ----------------------

ANSWER = AssistantMessage(
    "Let me look that up for you. The forecast service knows the weather in most cities, "
    "so I will ask it for Paris first.",
    [ToolCall("call_weather", "get_weather", '{"city": "Paris", "unit": "celsius"}')],
)
ANSWER_USAGE = Usage(120, 48, 168)


def server_reply(body: Any) -> SSEReply | HTTPReply:
    """Streamed or whole, as the request asks."""
    if body.get("stream"):
        return SSEReply.of(ANSWER, usage=ANSWER_USAGE)
    return HTTPReply.completion(ANSWER, usage=ANSWER_USAGE)


@contextmanager
def tcp_nodelay_server() -> Iterator[None]:
    """Servers started in the block set ``TCP_NODELAY`` on their connections.

    ``reactcore.testing._listening_socket`` makes its socket without ``IPPROTO_TCP``, so
    uvicorn's asyncio loop does not set ``TCP_NODELAY`` on accepted connections, and a
    reply written in pieces waits for the client's delayed ACK: ~44 ms a request, which
    would hide everything measured here. Connections inherit the option from the
    listening socket; setting it twice is harmless once the helper sets it itself.
    """
    original = testing._listening_socket

    def listening() -> socket.socket:
        sock = original()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    with unittest.mock.patch.object(testing, "_listening_socket", listening):
        yield


def bench_request() -> ModelRequest:
    spec = ToolSpec.of(Tool.from_function(get_weather))
    messages = [UserMessage("What is the weather in Paris, and should I take an umbrella?")]
    system = SystemMessage("You are a helpful assistant. Use the tools when they help.")
    return ModelRequest(messages, system, tools=[spec.name], tool_specs=[spec])


async def get_weather(city: str, unit: str = "celsius") -> str:
    """The current weather in ``city``."""
    return f"sunny in {city}"


def _headers(stream: bool) -> dict[str, str]:
    """What ``OpenAIChatModel`` sends besides the body."""
    accept = "text/event-stream" if stream else "application/json"
    return {"Accept": accept, "Authorization": f"Bearer {API_KEY}"}


@attrs.frozen
class Op:
    """One request, done the way ``name`` says; compared with the op ``baseline``."""

    name: str
    once: Run
    baseline: str | None = None


def http_ops(client: httpx.AsyncClient, base_url: str) -> list[Op]:
    model = OpenAIChatModel(
        MODEL, base_url=base_url, api_key=API_KEY, http_client=client, max_retries=0
    )
    request = bench_request()
    url = f"{base_url}/chat/completions"
    whole = request_body(request, MODEL, stream=False)
    streamed = request_body(request, MODEL, stream=True)

    async def raw_post() -> None:
        response = await client.post(url, json=whole, headers=_headers(False))
        response.raise_for_status()
        response.json()

    async def raw_stream() -> None:
        async with client.stream("POST", url, json=streamed, headers=_headers(True)) as response:
            response.raise_for_status()
            async for _ in response.aiter_lines():
                pass

    async def model_call() -> None:
        await model.call(request)

    async def model_stream() -> None:
        async with model.stream(request) as chunks:
            async for _ in chunks:
                pass

    return [
        Op("raw httpx post", raw_post),
        Op("model.call", model_call, "raw httpx post"),
        Op("raw httpx stream", raw_stream),
        Op("model.stream", model_stream, "raw httpx stream"),
    ]


async def check_same_requests(ops: Sequence[Op], server: OpenAICompatibleServer) -> None:
    """Each model op sends what its raw baseline sends: body and headers, as received."""
    by_name = {op.name: op for op in ops}
    for op in ops:
        if op.baseline is None:
            continue
        seen = []
        for each in (by_name[op.baseline], op):
            await each.once()
            headers = server.request_headers[-1]
            seen.append((server.requests[-1], headers["accept"], headers["authorization"]))
        if seen[0] != seen[1]:
            raise RuntimeError(f"{op.name} and {op.baseline} sent different requests")


def http_cases(ops: Sequence[Op], n: int) -> list[Case]:
    return [Case(op.name, n, repeated(n, op.once), op.baseline) for op in ops]


# --- sse: the client's parser on a pre-built body ----------------------------------------


def sse_chunks(count: int) -> Iterator[ModelChunk]:
    """``count`` chunks: a tool call's id and name; then text deltas with, every fourth, a
    piece of the call's arguments; last, the finish reason and usage."""
    yield ModelChunk(tool_calls=[ToolCallDelta(0, "call_0", "get_weather")])
    for i in range(1, count - 1):
        if i % 4 == 0:
            yield ModelChunk(tool_calls=[ToolCallDelta(0, arguments=f'"day{i}", ')])
        else:
            yield ModelChunk(text=f"word{i % 97} ")
    yield ModelChunk(finish_reason="tool_calls", usage=ANSWER_USAGE)


def sse_body(count: int) -> str:
    events = [f"data: {json.dumps(chunk_json(c))}\n\n" for c in sse_chunks(count)]
    return "".join([*events, f"data: {_DONE}\n\n"])


def parse_with_client(body: str) -> None:
    decoder = SSEDecoder()
    assembler = ChunkAssembler()
    for line in body.splitlines():
        data = decoder.feed(line)
        if data is not None and data != _DONE and (chunk := parse_chunk(data)) is not None:
            assembler.add(chunk)
    assembler.result()


def parse_json_only(body: str) -> None:
    for line in body.splitlines():
        if line.startswith("data: ") and line != f"data: {_DONE}":
            json.loads(line[6:])


def sync_case(name: str, n: int, fn: Callable[[], None], baseline: str | None = None) -> Case:
    async def run() -> None:
        fn()

    return Case(name, n, lambda: run, baseline)


def sse_cases(plan: Plan) -> list[Case]:
    body = sse_body(plan.sse_chunks)
    n = plan.sse_chunks
    return [
        sync_case("json.loads per event", n, lambda: parse_json_only(body)),
        sync_case(
            "_SSEDecoder+parse_chunk+assembler",
            n,
            lambda: parse_with_client(body),
            "json.loads per event",
        ),
    ]


# --- running -----------------------------------------------------------------------------


async def run_backend(
    backend: str, plan: Plan, server: OpenAICompatibleServer, parse: bool
) -> list[Row]:
    """Every section on one backend; ``parse`` adds the SSE one (it has no I/O to wait on)."""
    rows = await measure("loop", backend, loop_cases(plan), plan.repeat)
    async with httpx.AsyncClient(timeout=httpx.Timeout(60, connect=5)) as client:
        ops = http_ops(client, server.base_url)
        await check_same_requests(ops, server)
        rows += await measure("http", backend, http_cases(ops, plan.requests), plan.repeat)
    if parse:
        rows += await measure("sse", "-", sse_cases(plan), plan.repeat)
    return rows


# --- reporting ---------------------------------------------------------------------------

HTTP_AIM = 1.2


def print_table(rows: Sequence[Row]) -> None:
    head = (
        f"{'section':<7} {'backend':<8} {'case':<34} {'N':>6} {'median ms':>10} "
        f"{'µs/op':>9} {'ops/s':>11} {'×base':>6}  baseline"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r.section:<7} {r.backend:<8} {r.case:<34} {r.n:>6} {r.median_s * 1e3:>10.2f} "
            f"{r.us_per_op:>9.2f} {r.ops_per_s:>11,.0f} {fmt(r.ratio, '.2f'):>6}  "
            f"{r.baseline or ''}"
        )


def print_targets(rows: Sequence[Row]) -> None:
    """The client's aim: reactcore within ``HTTP_AIM`` of raw httpx, per backend and mode."""
    print()
    for r in rows:
        if r.section == "http" and r.ratio is not None:
            verdict = "met" if r.ratio <= HTTP_AIM else "MISSED"
            print(
                f"target  {r.backend:<8} {r.case} ×{r.baseline} {r.ratio:.3f} "
                f"(aim ≤ {HTTP_AIM:g}: {verdict})"
            )


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    rows: list[Row] = []
    with tcp_nodelay_server(), serve_openai_compatible(server_reply) as server:
        for i, backend in enumerate(backends(args)):
            rows += anyio.run(run_backend, backend, plan, server, i == 0, backend=backend)
    order = {"loop": 0, "http": 1, "sse": 2}
    rows.sort(key=lambda r: order[r.section])
    print(
        f"loop: {plan.turns} iterations, http: {plan.requests} requests, "
        f"sse: {plan.sse_chunks} chunks; median of {plan.repeat}\n"
    )
    print_table(rows)
    print_targets(rows)
    if args.json:
        data = [
            attrs.asdict(r) | {"us_per_op": r.us_per_op, "ops_per_s": r.ops_per_s} for r in rows
        ]
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"plan": attrs.asdict(plan), "rows": data}, f, indent=2)


if __name__ == "__main__":
    main()

"""Agent scenarios over every wire dialect (OpenAI chat completions, Anthropic, OpenAI
Responses, Gemini, Azure OpenAI, Amazon Bedrock) — each a real loopback server, spoken to
through the provider drivers of ``tests/providers.py`` — on asyncio and trio: a parallel batch under
a limit, approval and resume from SQLite with thinking blocks (or encrypted reasoning)
intact, structured output with retries, 429/529, a stream cut inside a tool call,
fallbacks mid-run between providers without any foreign opaque data sent, ``cancel_tool``,
cancelling mid-stream, SIGKILL mid-batch and resume, and one thinking mode per tool
loop across a fallback."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path

import anyio
import attrs
import httpx
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from reactcore import (
    Approve,
    AssistantMessage,
    MemorySaver,
    ModelDelta,
    ModelFallbackInterceptor,
    ReactAgent,
    Resume,
    RunCancelled,
    RunnableConfig,
    SqliteSaver,
    ToolCall,
    ToolCallStarted,
    ToolResponseMessage,
    tool,
)
from reactcore.hooks import HumanInTheLoopHook
from reactcore.testing import (
    AnthropicSSEReply,
    OpenAICompatibleServer,
    ServerReply,
    SSEReply,
    anthropic_error_reply,
    serve_anthropic,
    serve_openai_compatible,
)
from tests.providers import (
    ANTHROPIC_SIGNATURE,
    KEY,
    PROVIDERS,
    Provider,
    check_only_own_opaque_data,
    every_opaque,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(params=PROVIDERS, ids=lambda p: p.name)
def provider(request: pytest.FixtureRequest) -> Provider:
    return request.param  # type: ignore[no-any-return]


OPENAI, ANTHROPIC, RESPONSES, GEMINI, AZURE = PROVIDERS[:5]
SIGNATURE = ANTHROPIC_SIGNATURE


def asks_weather(*cities: str) -> AssistantMessage:
    """A call per city, with the reasoning and opaque data of every provider: each one
    answers with its own and must send back only its own."""
    calls = [
        ToolCall(f"toolu_{i}", "weather", json.dumps({"city": c})) for i, c in enumerate(cities)
    ]
    return AssistantMessage(
        "Checking.", calls, reasoning="Both cities.", provider_data=every_opaque()
    )


running = 0
most = 0


@tool
async def weather(city: str) -> str:
    """The weather in a city."""
    global running, most
    running += 1
    most = max(most, running)
    await anyio.lowlevel.checkpoint()
    await anyio.sleep(0.01)
    running -= 1
    return f"sunny in {city}"


def serving(
    provider: Provider, script: list[ServerReply]
) -> contextlib.AbstractContextManager[OpenAICompatibleServer]:
    return provider.serve(script)


async def test_a_parallel_batch_under_a_limit(provider: Provider) -> None:
    """Three parallel calls under ``max_parallel_tools=2`` run at most two at a time; the
    results go back in one turn (one ``tool`` message each / one user turn of
    ``tool_result`` blocks), and Anthropic gets its signed thinking back verbatim."""
    global most
    most = 0
    script = [provider.reply(asks_weather("Paris", "Rome", "Oslo")), provider.reply("All sunny.")]
    with serving(provider, script) as server:
        agent = ReactAgent(
            "w",
            provider.model(server),
            tools=[weather],
            parallel_tool_execution=True,
            max_parallel_tools=2,
        )
        result = await agent.invoke("weather?")
    assert result.text == "All sunny." and most == 2
    second = server.requests[1]
    assert provider.results(second) == {
        f"toolu_{i}": (f"sunny in {city}", False)
        for i, city in enumerate(("Paris", "Rome", "Oslo"))
    }
    provider.check_round_trip(second)
    check_only_own_opaque_data(provider, second)


async def test_approval_and_resume_from_sqlite_keep_thinking_intact(
    provider: Provider, tmp_path: Path
) -> None:
    """A run paused for approval is resumed by a new agent on the same SQLite file; the
    next request carries the calls, their results and (for Anthropic) the signed
    thinking blocks exactly as the model sent them."""
    script = [provider.reply(asks_weather("Paris")), provider.reply("Sunny.")]
    path = tmp_path / "runs.db"
    config = RunnableConfig(thread_id="t")
    with serving(provider, script) as server:

        def agent() -> ReactAgent:
            return ReactAgent(
                "w",
                provider.model(server),
                tools=[weather],
                hooks=[HumanInTheLoopHook({"weather": True})],
                saver=SqliteSaver(path),
            )

        paused = await agent().invoke("weather?", config)
        assert paused.status == "interrupted"
        result = await agent().invoke(Resume({"toolu_0": Approve()}), config)
    assert result.text == "Sunny."
    assert provider.results(server.requests[1]) == {"toolu_0": ("sunny in Paris", False)}
    provider.check_round_trip(server.requests[1])
    check_only_own_opaque_data(provider, server.requests[1])


@attrs.frozen
class Forecast:
    city: str
    degrees: int


async def test_structured_output_with_a_retry(provider: Provider) -> None:
    """Structured output through the tool mode: a first answer that does not fit is sent
    back with the error, the second is the output."""
    bad = AssistantMessage("", [ToolCall("toolu_a", "final_answer", '{"city": "Paris"}')])
    good = AssistantMessage(
        "", [ToolCall("toolu_b", "final_answer", '{"city": "Paris", "degrees": 21}')]
    )
    with serving(provider, [provider.reply(bad), provider.reply(good)]) as server:
        agent = ReactAgent("w", provider.model(server), output_type=Forecast, output_mode="tool")
        result = await agent.invoke("forecast?")
    assert result.output == Forecast("Paris", 21)
    assert "degrees" in json.dumps(provider.conversation(server.requests[1])[-1])


@pytest.mark.parametrize("status", [429, 529, 503])
async def test_rate_limits_and_overload_are_retried_with_retry_after(
    provider: Provider, status: int
) -> None:
    """429 / 529 / 503 with ``Retry-After`` are retried after at least the asked pause;
    the run then finishes."""
    script = [provider.error(status, 0.2), provider.reply("Fine.")]
    with serving(provider, script) as server:
        agent = ReactAgent("w", provider.model(server))
        result = await agent.invoke("hi")
    assert result.text == "Fine."
    assert server.request_times[1] - server.request_times[0] >= 0.2


async def test_a_stream_cut_inside_a_tool_call_fails_the_run_and_runs_no_tool(
    provider: Provider,
) -> None:
    """A stream cut inside a tool call's arguments fails the run with ``ModelStreamError``;
    no tool runs on half-made arguments."""
    from reactcore import ModelStreamError

    reply = provider.cut_inside_call(asks_weather("Paris"))
    calls: list[str] = []

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return "sunny"

    with serving(provider, [reply]) as server:
        agent = ReactAgent("w", provider.model(server), tools=[weather])
        with pytest.raises(ModelStreamError):
            await agent.invoke("weather?")
    assert calls == []


async def test_fallback_from_anthropic_to_openai_mid_run_sends_no_foreign_signature() -> None:
    """Anthropic answers with signed thinking and a tool call, then fails (400); the
    fallback OpenAI-compatible model gets the call and its result, but no thinking block
    and no signature, and finishes the run."""
    with (
        serve_anthropic(
            [
                AnthropicSSEReply.of(asks_weather("Paris")),
                anthropic_error_reply(400, "bad", error_type="invalid_request_error"),
            ]
        ) as claude,
        serve_openai_compatible([SSEReply.of("Sunny in Paris.")]) as compatible,
    ):
        fallback = ModelFallbackInterceptor([OPENAI.model(compatible)])
        agent = ReactAgent("w", ANTHROPIC.model(claude), tools=[weather], interceptors=[fallback])
        result = await agent.invoke("weather?")
    assert result.text == "Sunny in Paris."
    sent = json.dumps(compatible.requests[0])
    assert SIGNATURE not in sent and "thinking" not in sent
    assert "toolu_0" in sent and "sunny in Paris" in sent
    assert SIGNATURE in json.dumps(claude.requests[1])
    # The message in the result keeps its provider data for a later Anthropic request.
    assert result.messages[1].provider_data["anthropic"]["thinking"][0]["signature"] == SIGNATURE


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (RESPONSES, ANTHROPIC),
        (ANTHROPIC, RESPONSES),
        (RESPONSES, OPENAI),
        (GEMINI, ANTHROPIC),
        (RESPONSES, GEMINI),
        (GEMINI, OPENAI),
    ],
    ids=lambda p: p.name,
)
async def test_a_fallback_mid_run_sends_none_of_the_first_providers_data(
    first: Provider, second: Provider
) -> None:
    """The first provider answers with its opaque data (encrypted reasoning, a signed
    thinking block, a thought signature) and a call, then fails (400); the fallback gets
    the call and its result but none of that data, and finishes the run; the first
    provider got its data back verbatim, and the message keeps it for a later request to
    it."""
    with (
        first.serve([first.reply(asks_weather("Paris")), first.error(400, 0)]) as primary,
        second.serve([second.reply("Sunny in Paris.")]) as backup,
    ):
        fallback = ModelFallbackInterceptor([second.model(backup)])
        agent = ReactAgent("w", first.model(primary), tools=[weather], interceptors=[fallback])
        result = await agent.invoke("weather?")
    assert result.text == "Sunny in Paris."
    assert first.signature is not None
    sent = json.dumps(backup.requests[0])
    assert first.signature not in sent and "rs_scenario" not in sent
    assert second.results(backup.requests[0]) == {"toolu_0": ("sunny in Paris", False)}
    first.check_round_trip(primary.requests[1])
    assert first.name in result.messages[1].provider_data


async def test_cancel_tool_on_a_running_call_and_the_run_goes_on(provider: Provider) -> None:
    """``cancel_tool`` on a running call of a batch: the model gets the cancellation as
    that call's result (an error result for Anthropic) next to its sibling's answer, with
    Anthropic's signed thinking intact, and the run finishes."""

    @tool
    async def stuck(city: str) -> str:
        """Never answers."""
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    message = AssistantMessage(
        "Checking.",
        [
            ToolCall("toolu_0", "stuck", '{"city": "Rome"}'),
            ToolCall("toolu_1", "weather", '{"city": "Paris"}'),
        ],
        provider_data=every_opaque(),
    )
    script = [provider.reply(message), provider.reply("Paris only.")]
    with serving(provider, script) as server:
        agent = ReactAgent(
            "w", provider.model(server), tools=[stuck, weather], parallel_tool_execution=True
        )
        async with agent.start("weather?") as run, run.events() as events:
            async for event in events:
                if isinstance(event, ToolCallStarted) and event.call_id == "toolu_0":
                    assert await run.cancel_tool("toolu_0", "too slow")
            result = await run.result()
    assert result.text == "Paris only."
    cancelled = "Error: Tool execution was cancelled by the caller: too slow"
    assert provider.results(server.requests[1]) == {
        "toolu_0": (cancelled, provider.marks_errors),
        "toolu_1": ("sunny in Paris", False),
    }
    provider.check_round_trip(server.requests[1])
    check_only_own_opaque_data(provider, server.requests[1])


async def test_cancelling_a_run_mid_stream_closes_the_connection(provider: Provider) -> None:
    """Cancelling the run while the model's answer streams ends it with ``RunCancelled``,
    closes the HTTP response (no connection left open in the client's pool), and the
    server sees the client leave."""
    reply = provider.hanging("A long answer that never ends.")
    with serving(provider, [reply]) as server:
        async with httpx.AsyncClient() as client:
            agent = ReactAgent("w", provider.model(server, http_client=client))
            async with agent.start("hi") as run, run.events() as events:
                async for event in events:
                    if isinstance(event, ModelDelta):
                        await run.cancel()
                with pytest.raises(RunCancelled):
                    await run.result()
            pool = client._transport._pool  # type: ignore[attr-defined]
            assert [c for c in pool.connections if not c.is_closed()] == []
        assert await anyio.to_thread.run_sync(reply.client_left.wait, 5)


ROOT = Path(__file__).parent.parent
CRASH_AGENT = Path(__file__).parent / "scripts" / "provider_crash_agent.py"
CITIES = ("Paris", "Rome", "Oslo", "Lima", "Kyiv")


async def finished_calls(db: Path) -> list[str]:
    """The ids the latest checkpoint of thread ``t`` records as answered."""
    async with SqliteSaver(db) as saver:
        latest = await saver.get("t")
    last = latest.state["messages"][-1] if latest is not None else None
    return [r.id for r in last.responses] if isinstance(last, ToolResponseMessage) else []


async def test_sigkill_mid_batch_then_resume_keeps_thinking_intact(
    provider: Provider, anyio_backend: str, tmp_path: Path
) -> None:
    """A child process runs the agent on the loopback server; the model asks for five
    calls at once (with signed thinking, for Anthropic); once three are checkpointed the
    child is killed with SIGKILL. This process resumes from the SQLite file: only the two
    missing calls run, and the next request carries all five results and (Anthropic)
    the thinking block with its signature verbatim, thinking still on."""
    db, marks = tmp_path / "runs.db", tmp_path / "marks.txt"
    script = [provider.reply(asks_weather(*CITIES)), provider.reply("All five.")]
    with serving(provider, script) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT), provider.base_url_variable: server.base_url}
        env[provider.api_key_variable] = KEY
        command = [sys.executable, str(CRASH_AGENT), provider.model_string, anyio_backend, str(db)]
        command.append(str(marks))
        child = await anyio.open_process(command, stderr=None, env=env)
        try:
            assert child.stdout is not None
            lines = BufferedByteReceiveStream(child.stdout)
            with anyio.fail_after(30):
                while await lines.receive_until(b"\n", 4096) != b"checkpointed":
                    pass
            assert sorted(await finished_calls(db)) == ["toolu_0", "toolu_1", "toolu_2"]
            child.send_signal(signal.SIGKILL)
        finally:
            with anyio.CancelScope(shield=True):
                if child.returncode is None:
                    child.kill()
                assert await child.wait() == -signal.SIGKILL

        @tool
        async def weather(city: str) -> str:
            """The weather in a city."""
            async with await anyio.open_file(marks, "a") as f:
                await f.write(f"{city} resumed\n")
            return f"sunny in {city}"

        model = provider.model(server, thinking=True)
        agent = ReactAgent(
            "w", model, tools=[weather], parallel_tool_execution=True, saver=SqliteSaver(db)
        )
        result = await agent.invoke(None, RunnableConfig(thread_id="t"))
    assert result.text == "All five."
    ran = sorted(marks.read_text().split("\n")[:-1])
    assert ran == ["Kyiv resumed", "Lima resumed", "Oslo child", "Paris child", "Rome child"]
    after = server.requests[1]
    assert provider.results(after) == {
        f"toolu_{i}": (f"sunny in {city}", False) for i, city in enumerate(CITIES)
    }
    provider.check_round_trip(after, thinking=True)
    check_only_own_opaque_data(provider, after)


# --- thinking across providers: one thinking mode per tool loop -------------------------


def openai_asks(call_id: str, city: str) -> SSEReply:
    return SSEReply.of(
        AssistantMessage("", [ToolCall(call_id, "weather", json.dumps({"city": city}))])
    )


async def test_a_tool_loop_begun_by_claude_with_thinking_keeps_it_after_a_fallback() -> None:
    """Anthropic (thinking on) asks for a call with signed thinking; on the next step it
    fails and the OpenAI-compatible fallback asks for another call; back on Anthropic the
    turn still starts with the signed thinking block, so thinking stays on, the block
    sent verbatim (the OpenAI answer after it has none, as Claude's own may not)."""
    with (
        serve_anthropic(
            [
                AnthropicSSEReply.of(asks_weather("Paris")),
                anthropic_error_reply(400, "bad", error_type="invalid_request_error"),
                AnthropicSSEReply.of("Both sunny."),
            ]
        ) as claude,
        serve_openai_compatible([openai_asks("call_1", "Rome")]) as compatible,
    ):
        fallback = ModelFallbackInterceptor([OPENAI.model(compatible)])
        agent = ReactAgent(
            "w",
            ANTHROPIC.model(claude, thinking=True),
            tools=[weather],
            interceptors=[fallback],
        )
        result = await agent.invoke("weather?")
    assert result.text == "Both sunny."
    last = claude.requests[2]
    assert last["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    kinds = [[b["type"] for b in m["content"]] for m in last["messages"]]
    assert kinds == [
        ["text"],
        ["thinking", "text", "tool_use"],
        ["tool_result"],
        ["tool_use"],
        ["tool_result"],
    ]
    assert last["messages"][1]["content"][0]["signature"] == SIGNATURE


async def test_a_tool_loop_begun_by_another_provider_is_finished_without_thinking() -> None:
    """Anthropic (thinking on) fails on the first step and the OpenAI-compatible fallback
    asks for a call; the turn then has no thinking block to start with, so Anthropic is
    asked to finish it without ``thinking`` (the API allows one thinking mode per turn);
    the next user message starts a turn that thinks again."""
    with (
        serve_anthropic(
            [
                anthropic_error_reply(400, "bad", error_type="invalid_request_error"),
                AnthropicSSEReply.of("Sunny in Paris."),
                AnthropicSSEReply.of("You are welcome."),
            ]
        ) as claude,
        serve_openai_compatible([openai_asks("call_0", "Paris")]) as compatible,
    ):
        fallback = ModelFallbackInterceptor([OPENAI.model(compatible)])
        agent = ReactAgent(
            "w",
            ANTHROPIC.model(claude, thinking=True),
            tools=[weather],
            interceptors=[fallback],
            saver=MemorySaver(),
        )
        config = RunnableConfig(thread_id="t")
        assert (await agent.invoke("weather?", config)).text == "Sunny in Paris."
        assert (await agent.invoke("thanks", config)).text == "You are welcome."
    first, finishing, new_turn = claude.requests
    assert first["thinking"] == new_turn["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert "thinking" not in finishing
    assert [m["role"] for m in finishing["messages"]] == ["user", "assistant", "user"]

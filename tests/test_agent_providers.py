"""Agent scenarios over both wire dialects — an OpenAI-compatible endpoint and Anthropic's
Messages API, each a real loopback server — on asyncio and trio: a parallel batch under
a limit, approval and resume from SQLite with thinking blocks intact, structured output
with retries, 429/529, a stream cut inside a tool call, and fallback from Anthropic to
an OpenAI-compatible model mid-run without any foreign signature sent."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from reactcore import (
    AnthropicModel,
    Approve,
    AssistantMessage,
    ChatModel,
    ModelFallbackInterceptor,
    OpenAIChatModel,
    ReactAgent,
    Resume,
    RunnableConfig,
    SqliteSaver,
    ToolCall,
    tool,
)
from reactcore.hooks import HumanInTheLoopHook
from reactcore.models import Usage
from reactcore.testing import (
    AnthropicSSEReply,
    HTTPReply,
    OpenAICompatibleServer,
    ServerReply,
    SSEReply,
    anthropic_error_reply,
    anthropic_events,
    serve_anthropic,
    serve_openai_compatible,
)

pytestmark = pytest.mark.anyio

KEY = "sk-both-providers-test-4c2e"
SIGNATURE = "EqQBCkgIARABGAIiQL-signed-by-anthropic"
THINKING = [
    {"index": 0, "type": "thinking", "thinking": "Both cities.", "signature": SIGNATURE},
]


@attrs.frozen
class Provider:
    """One wire dialect: its server, its client, and its replies."""

    name: str
    serve: Callable[[Any], contextlib.AbstractContextManager[OpenAICompatibleServer]]

    def model(self, server: OpenAICompatibleServer) -> ChatModel:
        if self.name == "anthropic":
            return AnthropicModel(
                "claude-test", base_url=server.base_url, api_key=KEY, retry_backoff=0.01
            )
        return OpenAIChatModel(
            "test-model", base_url=server.base_url, api_key=KEY, retry_backoff=0.01
        )

    def reply(self, message: AssistantMessage | str) -> ServerReply:
        if self.name == "anthropic":
            return AnthropicSSEReply.of(message, usage=Usage(10, 5, 15))
        if isinstance(message, AssistantMessage):
            message = attrs.evolve(message, provider_data={})
        return SSEReply.of(message, usage=Usage(10, 5, 15))

    def error(self, status: int, headers: dict[str, str]) -> ServerReply:
        if self.name == "anthropic":
            return anthropic_error_reply(
                status, "busy", error_type="overloaded_error", headers=headers
            )
        return HTTPReply.error(status, "busy", headers=headers)


PROVIDERS = [Provider("openai", serve_openai_compatible), Provider("anthropic", serve_anthropic)]


@pytest.fixture(params=PROVIDERS, ids=lambda p: p.name)
def provider(request: pytest.FixtureRequest) -> Provider:
    return request.param  # type: ignore[no-any-return]


def asks_weather(*cities: str) -> AssistantMessage:
    calls = [
        ToolCall(f"toolu_{i}", "weather", json.dumps({"city": c})) for i, c in enumerate(cities)
    ]
    return AssistantMessage(
        "Checking.",
        calls,
        reasoning="Both cities.",
        provider_data={"anthropic": {"thinking": THINKING}},
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


@contextlib.contextmanager
def serving(provider: Provider, script: list[ServerReply]) -> Iterator[OpenAICompatibleServer]:
    with provider.serve(script) as server:
        yield server


def assistant_turns(provider: Provider, body: dict[str, Any]) -> list[Any]:
    return [m for m in body["messages"] if m["role"] == "assistant"]


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
    if provider.name == "anthropic":
        assert second["messages"][1]["content"][0] == {
            "type": "thinking",
            "thinking": "Both cities.",
            "signature": SIGNATURE,
        }
        results = second["messages"][2]["content"]
        assert [b["type"] for b in results] == ["tool_result"] * 3
        assert "tool_choice" not in second  # parallel calls allowed: nothing to disable
    else:
        assert [m["role"] for m in second["messages"]][-3:] == ["tool"] * 3
        assert SIGNATURE not in json.dumps(second)


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
    sent = json.dumps(server.requests[1])
    assert "sunny in Paris" in sent
    assert (SIGNATURE in sent) == (provider.name == "anthropic")


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
    assert "degrees" in json.dumps(server.requests[1]["messages"][-1])


@pytest.mark.parametrize("status", [429, 529, 503])
async def test_rate_limits_and_overload_are_retried_with_retry_after(
    provider: Provider, status: int
) -> None:
    """429 / 529 / 503 with ``Retry-After`` are retried after at least the asked pause;
    the run then finishes."""
    script = [provider.error(status, {"retry-after": "0.2"}), provider.reply("Fine.")]
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

    message = asks_weather("Paris")
    if provider.name == "anthropic":
        events = anthropic_events(message, chunk_size=3)
        inside = next(
            i for i, e in enumerate(events) if e.get("delta", {}).get("type") == "input_json_delta"
        )
        reply: ServerReply = AnthropicSSEReply(events[: inside + 1], ending="cut")
    else:
        full = SSEReply.of(attrs.evolve(message, provider_data={}), chunk_size=3)
        reply = SSEReply(full.events[:-3], ending="cut")
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
        fallback = ModelFallbackInterceptor([PROVIDERS[0].model(compatible)])
        agent = ReactAgent(
            "w", PROVIDERS[1].model(claude), tools=[weather], interceptors=[fallback]
        )
        result = await agent.invoke("weather?")
    assert result.text == "Sunny in Paris."
    sent = json.dumps(compatible.requests[0])
    assert SIGNATURE not in sent and "thinking" not in sent
    assert "toolu_0" in sent and "sunny in Paris" in sent
    assert SIGNATURE in json.dumps(claude.requests[1])
    # The message in the result keeps its provider data for a later Anthropic request.
    assert result.messages[1].provider_data["anthropic"]["thinking"][0]["signature"] == SIGNATURE

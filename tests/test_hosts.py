"""OpenAI-compatible hosts by name (``"groq:…"``, ``"ollama:…"`` …, ``HOSTS``): each
preset's URL, headers and key variable — never another provider's key —, its
``<HOST>_BASE_URL`` override, and each host's documented deviation: DeepSeek's
``reasoning_content``, OpenRouter's attribution headers and routing options, Mistral's
9-character tool-call ids, Ollama without a key, ``max_tokens`` vs
``max_completion_tokens``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from reactcore import AnthropicModel, AssistantMessage, ReactAgent, ToolCall, tool
from reactcore._messages import ToolResponse, ToolResponseMessage, UserMessage
from reactcore.models import (
    HOSTS,
    ChatOptions,
    ModelChunk,
    ModelRequest,
    OpenAIChatModel,
    infer_model,
    known_providers,
)
from reactcore.testing import (
    HTTPReply,
    OpenAICompatibleServer,
    SSEReply,
    serve_openai_compatible,
)

OPENAI_KEY = "sk-openai-must-not-leak"

# Each host's public endpoint, key variable and max-tokens field, as its documentation
# gives them (an independent statement of what the presets must say).
DOCUMENTED = {
    "ollama": ("http://localhost:11434/v1", None, "max_tokens"),
    "vllm": ("http://localhost:8000/v1", "VLLM_API_KEY", "max_tokens"),
    "lmstudio": ("http://localhost:1234/v1", None, "max_tokens"),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY", "max_completion_tokens"),
    "deepseek": ("https://api.deepseek.com", "DEEPSEEK_API_KEY", "max_tokens"),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "max_tokens"),
    "together": ("https://api.together.xyz/v1", "TOGETHER_API_KEY", "max_tokens"),
    "fireworks": ("https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY", "max_tokens"),
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY", "max_tokens"),
    "xai": ("https://api.x.ai/v1", "XAI_API_KEY", "max_completion_tokens"),
    "cerebras": ("https://api.cerebras.ai/v1", "CEREBRAS_API_KEY", "max_completion_tokens"),
}


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Every host's variables unset; ``OPENAI_API_KEY`` set (it must never be sent)."""
    for host in HOSTS.values():
        monkeypatch.delenv(host.base_url_variable, raising=False)
        if host.key_variable:
            monkeypatch.delenv(host.key_variable, raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    return monkeypatch


@pytest.fixture
def server() -> Iterator[Any]:
    """Start a loopback OpenAI-compatible server with a script; stopped after the test."""
    managers: list[Any] = []

    def start(script: Any) -> OpenAICompatibleServer:
        manager = serve_openai_compatible(script)
        managers.append(manager)
        return manager.__enter__()

    yield start
    for manager in reversed(managers):
        manager.__exit__(None, None, None)


def recording() -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    """An HTTP client answering every request with a completion, keeping the requests."""
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = {"choices": [{"message": {"role": "assistant", "content": "ok"}}]}
        return httpx.Response(200, json=body)

    return httpx.AsyncClient(transport=httpx.MockTransport(answer)), seen


@tool
async def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_every_host_has_a_preset_and_a_string() -> None:
    """The table holds every host of the issue, each a provider string."""
    assert set(HOSTS) == set(DOCUMENTED)
    assert set(HOSTS) <= set(known_providers())


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(DOCUMENTED))
async def test_a_preset_sends_to_its_host_with_its_own_key(
    env: pytest.MonkeyPatch, name: str
) -> None:
    """``"<host>:<model>"`` POSTs to the host's documented ``/chat/completions`` with the
    key of its own variable as a bearer token (none for a host without key), never
    ``OPENAI_API_KEY``, and ``max_tokens`` in the host's field."""
    url, key_variable, field = DOCUMENTED[name]
    key = f"{name}-key-123"
    if key_variable:
        env.setenv(key_variable, key)
    client, seen = recording()
    model = infer_model(f"{name}:some-model")
    assert isinstance(model, OpenAIChatModel)
    model = OpenAIChatModel("some-model", host=model.host, http_client=client)
    await model.call(ModelRequest([UserMessage("x")], options=ChatOptions(max_tokens=7)))
    await client.aclose()
    (request,) = seen
    assert str(request.url) == f"{url}/chat/completions"
    expected = {"authorization": f"Bearer {key}"} if key_variable else {}
    assert {k: v for k, v in request.headers.items() if k == "authorization"} == expected
    assert OPENAI_KEY not in str(request.headers)
    body = json.loads(request.content)
    assert body[field] == 7
    assert {"max_tokens", "max_completion_tokens"} - {field} - set(body) == {
        "max_tokens",
        "max_completion_tokens",
    } - {field}


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["groq", "ollama", "mistral"])
async def test_the_base_url_variable_points_a_host_at_another_server(
    env: pytest.MonkeyPatch, server: Any, name: str
) -> None:
    """``<HOST>_BASE_URL`` overrides the preset's URL (a proxy, a loopback server): the
    request goes there, with the host's key when one is set."""
    srv = server([HTTPReply.completion("hi")])
    env.setenv(HOSTS[name].base_url_variable, srv.base_url)
    if HOSTS[name].key_variable:
        env.setenv(HOSTS[name].key_variable or "", "host-key")
    async with infer_model(f"{name}:m") as model:  # type: ignore[attr-defined]
        answer = await model.call(ModelRequest([UserMessage("x")]))
    assert answer.message.text == "hi"
    assert srv.request_paths == ["/v1/chat/completions"]
    sent = srv.request_headers[0].get("authorization")
    assert sent == ("Bearer host-key" if HOSTS[name].key_variable else None)


@pytest.mark.anyio
async def test_a_missing_host_key_names_the_host_variable(env: pytest.MonkeyPatch) -> None:
    """Without ``GROQ_API_KEY`` the string fails at once naming it (``OPENAI_API_KEY``
    being set changes nothing), and a model made with the preset refuses to call."""
    with pytest.raises(ValueError, match="GROQ_API_KEY"):
        infer_model("groq:llama")
    async with OpenAIChatModel("llama", host=HOSTS["groq"]) as model:
        assert model.api_key is None
        with pytest.raises(ValueError, match="GROQ_API_KEY"):
            await model.call(ModelRequest([UserMessage("x")]))


@pytest.mark.anyio
async def test_ollama_needs_no_key_and_sends_none(env: pytest.MonkeyPatch, server: Any) -> None:
    """Ollama runs without a key: the string works with nothing set, and no
    ``Authorization`` goes out even with ``OPENAI_API_KEY`` set."""
    assert infer_model("ollama:llama3.2").base_url == "http://localhost:11434/v1"  # type: ignore[attr-defined]
    srv = server([SSEReply.of("local answer")])
    env.setenv("OLLAMA_BASE_URL", srv.base_url)
    async with infer_model("ollama:llama3.2") as model:  # type: ignore[attr-defined]
        result = await ReactAgent("a", model).invoke("hi")
    assert result.text == "local answer"
    assert "authorization" not in srv.request_headers[0]


@pytest.mark.anyio
async def test_deepseek_reasoning_is_read_as_reasoning_and_sent_back_apart(
    env: pytest.MonkeyPatch, server: Any
) -> None:
    """DeepSeek's streamed ``reasoning_content`` becomes the message's reasoning, not its
    text; on the next request (after a tool) it goes back as ``reasoning_content``, as
    DeepSeek's thinking mode with tool calls requires, and never inside ``content``."""
    thinking = SSEReply(
        [
            ModelChunk(reasoning="Let me check the weather."),
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "c1",
                                    "type": "function",
                                    "function": {"name": "weather", "arguments": '{"city":"Rome"}'},
                                }
                            ]
                        },
                        "finish_reason": "tool_calls",
                    }
                ]
            },
        ]
    )
    srv = server([thinking, SSEReply.of("It is sunny.")])
    env.setenv("DEEPSEEK_BASE_URL", srv.base_url)
    env.setenv("DEEPSEEK_API_KEY", "ds-key")
    async with infer_model("deepseek:deepseek-reasoner") as model:  # type: ignore[attr-defined]
        result = await ReactAgent("a", model, tools=[weather]).invoke("weather in Rome?")
    assert result.text == "It is sunny."
    first = next(m for m in result.messages if isinstance(m, AssistantMessage))
    assert first.reasoning == "Let me check the weather."
    assert first.text == ""
    sent = next(m for m in srv.requests[1]["messages"] if m["role"] == "assistant")
    assert sent["reasoning_content"] == "Let me check the weather."
    assert "check the weather" not in json.dumps(sent.get("content"))


@pytest.mark.anyio
async def test_openrouter_attribution_headers_and_provider_routing(
    env: pytest.MonkeyPatch, server: Any
) -> None:
    """OpenRouter's app attribution (``HTTP-Referer``, ``X-Title``) goes as ``headers=``
    on every request, its ``provider`` routing options in the body (``extra_body``), with
    the ``OPENROUTER_API_KEY``."""
    srv = server([HTTPReply.completion("routed")])
    env.setenv("OPENROUTER_BASE_URL", srv.base_url)
    env.setenv("OPENROUTER_API_KEY", "or-key")
    routing = {"order": ["anthropic", "openai"], "allow_fallbacks": False}
    attribution = {"HTTP-Referer": "https://myapp.example", "X-Title": "My App"}
    model = OpenAIChatModel(
        "anthropic/claude-sonnet-4.5", host=HOSTS["openrouter"], headers=attribution
    )
    async with model:
        options = ChatOptions(extra_body={"provider": routing})
        await model.call(ModelRequest([UserMessage("x")], options=options))
    headers = srv.request_headers[0]
    assert headers["http-referer"] == "https://myapp.example"
    assert headers["x-title"] == "My App"
    assert headers["authorization"] == "Bearer or-key"
    assert srv.requests[0]["provider"] == routing
    assert "headers" not in repr(model)


@pytest.mark.anyio
async def test_mistral_gets_nine_character_alphanumeric_tool_call_ids(
    env: pytest.MonkeyPatch, server: Any
) -> None:
    """Mistral accepts only 9-character alphanumeric tool-call ids: a call the LLM node
    re-keyed (the server sent none: ``call_0``) and another provider's id go out re-keyed
    to such ids, each call and its result alike; Mistral's own ids go out as they are."""
    missing_id = {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "type": "function",
                            "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                        }
                    ]
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    srv = server([SSEReply([missing_id]), SSEReply.of("done")])
    env.setenv("MISTRAL_BASE_URL", srv.base_url)
    env.setenv("MISTRAL_API_KEY", "mi-key")
    earlier = [
        UserMessage("before"),
        AssistantMessage(
            "",
            [
                ToolCall("toolu_01AbC-xyz", "weather", '{"city":"Oslo"}'),
                ToolCall("Ab3dE5gH9", "weather", '{"city":"Rome"}'),
            ],
        ),
        ToolResponseMessage(
            [
                ToolResponse("toolu_01AbC-xyz", "weather", "cold"),
                ToolResponse("Ab3dE5gH9", "weather", "warm"),
            ]
        ),
    ]
    async with infer_model("mistral:mistral-large-latest") as model:  # type: ignore[attr-defined]
        await ReactAgent("a", model, tools=[weather]).invoke([*earlier, UserMessage("Paris?")])
    messages = srv.requests[1]["messages"]
    calls = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert calls == results
    assert len(set(calls)) == 3
    assert all(re.fullmatch("[A-Za-z0-9]{9}", i) for i in calls)
    assert calls[1] == "Ab3dE5gH9"


def test_only_the_openai_formats_take_a_host() -> None:
    """A host is where an OpenAI-format API is served: ``AnthropicModel(host=…)`` is a
    ``TypeError`` naming the class."""
    with pytest.raises(TypeError, match="AnthropicModel"):
        AnthropicModel("claude", host=HOSTS["groq"], api_key="k")


def test_the_docs_table_covers_every_provider_string() -> None:
    """Every string ``known_providers()`` names appears in the provider × feature table
    of docs/models.md (its rows before the next section)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "models.md").read_text()
    table = text[text.index("## Providers") : text.index("## The OpenAI-compatible client")]
    missing = [p for p in known_providers() if f'"{p}:' not in table]
    assert missing == []


def test_spans_name_the_host_as_the_conventions_do() -> None:
    """``gen_ai.provider.name`` of a model on a host is the OpenTelemetry conventions' name
    for it (``mistral_ai``, ``x_ai``, ``groq``), else the host's own name — not
    ``openai``."""
    from reactcore.otel import _provider

    names = {"mistral": "mistral_ai", "xai": "x_ai", "groq": "groq", "ollama": "ollama"}
    for name, expected in names.items():
        model = OpenAIChatModel("m", host=HOSTS[name], api_key="k")
        assert _provider(model) == expected
    assert _provider(OpenAIChatModel("m", api_key="k")) == "openai"

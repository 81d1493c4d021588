"""Azure OpenAI: the loopback Azure server proven against the official ``openai`` SDK's
``AzureOpenAI`` clients, then reactcore's Azure models (``azure_model``, ``"azure:…"``)
against it — URLs, api-version, the ``api-key`` header or an Entra token asked afresh for
each request, the first streamed chunk without choices, content-filter answers, errors
and retries, secrets kept out of errors and reprs — on asyncio and trio."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
import structlog

from reactcore import AssistantMessage, ReactAgent, tool
from reactcore._exceptions import ModelHTTPError
from reactcore._messages import UserMessage
from reactcore.models import (
    ChunkAssembler,
    ModelRequest,
    OpenAIChatModel,
    OpenAIResponsesModel,
    azure_model,
    infer_model,
)
from reactcore.testing import (
    OpenAICompatibleServer,
    ResponsesSSEReply,
    azure_error_reply,
    azure_prompt_filtered_reply,
    azure_reply,
    azure_stream_reply,
    responses_events,
    serve_azure_openai,
)
from tests.helpers import asks

KEY = "azure-key-9f3c1d"
VERSION = "2024-10-21"
DEPLOYMENT = "gpt-4o-deploy"


@pytest.fixture
def server() -> Iterator[Any]:
    """Start a loopback Azure server with a script; stopped after the test."""
    managers: list[Any] = []

    def start(script: Any) -> OpenAICompatibleServer:
        manager = serve_azure_openai(script)
        managers.append(manager)
        return manager.__enter__()

    yield start
    for manager in reversed(managers):
        manager.__exit__(None, None, None)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No Azure or OpenAI variable set."""
    for name in (
        "AZURE_OPENAI_ENDPOINT",
        "AZURE_OPENAI_API_KEY",
        "AZURE_OPENAI_AD_TOKEN",
        "OPENAI_API_VERSION",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def on(server: OpenAICompatibleServer, **options: Any) -> Any:
    settings: dict[str, Any] = {"api_key": KEY, "api_version": VERSION, "retry_backoff": 0.01}
    settings.update(options)
    return azure_model(DEPLOYMENT, endpoint=server.base_url, **settings)


@tool
async def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


# --- the loopback server, proven with the official SDK ----------------------------------


def test_the_sdk_parses_every_answer_of_the_loopback_server(server: Any) -> None:
    """``openai.AzureOpenAI`` pointed at the loopback server parses its whole answer, its
    stream (whose first chunk has no choices, only the prompt's filter results) and its
    content-filter answer, sending to the deployment URL with ``api-version`` and the
    ``api-key`` header; the filter results are there for the SDK to read."""
    srv = server(
        [
            azure_reply("hello"),
            azure_stream_reply("streamed answer"),
            azure_reply("", flagged="violence"),
            azure_stream_reply("cut", flagged="hate"),
        ]
    )
    client = openai.AzureOpenAI(azure_endpoint=srv.base_url, api_key=KEY, api_version=VERSION)
    messages: Any = [{"role": "user", "content": "hi"}]
    whole = client.chat.completions.create(model=DEPLOYMENT, messages=messages)
    assert whole.choices[0].message.content == "hello"
    stream = client.chat.completions.create(model=DEPLOYMENT, messages=messages, stream=True)
    chunks = list(stream)
    assert chunks[0].choices == []
    assert chunks[0].model_extra is not None and "prompt_filter_results" in chunks[0].model_extra
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "streamed answer"
    filtered = client.chat.completions.create(model=DEPLOYMENT, messages=messages)
    assert filtered.choices[0].finish_reason == "content_filter"
    results = (filtered.choices[0].model_extra or {})["content_filter_results"]
    assert results["violence"]["filtered"] is True
    cut = list(client.chat.completions.create(model=DEPLOYMENT, messages=messages, stream=True))
    assert cut[-1].choices[0].finish_reason == "content_filter"
    path = f"/openai/deployments/{DEPLOYMENT}/chat/completions?api-version={VERSION}"
    assert srv.request_paths == [path] * 4
    assert all(h["api-key"] == KEY for h in srv.request_headers)


def test_the_sdk_and_reactcore_send_the_same_request_lines(server: Any) -> None:
    """The SDK and reactcore's Azure model send to the same URL with the same credential
    header, for chat completions with a key and for the Responses API with a token."""
    srv = server([azure_reply("a"), azure_reply("b")])
    client = openai.AzureOpenAI(azure_endpoint=srv.base_url, api_key=KEY, api_version=VERSION)
    client.chat.completions.create(model=DEPLOYMENT, messages=[{"role": "user", "content": "x"}])

    async def ours() -> None:
        async with on(srv) as model:
            await model.call(ModelRequest([UserMessage("x")]))

    import anyio

    anyio.run(ours)
    assert srv.request_paths[0] == srv.request_paths[1]
    assert srv.request_headers[0]["api-key"] == srv.request_headers[1]["api-key"] == KEY
    assert "authorization" not in srv.request_headers[1]


def test_the_server_refuses_what_azure_refuses(server: Any) -> None:
    """Without credentials the server answers Azure's 401, without ``api-version`` on a
    deployment URL its 404 — the SDK sees both as errors."""
    srv = server([])
    client = openai.AzureOpenAI(
        azure_endpoint=srv.base_url, api_key=KEY, api_version=VERSION, max_retries=0
    )
    messages: Any = [{"role": "user", "content": "x"}]
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(
            model=DEPLOYMENT, messages=messages, extra_headers={"api-key": openai.Omit()}
        )
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(
            model=DEPLOYMENT, messages=messages, extra_query={"api-version": openai.Omit()}
        )


# --- reactcore on Azure ------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_tool_round_trip_with_an_api_key(server: Any) -> None:
    """A streamed tool call, the tool, the streamed answer: both requests go to the
    deployment URL with ``api-version`` and the key in ``api-key`` (no bearer header); the
    first chunk without choices is skipped."""
    srv = server(
        [azure_stream_reply(asks(("c1", "weather", {"city": "Oslo"}))), azure_stream_reply("ok")]
    )
    async with on(srv) as model:
        result = await ReactAgent("a", model, tools=[weather]).invoke("go")
    assert result.text == "ok"
    tool_message = srv.requests[1]["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "c1", "content": "sunny in Oslo"}
    path = f"/openai/deployments/{DEPLOYMENT}/chat/completions?api-version={VERSION}"
    assert srv.request_paths == [path, path]
    assert [h["api-key"] for h in srv.request_headers] == [KEY, KEY]
    assert all("authorization" not in h for h in srv.request_headers)
    assert srv.requests[0]["model"] == DEPLOYMENT


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_an_entra_token_provider_is_asked_before_every_request(
    server: Any, kind: str
) -> None:
    """A token provider (sync or async callable) is called before each request, as the
    SDK calls it, its token sent as ``Authorization: Bearer``, never an ``api-key``."""
    issued: list[str] = []

    def fresh() -> str:
        issued.append(f"entra-token-{len(issued) + 1}")
        return issued[-1]

    async def fresh_async() -> str:
        return fresh()

    provider: Any = fresh if kind == "sync" else fresh_async
    many = asks(("c1", "weather", {"city": "A"}), ("c2", "weather", {"city": "B"}))
    srv = server([azure_stream_reply(many), azure_stream_reply("done")])
    async with on(srv, api_key=None, token_provider=provider) as model:
        agent = ReactAgent("a", model, tools=[weather], parallel_tool_execution=True)
        result = await agent.invoke("go")
    assert result.text == "done"
    assert issued == ["entra-token-1", "entra-token-2"]
    assert [h["authorization"] for h in srv.request_headers] == [
        "Bearer entra-token-1",
        "Bearer entra-token-2",
    ]
    assert all("api-key" not in h for h in srv.request_headers)
    assert srv.requests[0]["parallel_tool_calls"] is True
    answers = [m for m in srv.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in answers] == ["sunny in A", "sunny in B"]


@pytest.mark.anyio
async def test_a_token_provider_giving_no_token_is_a_clear_error(server: Any) -> None:
    """A token provider returning an empty string (or no string) fails the call with a
    ``ValueError`` naming ``token_provider``, before any request."""
    srv = server([azure_reply("never")])
    async with on(srv, api_key=None, token_provider=lambda: "") as model:
        with pytest.raises(ValueError, match="token_provider"):
            await model.call(ModelRequest([UserMessage("x")]))
    assert srv.requests == []


@pytest.mark.anyio
async def test_content_filter_answers_keep_the_filter_results(server: Any) -> None:
    """A filtered answer, whole or streamed, ends with ``content_filter`` and keeps Azure's
    filter results on the message (``provider_data["azure"]``); a whole answer keeps the
    prompt's results too."""
    srv = server([azure_reply("", flagged="violence"), azure_stream_reply("Part", flagged="hate")])
    async with on(srv) as model:
        whole = await model.call(ModelRequest([UserMessage("x")]))
        assembler = ChunkAssembler()
        async with model.stream(ModelRequest([UserMessage("x")])) as chunks:
            async for chunk in chunks:
                assembler.add(chunk)
    assert whole.message.finish_reason == "content_filter"
    kept = whole.message.provider_data["azure"]
    assert kept["content_filter_results"]["violence"]["filtered"] is True
    assert kept["prompt_filter_results"][0]["prompt_index"] == 0
    streamed = assembler.result().message
    assert streamed.text == "Part"
    assert streamed.finish_reason == "content_filter"
    results = streamed.provider_data["azure"]
    assert results["content_filter_results"]["hate"]["filtered"] is True
    assert "prompt_filter_results" in results


@pytest.mark.anyio
async def test_a_filtered_prompt_is_an_http_error_naming_the_filter(server: Any) -> None:
    """Azure's 400 for a filtered prompt is a ``ModelHTTPError`` (not retried) whose
    message says ``content_filter`` policy and whose body keeps the result."""
    srv = server([azure_prompt_filtered_reply("violence")])
    async with on(srv) as model:
        with pytest.raises(ModelHTTPError) as caught:
            await model.call(ModelRequest([UserMessage("x")]))
    assert caught.value.status_code == 400
    assert "content management policy" in str(caught.value)
    assert "content_filter" in caught.value.body
    assert len(srv.requests) == 1


@pytest.mark.anyio
async def test_errors_are_retried_and_never_show_the_key_or_the_token(server: Any) -> None:
    """A 429 with ``retry-after-ms`` is retried; a 401 echoing the key or the token has it
    blanked out of the error and the model's repr."""
    srv = server(
        [
            azure_error_reply(429, "slow down", headers={"retry-after-ms": "10"}),
            azure_reply("after the retry"),
            azure_error_reply(401, f"bad key {KEY}"),
            azure_error_reply(401, "bad token entra-secret-token"),
        ]
    )
    async with on(srv) as model:
        answer = await model.call(ModelRequest([UserMessage("x")]))
        assert answer.message.text == "after the retry"
        with pytest.raises(ModelHTTPError) as caught:
            await model.call(ModelRequest([UserMessage("x")]))
        assert KEY not in str(caught.value) and KEY not in caught.value.body
        assert KEY not in repr(model)
    async with on(srv, api_key=None, token_provider=lambda: "entra-secret-token") as model:
        with pytest.raises(ModelHTTPError) as caught:
            await model.call(ModelRequest([UserMessage("x")]))
        assert "entra-secret-token" not in str(caught.value)
        assert "entra-secret-token" not in caught.value.body
        assert "[api key]" in str(caught.value)
    assert len(srv.requests) == 4


@pytest.mark.anyio
async def test_the_v1_api_and_the_responses_api(server: Any, clean_env: Any) -> None:
    """Without an api-version the model speaks Azure's v1 API (``/openai/v1/…``, the
    deployment in the body); the Responses API goes to ``/openai/responses`` with the
    version, or ``/openai/v1/responses``."""
    events = responses_events(AssistantMessage("r"))
    srv = server(
        [
            azure_reply("v1"),
            ResponsesSSEReply(events),
            ResponsesSSEReply(events),
        ]
    )
    async with on(srv, api_version=None) as chat:
        assert (await chat.call(ModelRequest([UserMessage("x")]))).message.text == "v1"
    for version in (VERSION, "v1"):
        async with on(srv, api_version=version, responses=True) as responses:
            assert isinstance(responses, OpenAIResponsesModel)
            async with responses.stream(ModelRequest([UserMessage("x")])) as chunks:
                text = "".join([c.text async for c in chunks])
            assert text == "r"
    assert srv.request_paths == [
        "/openai/v1/chat/completions",
        f"/openai/responses?api-version={VERSION}",
        "/openai/v1/responses",
    ]
    assert [r["model"] for r in srv.requests] == [DEPLOYMENT] * 3


@pytest.mark.anyio
async def test_each_attempt_gets_a_fresh_token_and_every_one_is_redacted(server: Any) -> None:
    """The token provider is asked again before a retry, as the SDK asks it per attempt;
    an error echoing any token issued during the call has each blanked out, and no token
    is in the retry logs or the model's repr."""
    issued: list[str] = []

    def fresh() -> str:
        issued.append(f"entra-tok-{len(issued) + 1}")
        return issued[-1]

    srv = server(
        [
            azure_error_reply(503, "busy", headers={"retry-after-ms": "10"}),
            azure_reply("after the retry"),
            azure_error_reply(503, "busy", headers={"retry-after-ms": "10"}),
            azure_error_reply(401, "tokens entra-tok-3 and entra-tok-4 refused"),
        ]
    )
    with structlog.testing.capture_logs() as logs:
        async with on(srv, api_key=None, token_provider=fresh) as model:
            answer = await model.call(ModelRequest([UserMessage("x")]))
            with pytest.raises(ModelHTTPError) as caught:
                await model.call(ModelRequest([UserMessage("x")]))
            assert "entra-tok" not in repr(model)
    assert answer.message.text == "after the retry"
    assert [e["event"] for e in logs].count("model_request_retry") == 2
    assert "entra-tok" not in repr(logs)
    assert [h["authorization"] for h in srv.request_headers] == [
        f"Bearer entra-tok-{i}" for i in range(1, 5)
    ]
    assert "entra-tok" not in str(caught.value) and "entra-tok" not in caught.value.body


def test_azure_strings_read_the_sdk_variables(clean_env: pytest.MonkeyPatch) -> None:
    """``"azure:<deployment>"`` reads ``AZURE_OPENAI_ENDPOINT``, ``AZURE_OPENAI_API_KEY``
    and ``OPENAI_API_VERSION`` as ``AzureOpenAI`` does, naming the one missing; never
    ``OPENAI_API_KEY``; ``"azure-responses:…"`` is the Responses API on Azure."""
    clean_env.setenv("OPENAI_API_KEY", "sk-openai-not-for-azure")
    with pytest.raises(ValueError, match="AZURE_OPENAI_ENDPOINT"):
        infer_model("azure:dep")
    clean_env.setenv("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com/")
    with pytest.raises(ValueError, match="AZURE_OPENAI_API_KEY"):
        infer_model("azure:dep")
    clean_env.setenv("AZURE_OPENAI_API_KEY", KEY)
    clean_env.setenv("OPENAI_API_VERSION", VERSION)
    chat = infer_model("azure:dep")
    assert isinstance(chat, OpenAIChatModel)
    assert chat.api_key == KEY and chat.base_url == "https://res.openai.azure.com"
    assert chat.host is not None and chat.host.api_version == VERSION
    assert isinstance(infer_model("azure-responses:dep"), OpenAIResponsesModel)


def test_azure_model_takes_a_key_or_a_token_provider_not_both(clean_env: Any) -> None:
    """Both credentials at once is a ``ValueError``, as the SDK refuses it; a token provider
    keeps ``AZURE_OPENAI_API_KEY`` from being read."""
    with pytest.raises(ValueError, match="not both"):
        azure_model("d", endpoint="https://x", api_key="k", token_provider=lambda: "t")
    clean_env.setenv("AZURE_OPENAI_API_KEY", KEY)
    model = azure_model("d", endpoint="https://x", token_provider=lambda: "t")
    assert model.api_key is None


def test_redaction_does_not_keep_every_token_it_saw() -> None:
    """Blanking out a stream of fresh tokens (one per request of a long-lived model) keeps
    a bounded number of them in the redaction cache, not every one."""
    from reactcore.models._http import _spellings, redact

    for i in range(200):
        token = f"entra-token-{i}"
        assert redact(f"echo {token}", token) == "echo [api key]"
    assert _spellings.cache_info().currsize <= 64

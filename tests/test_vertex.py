"""Google Vertex AI: the loopback Vertex servers proven against the official clients
(``google-genai`` with ``vertexai=True``, the ``anthropic`` SDK's ``AnthropicVertex``),
their OAuth token endpoint exchanging a real service account's signed JWT; then
reactcore's Vertex models against them — URLs, no call ids for Gemini, Claude's body,
Application Default Credentials with a single-flight refresh, errors and retries, tokens
kept out of errors and reprs — on asyncio and trio."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import anyio
import httpx
import pytest
import structlog
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from reactcore import AssistantMessage, ModelCallRetried, ReactAgent, RunFailed, ToolCall, tool
from reactcore._exceptions import ModelError, ModelHTTPError
from reactcore._messages import UserMessage
from reactcore.models import ModelRequest, infer_model
from reactcore.models._google_auth import GoogleAuth
from reactcore.models.vertex import VertexAnthropicModel, VertexGeminiModel, vertex_host
from reactcore.testing import (
    AnthropicSSEReply,
    GeminiSSEReply,
    VertexAIServer,
    anthropic_error_reply,
    anthropic_message_reply,
    gemini_chunks,
    gemini_error_reply,
    gemini_reply,
    serve_vertex_anthropic,
    serve_vertex_gemini,
)

LOCATION = "us-central1"
REGION = "us-east5"
_VARIABLES = (
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_VERTEX_BASE_URL",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "CLOUD_ML_REGION",
    "ANTHROPIC_VERTEX_BASE_URL",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No Google, Vertex or Anthropic-on-Vertex variable set."""
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def start(env: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    """Start a loopback Vertex server (``serve_vertex_gemini`` or ``serve_vertex_anthropic``)
    whose service account is the Application Default Credentials
    (``GOOGLE_APPLICATION_CREDENTIALS``); stopped after the test."""
    managers: list[Any] = []

    def run(serve: Any, script: Any) -> VertexAIServer:
        manager = serve(script)
        managers.append(manager)
        server: VertexAIServer = manager.__enter__()
        path = server.auth.write_service_account(tmp_path / f"sa-{len(managers)}.json")
        env.setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
        return server

    yield run
    for manager in reversed(managers):
        manager.__exit__(None, None, None)


def gemini_on(server: VertexAIServer, **options: Any) -> VertexGeminiModel:
    settings: dict[str, Any] = {"location": LOCATION, "retry_backoff": 0.01}
    settings.update(options)
    return VertexGeminiModel("gemini-test", base_url=server.base_url, **settings)


def claude_on(server: VertexAIServer, **options: Any) -> VertexAnthropicModel:
    settings: dict[str, Any] = {"location": REGION, "retry_backoff": 0.01}
    settings.update(options)
    return VertexAnthropicModel("claude-test@20250929", base_url=server.base_url, **settings)


def without_ids(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Gemini chunks as Vertex sends them: calls without ids."""
    chunks = copy.deepcopy(chunks)
    for chunk in chunks:
        for part in chunk["candidates"][0]["content"]["parts"]:
            part.get("functionCall", {}).pop("id", None)
    return chunks


def weather_call(*cities: str) -> AssistantMessage:
    calls = [ToolCall(f"c{i}", "weather", f'{{"city": "{c}"}}') for i, c in enumerate(cities)]
    return AssistantMessage("", calls)


@tool
async def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


# --- the loopback servers, proven with the official SDKs ---------------------------------


def test_google_genai_on_vertex_parses_every_answer(start: Any) -> None:
    """``google-genai`` with ``vertexai=True`` pointed at the loopback server gets its
    token from the server's token endpoint (the service account's JWT, checked there) and
    parses a whole answer, a stream, a call and an error; it sends to Vertex's URL shape
    with the bearer token."""
    calls = without_ids(gemini_chunks(weather_call("Paris")))
    srv = start(
        serve_vertex_gemini,
        [
            gemini_reply("hello"),
            GeminiSSEReply.of("streamed answer"),
            GeminiSSEReply(calls),
            gemini_error_reply(429, "quota", retry_delay=0.01),
        ],
    )
    client = genai.Client(
        vertexai=True,
        project="test-project",
        location=LOCATION,
        http_options=genai_types.HttpOptions(
            base_url=srv.base_url, retry_options=genai_types.HttpRetryOptions(attempts=1)
        ),
    )
    assert client.models.generate_content(model="gemini-test", contents="hi").text == "hello"
    stream = client.models.generate_content_stream(model="gemini-test", contents="hi")
    assert "".join(c.text or "" for c in stream) == "streamed answer"
    call = list(client.models.generate_content_stream(model="gemini-test", contents="hi"))
    function = call[-1].function_calls
    assert function is not None and function[0].name == "weather"
    with pytest.raises(genai_errors.ClientError) as caught:
        client.models.generate_content(model="gemini-test", contents="hi")
    assert caught.value.code == 429
    prefix = f"/v1beta1/projects/test-project/locations/{LOCATION}/publishers/google/models/"
    assert srv.request_paths[0] == prefix + "gemini-test:generateContent"
    assert srv.request_paths[1] == prefix + "gemini-test:streamGenerateContent?alt=sse"
    assert len(srv.auth.token_requests) == 1
    assert all(srv.auth.token_valid(h) for h in srv.request_headers)


def test_the_gemini_server_refuses_call_ids_and_bad_tokens(start: Any) -> None:
    """The server refuses, as Vertex does, ``id`` on a ``functionCall`` or a
    ``functionResponse`` (400, seen by the SDK as a ``ClientError``), and a request with
    no token or a token it did not issue (401); none reaches the script."""
    srv = start(serve_vertex_gemini, [])
    client = genai.Client(
        vertexai=True,
        project="test-project",
        location=LOCATION,
        http_options=genai_types.HttpOptions(
            base_url=srv.base_url, retry_options=genai_types.HttpRetryOptions(attempts=1)
        ),
    )
    for part in (
        genai_types.Part(function_call=genai_types.FunctionCall(id="c0", name="f", args={})),
        genai_types.Part(
            function_response=genai_types.FunctionResponse(id="c0", name="f", response={})
        ),
    ):
        contents = [genai_types.Content(role="model", parts=[part])]
        with pytest.raises(genai_errors.ClientError) as caught:
            client.models.generate_content(model="gemini-test", contents=contents)
        assert caught.value.code == 400 and 'Unknown name "id"' in str(caught.value)
    url = f"{srv.base_url}/v1/projects/p/locations/l/publishers/google/models/m:generateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "x"}]}]}
    for headers in ({}, {"Authorization": "Bearer ya29.not-issued"}):
        answer = httpx.post(url, json=body, headers=headers)
        assert answer.status_code == 401
        assert answer.json()["error"]["status"] == "UNAUTHENTICATED"


def test_anthropic_vertex_parses_every_answer(start: Any) -> None:
    """``anthropic.AnthropicVertex`` pointed at the loopback server (credentials from
    Application Default Credentials) parses a whole message, a stream and an error; it
    sends to ``rawPredict`` / ``streamRawPredict`` with the body Vertex takes (no
    ``model``, an ``anthropic_version``) — the server refuses any other."""
    srv = start(
        serve_vertex_anthropic,
        [
            anthropic_message_reply("hello"),
            AnthropicSSEReply.of("streamed answer"),
            anthropic_error_reply(529, "busy", error_type="overloaded_error"),
        ],
    )
    client = anthropic.AnthropicVertex(
        region=REGION, project_id="test-project", base_url=srv.base_url, max_retries=0
    )
    messages: Any = [{"role": "user", "content": "hi"}]
    whole = client.messages.create(model="claude-test", max_tokens=10, messages=messages)
    assert whole.content[0].type == "text" and whole.content[0].text == "hello"
    with client.messages.stream(model="claude-test", max_tokens=10, messages=messages) as s:
        assert s.get_final_text() == "streamed answer"
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model="claude-test", max_tokens=10, messages=messages)
    assert caught.value.status_code == 529
    prefix = f"/v1/projects/test-project/locations/{REGION}/publishers/anthropic/models/"
    assert srv.request_paths[:2] == [
        prefix + "claude-test:rawPredict",
        prefix + "claude-test:streamRawPredict",
    ]
    assert all("model" not in b and b["anthropic_version"] for b in srv.requests)
    assert len(srv.auth.token_requests) == 1


def test_the_claude_server_refuses_a_model_in_the_body_and_bad_tokens(start: Any) -> None:
    """Claude on Vertex's server answers 400 to a body with ``model`` or without its
    ``anthropic_version``, 401 without a token it issued."""
    srv = start(serve_vertex_anthropic, [])
    token = GoogleAuth()
    bearer = {"Authorization": f"Bearer {anyio.run(token)}"}
    url = f"{srv.base_url}/projects/p/locations/{REGION}/publishers/anthropic/models/m:rawPredict"
    good = {"anthropic_version": "vertex-2023-10-16", "max_tokens": 5, "messages": []}
    for body in (
        {**good, "model": "m"},
        {k: v for k, v in good.items() if k != "anthropic_version"},
    ):
        answer = httpx.post(url, json=body, headers=bearer)
        assert answer.status_code == 400 and answer.json()["type"] == "error"
    assert httpx.post(url, json=good).status_code == 401
    assert srv.requests and not srv.auth.token_valid({})


# --- reactcore on Vertex -----------------------------------------------------------------


@pytest.mark.anyio
async def test_gemini_on_vertex_runs_a_parallel_tool_round_trip_without_call_ids(
    start: Any,
) -> None:
    """Two parallel calls streamed without ids (as Vertex sends them) run, and their
    responses go back without ids (Vertex refuses them) in one user turn, pairing by
    order; a call the model gave an id goes back without it too."""
    srv = start(
        serve_vertex_gemini,
        [
            GeminiSSEReply(without_ids(gemini_chunks(weather_call("Paris", "Rome")))),
            GeminiSSEReply.of(weather_call("Oslo")),  # with an id
            GeminiSSEReply.of("All sunny."),
        ],
    )
    async with gemini_on(srv) as model:
        agent = ReactAgent("w", model, tools=[weather], parallel_tool_execution=True)
        result = await agent.invoke("weather?")
    assert result.text == "All sunny."
    last = srv.requests[2]["contents"]
    responses = [p["functionResponse"] for p in last[-1]["parts"]]
    assert responses == [{"name": "weather", "response": {"output": "sunny in Oslo"}}]
    first = [p["functionResponse"]["response"]["output"] for p in last[2]["parts"]]
    assert first == ["sunny in Paris", "sunny in Rome"]
    assert all(p.endswith(":streamGenerateContent?alt=sse") for p in srv.request_paths)
    assert len(srv.auth.token_requests) == 1


@pytest.mark.anyio
async def test_claude_on_vertex_runs_a_tool_round_trip(start: Any) -> None:
    """A streamed call, the tool, the streamed answer, on ``streamRawPredict`` with the
    body Vertex takes (the server refuses any other) and one token for both requests."""
    srv = start(
        serve_vertex_anthropic,
        [AnthropicSSEReply.of(weather_call("Paris")), AnthropicSSEReply.of("Sunny.")],
    )
    async with claude_on(srv) as model:
        result = await ReactAgent("w", model, tools=[weather]).invoke("weather?")
    assert result.text == "Sunny."
    assert srv.requests[1]["messages"][-1]["content"][0]["tool_use_id"] == "c0"
    assert all(b["anthropic_version"] == "vertex-2023-10-16" for b in srv.requests)
    assert all(p.endswith(":streamRawPredict") for p in srv.request_paths)
    assert len(srv.auth.token_requests) == 1


@pytest.mark.anyio
async def test_errors_are_retried_and_never_show_the_token(start: Any) -> None:
    """A 429 is retried after the body's ``RetryInfo`` wait, with the same token; a 400
    echoing the token fails the call with it blanked out of the error."""

    def script(body: Any) -> Any:
        if len(srv.requests) == 1:
            return gemini_error_reply(429, "slow down", retry_delay=0.2)
        if len(srv.requests) == 2:
            return gemini_reply("fine")
        (token,) = srv.auth.tokens
        return gemini_error_reply(400, f"bad request from {token}")

    srv = start(serve_vertex_gemini, script)
    async with gemini_on(srv) as model:
        answer = await model.call(ModelRequest([UserMessage("x")]))
        assert answer.message.text == "fine"
        assert srv.request_times[1] - srv.request_times[0] >= 0.2
        with pytest.raises(ModelHTTPError) as caught:
            await model.call(ModelRequest([UserMessage("x")]))
    (token,) = srv.auth.tokens
    assert caught.value.status_code == 400
    assert token not in str(caught.value) and token not in (caught.value.body or "")
    assert token not in repr(model) and token not in repr(model.token_provider)


@pytest.mark.anyio
async def test_claude_on_vertex_keeps_the_token_out_of_errors_logs_and_events(
    start: Any,
) -> None:
    """Claude on Vertex: a 529 echoing the token is retried (a retry event, a log line), a
    401 echoing it fails the run; the token is in none of the error, its body, the logs,
    the events (``RunFailed`` carries the error) or the model's repr."""

    def script(body: Any) -> Any:
        (token,) = srv.auth.tokens
        if len(srv.requests) == 1:
            return anthropic_error_reply(
                529, f"overloaded for {token}", error_type="overloaded_error"
            )
        return anthropic_error_reply(
            401, f"token {token} refused", error_type="authentication_error"
        )

    srv = start(serve_vertex_anthropic, script)
    events: list[Any] = []
    with structlog.testing.capture_logs() as logs:
        async with claude_on(srv) as model:
            async with ReactAgent("a", model).stream("go") as stream:
                events.extend([event async for event in stream])
            seen = repr(model)
    (token,) = srv.auth.tokens
    failed = events[-1]
    assert isinstance(failed, RunFailed) and isinstance(failed.error, ModelHTTPError)
    assert failed.error.status_code == 401 and len(srv.requests) == 2
    assert any(isinstance(e, ModelCallRetried) for e in events)
    assert [e["event"] for e in logs].count("model_request_retry") == 1
    for text in (str(failed.error), failed.error.body or "", repr(logs), repr(events), seen):
        assert token not in text
    assert token.split("-", 1)[1] not in repr(logs)


@pytest.mark.anyio
async def test_an_expired_token_is_refreshed_once_for_fifty_concurrent_calls(
    start: Any,
) -> None:
    """A token about to lapse (google-auth treats one within 3 min 45 s of its end as
    expired) is refreshed before the next calls; fifty concurrent calls needing the
    refresh cause exactly one token request (single-flight, in a worker thread) and all
    carry the new token."""
    srv = start(serve_vertex_gemini, lambda body: gemini_reply("ok"))
    srv.auth.token_lifetime = 60  # already "expired" for google-auth
    async with gemini_on(srv) as model:
        await model.call(ModelRequest([UserMessage("x")]))
        assert len(srv.auth.token_requests) == 1
        srv.auth.token_lifetime = 3600
        async with anyio.create_task_group() as group:
            for _ in range(50):
                group.start_soon(model.call, ModelRequest([UserMessage("x")]))
    assert len(srv.auth.token_requests) == 2
    first, fresh = srv.auth.tokens  # in the order issued
    assert srv.request_headers[0]["authorization"] == f"Bearer {first}"
    assert len(srv.request_headers) == 51
    assert all(h["authorization"] == f"Bearer {fresh}" for h in srv.request_headers[1:])


@pytest.mark.anyio
async def test_a_refused_assertion_is_a_model_error_and_the_next_call_tries_again(
    start: Any, tmp_path: Path, env: pytest.MonkeyPatch
) -> None:
    """A service account the token endpoint refuses (another key) fails the call with a
    ``ModelError`` saying the token could not be had; with the right file the next
    call gets one."""
    srv = start(serve_vertex_gemini, [gemini_reply("ok")])
    other = start(serve_vertex_gemini, [])
    wrong = dict(other.auth.service_account, token_uri=srv.auth.token_uri)
    from google.oauth2 import service_account

    auth = GoogleAuth(
        credentials=service_account.Credentials.from_service_account_info(
            wrong, scopes=list(GoogleAuth().scopes)
        )
    )
    async with gemini_on(srv, token_provider=auth) as model:
        with pytest.raises(ModelError, match="could not get a Google access token"):
            await model.call(ModelRequest([UserMessage("x")]))
        assert srv.requests == []
        auth.credentials = service_account.Credentials.from_service_account_info(
            srv.auth.service_account, scopes=list(auth.scopes)
        )
        answer = await model.call(ModelRequest([UserMessage("x")]))
    assert answer.message.text == "ok"


@pytest.mark.anyio
async def test_no_credentials_anywhere_is_a_model_error_saying_so(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without Application Default Credentials (no file, no gcloud login, no metadata
    server) the call fails with a ``ModelError`` naming what is missing."""
    env.setenv("HOME", str(tmp_path))  # no gcloud user credentials
    env.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    env.setenv("NO_GCE_CHECK", "True")  # not on Google Cloud: no metadata server
    model = VertexGeminiModel("m", project="p", base_url="http://127.0.0.1:9")
    with pytest.raises(ModelError, match="no Google Application Default Credentials"):
        await model.call(ModelRequest([UserMessage("x")]))
    await model.aclose()


# --- settings, URLs, provider strings ------------------------------------------------------


def test_urls_follow_the_location(env: pytest.MonkeyPatch) -> None:
    """The host follows the location: global (the default for Gemini), a multi-region,
    a region; Claude's base URL ends with ``/v1``; the variables override all."""
    assert vertex_host("global") == "https://aiplatform.googleapis.com"
    assert vertex_host("eu") == "https://aiplatform.eu.rep.googleapis.com"
    assert vertex_host(LOCATION) == f"https://{LOCATION}-aiplatform.googleapis.com"
    gemini = VertexGeminiModel("g", project="p", token_provider=lambda: "t")
    assert gemini.location == "global" and gemini.base_url == vertex_host("global")
    request = ModelRequest([UserMessage("x")])
    assert gemini._url(request, stream=False) == (
        "https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/google/"
        "models/g:generateContent"
    )
    claude = VertexAnthropicModel("claude-x@2025", project="p", location="europe-west1")
    assert claude._url(request, stream=True) == (
        "https://europe-west1-aiplatform.googleapis.com/v1/projects/p/locations/europe-west1/"
        "publishers/anthropic/models/claude-x@2025:streamRawPredict"
    )
    env.setenv("GOOGLE_CLOUD_PROJECT", "gp")
    env.setenv("GOOGLE_CLOUD_LOCATION", "asia-east1")
    env.setenv("GOOGLE_VERTEX_BASE_URL", "http://proxy.test/")
    env.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "ap")
    env.setenv("CLOUD_ML_REGION", "us-east5")
    env.setenv("ANTHROPIC_VERTEX_BASE_URL", "http://claude-proxy.test/v1")
    gemini = VertexGeminiModel("g")
    assert (gemini.project, gemini.location, gemini.base_url) == (
        "gp",
        "asia-east1",
        "http://proxy.test",
    )
    claude = VertexAnthropicModel("c")
    assert (claude.project, claude.location, claude.base_url) == (
        "ap",
        "us-east5",
        "http://claude-proxy.test/v1",
    )


def test_missing_settings_name_the_variable(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A missing project names its variable (the service-account file's ``project_id``
    stands in for it); Claude without a region names ``CLOUD_ML_REGION``; an unreadable
    credentials file names ``GOOGLE_APPLICATION_CREDENTIALS``."""
    with pytest.raises(ValueError, match="GOOGLE_CLOUD_PROJECT"):
        VertexGeminiModel("g")
    with pytest.raises(ValueError, match="ANTHROPIC_VERTEX_PROJECT_ID"):
        VertexAnthropicModel("c", location="us-east5")
    with pytest.raises(ValueError, match="CLOUD_ML_REGION"):
        VertexAnthropicModel("c", project="p")
    (tmp_path / "sa.json").write_text('{"type": "service_account", "project_id": "from-file"}')
    env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "sa.json"))
    assert VertexGeminiModel("g").project == "from-file"
    env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="GOOGLE_APPLICATION_CREDENTIALS"):
        VertexGeminiModel("g")


def test_vertex_provider_strings(env: pytest.MonkeyPatch) -> None:
    """``"google-vertex:<model>"`` and ``"anthropic-vertex:<model>"`` make the Vertex
    models from the SDKs' variables, and say which variable is missing, or that
    ``GOOGLE_APPLICATION_CREDENTIALS`` names no file."""
    with pytest.raises(ValueError, match="GOOGLE_CLOUD_PROJECT"):
        infer_model("google-vertex:gemini-2.5-flash")
    with pytest.raises(ValueError, match="ANTHROPIC_VERTEX_PROJECT_ID"):
        infer_model("anthropic-vertex:claude-sonnet-4-5")
    env.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "ap")
    with pytest.raises(ValueError, match="CLOUD_ML_REGION"):
        infer_model("anthropic-vertex:claude-sonnet-4-5")
    env.setenv("GOOGLE_CLOUD_PROJECT", "gp")
    env.setenv("CLOUD_ML_REGION", "us-east5")
    gemini = infer_model("google-vertex:gemini-2.5-flash")
    assert isinstance(gemini, VertexGeminiModel) and gemini.project == "gp"
    env.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/sa.json")
    with pytest.raises(ValueError, match="GOOGLE_APPLICATION_CREDENTIALS='/nonexistent"):
        infer_model("google-vertex:gemini-2.5-flash")
    env.delenv("GOOGLE_APPLICATION_CREDENTIALS")
    claude = infer_model("anthropic-vertex:claude-sonnet-4-5")
    assert isinstance(claude, VertexAnthropicModel) and claude.location == "us-east5"
    assert isinstance(claude.token_provider, GoogleAuth)

"""Provider strings: ``infer_model`` and ``ReactAgent("x", "openai:gpt-4.1")``, keys and
base URLs from the environment, clear errors for unknown providers and missing keys."""

from __future__ import annotations

import pytest

from reactcore import (
    GeminiModel,
    ModelFallbackInterceptor,
    OpenAIChatModel,
    OpenAIResponsesModel,
    ReactAgent,
    infer_model,
)
from reactcore._messages import UserMessage
from reactcore.models import ModelRequest, known_providers
from reactcore.testing import (
    GeminiSSEReply,
    ResponsesSSEReply,
    SSEReply,
    serve_gemini,
    serve_openai_compatible,
    serve_openai_responses,
)

KEY = "sk-provider-string-test"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No provider variable set."""
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_openai_string_makes_an_openai_model_from_the_environment(
    clean_env: pytest.MonkeyPatch,
) -> None:
    """``"openai:gpt-4.1"`` is an ``OpenAIChatModel`` for ``gpt-4.1`` with the key and base
    URL of ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``."""
    clean_env.setenv("OPENAI_API_KEY", KEY)
    clean_env.setenv("OPENAI_BASE_URL", "http://proxy.local/v1")
    model = infer_model("openai:gpt-4.1")
    assert isinstance(model, OpenAIChatModel)
    assert (model.model, model.api_key, model.base_url) == ("gpt-4.1", KEY, "http://proxy.local/v1")


def test_openai_responses_string_makes_a_responses_model_from_the_environment(
    clean_env: pytest.MonkeyPatch,
) -> None:
    """``"openai-responses:gpt-5"`` is an ``OpenAIResponsesModel`` for ``gpt-5`` with
    OpenAI's key and base URL; without the key it says to set ``OPENAI_API_KEY``."""
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        infer_model("openai-responses:gpt-5")
    clean_env.setenv("OPENAI_API_KEY", KEY)
    clean_env.setenv("OPENAI_BASE_URL", "http://proxy.local/v1")
    model = infer_model("openai-responses:gpt-5")
    assert isinstance(model, OpenAIResponsesModel)
    assert (model.model, model.api_key, model.base_url) == ("gpt-5", KEY, "http://proxy.local/v1")
    assert "openai-responses" in known_providers()


def test_an_unknown_provider_lists_the_known_ones(clean_env: pytest.MonkeyPatch) -> None:
    """An unknown provider, or a string without one, is a ``ValueError`` naming every
    known provider."""
    for name in ("nosuch:large", "gpt-4.1", ":x", "openai:"):
        with pytest.raises(ValueError, match="known providers") as caught:
            infer_model(name)
        assert all(p in str(caught.value) for p in known_providers())
    assert "openai" in known_providers()


def test_a_missing_key_names_the_variable_to_set(clean_env: pytest.MonkeyPatch) -> None:
    """Without ``OPENAI_API_KEY`` the string fails at once, saying which variable to set
    (rather than a DNS or 401 error at the first call); with only a base URL it works
    (a local server may need no key)."""
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        ReactAgent("x", "openai:gpt-4.1")
    clean_env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    assert isinstance(infer_model("openai:gpt-4.1"), OpenAIChatModel)


@pytest.mark.anyio
async def test_a_model_without_key_for_the_openai_api_says_what_to_set(
    clean_env: pytest.MonkeyPatch,
) -> None:
    """An ``OpenAIChatModel`` built without a key for the OpenAI API itself raises a
    ``ValueError`` naming ``OPENAI_API_KEY`` when called, before any network access."""
    async with OpenAIChatModel("gpt-4.1") as model:
        with pytest.raises(ValueError, match="OPENAI_API_KEY"):
            await model.call(ModelRequest([UserMessage("hi")]))


@pytest.mark.anyio
async def test_an_agent_and_a_fallback_take_provider_strings(
    clean_env: pytest.MonkeyPatch,
) -> None:
    """``ReactAgent("x", "openai:m")`` answers through the model the string names, and
    ``ModelFallbackInterceptor`` takes strings too."""
    with serve_openai_compatible([SSEReply.of("hello")]) as server:
        clean_env.setenv("OPENAI_BASE_URL", server.base_url)
        clean_env.setenv("OPENAI_API_KEY", KEY)
        fallback = ModelFallbackInterceptor(["openai:backup"])
        assert isinstance(fallback.models[0], OpenAIChatModel)
        agent = ReactAgent("x", "openai:test-model", interceptors=[fallback])
        result = await agent.invoke("hi")
    assert result.text == "hello"
    assert server.requests[0]["model"] == "test-model"
    assert server.request_headers[0]["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("variable", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
def test_google_string_makes_a_gemini_model_from_the_environment(
    clean_env: pytest.MonkeyPatch, variable: str
) -> None:
    """``"google:gemini-2.5-flash"`` (also spelled ``google-gla:``, as pydantic-ai does)
    is a ``GeminiModel`` with the key of ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY`` and the
    base URL of ``GOOGLE_GEMINI_BASE_URL`` (the variable google-genai reads)."""
    clean_env.setenv(variable, KEY)
    clean_env.setenv("GOOGLE_GEMINI_BASE_URL", "http://proxy.local/")
    for name in ("google:gemini-2.5-flash", "google-gla:gemini-2.5-flash"):
        model = infer_model(name)
        assert isinstance(model, GeminiModel)
        assert (model.model, model.api_key, model.base_url) == (
            "gemini-2.5-flash",
            KEY,
            "http://proxy.local",
        )
    assert {"google", "google-gla"} <= set(known_providers())


def test_google_api_key_wins_over_gemini_api_key(clean_env: pytest.MonkeyPatch) -> None:
    """With both set, ``GOOGLE_API_KEY`` is the key, as the official SDK decides; without
    either the string fails at once naming both."""
    with pytest.raises(ValueError, match="GOOGLE_API_KEY or GEMINI_API_KEY"):
        infer_model("google:gemini-2.5-flash")
    clean_env.setenv("GEMINI_API_KEY", "gemini-key")
    clean_env.setenv("GOOGLE_API_KEY", "google-key")
    model = infer_model("google:gemini-2.5-flash")
    assert isinstance(model, GeminiModel) and model.api_key == "google-key"


@pytest.mark.anyio
async def test_an_agent_takes_a_google_string(clean_env: pytest.MonkeyPatch) -> None:
    """``ReactAgent("x", "google:m")`` answers through the Gemini API the environment
    names, with the key in ``x-goog-api-key``."""
    with serve_gemini([GeminiSSEReply.of("hello from Gemini")]) as server:
        clean_env.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        clean_env.setenv("GEMINI_API_KEY", KEY)
        result = await ReactAgent("x", "google:gemini-test").invoke("hi")
    assert result.text == "hello from Gemini"
    assert server.request_paths == ["/v1beta/models/gemini-test:streamGenerateContent?alt=sse"]
    assert server.request_headers[0]["x-goog-api-key"] == KEY


@pytest.mark.anyio
async def test_an_agent_takes_an_openai_responses_string(clean_env: pytest.MonkeyPatch) -> None:
    """``ReactAgent("x", "openai-responses:m")`` answers through the Responses API at
    ``OPENAI_BASE_URL``."""
    with serve_openai_responses([ResponsesSSEReply.of("hello")]) as server:
        clean_env.setenv("OPENAI_BASE_URL", server.base_url)
        clean_env.setenv("OPENAI_API_KEY", KEY)
        result = await ReactAgent("x", "openai-responses:test-model").invoke("hi")
    assert result.text == "hello"
    assert server.requests[0]["model"] == "test-model" and server.requests[0]["store"] is False
    assert server.request_headers[0]["authorization"] == f"Bearer {KEY}"

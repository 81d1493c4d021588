"""Provider drivers for the scenarios every wire dialect must pass
(``test_agent_providers.py``): one small class per provider, each knowing its loopback
server, its client, how its replies and errors are built, and how its requests carry tool
results and its opaque provider data (thinking signatures, encrypted reasoning), and what
its request calls the conversation.

A scenario takes the ``provider`` fixture and speaks only through a driver, so a new
provider joins every scenario by adding a driver to ``PROVIDERS``.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import itertools
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs
import httpx

from reactcore import (
    AnthropicModel,
    AssistantMessage,
    ChatModel,
    GeminiModel,
    OpenAIChatModel,
    OpenAIResponsesModel,
)
from reactcore.models import (
    BedrockModel,
    GoogleAuth,
    Usage,
    VertexAnthropicModel,
    VertexGeminiModel,
    azure_model,
)
from reactcore.models._google_auth import CLOUD_PLATFORM
from reactcore.testing import (
    TEST_ACCESS_KEY_ID,
    TEST_SECRET_ACCESS_KEY,
    AnthropicSSEReply,
    BedrockStreamReply,
    GeminiSSEReply,
    HTTPReply,
    OpenAICompatibleServer,
    ResponsesSSEReply,
    ServerReply,
    SSEReply,
    VertexAIServer,
    anthropic_error_reply,
    anthropic_events,
    azure_error_reply,
    azure_events,
    azure_stream_reply,
    bedrock_error_reply,
    bedrock_events,
    event_frame,
    gemini_chunks,
    gemini_error_reply,
    reasoning_signature,
    responses_error_reply,
    responses_events,
    serve_anthropic,
    serve_azure_openai,
    serve_bedrock,
    serve_gemini,
    serve_openai_compatible,
    serve_openai_responses,
    serve_vertex_anthropic,
    serve_vertex_gemini,
)

KEY = "sk-provider-scenarios-4c2e"
USAGE = Usage(10, 5, 15)
Serve = Callable[[Any], contextlib.AbstractContextManager[OpenAICompatibleServer]]


def _client(
    cls: Callable[..., ChatModel],
    name: str,
    server: OpenAICompatibleServer,
    http_client: httpx.AsyncClient | None,
    **options: Any,
) -> ChatModel:
    """A client of ``cls`` on ``server``, with the test key and quick retries."""
    return cls(
        name,
        base_url=server.base_url,
        http_client=http_client,
        api_key=KEY,
        retry_backoff=0.01,
        **options,
    )


def _without_provider_data(message: AssistantMessage | str) -> AssistantMessage | str:
    if isinstance(message, AssistantMessage):
        return attrs.evolve(message, provider_data={})
    return message


@attrs.frozen
class OpenAIChatDriver:
    """OpenAI-compatible chat completions: no opaque data of its own; tool results are
    ``tool`` messages, which have no error mark."""

    name: ClassVar[str] = "openai"
    model_string: ClassVar[str] = "openai:test-model"
    base_url_variable: ClassVar[str] = "OPENAI_BASE_URL"
    api_key_variable: ClassVar[str] = "OPENAI_API_KEY"
    signature: ClassVar[str | None] = None
    marks_errors: ClassVar[bool] = False
    serve: ClassVar[Serve] = staticmethod(serve_openai_compatible)

    def opaque(self) -> dict[str, Any]:
        """What this provider keeps on an assistant message: nothing."""
        return {}

    def model(
        self,
        server: OpenAICompatibleServer,
        *,
        http_client: httpx.AsyncClient | None = None,
        thinking: bool = False,
    ) -> ChatModel:
        return _client(OpenAIChatModel, "test-model", server, http_client)

    def reply(self, message: AssistantMessage | str) -> ServerReply:
        return SSEReply.of(_without_provider_data(message), usage=USAGE)

    def hanging(self, text: str) -> SSEReply:
        """The first events of a streamed ``text`` answer, then the stream stays open
        until the client leaves (``client_left`` is set then)."""
        return SSEReply(SSEReply.of(text).events[:2], ending="hang")

    def cut_inside_call(self, message: AssistantMessage) -> ServerReply:
        """``message`` streamed and cut inside its first call's arguments."""
        full = SSEReply.of(_without_provider_data(message), chunk_size=3)
        return SSEReply(full.events[:-3], ending="cut")

    def error(self, status: int, retry_after: float) -> ServerReply:
        """A retryable error status asking for a pause of ``retry_after`` seconds."""
        return HTTPReply.error(status, "busy", headers={"retry-after": str(retry_after)})

    def results(self, body: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
        """The tool results ``body`` sends back last, by call id: their text and whether
        they are marked as errors."""
        tail = itertools.takewhile(lambda m: m["role"] == "tool", body["messages"][::-1])
        return {m["tool_call_id"]: (m["content"], False) for m in reversed(list(tail))}

    def conversation(self, body: Mapping[str, Any]) -> list[Any]:
        """The conversation ``body`` sends: its messages."""
        return list(body["messages"])

    def check_round_trip(self, body: Mapping[str, Any], *, thinking: bool = False) -> None:
        """Assert ``body`` sends this provider's opaque data back as it came: none here."""


@attrs.frozen
class AzureDriver(OpenAIChatDriver):
    """Azure OpenAI: the chat-completions wire of ``OpenAIChatDriver`` on Azure's v1 API,
    the key in ``api-key``; streams open with a chunk without choices (the prompt's filter
    results), every choice carries its filter results; Azure's error bodies."""

    name: ClassVar[str] = "azure"
    model_string: ClassVar[str] = "azure:test-model"
    base_url_variable: ClassVar[str] = "AZURE_OPENAI_ENDPOINT"
    api_key_variable: ClassVar[str] = "AZURE_OPENAI_API_KEY"
    serve: ClassVar[Serve] = staticmethod(serve_azure_openai)

    def model(
        self,
        server: OpenAICompatibleServer,
        *,
        http_client: httpx.AsyncClient | None = None,
        thinking: bool = False,
    ) -> ChatModel:
        return azure_model(
            "test-model",
            endpoint=server.base_url,
            api_key=KEY,
            api_version="v1",
            http_client=http_client,
            retry_backoff=0.01,
        )

    def reply(self, message: AssistantMessage | str) -> ServerReply:
        return azure_stream_reply(_without_provider_data(message), usage=USAGE)

    def hanging(self, text: str) -> SSEReply:
        return SSEReply(azure_events(SSEReply.of(text).events[:2]), ending="hang")  # type: ignore[arg-type]

    def cut_inside_call(self, message: AssistantMessage) -> ServerReply:
        full = azure_stream_reply(_without_provider_data(message), chunk_size=3)
        return SSEReply(full.events[:-3], ending="cut")

    def error(self, status: int, retry_after: float) -> ServerReply:
        return azure_error_reply(status, "busy", headers={"retry-after": str(retry_after)})


ANTHROPIC_SIGNATURE = "EqQBCkgIARABGAIiQL-signed-by-anthropic"
ANTHROPIC_THINKING = {
    "type": "thinking",
    "thinking": "Both cities.",
    "signature": ANTHROPIC_SIGNATURE,
}


@attrs.frozen
class AnthropicDriver:
    """Anthropic's Messages API: signed thinking blocks as opaque data; tool results are
    ``tool_result`` blocks of one user turn, errors marked ``is_error``."""

    name: ClassVar[str] = "anthropic"
    model_string: ClassVar[str] = "anthropic:claude-test"
    base_url_variable: ClassVar[str] = "ANTHROPIC_BASE_URL"
    api_key_variable: ClassVar[str] = "ANTHROPIC_API_KEY"
    signature: ClassVar[str | None] = ANTHROPIC_SIGNATURE
    marks_errors: ClassVar[bool] = True
    serve: ClassVar[Serve] = staticmethod(serve_anthropic)

    def opaque(self) -> dict[str, Any]:
        return {"anthropic": {"thinking": [{"index": 0, **ANTHROPIC_THINKING}]}}

    def model(
        self,
        server: OpenAICompatibleServer,
        *,
        http_client: httpx.AsyncClient | None = None,
        thinking: bool = False,
    ) -> ChatModel:
        """The client on ``server``; ``thinking`` turns extended thinking on."""
        return _client(
            AnthropicModel,
            "claude-test",
            server,
            http_client,
            thinking_budget=1024 if thinking else None,
        )

    def reply(self, message: AssistantMessage | str) -> ServerReply:
        return AnthropicSSEReply.of(message, usage=USAGE)

    def hanging(self, text: str) -> AnthropicSSEReply:
        return AnthropicSSEReply(anthropic_events(text)[:4], ending="hang")

    def cut_inside_call(self, message: AssistantMessage) -> ServerReply:
        events = anthropic_events(message, chunk_size=3)
        inside = next(
            i for i, e in enumerate(events) if e.get("delta", {}).get("type") == "input_json_delta"
        )
        return AnthropicSSEReply(events[: inside + 1], ending="cut")

    def error(self, status: int, retry_after: float) -> ServerReply:
        headers = {"retry-after": str(retry_after)}
        return anthropic_error_reply(status, "busy", error_type="overloaded_error", headers=headers)

    def results(self, body: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
        blocks = body["messages"][-1]["content"]
        return {
            b["tool_use_id"]: (b["content"][0]["text"], b.get("is_error", False)) for b in blocks
        }

    def conversation(self, body: Mapping[str, Any]) -> list[Any]:
        return list(body["messages"])

    def check_round_trip(self, body: Mapping[str, Any], *, thinking: bool = False) -> None:
        """The signed thinking block leads the first assistant turn, verbatim; with
        ``thinking``, the request has thinking on."""
        assistant = next(m for m in body["messages"] if m["role"] == "assistant")
        assert assistant["content"][0] == ANTHROPIC_THINKING
        if thinking:
            assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}


RESPONSES_ENCRYPTED = "gAAAAABo-encrypted-reasoning-of-the-responses-model"
RESPONSES_REASONING = {
    "type": "reasoning",
    "id": "rs_scenario",
    "summary": [{"type": "summary_text", "text": "Both cities."}],
    "encrypted_content": RESPONSES_ENCRYPTED,
}


@attrs.frozen
class OpenAIResponsesDriver:
    """OpenAI's Responses API: encrypted reasoning items as opaque data, sent back (with the
    item ids they are paired with) on every stateless request; tool results are
    ``function_call_output`` items, which have no error mark."""

    name: ClassVar[str] = "openai-responses"
    model_string: ClassVar[str] = "openai-responses:test-model"
    base_url_variable: ClassVar[str] = "OPENAI_BASE_URL"
    api_key_variable: ClassVar[str] = "OPENAI_API_KEY"
    signature: ClassVar[str | None] = RESPONSES_ENCRYPTED
    marks_errors: ClassVar[bool] = False
    serve: ClassVar[Serve] = staticmethod(serve_openai_responses)

    def opaque(self) -> dict[str, Any]:
        return {"openai-responses": {"output": [RESPONSES_REASONING]}}

    def model(
        self,
        server: OpenAICompatibleServer,
        *,
        http_client: httpx.AsyncClient | None = None,
        thinking: bool = False,
    ) -> ChatModel:
        """The client on ``server``; ``thinking`` asks for low effort and a summary."""
        return _client(
            OpenAIResponsesModel,
            "test-model",
            server,
            http_client,
            reasoning_effort="low" if thinking else None,
            reasoning_summary="auto" if thinking else None,
        )

    def reply(self, message: AssistantMessage | str) -> ServerReply:
        return ResponsesSSEReply.of(message, usage=USAGE)

    def hanging(self, text: str) -> ResponsesSSEReply:
        return ResponsesSSEReply(responses_events(text)[:6], ending="hang")

    def cut_inside_call(self, message: AssistantMessage) -> ServerReply:
        events = responses_events(message, chunk_size=3)
        inside = next(
            i for i, e in enumerate(events) if e["type"] == "response.function_call_arguments.delta"
        )
        return ResponsesSSEReply(events[: inside + 1], ending="cut")

    def error(self, status: int, retry_after: float) -> ServerReply:
        headers = {"retry-after": str(retry_after)}
        return responses_error_reply(status, "busy", headers=headers)

    def results(self, body: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
        outputs = itertools.takewhile(
            lambda i: i.get("type") == "function_call_output", body["input"][::-1]
        )
        return {i["call_id"]: (i["output"], False) for i in reversed(list(outputs))}

    def conversation(self, body: Mapping[str, Any]) -> list[Any]:
        return list(body["input"])

    def check_round_trip(self, body: Mapping[str, Any], *, thinking: bool = False) -> None:
        """The reasoning item goes back verbatim, encrypted content and all, right before
        the items it was paired with (their ids kept), statelessly; with ``thinking``, the
        request asks for reasoning."""
        items = body["input"]
        at = items.index(RESPONSES_REASONING)
        assert items[at + 1]["id"].startswith(("msg_", "fc_"))
        assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
        if thinking:
            assert body["reasoning"] == {"effort": "low", "summary": "auto"}


GEMINI_SIGNATURE = "R2VtaW5pLXNpZ25lZCB0aG91Z2h0IHNpZ25hdHVyZQ=="
GEMINI_THOUGHT = {"text": "Both cities.", "thought": True}
# The layout of a signed Gemini turn: a thought, the text "Checking.", the first call
# signed (any later calls follow it unsigned, as the API sends a parallel batch).
GEMINI_LAYOUT = [
    {"part": GEMINI_THOUGHT},
    {"ref": "text", "size": len("Checking.")},
    {"ref": "call", "index": 0, "thoughtSignature": GEMINI_SIGNATURE},
]


@attrs.frozen
class GeminiDriver:
    """The Gemini API: the turn's layout (thought parts, the thought signature on its
    first ``functionCall``) as opaque data; tool results are ``functionResponse`` parts of
    one user turn, errors as ``{"error": …}``; a 429's wait in the body's ``RetryInfo``;
    calls arrive whole, so a stream is cut after a call, before its ``finishReason``."""

    name: ClassVar[str] = "google"  # the key of its provider data, as for the others
    model_string: ClassVar[str] = "google:gemini-test"
    base_url_variable: ClassVar[str] = "GOOGLE_GEMINI_BASE_URL"
    api_key_variable: ClassVar[str] = "GEMINI_API_KEY"
    signature: ClassVar[str | None] = GEMINI_SIGNATURE
    marks_errors: ClassVar[bool] = True
    serve: ClassVar[Serve] = staticmethod(serve_gemini)

    def opaque(self) -> dict[str, Any]:
        return {"google": {"parts": GEMINI_LAYOUT}}

    def model(
        self,
        server: OpenAICompatibleServer,
        *,
        http_client: httpx.AsyncClient | None = None,
        thinking: bool = False,
    ) -> ChatModel:
        """The client on ``server``; ``thinking`` sets a thinking budget."""
        return _client(
            GeminiModel,
            "gemini-test",
            server,
            http_client,
            thinking_budget=1024 if thinking else None,
        )

    def reply(self, message: AssistantMessage | str) -> ServerReply:
        return GeminiSSEReply.of(message, usage=USAGE)

    def hanging(self, text: str) -> GeminiSSEReply:
        return GeminiSSEReply(gemini_chunks(text)[:2], ending="hang")

    def cut_inside_call(self, message: AssistantMessage) -> ServerReply:
        """``message`` streamed up to its first call, which comes whole, and cut before
        the answer's ``finishReason``."""
        chunks = copy.deepcopy(gemini_chunks(message, chunk_size=3))
        at = next(
            i
            for i, c in enumerate(chunks)
            if "functionCall" in c["candidates"][0]["content"]["parts"][0]
        )
        chunks[at]["candidates"][0].pop("finishReason", None)
        return GeminiSSEReply(chunks[: at + 1], ending="cut")

    def error(self, status: int, retry_after: float) -> ServerReply:
        """The wait asked for in the body (``RetryInfo.retryDelay``), no header."""
        return gemini_error_reply(status, "busy", retry_delay=retry_after)

    def results(self, body: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
        parts = body["contents"][-1]["parts"]
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        return {
            r["id"]: (
                r["response"].get("output", r["response"].get("error")),
                "error" in r["response"],
            )
            for r in responses
        }

    def conversation(self, body: Mapping[str, Any]) -> list[Any]:
        return list(body["contents"])

    def check_round_trip(self, body: Mapping[str, Any], *, thinking: bool = False) -> None:
        """The first model turn goes back part for part: the thought, the text, the
        signature on the first call only; with ``thinking``, the thinking budget."""
        model_turn = next(t for t in body["contents"] if t["role"] == "model")
        parts = model_turn["parts"]
        assert parts[:2] == [GEMINI_THOUGHT, {"text": "Checking."}]
        calls = parts[2:]
        assert calls[0]["thoughtSignature"] == GEMINI_SIGNATURE
        assert all("functionCall" in p and "thoughtSignature" not in p for p in calls[1:])
        if thinking:
            assert body["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 1024}


@contextlib.contextmanager
def _serve_vertex(
    serve: Callable[[Any], contextlib.AbstractContextManager[VertexAIServer]], script: Any
) -> Iterator[VertexAIServer]:
    """A loopback Vertex server whose service account is, for the block, the Application
    Default Credentials (``GOOGLE_APPLICATION_CREDENTIALS``, in a temporary file) and
    ``CLOUD_ML_REGION`` set: what a child process making the model from its string
    needs (the crash scenario). Both are restored after the block."""
    saved = {v: os.environ.get(v) for v in _VERTEX_VARIABLES}
    with tempfile.TemporaryDirectory() as directory, serve(script) as server:
        path = server.auth.write_service_account(Path(directory) / "service-account.json")
        os.environ["GOOGLE_APPLICATION_CREDENTIALS"] = path
        os.environ["CLOUD_ML_REGION"] = REGION
        try:
            yield server
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


_VERTEX_VARIABLES = ("GOOGLE_APPLICATION_CREDENTIALS", "CLOUD_ML_REGION")
REGION = "us-east5"


def _vertex_auth(server: OpenAICompatibleServer) -> GoogleAuth:
    """Tokens for ``server``'s service account (given, not read from the environment)."""
    from google.oauth2 import service_account

    assert isinstance(server, VertexAIServer)
    info = server.auth.service_account
    scopes = [CLOUD_PLATFORM]
    return GoogleAuth(service_account.Credentials.from_service_account_info(info, scopes=scopes))


@attrs.frozen
class VertexGeminiDriver(GeminiDriver):
    """Gemini on Vertex AI: the Gemini wire at Vertex's URLs with OAuth tokens; no call
    ids go back (the server refuses them), so tool results pair with their calls by
    order: the i-th response answers the i-th call, which the scenarios name
    ``toolu_{i}``."""

    name: ClassVar[str] = "google-vertex"
    model_string: ClassVar[str] = "google-vertex:gemini-test"
    base_url_variable: ClassVar[str] = "GOOGLE_VERTEX_BASE_URL"
    api_key_variable: ClassVar[str] = "GOOGLE_CLOUD_PROJECT"  # no key: the project
    serve: ClassVar[Serve] = staticmethod(functools.partial(_serve_vertex, serve_vertex_gemini))

    def model(
        self,
        server: OpenAICompatibleServer,
        *,
        http_client: httpx.AsyncClient | None = None,
        thinking: bool = False,
    ) -> ChatModel:
        return VertexGeminiModel(
            "gemini-test",
            project=KEY,
            location="us-central1",
            base_url=server.base_url,
            token_provider=_vertex_auth(server),
            http_client=http_client,
            retry_backoff=0.01,
            thinking_budget=1024 if thinking else None,
        )

    def results(self, body: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
        parts = body["contents"][-1]["parts"]
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        assert all("id" not in r for r in responses)
        return {
            f"toolu_{i}": (
                r["response"].get("output", r["response"].get("error")),
                "error" in r["response"],
            )
            for i, r in enumerate(responses)
        }


@attrs.frozen
class VertexAnthropicDriver(AnthropicDriver):
    """Claude on Vertex AI: the Messages wire at ``rawPredict`` / ``streamRawPredict``
    with OAuth tokens, the body without ``model`` and with ``anthropic_version``."""

    name: ClassVar[str] = "anthropic-vertex"
    model_string: ClassVar[str] = "anthropic-vertex:claude-test"
    base_url_variable: ClassVar[str] = "ANTHROPIC_VERTEX_BASE_URL"
    api_key_variable: ClassVar[str] = "ANTHROPIC_VERTEX_PROJECT_ID"  # no key: the project
    serve: ClassVar[Serve] = staticmethod(functools.partial(_serve_vertex, serve_vertex_anthropic))

    def model(
        self,
        server: OpenAICompatibleServer,
        *,
        http_client: httpx.AsyncClient | None = None,
        thinking: bool = False,
    ) -> ChatModel:
        return VertexAnthropicModel(
            "claude-test",
            project=KEY,
            location=REGION,
            base_url=server.base_url,
            token_provider=_vertex_auth(server),
            http_client=http_client,
            retry_backoff=0.01,
            thinking_budget=1024 if thinking else None,
        )

    def check_round_trip(self, body: Mapping[str, Any], *, thinking: bool = False) -> None:
        """As Anthropic's, with Vertex's body: no ``model``, its ``anthropic_version``."""
        super().check_round_trip(body, thinking=thinking)
        assert "model" not in body and body["anthropic_version"] == "vertex-2023-10-16"


def data_key(driver: Provider) -> str:
    """The key of the driver's provider data on messages: Vertex's models keep Gemini's
    and Anthropic's."""
    return {"google-vertex": "google", "anthropic-vertex": "anthropic"}.get(
        driver.name, driver.name
    )


BEDROCK_SIGNATURE = reasoning_signature("Both cities.")
BEDROCK_REASONING = {
    "reasoningContent": {"reasoningText": {"text": "Both cities.", "signature": BEDROCK_SIGNATURE}}
}


@attrs.frozen
class BedrockDriver:
    """Amazon Bedrock's Converse API: requests signed with SigV4 (the server recomputes
    the signature), answers streamed in AWS event-stream frames cut across HTTP chunks;
    signed reasoning as opaque data; tool results are ``toolResult`` blocks of one user
    turn, errors marked ``status: "error"``."""

    name: ClassVar[str] = "bedrock"
    model_string: ClassVar[str] = "bedrock:test-model"
    base_url_variable: ClassVar[str] = "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"
    api_key_variable: ClassVar[str] = "AWS_BEARER_TOKEN_BEDROCK"
    signature: ClassVar[str | None] = BEDROCK_SIGNATURE
    marks_errors: ClassVar[bool] = True
    serve: ClassVar[Serve] = staticmethod(serve_bedrock)

    def opaque(self) -> dict[str, Any]:
        reasoning = {"index": 0, "text": "Both cities.", "signature": BEDROCK_SIGNATURE}
        return {"bedrock": {"reasoning": [reasoning]}}

    def model(
        self,
        server: OpenAICompatibleServer,
        *,
        http_client: httpx.AsyncClient | None = None,
        thinking: bool = False,
    ) -> ChatModel:
        """The client on ``server``, signing with the server's credentials; ``thinking``
        sets a thinking budget."""
        return BedrockModel(
            "test-model",
            base_url=server.base_url,
            region="us-east-1",
            aws_access_key_id=TEST_ACCESS_KEY_ID,
            aws_secret_access_key=TEST_SECRET_ACCESS_KEY,
            http_client=http_client,
            retry_backoff=0.01,
            thinking_budget=1024 if thinking else None,
        )

    def reply(self, message: AssistantMessage | str) -> ServerReply:
        return BedrockStreamReply.of(message, usage=USAGE, split=7)

    def hanging(self, text: str) -> BedrockStreamReply:
        return BedrockStreamReply([event_frame(e) for e in bedrock_events(text)[:2]], ending="hang")

    def cut_inside_call(self, message: AssistantMessage) -> ServerReply:
        events = bedrock_events(message, chunk_size=3)
        inside = next(
            i
            for i, e in enumerate(events)
            if "toolUse" in e.get("contentBlockDelta", {}).get("delta", {})
        )
        return BedrockStreamReply([event_frame(e) for e in events[: inside + 1]], ending="cut")

    def error(self, status: int, retry_after: float) -> ServerReply:
        return bedrock_error_reply(status, "busy", headers={"retry-after": str(retry_after)})

    def results(self, body: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
        blocks = [b["toolResult"] for b in body["messages"][-1]["content"] if "toolResult" in b]
        return {r["toolUseId"]: (r["content"][0]["text"], r["status"] == "error") for r in blocks}

    def conversation(self, body: Mapping[str, Any]) -> list[Any]:
        return list(body["messages"])

    def check_round_trip(self, body: Mapping[str, Any], *, thinking: bool = False) -> None:
        """The signed reasoning leads the first assistant turn, unchanged (the server
        refuses it otherwise); with ``thinking``, the request has thinking on."""
        assistant = next(m for m in body["messages"] if m["role"] == "assistant")
        assert assistant["content"][0] == BEDROCK_REASONING
        if thinking:
            thinking_on = {"type": "enabled", "budget_tokens": 1024}
            assert body["additionalModelRequestFields"] == {"thinking": thinking_on}


Provider = OpenAIChatDriver | AnthropicDriver | OpenAIResponsesDriver | GeminiDriver | BedrockDriver
PROVIDERS: list[Provider] = [
    OpenAIChatDriver(),
    AnthropicDriver(),
    OpenAIResponsesDriver(),
    GeminiDriver(),
    AzureDriver(),
    VertexGeminiDriver(),
    VertexAnthropicDriver(),
    BedrockDriver(),
]


def every_opaque() -> dict[str, Any]:
    """The opaque data of every provider, as a message that has been through all of them
    (a fallback chain) carries it: each provider must send back only its own."""
    data: dict[str, Any] = {}
    for driver in PROVIDERS:
        data.update(driver.opaque())
    return data


def check_only_own_opaque_data(provider: Provider, body: Mapping[str, Any]) -> None:
    """``body`` carries ``provider``'s signature and no other provider's."""
    sent = json.dumps(body)
    for driver in PROVIDERS:
        if driver.signature is not None:
            assert (driver.signature in sent) == (data_key(driver) == data_key(provider)), (
                driver.name
            )

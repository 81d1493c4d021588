"""Provider strings: ``infer_model("anthropic:claude-sonnet-4-5")`` → a chat model.

A string names a provider and a model, ``"<provider>:<model>"``; the provider's client is
made with its defaults, which come from the environment as pydantic-ai users know them
(``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL``,
``GOOGLE_API_KEY`` or ``GEMINI_API_KEY`` / ``GOOGLE_GEMINI_BASE_URL`` for ``google:``, also
spelled ``google-gla:`` as pydantic-ai spells the Gemini API);
``"openai-responses:<model>"`` is OpenAI's Responses API, with OpenAI's variables.

The OpenAI-compatible hosts (``"groq:…"``, ``"ollama:…"`` …, the table ``HOSTS``) are
``OpenAIChatModel``s with the host's preset: its key variable only (never
``OPENAI_API_KEY``) and ``<HOST>_BASE_URL``. ``"azure:<deployment>"`` (chat completions)
and ``"azure-responses:<deployment>"`` are Azure OpenAI, configured as the ``openai`` SDK's
``AzureOpenAI`` is: ``AZURE_OPENAI_ENDPOINT``, ``AZURE_OPENAI_API_KEY`` and
``OPENAI_API_VERSION`` (unset: the v1 API); an Entra token needs a model object with
``token_provider=`` (``azure_model``).
``"google-vertex:<model>"`` is Gemini on Vertex AI (``GOOGLE_CLOUD_PROJECT``,
``GOOGLE_CLOUD_LOCATION``, ``GOOGLE_VERTEX_BASE_URL``) and ``"anthropic-vertex:<model>"``
Claude on Vertex AI (``ANTHROPIC_VERTEX_PROJECT_ID``, ``CLOUD_ML_REGION``,
``ANTHROPIC_VERTEX_BASE_URL``), both with Application Default Credentials; a missing
project or region is a ``ValueError`` naming its variable.
``ReactAgent`` and ``ModelFallbackInterceptor`` take such strings through ``as_chat_model``,
the one place a string becomes a model.
``"bedrock:<model id or inference profile>"`` is Amazon Bedrock's Converse API, configured
as boto3 is: ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, the standard credential chain (or
``AWS_BEARER_TOKEN_BEDROCK``), ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` then
``AWS_ENDPOINT_URL``; nothing is checked before the first call, when the chain is
resolved.
"""

from __future__ import annotations

import os

from ._client import HTTPModel
from ._hosts import HOSTS, Host, azure_host
from .anthropic import AnthropicModel
from .base import ChatModel
from .bedrock import BedrockModel
from .gemini import GeminiModel
from .openai import OpenAIChatModel
from .openai_responses import OpenAIResponsesModel
from .vertex import VertexAnthropicModel, VertexGeminiModel

_PROVIDERS: dict[str, type[HTTPModel]] = {
    "anthropic": AnthropicModel,
    "bedrock": BedrockModel,
    "google": GeminiModel,
    "google-gla": GeminiModel,  # pydantic-ai's name for the Gemini API
    "openai": OpenAIChatModel,
    "openai-responses": OpenAIResponsesModel,
}


_AZURE: dict[str, type[HTTPModel]] = {
    "azure": OpenAIChatModel,
    "azure-responses": OpenAIResponsesModel,
}


# Vertex AI: the model's own settings and credentials come from the SDKs' variables
# (project, location) and Application Default Credentials, checked when it is made.
_VERTEX: dict[str, type[HTTPModel]] = {
    "google-vertex": VertexGeminiModel,
    "anthropic-vertex": VertexAnthropicModel,
}


def known_providers() -> tuple[str, ...]:
    """The provider names ``infer_model`` knows, sorted: the APIs, the OpenAI-compatible
    hosts, Azure and Vertex AI."""
    return tuple(sorted([*_PROVIDERS, *HOSTS, *_AZURE, *_VERTEX]))


def _hosted(name: str, model: str, cls: type[HTTPModel], host: Host) -> ChatModel:
    """``cls`` on ``host``, after checking the environment holds what it needs: the
    endpoint, and the key unless ``<HOST>_BASE_URL`` points elsewhere (a local server
    may need none)."""
    if host.base_url is None and not os.environ.get(host.base_url_variable):
        raise ValueError(f"no endpoint for {name!r}: set {host.base_url_variable}")
    key = host.key_variable
    elsewhere = host.base_url is not None and os.environ.get(host.base_url_variable)
    if host.key_required and key is not None and not os.environ.get(key) and not elsewhere:
        extra = " (or pass a model object with token_provider=)" if host.azure else ""
        raise ValueError(
            f"no API key for {name!r}: set {key}{extra}, or pass a model object with api_key="
        )
    return cls(model, host=host)


def infer_model(name: str) -> ChatModel:
    """The chat model a provider string names: ``"openai:gpt-4.1"``,
    ``"anthropic:claude-sonnet-4-5"``, ``"google:gemini-2.5-flash"``.

    Raises ``ValueError`` for a string without a provider or with an unknown one (listing
    the known ones), and for a missing API key (naming the variable to set) unless the
    provider's base-URL variable points somewhere else (a local server may need no key).
    """
    provider, colon, model = name.partition(":")
    known = ", ".join(known_providers())
    if not colon or not provider or not model:
        raise ValueError(
            f"a model string is '<provider>:<model>' (e.g. 'openai:gpt-4.1'), got {name!r}; "
            f"known providers: {known}"
        )
    if provider in HOSTS:
        return _hosted(name, model, OpenAIChatModel, HOSTS[provider])
    if provider in _AZURE:
        host = azure_host(os.environ.get("OPENAI_API_VERSION") or None)
        return _hosted(name, model, _AZURE[provider], host)
    if provider in _VERTEX:
        return _VERTEX[provider](model)
    found = _PROVIDERS.get(provider)
    if found is None:
        raise ValueError(
            f"unknown model provider {provider!r} in {name!r}; known providers: {known}"
        )
    if found is BedrockModel:  # the AWS credential chain is resolved when signing
        return found(model)
    variables = (*found.api_key_variables, found.base_url_variable)
    if not any(os.environ.get(v) for v in variables):
        keys = " or ".join(found.api_key_variables)
        raise ValueError(
            f"no API key for {name!r}: set {keys} (or {found.base_url_variable} "
            "for a server that needs none), or pass a model object with api_key="
        )
    return found(model)


def as_chat_model(model: ChatModel | str) -> ChatModel:
    """``model`` itself, or the model a provider string names (``infer_model``)."""
    return infer_model(model) if isinstance(model, str) else model

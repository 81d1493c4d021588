"""Provider strings: ``infer_model("anthropic:claude-sonnet-4-5")`` → a chat model.

A string names a provider and a model, ``"<provider>:<model>"``; the provider's client is
made with its defaults, which come from the environment as pydantic-ai users know them
(``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL``,
``GOOGLE_API_KEY`` or ``GEMINI_API_KEY`` / ``GOOGLE_GEMINI_BASE_URL`` for ``google:``, also
spelled ``google-gla:`` as pydantic-ai spells the Gemini API);
``"openai-responses:<model>"`` is OpenAI's Responses API, with OpenAI's variables.
``ReactAgent`` and ``ModelFallbackInterceptor`` take such strings through ``as_chat_model``,
the one place a string becomes a model.
"""

from __future__ import annotations

import os

from ._client import HTTPModel
from .anthropic import AnthropicModel
from .base import ChatModel
from .gemini import GeminiModel
from .openai import OpenAIChatModel
from .openai_responses import OpenAIResponsesModel

_PROVIDERS: dict[str, type[HTTPModel]] = {
    "anthropic": AnthropicModel,
    "google": GeminiModel,
    "google-gla": GeminiModel,  # pydantic-ai's name for the Gemini API
    "openai": OpenAIChatModel,
    "openai-responses": OpenAIResponsesModel,
}


def known_providers() -> tuple[str, ...]:
    """The provider names ``infer_model`` knows, sorted."""
    return tuple(sorted(_PROVIDERS))


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
    found = _PROVIDERS.get(provider)
    if found is None:
        raise ValueError(
            f"unknown model provider {provider!r} in {name!r}; known providers: {known}"
        )
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

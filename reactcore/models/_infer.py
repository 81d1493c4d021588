"""Provider strings: ``infer_model("anthropic:claude-sonnet-4-5")`` → a chat model.

A string names a provider and a model, ``"<provider>:<model>"``; the provider's client is
made with its defaults, which come from the environment as pydantic-ai users know them
(``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL``).
``ReactAgent`` and ``ModelFallbackInterceptor`` take such strings through ``as_chat_model``,
the one place a string becomes a model.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import attrs

from .anthropic import AnthropicModel
from .base import ChatModel
from .openai import OpenAIChatModel


@attrs.frozen
class _Provider:
    make: Callable[[str], ChatModel]
    key_variable: str
    url_variable: str


_PROVIDERS: dict[str, _Provider] = {
    "anthropic": _Provider(AnthropicModel, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
    "openai": _Provider(OpenAIChatModel, "OPENAI_API_KEY", "OPENAI_BASE_URL"),
}


def known_providers() -> tuple[str, ...]:
    """The provider names ``infer_model`` knows, sorted."""
    return tuple(sorted(_PROVIDERS))


def infer_model(name: str) -> ChatModel:
    """The chat model a provider string names: ``"openai:gpt-4.1"``,
    ``"anthropic:claude-sonnet-4-5"``.

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
    if not os.environ.get(found.key_variable) and not os.environ.get(found.url_variable):
        raise ValueError(
            f"no API key for {name!r}: set {found.key_variable} (or {found.url_variable} "
            "for a server that needs none), or pass a model object with api_key="
        )
    return found.make(model)


def as_chat_model(model: ChatModel | str) -> ChatModel:
    """``model`` itself, or the model a provider string names (``infer_model``)."""
    return infer_model(model) if isinstance(model, str) else model

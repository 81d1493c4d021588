"""Azure OpenAI: ``azure_model`` makes a chat model on an Azure OpenAI resource.

Azure serves the OpenAI wire formats (chat completions, the Responses API) with its own
URLs and credentials, so a model on Azure is an ``OpenAIChatModel`` (or, with
``responses=True``, an ``OpenAIResponsesModel``) on the Azure host (``azure_host``): the
wire mapping is the OpenAI one, only where requests go and how they are signed differ.
The settings are read as the ``openai`` SDK's ``AzureOpenAI`` reads them:
``AZURE_OPENAI_ENDPOINT``, ``AZURE_OPENAI_API_KEY`` and ``OPENAI_API_VERSION``.

Credentials: an API key (the ``api-key`` header), or a Microsoft Entra token provider, a
sync or async callable returning a token (Azure Identity's ``get_bearer_token_provider``),
called before every request as the SDK calls it, its token sent as ``Authorization:
Bearer``. The key and every token are blanked out of errors, and never in a repr.
"""

from __future__ import annotations

import os
from typing import Any

from ._client import HTTPModel, TokenProvider
from ._hosts import azure_host
from .openai import OpenAIChatModel
from .openai_responses import OpenAIResponsesModel

V1 = "v1"
"""``api_version=V1``: Azure's v1 API (``{endpoint}/openai/v1/…``), which takes no version."""


def azure_model(
    deployment: str,
    *,
    endpoint: str | None = None,
    api_key: str | None = None,
    token_provider: TokenProvider | None = None,
    api_version: str | None = None,
    responses: bool = False,
    **options: Any,
) -> OpenAIChatModel | OpenAIResponsesModel:
    """A chat model on the Azure OpenAI deployment ``deployment``.

    ``endpoint`` defaults to ``AZURE_OPENAI_ENDPOINT`` (``https://<resource>.openai.azure.com``);
    ``api_key`` to ``AZURE_OPENAI_API_KEY``, unless ``token_provider`` is given (one of
    the two, as the SDK requires). ``api_version`` defaults to ``OPENAI_API_VERSION``:
    with one, the deployment URLs with ``?api-version=``; without one (or ``"v1"``), the v1
    API. ``responses=True`` makes an ``OpenAIResponsesModel`` (the Responses API on
    Azure) rather than an ``OpenAIChatModel``; ``options`` are that class's (``timeout``,
    ``max_retries``, ``http_client``, ``headers`` …).

    Raises ``ValueError`` when both ``api_key`` and ``token_provider`` are given.
    """
    version = api_version if api_version is not None else os.environ.get("OPENAI_API_VERSION")
    host = azure_host(None if not version or version == V1 else version)
    cls: type[HTTPModel] = OpenAIResponsesModel if responses else OpenAIChatModel
    model = cls(
        deployment,
        host=host,
        base_url=endpoint,
        api_key=api_key,
        token_provider=token_provider,
        **options,
    )
    assert isinstance(model, OpenAIChatModel | OpenAIResponsesModel)
    return model

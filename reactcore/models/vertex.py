"""Google Vertex AI: Gemini on Vertex (``VertexGeminiModel``) and Claude on Vertex
(``VertexAnthropicModel``).

Vertex serves the Gemini and the Anthropic Messages wire formats at its own URLs, with
Google OAuth tokens, so these are the Gemini and Anthropic clients with Vertex's URL
shapes, credentials and the few deviations of the wire:

- Gemini: ``{base_url}/v1/projects/{project}/locations/{location}/publishers/google/
  models/{model}:generateContent`` (``:streamGenerateContent?alt=sse``); the base URL is
  ``https://{location}-aiplatform.googleapis.com``, ``https://aiplatform.googleapis.com``
  for the ``global`` location (the default, as ``google-genai``'s), and
  ``https://aiplatform.{us|eu}.rep.googleapis.com`` for the multi-regions. Vertex
  refuses ``id`` on ``functionCall`` and ``functionResponse`` (the Gemini API accepts
  it): none is sent, calls and responses pair by order and name.
- Claude: ``{base_url}/projects/{project}/locations/{region}/publishers/anthropic/models/
  {model}:rawPredict`` (``:streamRawPredict`` for streams), where the base URL ends with
  ``/v1``; the body has no ``model`` and carries ``"anthropic_version":
  "vertex-2023-10-16"``.

Settings as the official SDKs read them: Gemini — ``GOOGLE_CLOUD_PROJECT``,
``GOOGLE_CLOUD_LOCATION`` and the base URL override ``GOOGLE_VERTEX_BASE_URL``; Claude —
``ANTHROPIC_VERTEX_PROJECT_ID``, ``CLOUD_ML_REGION`` and ``ANTHROPIC_VERTEX_BASE_URL``.
Without a project variable, the ``project_id`` of the service-account file
``GOOGLE_APPLICATION_CREDENTIALS`` names. Credentials: ``token_provider=`` (any sync or
async callable returning a token), by default a ``GoogleAuth`` over Application Default
Credentials (``reactcore.models._google_auth``); its tokens are blanked out of errors as
keys are.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar
from urllib.parse import quote

import attrs

from ._client import URL, HTTPModel, from_env
from ._google_auth import GoogleAuth, project_from_credentials_file
from .anthropic import AnthropicModel
from .base import ModelRequest
from .gemini import GeminiModel

VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"
"""The ``anthropic_version`` Claude on Vertex takes in the body."""
GLOBAL = "global"
_MULTI_REGIONS = ("us", "eu")


def vertex_host(location: str) -> str:
    """The Vertex AI host of ``location``: the global endpoint, a multi-region's or a
    region's (``https://us-central1-aiplatform.googleapis.com``)."""
    if location == GLOBAL:
        return "https://aiplatform.googleapis.com"
    if location in _MULTI_REGIONS:
        return f"https://aiplatform.{location}.rep.googleapis.com"
    return f"https://{location}-aiplatform.googleapis.com"


def _segment(value: str) -> str:
    return quote(value, safe="@")


def _project(value: str | None, variable: str, what: str) -> str:
    if not isinstance(value, str | None):
        raise TypeError(f"project must be a str, got {type(value).__name__}")
    found = value or os.environ.get(variable) or project_from_credentials_file()
    if not found:
        raise ValueError(
            f"no Google Cloud project for {what}: set {variable} (or use a service-account "
            "file with a project_id in GOOGLE_APPLICATION_CREDENTIALS), or pass project="
        )
    return found


def _vertex_base_url(value: str | None, model: Any) -> str:
    host: str = vertex_host(model.location)
    found = from_env(value, (model.base_url_variable,), host + model.base_url_suffix)
    assert isinstance(found, str)
    return found.rstrip("/")


def _base_url_field() -> Any:
    """The ``base_url`` of a Vertex model: redefined after ``location``, which its default
    (the location's host) depends on."""
    return attrs.field(
        default=None,
        converter=attrs.Converter(_vertex_base_url, takes_self=True),
        kw_only=True,
        validator=URL,
    )


def _gemini_project(value: str | None) -> str:
    return _project(value, "GOOGLE_CLOUD_PROJECT", "Gemini on Vertex")


def _gemini_location(value: str | None) -> str:
    return from_env(value, ("GOOGLE_CLOUD_LOCATION",), GLOBAL) or GLOBAL


def _claude_project(value: str | None) -> str:
    return _project(value, "ANTHROPIC_VERTEX_PROJECT_ID", "Claude on Vertex")


def _claude_region(value: str | None) -> str:
    found = from_env(value, ("CLOUD_ML_REGION",))
    if not found:
        raise ValueError("no region for Claude on Vertex: set CLOUD_ML_REGION, or pass location=")
    return found


def _default_credentials(model: HTTPModel) -> None:
    """Application Default Credentials unless the model has a token provider (or a key);
    a ``GOOGLE_APPLICATION_CREDENTIALS`` naming no file is a ``ValueError`` now rather
    than a failed call later."""
    if model.token_provider is not None or model.api_key is not None:
        return
    path = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if path and not os.path.isfile(path):
        raise ValueError(
            f"GOOGLE_APPLICATION_CREDENTIALS={path!r} names no file: point it at a "
            "service-account or credentials file, unset it, or pass token_provider="
        )
    model.token_provider = GoogleAuth()


@attrs.define(eq=False)
class VertexGeminiModel(GeminiModel):
    """Gemini on Vertex AI (see the module): a ``GeminiModel`` at Vertex's URLs, with
    Google OAuth tokens, sending no call ids.

    ``project`` defaults to ``GOOGLE_CLOUD_PROJECT`` (else the credentials file's
    ``project_id``), ``location`` to ``GOOGLE_CLOUD_LOCATION``, else ``"global"``;
    ``base_url`` to ``GOOGLE_VERTEX_BASE_URL``, else the location's host (``vertex_host``),
    without the API version, which is ``api_version`` (``"v1"``). ``token_provider``
    defaults to ``GoogleAuth()`` (Application Default Credentials). The other options are
    ``GeminiModel``'s.
    """

    telemetry_name: ClassVar[str | None] = "gcp.vertex_ai"
    api_name: ClassVar[str] = "Gemini on Vertex AI"
    base_url_variable: ClassVar[str] = "GOOGLE_VERTEX_BASE_URL"
    api_key_variables: ClassVar[tuple[str, ...]] = ()
    base_url_suffix: ClassVar[str] = ""
    call_ids: ClassVar[bool] = False

    project: str = attrs.field(default=None, converter=_gemini_project, kw_only=True)
    location: str = attrs.field(default=None, converter=_gemini_location, kw_only=True)
    base_url: str = _base_url_field()
    api_version: str = attrs.field(default="v1", kw_only=True, validator=URL)

    def __attrs_post_init__(self) -> None:
        _default_credentials(self)

    def _url(self, request: ModelRequest, *, stream: bool) -> str:
        model = request.options.model or self.model
        if "/" in model:  # a full resource path (a tuned model's endpoint)
            resource = quote(model, safe="/@")
        else:
            resource = (
                f"projects/{_segment(self.project)}/locations/{_segment(self.location)}/"
                f"publishers/google/models/{_segment(model)}"
            )
        url = f"{self.base_url}/{self.api_version}/{resource}"
        return f"{url}:streamGenerateContent?alt=sse" if stream else f"{url}:generateContent"


@attrs.define(eq=False)
class VertexAnthropicModel(AnthropicModel):
    """Claude on Vertex AI (see the module): an ``AnthropicModel`` at Vertex's
    ``rawPredict`` / ``streamRawPredict`` URLs, with Google OAuth tokens, the body without
    ``model`` and with ``anthropic_version``.

    ``project`` defaults to ``ANTHROPIC_VERTEX_PROJECT_ID`` (else the credentials file's
    ``project_id``), ``location`` (the region) to ``CLOUD_ML_REGION`` (required, as the SDK
    requires it; ``"global"`` for the global endpoint); ``base_url`` to
    ``ANTHROPIC_VERTEX_BASE_URL``, else the region's host with ``/v1``. ``token_provider``
    defaults to ``GoogleAuth()``. The other options are ``AnthropicModel``'s.
    """

    telemetry_name: ClassVar[str | None] = "gcp.vertex_ai"
    api_name: ClassVar[str] = "Claude on Vertex AI"
    base_url_variable: ClassVar[str] = "ANTHROPIC_VERTEX_BASE_URL"
    api_key_variables: ClassVar[tuple[str, ...]] = ()
    base_url_suffix: ClassVar[str] = "/v1"

    project: str = attrs.field(default=None, converter=_claude_project, kw_only=True)
    location: str = attrs.field(default=None, converter=_claude_region, kw_only=True)
    base_url: str = _base_url_field()

    def __attrs_post_init__(self) -> None:
        _default_credentials(self)

    def _body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        body = super()._body(request, stream=stream)
        del body["model"]  # in the URL
        return {"anthropic_version": VERTEX_ANTHROPIC_VERSION, **body}

    def _url(self, request: ModelRequest, *, stream: bool) -> str:
        model = request.options.model or self.model
        method = "streamRawPredict" if stream else "rawPredict"
        return (
            f"{self.base_url}/projects/{_segment(self.project)}/locations/"
            f"{_segment(self.location)}/publishers/anthropic/models/{_segment(model)}:{method}"
        )

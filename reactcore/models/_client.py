"""``HTTPModel``: what every HTTP chat-model client shares besides the wire.

The settings (``base_url`` and ``api_key`` from the provider's environment variables,
``timeout``, the retry knobs, a caller's ``http_client``), their checks, and the life of
the HTTP client: the model owns a client it made and closes it in ``aclose()`` (or at the
end of ``async with``); a given ``http_client`` is left open for its owner. ``call`` and
``stream`` send what the provider module builds through the shared ``Endpoint``.

A provider client is a subclass that names its API (the class variables) and supplies
its wire mapping: ``_body``, ``_url``, ``_headers``, ``_parse`` and ``_events`` (and
``_retry_hint`` when its error bodies say how long to wait). This is
implementation sharing between the library's own clients, as httpx's ``BaseClient`` is
for its clients; users extend reactcore with any object that has ``call`` and ``stream``
(the ``ChatModel`` protocol), never by subclassing.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, ClassVar, Self

import attrs
import httpx
from anyio.lowlevel import checkpoint

from .. import _validate as valid
from ._http import Endpoint, EventParser
from .base import ModelChunk, ModelRequest, ModelResponse

DEFAULT_TIMEOUT = httpx.Timeout(60, connect=5)

# The checks every model client's common fields get (one wording for all providers).
_OPTIONAL_SECONDS = valid.number(minimum=0, optional=True)
URL = valid.text()
KEY = valid.text(optional=True)
TIMEOUT = valid.instance_of(httpx.Timeout, "an httpx.Timeout, a number of seconds or None")
RETRIES = valid.integer(minimum=0)
SECONDS = valid.number(minimum=0)
FLAG = valid.boolean()
HTTP_CLIENT = valid.instance_of(httpx.AsyncClient, "an httpx.AsyncClient", optional=True)
MODEL_NAME = valid.text(non_empty=True)


def as_timeout(value: httpx.Timeout | float | None) -> httpx.Timeout:
    """A model's ``timeout`` option: an ``httpx.Timeout``, seconds, or ``None`` for none."""
    if isinstance(value, httpx.Timeout):
        return value
    return httpx.Timeout(value) if _OPTIONAL_SECONDS.spec.accepts(value) else valid.leave(value)


def from_env(
    value: str | None, variables: tuple[str, ...], default: str | None = None
) -> str | None:
    """A model's ``base_url`` or ``api_key``: as given, else the first of the environment's
    ``variables`` that is set, else ``default`` (a value of the wrong type is left for the
    field's check to name)."""
    if not isinstance(value, str | None):
        return valid.leave(value)
    found = value or next((os.environ[v] for v in variables if os.environ.get(v)), None)
    return found or default


def _base_url(value: str | None, model: Any) -> str:
    # ``model`` is the HTTPModel being made (attrs types it as any attrs instance).
    found = from_env(value, (model.base_url_variable,), model.default_base_url)
    return found.rstrip("/") if isinstance(found, str) else valid.leave(found)


def _api_key(value: str | None, model: Any) -> str | None:
    return from_env(value, model.api_key_variables)


def _client_for(model: HTTPModel) -> httpx.AsyncClient:
    if model.http_client is not None:
        return model.http_client
    return httpx.AsyncClient(timeout=model.timeout)


@attrs.define(eq=False)
class HTTPModel:
    """The settings and client life every provider's chat model shares (see the module).

    ``base_url`` and ``api_key`` default to the provider's environment variables (else
    its public API, which needs a key); ``options.model`` in a request overrides
    ``model``. ``timeout`` (an ``httpx.Timeout``, or seconds; ``None`` for none) applies
    to every request, also through a given ``http_client``. ``max_retries``,
    ``retry_backoff`` (the first pause) and ``retry_after_cap`` shape the shared layer's
    retries (``reactcore.models._http``).
    """

    provider_name: ClassVar[str]
    """The key of this provider's data on messages (``AssistantMessage.provider_data``)."""
    telemetry_name: ClassVar[str | None] = None
    """``gen_ai.provider.name`` in OpenTelemetry spans, when the conventions name the
    provider otherwise than ``provider_name`` (``"openai"`` for the Responses API,
    ``"gcp.gemini"`` for Gemini)."""
    api_name: ClassVar[str]
    base_url_variable: ClassVar[str]
    api_key_variables: ClassVar[tuple[str, ...]]
    default_base_url: ClassVar[str]
    request_id_header: ClassVar[str] = "x-request-id"

    model: str = attrs.field(validator=MODEL_NAME)
    base_url: str = attrs.field(
        default=None,
        converter=attrs.Converter(_base_url, takes_self=True),  # type: ignore[misc]
        kw_only=True,
        validator=URL,
    )
    api_key: str | None = attrs.field(
        default=None,
        converter=attrs.Converter(_api_key, takes_self=True),  # type: ignore[misc]
        kw_only=True,
        repr=False,
        validator=KEY,
    )
    timeout: httpx.Timeout = attrs.field(
        default=DEFAULT_TIMEOUT, converter=as_timeout, kw_only=True, validator=TIMEOUT
    )
    max_retries: int = attrs.field(default=2, kw_only=True, validator=RETRIES)
    retry_after_cap: float = attrs.field(default=60.0, kw_only=True, validator=SECONDS)
    retry_backoff: float = attrs.field(default=0.5, kw_only=True, validator=SECONDS)
    http_client: httpx.AsyncClient | None = attrs.field(
        default=None, kw_only=True, repr=False, validator=HTTP_CLIENT
    )
    _client: httpx.AsyncClient = attrs.field(
        init=False, repr=False, default=attrs.Factory(_client_for, takes_self=True)
    )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client if this model made it; a given one is left open."""
        if self.http_client is None:
            await self._client.aclose()
        else:
            await checkpoint()

    async def call(self, request: ModelRequest) -> ModelResponse:
        """The model's whole answer to ``request`` (retried as the shared layer says)."""
        endpoint = self._endpoint(request, stream=False)
        body = self._body(request, stream=False)
        return await endpoint.call(body, request.context, self._parse)

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelChunk]]:
        """The model's answer as chunks; the response is closed when the block ends."""
        endpoint = self._endpoint(request, stream=True)
        body = self._body(request, stream=True)
        async with endpoint.stream(body, request.context, self._events) as chunks:
            yield chunks

    def _endpoint(self, request: ModelRequest, *, stream: bool) -> Endpoint:
        if not self.api_key and self.base_url == self.default_base_url:
            variables = " or ".join(self.api_key_variables)
            raise ValueError(
                f"no API key for the {self.api_name}: set {variables}, or pass api_key= "
                "(or base_url= for a server that needs none)"
            )
        return Endpoint(
            self._client,
            self._url(request, stream=stream),
            self._headers(),
            self.timeout,
            max_retries=self.max_retries,
            retry_backoff=self.retry_backoff,
            retry_after_cap=self.retry_after_cap,
            secret=self.api_key,
            request_id_header=self.request_id_header,
            retry_hint=self._retry_hint,
        )

    # --- the wire mapping each provider supplies -----------------------------------------

    def _body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """The JSON body of ``request``."""
        raise NotImplementedError

    def _url(self, request: ModelRequest, *, stream: bool) -> str:
        """Where ``request`` is POSTed."""
        raise NotImplementedError

    def _headers(self) -> dict[str, str]:
        """The headers of every request: the credentials, the API version."""
        raise NotImplementedError

    def _parse(self, payload: Any) -> ModelResponse:
        """The ``ModelResponse`` of a whole JSON answer."""
        raise NotImplementedError

    def _events(self, redact: Callable[[str], str]) -> EventParser:
        """A reader of one streamed answer (``redact`` blanks the key out of its errors)."""
        raise NotImplementedError

    def _retry_hint(self, body: str) -> float | None:
        """The wait (seconds) an error body asks for, for a provider that says it there
        rather than in ``Retry-After``; None by default."""
        return None

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

import inspect
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, ClassVar, Self, TypeAlias

import anyio
import attrs
import httpx
from anyio.lowlevel import checkpoint

from .. import _validate as valid
from ._hosts import Host
from ._http import Endpoint, EventParser, Reader, Signer, sse_reader
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
HOST = valid.instance_of(Host, "a reactcore.models.Host", optional=True)
HEADERS = valid.mapping()
TOKEN_PROVIDER = valid.function("a callable returning a token", optional=True)

TokenProvider: TypeAlias = Callable[[], str] | Callable[[], Awaitable[str]]
"""A callable (sync or async) giving a bearer token, called before every request."""


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
    host: Host | None = model.host
    if host is None:
        found = from_env(value, (model.base_url_variable,), model.default_base_url)
    else:
        found = from_env(value, (host.base_url_variable,), host.base_url)
        if found is None:
            raise ValueError(
                f"no base URL for the {host.name} host: set {host.base_url_variable} "
                "or pass base_url="
            )
    return found.rstrip("/") if isinstance(found, str) else valid.leave(found)


def _api_key(value: str | None, model: Any) -> str | None:
    if model.token_provider is not None:  # a token replaces the key: none is read
        return value
    host: Host | None = model.host
    variables = model.api_key_variables if host is None else host.key_variables
    return from_env(value, variables)


def _key_or_token(model: HTTPModel, attribute: Any, value: str | None) -> None:
    if value is not None and model.token_provider is not None:
        raise ValueError("pass api_key= or token_provider=, not both")


def _only_hostable(model: HTTPModel, attribute: Any, value: Host | None) -> None:
    if value is not None and not model.hostable:
        raise TypeError(f"{type(model).__name__} takes no host= (its API has one home)")


async def fetch_token(provider: TokenProvider) -> str:
    """The token ``provider`` gives now: a sync callable runs in a worker thread (it may
    fetch over the network, as Azure Identity's do), an async one is awaited. Anything but
    a non-empty string is a ``ValueError``."""
    if inspect.iscoroutinefunction(provider) or inspect.iscoroutinefunction(
        getattr(provider, "__call__", None)  # noqa: B004 - an object with an async __call__
    ):
        token: object = await provider()  # type: ignore[misc]
    else:
        token = await anyio.to_thread.run_sync(provider)
        if inspect.isawaitable(token):
            token = await token
    if not isinstance(token, str) or not token:
        raise ValueError("token_provider must return a non-empty string")
    return str.__str__(token)


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

    ``host`` (the OpenAI formats only: ``hostable``) is where the API is served, a preset
    of ``reactcore.models.HOSTS`` or ``azure_host()``: ``base_url`` and ``api_key`` then
    come from the host's variables only (never another provider's key), and the host's
    deviations apply. ``token_provider``, a sync or async callable returning a bearer
    token (a Microsoft Entra token), replaces the key: it is asked before every attempt
    and its tokens are kept out of errors as the key is. ``headers`` go on every request
    (OpenRouter's attribution headers); they are left out of the repr.
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
    key_header: ClassVar[str | None] = None
    """The header an API key goes in; None: ``Authorization: Bearer`` (tokens always do)."""

    stream_media_type: ClassVar[str] = "text/event-stream"
    """The media type a streamed answer is asked for in (``Accept``)."""

    hostable: ClassVar[bool] = False
    """Whether the API is served by several hosts (``host=``): the OpenAI formats."""

    model: str = attrs.field(validator=MODEL_NAME)
    # ``host`` and ``token_provider`` come first: ``base_url`` and ``api_key`` read them.
    host: Host | None = attrs.field(default=None, kw_only=True, validator=[HOST, _only_hostable])
    token_provider: TokenProvider | None = attrs.field(
        default=None, kw_only=True, validator=TOKEN_PROVIDER
    )
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
        validator=[KEY, _key_or_token],
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
    headers: Mapping[str, str] = attrs.field(
        factory=dict, kw_only=True, repr=False, validator=HEADERS
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

    def _check_credentials(self) -> None:
        """Raise ``ValueError`` naming what to set when no credentials are there for an
        API that needs them."""
        if self.api_key or self.token_provider is not None:
            return
        host = self.host
        if host is None:
            if self.base_url == self.default_base_url:
                variables = " or ".join(self.api_key_variables)
                raise ValueError(
                    f"no API key for the {self.api_name}: set {variables}, or pass api_key= "
                    "(or base_url= for a server that needs none)"
                )
        elif (
            host.key_required
            and host.key_variable is not None
            and (host.azure or self.base_url == host.base_url)
        ):
            token = " or token_provider=" if host.azure else ""
            raise ValueError(
                f"no API key for the {host.name} host: set {host.key_variable}, "
                f"or pass api_key={token}"
            )

    async def _token_headers(self) -> tuple[dict[str, str], str]:
        """A fresh token from ``token_provider`` and the headers carrying it."""
        assert self.token_provider is not None
        token = await fetch_token(self.token_provider)
        return {**self._auth_headers(token), **self.headers}, token

    def _endpoint(self, request: ModelRequest, *, stream: bool) -> Endpoint:
        """Where ``request`` goes and with which credentials (a token provider is asked
        afresh before each attempt, as the official SDKs ask it)."""
        self._check_credentials()
        credentials = None if self.token_provider is None else self._token_headers
        headers = {**self._headers(), **self._auth_headers(self.api_key), **self.headers}
        return Endpoint(
            self._client,
            self._url(request, stream=stream),
            headers,
            self.timeout,
            max_retries=self.max_retries,
            retry_backoff=self.retry_backoff,
            retry_after_cap=self.retry_after_cap,
            secret=self.api_key,
            credentials=credentials,
            signer=self._signer(),
            reader=self._reader(),
            stream_media_type=self.stream_media_type,
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
        """The headers of every request besides the credentials (an API version); none
        by default."""
        return {}

    def _auth_headers(self, secret: str | None) -> dict[str, str]:
        """The credential headers for ``secret`` (the key, or a token from
        ``token_provider``): the host's way, else ``Authorization: Bearer``."""
        token = self.token_provider is not None
        if self.host is not None:
            return self.host.auth_headers(secret, token=token)
        if not secret:
            return {}
        if token or self.key_header is None:
            return {"Authorization": f"Bearer {secret}"}
        return {self.key_header: secret}

    def _reader(self) -> Reader:
        """How a streamed answer is framed: server-sent events (AWS: its event stream)."""
        return sse_reader

    def _signer(self) -> Signer | None:
        """What signs each attempt's request (AWS SigV4); None: the headers say it all."""
        return None

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

"""Google access tokens for Vertex AI: ``GoogleAuth``, a token provider over
Application Default Credentials (``google-auth``, the ``vertex`` extra).

Application Default Credentials are found as ``google.auth.default`` finds them: the
service-account (or external-account) file ``GOOGLE_APPLICATION_CREDENTIALS`` names (its
``token_uri`` is where its signed JWT is exchanged for a token), the user credentials
``gcloud auth application-default login`` wrote, else the metadata server of the machine
(Compute Engine, Cloud Run, GKE). Or pass ``credentials=``, any
``google.auth.credentials.Credentials``.

A token is reused while google-auth calls it valid (it treats one expiring within a few
minutes as expired, so a request never leaves with a token about to lapse) and refreshed
once when it is not: google-auth's discovery and refresh are blocking network calls, so
they run in a worker thread, and a lock makes the refresh single-flight: fifty calls
finding the token expired cause one token request, the other forty-nine wait for it.
The refresh goes over httpx (a core dependency), so no ``requests`` is needed.

Tokens never appear in the repr; the model layer blanks them out of errors
(``HTTPModel.token_provider``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
import attrs
import httpx

from .._exceptions import ModelError

if TYPE_CHECKING:
    from google.auth.credentials import Credentials

CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
"""The OAuth scope Vertex AI needs."""
_TOKEN_TIMEOUT = httpx.Timeout(30, connect=5)


def _require_google_auth() -> None:
    try:
        import google.auth  # noqa: F401
    except ImportError:
        raise ImportError(
            "Vertex AI needs google-auth for its credentials: pip install 'reactcore[vertex]'"
        ) from None


def _transport() -> Any:
    """google-auth's HTTP transport interface, served by a synchronous httpx client (the
    refresh runs in a worker thread)."""
    import google.auth.exceptions
    import google.auth.transport

    class _Response(google.auth.transport.Response):
        def __init__(self, response: httpx.Response) -> None:
            self._response = response

        @property
        def status(self) -> int:
            return self._response.status_code

        @property
        def headers(self) -> Mapping[str, str]:
            return self._response.headers

        @property
        def data(self) -> bytes:
            return self._response.content

    class _Request(google.auth.transport.Request):
        def __call__(
            self,
            url: str,
            method: str = "GET",
            body: bytes | None = None,
            headers: Mapping[str, str] | None = None,
            timeout: float | None = None,
            **kwargs: Any,
        ) -> _Response:
            limit = _TOKEN_TIMEOUT if timeout is None else httpx.Timeout(timeout)
            try:
                with httpx.Client(timeout=limit) as client:
                    answer = client.request(method, url, content=body, headers=headers)
            except httpx.HTTPError as exc:
                raise google.auth.exceptions.TransportError(  # type: ignore[no-untyped-call]
                    f"{type(exc).__name__} on {method} {url}"
                ) from None
            return _Response(answer)

    return _Request()


def project_from_credentials_file() -> str | None:
    """The ``project_id`` (else ``quota_project_id``) of the file
    ``GOOGLE_APPLICATION_CREDENTIALS`` names, when it has one; None when the variable is
    unset. Raises ``ValueError`` naming the variable when the file cannot be read."""
    path = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as file:
            info = json.load(file)
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"GOOGLE_APPLICATION_CREDENTIALS={path!r} is not a readable credentials file "
            f"({type(exc).__name__})"
        ) from None
    if not isinstance(info, dict):
        return None
    found = info.get("project_id") or info.get("quota_project_id")
    return found if isinstance(found, str) and found else None


@attrs.define(eq=False)
class GoogleAuth:
    """A token provider (``HTTPModel.token_provider``) giving Google OAuth access tokens
    from Application Default Credentials, or from ``credentials`` (see the module).

    ``scopes`` are asked for credentials that take scopes (a service account): by default
    ``cloud-platform``, what Vertex AI needs. Failing to find or refresh credentials is a
    ``ModelError`` saying which; a refresh that fails is tried afresh by the next call.
    """

    credentials: Credentials | None = attrs.field(default=None, repr=False)
    scopes: tuple[str, ...] = attrs.field(default=(CLOUD_PLATFORM,), converter=tuple)
    _lock: anyio.Lock = attrs.field(factory=anyio.Lock, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        _require_google_auth()

    def _valid_token(self) -> str | None:
        credentials = self.credentials
        if credentials is None or not credentials.valid:
            return None
        token = credentials.token
        return token if isinstance(token, str) and token else None

    async def __call__(self) -> str:
        """A valid access token: the one held, else a fresh one (single-flight)."""
        token = self._valid_token()
        if token is not None:
            return token
        async with self._lock:
            token = self._valid_token()  # another task may have refreshed meanwhile
            if token is not None:
                return token
            await anyio.to_thread.run_sync(self._refresh)
            # Just issued: used even when it lapses within google-auth's margin.
            token = None if self.credentials is None else self.credentials.token
        if not isinstance(token, str) or not token:
            raise ModelError("Google credentials were refreshed but hold no token")
        return token

    def _refresh(self) -> None:
        """Find the credentials (first time only) and refresh them; blocking, so it runs
        in a worker thread."""
        import google.auth
        import google.auth.exceptions

        try:
            if self.credentials is None:
                found, _ = google.auth.default(scopes=list(self.scopes))
                self.credentials = found
            self.credentials.refresh(_transport())  # type: ignore[no-untyped-call]
        except google.auth.exceptions.DefaultCredentialsError as exc:
            problem = f"no Google Application Default Credentials: {exc}"
        except google.auth.exceptions.GoogleAuthError as exc:
            problem = f"could not get a Google access token: {type(exc).__name__}: {exc}"
        else:
            return
        # Not chained: google-auth's errors may hold the token endpoint's answer.
        raise ModelError(problem)

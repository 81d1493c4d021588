"""What the loopback Vertex AI servers (``reactcore.testing.serve_vertex_gemini`` and
``serve_vertex_anthropic``) check and answer besides the model's replies: Google's OAuth
token endpoint and bearer tokens, and Vertex's refusals.

``VertexServer`` holds a real service account made for the server (an RSA key generated
with ``cryptography``): ``service_account`` is its JSON, whose ``token_uri`` is the
server's own ``/token``. There a signed JWT assertion (RS256, as google-auth makes it) is
checked — signature, issuer, audience (Google's token endpoint, as google-auth sets
it whatever ``token_uri`` is), scope, expiry — and exchanged for an access token
that lives ``token_lifetime`` seconds. Every model request must carry one of those tokens,
unexpired, as ``Authorization: Bearer``: otherwise Google's 401 ``UNAUTHENTICATED``.

Gemini on Vertex refuses ``id`` on ``functionCall`` and ``functionResponse`` (400
``INVALID_ARGUMENT``, as Vertex does); Claude on Vertex refuses a body with ``model`` or
without an ``anthropic_version``. Refused requests are recorded, not
given to the script.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import attrs

from ._testing_anthropic import anthropic_error_reply
from ._testing_gemini import gemini_error_reply

if TYPE_CHECKING:
    from .testing import HTTPReply, ServerReply

TOKEN_PATH = "/token"
_JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
_CLOCK_SKEW = 60
_AUDIENCE = "https://oauth2.googleapis.com/token"
"""The audience of every assertion: Google's token endpoint, whatever ``token_uri`` is."""


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def make_service_account(
    token_uri: str, project: str = "test-project"
) -> tuple[dict[str, Any], Any]:
    """A service-account JSON (as the Cloud console makes it) with a fresh 2048-bit RSA
    key and ``token_uri``; and the key's public half, to check its signatures."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    email = f"reactcore-test@{project}.iam.gserviceaccount.com"
    info = {
        "type": "service_account",
        "project_id": project,
        "private_key_id": secrets.token_hex(20),
        "private_key": pem,
        "client_email": email,
        "client_id": "100000000000000000001",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
        "universe_domain": "googleapis.com",
    }
    return info, key.public_key()


def _oauth_error(description: str) -> HTTPReply:
    from .testing import HTTPReply

    payload = {"error": "invalid_grant", "error_description": description}
    return HTTPReply.from_json(payload, status=400)


@attrs.define(eq=False)
class VertexServer:
    """The token side of a loopback Vertex server (see the module); ``tokens`` maps each
    access token issued to when it lapses (``time.time()``), ``token_requests`` holds the
    claims of each accepted assertion, in order. ``token_lifetime`` (seconds) may be
    changed between requests: google-auth treats a token lapsing within 3 min 45 s as
    expired, so a lifetime under that makes every call refresh."""

    token_uri: str
    project: str = "test-project"
    token_lifetime: int = 3600
    service_account: dict[str, Any] = attrs.field(init=False)
    tokens: dict[str, float] = attrs.field(factory=dict, init=False)
    token_requests: list[dict[str, Any]] = attrs.field(factory=list, init=False)
    _public_key: Any = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        self.service_account, self._public_key = make_service_account(self.token_uri, self.project)

    def write_service_account(self, path: Any) -> str:
        """Write ``service_account`` as JSON to ``path``; its path as a string (for
        ``GOOGLE_APPLICATION_CREDENTIALS``)."""
        with open(path, "w", encoding="utf-8") as file:
            json.dump(self.service_account, file)
        return str(path)

    def token_reply(self, path: str, body: bytes) -> ServerReply | None:
        """The answer of the token endpoint to ``body`` (a form), None for another path."""
        if path != TOKEN_PATH:
            return None
        from .testing import HTTPReply

        form = {k: v[0] for k, v in parse_qs(body.decode("latin-1")).items()}
        if form.get("grant_type") != _JWT_BEARER or "assertion" not in form:
            return _oauth_error("expected a JWT-bearer grant with an assertion")
        claims = self._verified_claims(form["assertion"])
        if isinstance(claims, str):
            return _oauth_error(claims)
        self.token_requests.append(claims)
        token = f"ya29.test-{secrets.token_urlsafe(24)}"
        self.tokens[token] = time.time() + self.token_lifetime
        payload = {"access_token": token, "expires_in": self.token_lifetime, "token_type": "Bearer"}
        return HTTPReply.from_json(payload)

    def _verified_claims(self, assertion: str) -> dict[str, Any] | str:
        """The claims of ``assertion`` once its signature and claims check, else what is
        wrong."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        try:
            head, payload, signature = assertion.split(".")
            header = json.loads(_b64decode(head))
            claims = json.loads(_b64decode(payload))
            self._public_key.verify(
                _b64decode(signature),
                f"{head}.{payload}".encode(),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )
        except (ValueError, InvalidSignature):
            return "Invalid JWT Signature."
        now = time.time()
        if header.get("alg") != "RS256":
            return f"unsupported JWT algorithm {header.get('alg')!r}"
        if claims.get("iss") != self.service_account["client_email"]:
            return "Invalid JWT: the issuer is not the service account."
        if claims.get("aud") != _AUDIENCE:
            return f"Invalid JWT: the audience is not {_AUDIENCE}."
        if _CLOUD_PLATFORM not in str(claims.get("scope", "")).split():
            return "Invalid JWT: the cloud-platform scope is missing."
        if (
            not claims.get("iat", now + _CLOCK_SKEW + 1)
            <= now + _CLOCK_SKEW
            < claims.get("exp", 0) + 2 * _CLOCK_SKEW
        ):
            return "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe."
        return dict(claims)

    def token_valid(self, headers: Mapping[str, str]) -> bool:
        """Whether ``headers`` carry an issued, unexpired token as ``Authorization: Bearer``."""
        scheme, _, token = headers.get("authorization", "").partition(" ")
        lapses = self.tokens.get(token)
        return scheme == "Bearer" and lapses is not None and time.time() < lapses


def unauthenticated_reply() -> HTTPReply:
    """Google's 401 for a request without a valid OAuth token."""
    return gemini_error_reply(
        401,
        "Request had invalid authentication credentials. Expected OAuth 2 access token, "
        "login cookie or other valid authentication credential.",
    )


def _ids_in(contents: Any) -> str | None:
    """Where the first ``id`` on a ``functionCall`` / ``functionResponse`` is, else None."""
    for i, turn in enumerate(contents if isinstance(contents, list) else ()):
        parts = turn.get("parts") if isinstance(turn, dict) else None
        for j, part in enumerate(parts if isinstance(parts, list) else ()):
            for key, field in (
                ("functionCall", "function_call"),
                ("functionResponse", "function_response"),
            ):
                value = part.get(key) if isinstance(part, dict) else None
                if isinstance(value, dict) and "id" in value:
                    return f"contents[{i}].parts[{j}].{field}"
    return None


def gemini_body_refusal(payload: Any) -> ServerReply | None:
    """Vertex's 400 for a ``generateContent`` body with call ids, else None."""
    where = _ids_in(payload.get("contents") if isinstance(payload, dict) else None)
    if where is None:
        return None
    return gemini_error_reply(
        400,
        f"Invalid JSON payload received. Unknown name \"id\" at '{where}': Cannot find field.",
    )


def anthropic_body_refusal(payload: Any) -> ServerReply | None:
    """Claude on Vertex's 400 for a body with ``model`` or without an
    ``anthropic_version``, else None. Any version is taken: reactcore sends
    ``vertex-2023-10-16``, the installed ``anthropic`` SDK (2.17) its own API version."""
    if not isinstance(payload, dict):
        return None
    if "model" in payload:
        return anthropic_error_reply(
            400, "model: Extra inputs are not permitted", error_type="invalid_request_error"
        )
    version = payload.get("anthropic_version")
    if not isinstance(version, str) or not version:
        return anthropic_error_reply(
            400, "anthropic_version: Field required", error_type="invalid_request_error"
        )
    return None


def checked_script(
    script: Callable[[Any], ServerReply], refusal: Callable[[Any], ServerReply | None]
) -> Callable[[Any], ServerReply]:
    """``script``, with bodies ``refusal`` refuses answered by it (without a turn of the
    script)."""

    def reply(payload: Any) -> ServerReply:
        return refusal(payload) or script(payload)

    return reply


def root_of(base_url: str) -> str:
    """``scheme://host:port`` of ``base_url``."""
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}"

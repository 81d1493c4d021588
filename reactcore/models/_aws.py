"""AWS credentials and SigV4 request signing, through botocore only: its credential chain
(explicit keys, environment, shared config and credentials files with profiles, web
identity, SSO, container and instance metadata) and its ``SigV4Auth`` signer. The
transport stays httpx: botocore never sends anything but what its credential providers
fetch.

botocore resolves and refreshes credentials synchronously (files, metadata endpoints), so
both run in a worker thread (``anyio.to_thread.run_sync``), never on the event loop.
Resolved credentials are cached; refreshable ones (web identity, SSO, metadata) are
fetched again in the worker thread once botocore says they are due (its advisory
window, 15 minutes before they expire), so a request never waits on a refresh the loop
would block on. ``region`` is the one given, else ``AWS_REGION``, else botocore's
(``AWS_DEFAULT_REGION``, the profile's ``region``).

botocore is an optional dependency (the ``bedrock`` extra): it is imported when
credentials are first needed, with a clear error when it is missing.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

import anyio
import attrs
import httpx
from anyio.lowlevel import checkpoint

from .._exceptions import ModelError

if TYPE_CHECKING:
    from botocore.credentials import ReadOnlyCredentials

SERVICE = "bedrock"
"""The SigV4 service name of the Bedrock runtime."""
_SIGNED = ("Authorization", "X-Amz-Date", "X-Amz-Security-Token")


def _botocore() -> Any:
    try:
        import botocore.session
    except ImportError:
        raise ImportError(
            "Amazon Bedrock needs botocore for AWS credentials and request signing: "
            "pip install 'reactcore[bedrock]'"
        ) from None
    return botocore


def sign_request(
    request: httpx.Request,
    credentials: ReadOnlyCredentials,
    region: str,
    service: str = SERVICE,
) -> list[str]:
    """Sign ``request`` in place with AWS SigV4 (botocore's ``SigV4Auth``), as boto3 signs
    it: over the method, the path (percent-encoded again, so a model id's ``:`` is
    ``%253A`` in the canonical request), the query, ``content-type``, ``host``,
    ``x-amz-date`` (and ``x-amz-security-token``) and the body's SHA-256. Gives the
    secrets used (secret key, session token), to be kept out of errors."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    aws = AWSRequest(
        method=request.method,
        url=str(request.url),
        data=request.content,
        headers={"Content-Type": request.headers.get("content-type", "application/json")},
    )
    SigV4Auth(credentials, service, region).add_auth(aws)
    for name in _SIGNED:
        if name in aws.headers:
            request.headers[name] = aws.headers[name]
    return [s for s in (credentials.secret_key, credentials.token) if s]


@attrs.define(eq=False)
class AWSAuth:
    """The credentials and region one model signs with (see the module docstring).

    ``credentials`` (a botocore credentials object, refreshable or not:
    ``boto3.Session().get_credentials()``) or ``access_key_id``/``secret_access_key``/
    ``session_token``, when given, are used as they are; else ``profile`` (or
    ``AWS_PROFILE``) and the rest of botocore's chain. Never in a repr.
    """

    region: str | None = None
    profile: str | None = None
    access_key_id: str | None = attrs.field(default=None, repr=False)
    secret_access_key: str | None = attrs.field(default=None, repr=False)
    session_token: str | None = attrs.field(default=None, repr=False)
    credentials: Any = attrs.field(default=None, repr=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False)
    _source: Any = attrs.field(default=None, init=False, repr=False)
    _frozen: ReadOnlyCredentials | None = attrs.field(default=None, init=False, repr=False)
    _region: str | None = attrs.field(default=None, init=False, repr=False)

    @property
    def known_region(self) -> str | None:
        """The region given or in ``AWS_REGION``, without asking botocore (no I/O)."""
        return self.region or os.environ.get("AWS_REGION") or self._region

    async def resolve(self) -> tuple[ReadOnlyCredentials, str]:
        """The current credentials and the region: cached, else resolved (or refreshed)
        in a worker thread."""
        frozen, region = self._frozen, self._region
        if frozen is not None and region is not None and not self._due():
            await checkpoint()
            return frozen, region
        return await anyio.to_thread.run_sync(self._resolve)

    async def resolve_region(self) -> str:
        """The region (resolving credentials too, in a worker thread, when not yet done)."""
        known = self.known_region
        if known is not None:
            await checkpoint()
            return known
        return await anyio.to_thread.run_sync(self._find_region)

    def _find_region(self) -> str:
        """Blocking: the region botocore reads (``AWS_DEFAULT_REGION``, the profile's)."""
        botocore = _botocore()
        with self._lock:
            if self._region is None:
                self._region = self._config_region(botocore.session.Session(profile=self.profile))
            return self._region

    def _config_region(self, session: Any) -> str:
        region = self.known_region or session.get_config_variable("region")
        if not region:
            raise ValueError(
                "no AWS region for Bedrock: pass region=, or set AWS_REGION "
                "or AWS_DEFAULT_REGION (or a region in the profile)"
            )
        return str(region)

    async def sign(self, request: httpx.Request) -> list[str]:
        """Sign ``request`` with the current credentials (``sign_request``)."""
        credentials, region = await self.resolve()
        return sign_request(request, credentials, region)

    def _due(self) -> bool:
        """Whether refreshable credentials are in botocore's refresh window (no I/O)."""
        refresh_needed = getattr(self._source, "refresh_needed", None)
        return bool(refresh_needed()) if refresh_needed is not None else False

    def _resolve(self) -> tuple[ReadOnlyCredentials, str]:
        """Blocking: resolve (once) and freeze the credentials, botocore refreshing them
        when due; find the region. In a worker thread, one at a time."""
        botocore = _botocore()
        with self._lock:
            try:
                if self._source is None or self._region is None:
                    session = botocore.session.Session(profile=self.profile)
                    self._source = self._credentials(botocore, session)
                    self._region = self._config_region(session)
                self._frozen = self._source.get_frozen_credentials()
            except botocore.exceptions.BotoCoreError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                assert self._frozen is not None and self._region is not None
                return self._frozen, self._region
        # Not chained: botocore's exception may hold what its provider read.
        raise ModelError(f"the AWS credentials could not be resolved: {problem}")

    def _credentials(self, botocore: Any, session: Any) -> Any:
        if self.credentials is not None:
            return self.credentials
        if self.access_key_id or self.secret_access_key:
            if not (self.access_key_id and self.secret_access_key):
                raise ValueError("pass both aws_access_key_id= and aws_secret_access_key=")
            return botocore.credentials.Credentials(
                self.access_key_id, self.secret_access_key, self.session_token
            )
        found = session.get_credentials()
        if found is None:
            raise ValueError(
                "no AWS credentials for Bedrock: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or another source of the standard chain "
                "(or AWS_BEARER_TOKEN_BEDROCK for a Bedrock API key)"
            )
        return found

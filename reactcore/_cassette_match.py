"""What a cassette stores of a request, and how a replayed one is matched to a recording.

A request is kept as its canonical form: the method, the URL path (with its query), the
headers of a short allow-list, and the body as JSON (keys sorted when written). Secrets
never get in: the values of the credential headers a request carries (and any secret the
cassette was given) are replaced by ``REDACTED`` wherever they appear, in any of the
spellings ``reactcore.models._http.redact`` knows (as is, JSON-escaped, URL-encoded).

A replayed request is matched by ``request_key``: a hash of its canonical method, path and
body, taken after redaction, so a replay needs neither the recorded key nor any key. What
matches nothing is compared with the nearest recording (``nearest``: the same path first,
then the fewest differing JSON paths) and the first difference is named
(``first_difference``), so a changed prompt or tool schema fails with the field that
changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpx

from .models._http import redact

REDACTED = "<redacted>"
"""What stands in a cassette for a secret."""

# Headers whose values are credentials: never stored, and their values are secrets
# wherever else they appear (a server echoing the key in an error body).
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "ocp-apim-subscription-key",
        "cookie",
        "set-cookie",
        "x-amz-security-token",
    }
)
# Query parameters that carry keys (Gemini accepts ``?key=``).
SECRET_PARAMETERS = frozenset({"key", "api_key", "api-key", "access_token", "token", "sig"})
# What is kept of headers: what a reader of the cassette wants to see and a replay needs
# (the content type, a retry's pause, request ids, API versions); never a credential.
REQUEST_HEADERS = frozenset(
    {"accept", "content-type", "anthropic-version", "anthropic-beta", "openai-beta"}
)
RESPONSE_HEADERS = frozenset(
    {
        "content-type",
        "retry-after",
        "retry-after-ms",
        "x-request-id",
        "request-id",
        "x-goog-request-id",
    }
)
_EXCERPT = 80
MIN_SECRET = 8
"""The shortest credential from a request's headers that is blanked out elsewhere."""


def learn_secrets(headers: httpx.Headers, known: Iterable[str]) -> tuple[str, ...]:
    """``known`` and the credentials ``headers`` carry (a bearer token also without its
    scheme), longest first so a longer secret is blanked before a part of it. A credential
    shorter than ``MIN_SECRET`` characters is no real key (a test's ``"sk-x"``): it is not
    hunted for elsewhere, where it would blank out ordinary words (the header itself is
    never kept)."""
    found = {s for s in known if s}
    for name, value in headers.items():
        if name.lower() in SECRET_HEADERS:
            scheme, _, token = value.partition(" ")
            bare = token if scheme.lower() in ("bearer", "basic", "token") else ""
            found.update(v for v in (value, bare) if len(v) >= MIN_SECRET)
    return tuple(sorted(found, key=len, reverse=True))


def redact_text(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret (in every spelling) replaced by ``REDACTED``."""
    for secret in secrets:
        text = redact(text, secret, mark=REDACTED)
    return text


def redact_json(value: Any, secrets: Sequence[str]) -> Any:
    """A JSON value with every string (object keys too) passed through ``redact_text``."""
    if not secrets:
        return value
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, dict):
        return {redact_text(k, secrets): redact_json(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_json(v, secrets) for v in value]
    return value


def kept_headers(
    headers: httpx.Headers, allowed: frozenset[str], secrets: Sequence[str]
) -> dict[str, str]:
    """The allow-listed headers (names in lower case), their values redacted."""
    return {
        name.lower(): redact_text(value, secrets)
        for name, value in headers.items()
        if name.lower() in allowed
    }


def url_path(url: httpx.URL, secrets: Sequence[str]) -> str:
    """The path and query of ``url``: the host is left out (a loopback server's port, a
    proxy's name), key parameters and secrets redacted."""
    path = url.path
    if url.query:
        pairs = [
            (k, REDACTED if k.lower() in SECRET_PARAMETERS else v)
            for k, v in parse_qsl(url.query.decode("ascii"), keep_blank_values=True)
        ]
        path += "?" + urlencode(pairs)
    return redact_text(path, secrets)


def body_json(content: bytes, secrets: Sequence[str]) -> tuple[str, Any]:
    """``("body", JSON value)`` for a JSON body, else ``("text", the text)``; redacted."""
    text = content.decode("utf-8", errors="surrogateescape")
    try:
        return "body", redact_json(json.loads(text), secrets)
    except ValueError:
        return "text", redact_text(text, secrets)


def request_record(request: httpx.Request, secrets: Sequence[str]) -> dict[str, Any]:
    """The canonical, redacted form of ``request`` (its content already read)."""
    record: dict[str, Any] = {
        "method": request.method,
        "path": url_path(request.url, secrets),
        "headers": kept_headers(request.headers, REQUEST_HEADERS, secrets),
    }
    if request.content:
        kind, value = body_json(request.content, secrets)
        record[kind] = json.loads(_canonical(value)) if kind == "body" else value  # keys sorted
    return record


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def key_of(what: Mapping[str, Any]) -> str:
    """The hash a request or tool call is matched by: of its canonical JSON (``matched``
    of a request: method, path and body, not headers; a tool's name and arguments)."""
    return hashlib.sha256(_canonical(what).encode("utf-8", "surrogatepass")).hexdigest()


# --- differences ------------------------------------------------------------------------

_ABSENT: Any = object()


def differences(recorded: Any, sent: Any, path: str = "$") -> Iterator[tuple[str, Any, Any]]:
    """Every JSON path where ``sent`` differs from ``recorded``, in document order (object
    keys sorted, array items by index), with both values there (``_ABSENT`` for a key or
    item one side lacks)."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in sorted(recorded.keys() | sent.keys()):
            yield from differences(
                recorded.get(key, _ABSENT), sent.get(key, _ABSENT), f"{path}.{key}"
            )
    elif isinstance(recorded, list) and isinstance(sent, list):
        for index in range(max(len(recorded), len(sent))):
            yield from differences(
                recorded[index] if index < len(recorded) else _ABSENT,
                sent[index] if index < len(sent) else _ABSENT,
                f"{path}[{index}]",
            )
    elif type(recorded) is not type(sent) or recorded != sent:
        yield path, recorded, sent


def _shown(value: Any) -> str:
    if value is _ABSENT:
        return "nothing"
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…"


def plain(value: Any) -> Any:
    """``value`` for an error's attribute: None where one side had nothing."""
    return None if value is _ABSENT else value


def describe(field: str, recorded: Any, sent: Any) -> str:
    """``"<field>: recorded <value>, sent <value>"``, values cut short."""
    return f"{field}: recorded {_shown(recorded)}, sent {_shown(sent)}"


def nearest(
    candidates: Iterable[tuple[int, Mapping[str, Any]]], sent: Mapping[str, Any], same: str
) -> tuple[int, list[tuple[str, Any, Any]]] | None:
    """The recording of ``candidates`` (``(number, what was matched)``) nearest to
    ``sent``: one with the same ``same`` field (the path, the tool's name) first, then the
    one with the fewest differing fields; with the fields where it differs, the first of
    them the one to name."""
    best: tuple[tuple[int, int], int, list[tuple[str, Any, Any]]] | None = None
    for number, record in candidates:
        fields = list(differences(record, sent))
        rank = (0 if record.get(same) == sent.get(same) else 1, len(fields))
        if best is None or rank < best[0]:
            best = (rank, number, fields)
    return None if best is None else (best[1], best[2])


def matched(record: Mapping[str, Any]) -> dict[str, Any]:
    """What of a request record is matched, as one JSON object (named as in the file)."""
    kept = {"method": record["method"], "path": record["path"]}
    for kind in ("body", "text"):
        if kind in record:
            kept[kind] = record[kind]
    return kept

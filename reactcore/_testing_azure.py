"""What the loopback Azure OpenAI server (``reactcore.testing.serve_azure_openai``) sends
and checks: Azure's answers — the chat-completions JSON with its content-filter results,
streams whose first chunk has no choices (the prompt's filter results), a
``content_filter`` answer, Azure's error bodies — and Azure's routes and credentials.

Routes: ``/openai/deployments/{deployment}/chat/completions`` and ``/openai/responses``
(both with ``?api-version=``), ``/openai/v1/chat/completions`` and ``/openai/v1/responses``
(the v1 API, no version needed). A request without an ``api-key`` or ``Authorization``
header gets Azure's 401; a deployment URL without ``api-version``, its 404.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from ._messages import AssistantMessage
from .models.base import ModelChunk, Usage

if TYPE_CHECKING:
    from .testing import HTTPReply, SSEReply

AZURE_ROUTE = re.compile(
    r"/openai/(?:deployments/[^/]+/chat/completions|responses|v1/chat/completions|v1/responses)"
)
_VERSIONED = re.compile(r"/openai/(?:deployments/[^/]+/chat/completions|responses)")

_SAFE = {"filtered": False, "severity": "safe"}
_CATEGORIES = ("hate", "self_harm", "sexual", "violence")


def filter_results(*, flagged: str | None = None) -> dict[str, Any]:
    """Azure's ``content_filter_results``: every category safe, or ``flagged`` filtered at
    high severity."""
    results: dict[str, Any] = {c: dict(_SAFE) for c in _CATEGORIES}
    if flagged is not None:
        results[flagged] = {"filtered": True, "severity": "high"}
    return results


def _prompt_filter_results(flagged: str | None = None) -> list[dict[str, Any]]:
    return [{"prompt_index": 0, "content_filter_results": filter_results(flagged=flagged)}]


def azure_completion_json(
    message: AssistantMessage | str, *, usage: Usage | None = None, flagged: str | None = None
) -> Any:
    """A chat-completions answer as Azure sends it: with ``prompt_filter_results`` and the
    choice's ``content_filter_results``; with ``flagged`` (a category), the answer was
    filtered: ``finish_reason: "content_filter"``, that category filtered."""
    from .testing import completion_json

    if isinstance(message, str):
        message = AssistantMessage(message)
    if flagged is not None:
        message = attrs.evolve(message, finish_reason="content_filter")
    payload = completion_json(message, usage=usage)
    payload["prompt_filter_results"] = _prompt_filter_results()
    payload["choices"][0]["content_filter_results"] = filter_results(flagged=flagged)
    return payload


def azure_reply(
    message: AssistantMessage | str, *, usage: Usage | None = None, flagged: str | None = None
) -> HTTPReply:
    """``azure_completion_json`` as a whole answer, with Azure's ``apim-request-id``."""
    from .testing import HTTPReply

    payload = azure_completion_json(message, usage=usage, flagged=flagged)
    return HTTPReply.from_json(payload, headers={"apim-request-id": "azure-req-test"})


def azure_events(chunks: Sequence[ModelChunk], *, flagged: str | None = None) -> list[Any]:
    """``chunks`` as Azure streams them: first a chunk with no choices and the prompt's
    ``prompt_filter_results``, then each chunk with ``content_filter_results`` on its
    choice; with ``flagged``, the stream ends with ``finish_reason: "content_filter"``
    and that category filtered."""
    from .testing import chunk_json

    first = {
        "id": "",
        "object": "",
        "created": 0,
        "model": "",
        "choices": [],
        "prompt_filter_results": _prompt_filter_results(),
    }
    events: list[Any] = [first]
    for chunk in chunks:
        payload = chunk_json(chunk)
        for choice in payload["choices"]:
            choice["content_filter_results"] = filter_results()
        events.append(payload)
    if flagged is not None:
        last = chunk_json(ModelChunk(finish_reason="content_filter"))
        last["choices"][0]["content_filter_results"] = filter_results(flagged=flagged)
        events.append(last)
    return events


def azure_stream_reply(
    message: AssistantMessage | str,
    *,
    usage: Usage | None = None,
    flagged: str | None = None,
    chunk_size: int = 4,
) -> SSEReply:
    """``message`` streamed as Azure streams it (``azure_events``)."""
    from .models.scripted import message_chunks
    from .testing import SSEReply

    if isinstance(message, str):
        message = AssistantMessage(message)
    chunks = message_chunks(message, chunk_size=chunk_size, usage=usage)
    if flagged is not None:  # the filter ends the answer, not the model
        chunks = [c for c in chunks if c.finish_reason is None]
    return SSEReply(azure_events(chunks, flagged=flagged))


def azure_error_reply(
    status: int,
    message: str,
    *,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
    inner: Mapping[str, Any] | None = None,
) -> HTTPReply:
    """An Azure error body (``{"error": {"code", "message", "param", "type", "status"}}``)
    with ``status``; ``inner`` as its ``innererror`` (a filtered prompt's
    ``content_filter_result``)."""
    from .testing import HTTPReply

    error: dict[str, Any] = {
        "code": code if code is not None else str(status),
        "message": message,
        "param": None,
        "type": None,
        "status": status,
    }
    if inner is not None:
        error["innererror"] = dict(inner)
    return HTTPReply.from_json(
        {"error": error},
        status=status,
        headers={"apim-request-id": "azure-req-test", **(headers or {})},
    )


def azure_prompt_filtered_reply(flagged: str = "violence") -> HTTPReply:
    """Azure's 400 for a prompt its filter stopped: code ``content_filter``, the filter's
    results in ``innererror.content_filter_result``."""
    return azure_error_reply(
        400,
        "The response was filtered due to the prompt triggering Azure OpenAI's content "
        "management policy.",
        code="content_filter",
        inner={
            "code": "ResponsibleAIPolicyViolation",
            "content_filter_result": filter_results(flagged=flagged),
        },
    )


def azure_refusal(path: str, query: str, headers: Mapping[str, str]) -> HTTPReply | None:
    """What Azure answers a request it refuses before the model sees it: 401 without
    credentials, 404 for a versioned route without ``api-version``; None otherwise."""
    if "api-key" not in headers and "authorization" not in headers:
        return azure_error_reply(
            401,
            "Access denied due to invalid subscription key or wrong API endpoint. Make sure "
            "to provide a valid key for an active subscription and use a correct regional "
            "API endpoint for your resource.",
        )
    if _VERSIONED.fullmatch(path) and "api-version=" not in query:
        return azure_error_reply(404, "Resource not found")
    return None

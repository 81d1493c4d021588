"""What the loopback Amazon Bedrock server (``reactcore.testing.serve_bedrock``) sends and
checks: Converse answers (JSON), ``ConverseStream`` answers in AWS event-stream frames
(cut across HTTP chunks when asked), Bedrock's error bodies and in-stream exceptions, and
the two things Bedrock refuses before the model sees a request: a bad SigV4 signature
(recomputed with botocore from the request as it arrived) and signed reasoning that is
not sent back as it was issued.

The server's credentials are ``TEST_ACCESS_KEY_ID`` / ``TEST_SECRET_ACCESS_KEY``; a
request with ``Authorization: Bearer …`` (a Bedrock API key) is taken unsigned. Its
reasoning signatures are ``reasoning_signature(text)``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from . import _validate as valid
from ._messages import AssistantMessage
from ._testing_sse import ENDINGS, THREADING_EVENT, Ending
from .models._eventstream import encode_frame
from .models.base import Usage

if TYPE_CHECKING:
    from .testing import Exchange, HTTPReply

BEDROCK_ROUTE = re.compile(r"/model/.+/converse(?:-stream)?")
TEST_ACCESS_KEY_ID = "AKIDLOOPBACKTEST"
TEST_SECRET_ACCESS_KEY = "loopback/Secret+Key/for-tests-0123456789"
_REASONING_KEY = b"reactcore-loopback-bedrock"
_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<signed>[^,]+), "
    r"Signature=(?P<sig>[0-9a-f]+)"
)


def reasoning_signature(text: str) -> str:
    """The signature the server gives (and expects back on) reasoning ``text``."""
    return base64.b64encode(
        hmac.new(_REASONING_KEY, text.encode(), hashlib.sha256).digest()
    ).decode()


def _usage_json(usage: Usage | None) -> dict[str, int]:
    usage = usage or Usage(10, 5, 15)
    written, read = usage.cache_creation_tokens, usage.cached_tokens
    out = {
        "inputTokens": usage.prompt_tokens - read - written,
        "outputTokens": usage.completion_tokens,
        "totalTokens": usage.total_tokens,
    }
    if read:
        out["cacheReadInputTokens"] = read
    if written:
        out["cacheWriteInputTokens"] = written
    return out


def _reasoning(message: AssistantMessage) -> list[dict[str, Any]]:
    """The message's reasoning blocks: its Bedrock provider data, else its ``reasoning``
    text signed by the server."""
    data = message.provider_data.get("bedrock")
    found = data.get("reasoning") if isinstance(data, Mapping) else None
    if isinstance(found, list):
        return [dict(b) for b in found]
    if message.reasoning:
        return [{"text": message.reasoning, "signature": reasoning_signature(message.reasoning)}]
    return []


def _stop_reason(message: AssistantMessage) -> str:
    if message.tool_calls:
        return "tool_use"
    return {"length": "max_tokens", "content_filter": "content_filtered"}.get(
        message.finish_reason or "", "end_turn"
    )


def _as_message(message: AssistantMessage | str) -> AssistantMessage:
    return AssistantMessage(message) if isinstance(message, str) else message


def converse_json(message: AssistantMessage | str, *, usage: Usage | None = None) -> Any:
    """A whole Converse answer carrying ``message`` (reasoning first, then text, calls)."""
    message = _as_message(message)
    content: list[dict[str, Any]] = []
    for block in _reasoning(message):
        if "redacted" in block:
            content.append({"reasoningContent": {"redactedContent": block["redacted"]}})
        else:
            text = {"text": block["text"], "signature": block["signature"]}
            content.append({"reasoningContent": {"reasoningText": text}})
    if message.text:
        content.append({"text": message.text})
    for call in message.tool_calls:
        use = {"toolUseId": call.id, "name": call.name, "input": json.loads(call.arguments or "{}")}
        content.append({"toolUse": use})
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": _stop_reason(message),
        "usage": _usage_json(usage),
        "metrics": {"latencyMs": 1},
    }


def bedrock_reply(message: AssistantMessage | str, *, usage: Usage | None = None) -> HTTPReply:
    """``converse_json`` as a whole answer, with Bedrock's request id header."""
    from .testing import HTTPReply

    headers = {"x-amzn-requestid": "bedrock-req-test"}
    return HTTPReply.from_json(converse_json(message, usage=usage), headers=headers)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def bedrock_events(
    message: AssistantMessage | str, *, usage: Usage | None = None, chunk_size: int = 4
) -> list[dict[str, Any]]:
    """``message`` as ``ConverseStream`` events (``{event type: payload}``): reasoning
    deltas (text, then signature), text deltas, each call's start and input deltas, each
    block stopped; ``messageStop`` and ``metadata`` last."""
    message = _as_message(message)
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    index = 0

    def delta(value: dict[str, Any]) -> None:
        events.append({"contentBlockDelta": {"delta": value, "contentBlockIndex": index}})

    for block in _reasoning(message):
        if "redacted" in block:
            delta({"reasoningContent": {"redactedContent": block["redacted"]}})
        else:
            for piece in _pieces(block["text"], chunk_size):
                delta({"reasoningContent": {"text": piece}})
            delta({"reasoningContent": {"signature": block["signature"]}})
        events.append({"contentBlockStop": {"contentBlockIndex": index}})
        index += 1
    if message.text:
        for piece in _pieces(message.text, chunk_size):
            delta({"text": piece})
        events.append({"contentBlockStop": {"contentBlockIndex": index}})
        index += 1
    for call in message.tool_calls:
        start = {"toolUse": {"toolUseId": call.id, "name": call.name}}
        events.append({"contentBlockStart": {"start": start, "contentBlockIndex": index}})
        for piece in _pieces(call.arguments, chunk_size):
            delta({"toolUse": {"input": piece}})
        events.append({"contentBlockStop": {"contentBlockIndex": index}})
        index += 1
    events.append({"messageStop": {"stopReason": _stop_reason(message)}})
    events.append({"metadata": {"usage": _usage_json(usage), "metrics": {"latencyMs": 1}}})
    return events


def event_frame(event: Mapping[str, Any]) -> bytes:
    """One event (``{type: payload}``) as an event-stream frame."""
    ((kind, payload),) = event.items()
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    return encode_frame(headers, json.dumps(payload).encode())


def exception_frame(kind: str, message: str) -> bytes:
    """An in-stream exception frame (``throttlingException``, ``validationException`` …)."""
    headers = {
        ":exception-type": kind,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_frame(headers, json.dumps({"message": message}).encode())


def _frames(value: Sequence[bytes]) -> tuple[bytes, ...]:
    return tuple(value)


@attrs.frozen
class BedrockStreamReply:
    """A ``ConverseStream`` answer: ``frames`` (event-stream bytes, each an event of
    ``bedrock_events`` or an ``exception_frame``), sent in HTTP chunks of ``split``
    bytes (frames cut across chunks; 0: a chunk per frame), then the ``ending``: ``"eof"``,
    ``"cut"`` (the connection closed mid-body) or ``"hang"`` (kept open until the client
    leaves, when ``client_left`` is set)."""

    frames: tuple[bytes, ...] = attrs.field(
        converter=_frames, validator=valid.each(valid.instance_of(bytes, "event-stream bytes"))
    )
    ending: Ending = attrs.field(default="eof", validator=valid.one_of(*ENDINGS))
    split: int = attrs.field(default=0, validator=valid.integer(minimum=0))
    client_left: threading.Event = attrs.field(
        factory=threading.Event, eq=False, repr=False, validator=THREADING_EVENT
    )

    @classmethod
    def of(
        cls,
        message: AssistantMessage | str,
        *,
        usage: Usage | None = None,
        chunk_size: int = 4,
        split: int = 0,
    ) -> BedrockStreamReply:
        """``message`` streamed (``bedrock_events``)."""
        events = bedrock_events(message, usage=usage, chunk_size=chunk_size)
        return cls([event_frame(e) for e in events], split=split)

    async def respond(self, exchange: Exchange) -> None:
        headers = {
            "content-type": "application/vnd.amazon.eventstream",
            "x-amzn-requestid": "bedrock-req-test",
        }
        await exchange.start(200, headers)
        data = b"".join(self.frames)
        if self.split:
            pieces = [data[i : i + self.split] for i in range(0, len(data), self.split)]
        else:
            pieces = list(self.frames)
        for piece in pieces:
            await exchange.body(piece, more=True)
        if self.ending == "eof":
            await exchange.body(b"", more=False)
        elif self.ending == "hang" and await exchange.wait_gone():
            self.client_left.set()
        # "cut": return mid-body; the server closes the connection.


def bedrock_error_reply(
    status: int,
    message: str,
    *,
    error_type: str = "ThrottlingException",
    headers: Mapping[str, str] | None = None,
) -> HTTPReply:
    """A Bedrock error: ``{"message": …}`` with ``status`` and the error's type in
    ``x-amzn-ErrorType`` (where boto3 reads it)."""
    from .testing import HTTPReply

    extra = {
        "x-amzn-errortype": f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/",
        "x-amzn-requestid": "bedrock-req-test",
        **(headers or {}),
    }
    return HTTPReply.from_json({"message": message}, status=status, headers=extra)


def _signature_problem(
    method: str, url: str, headers: Mapping[str, str], body: bytes
) -> str | None:
    """Why the request's SigV4 signature is not what botocore computes, else None."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    found = _AUTH.fullmatch(headers.get("authorization", ""))
    if found is None:
        return "the request is not signed with AWS4-HMAC-SHA256"
    if found["key"] != TEST_ACCESS_KEY_ID:
        return "The security token included in the request is invalid."
    signed = found["signed"].split(";")
    aws = AWSRequest(
        method=method,
        url=url,
        data=body,
        headers={h: headers.get(h, "") for h in signed if h != "host"},
    )
    token = headers.get("x-amz-security-token")
    signer = SigV4Auth(
        Credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY, token),
        found["service"],
        found["region"],
    )
    aws.context["timestamp"] = headers.get("x-amz-date", "")
    canonical = signer.canonical_request(aws)
    expected = signer.signature(signer.string_to_sign(aws, canonical), aws)
    if not hmac.compare_digest(expected, found["sig"]) or found["service"] != "bedrock":
        return (
            "The request signature we calculated does not match the signature you provided. "
            "Check your AWS Secret Access Key and signing method."
        )
    return None


def _reasoning_problem(payload: Any) -> str | None:
    """Why the request's reasoning was not sent back as issued, else None."""
    for message in payload.get("messages", []) if isinstance(payload, dict) else []:
        for block in message.get("content", []) if message.get("role") == "assistant" else []:
            text = block.get("reasoningContent", {}).get("reasoningText")
            if text is not None and text.get("signature") != reasoning_signature(
                text.get("text", "")
            ):
                return "The reasoning block's signature is invalid: it was changed or not issued."
    return None


_NO_TOOL_CONFIG = (
    "The toolConfig field must be defined when using toolUse and toolResult content blocks."
)


def _tool_config_problem(payload: Any) -> str | None:
    """Bedrock's refusal of ``toolUse``/``toolResult`` blocks in a request without a
    ``toolConfig``, else None."""
    if not isinstance(payload, dict) or payload.get("toolConfig"):
        return None
    for message in payload.get("messages", []):
        for block in message.get("content", []):
            if "toolUse" in block or "toolResult" in block:
                return _NO_TOOL_CONFIG
    return None


def bedrock_refusal(
    method: str, url: str, headers: Mapping[str, str], body: bytes
) -> HTTPReply | None:
    """What Bedrock answers a request it refuses before the model: 403 for a missing or
    bad signature, 400 for reasoning not sent back as issued or for tool blocks without a
    ``toolConfig``; None otherwise."""
    if not headers.get("authorization", "").startswith("Bearer "):
        problem = _signature_problem(method, url, headers, body)
        if problem is not None:
            kind = (
                "UnrecognizedClientException" if "token" in problem else "InvalidSignatureException"
            )
            return bedrock_error_reply(403, problem, error_type=kind)
    payload = json.loads(body)
    problem = _reasoning_problem(payload) or _tool_config_problem(payload)
    if problem is not None:
        return bedrock_error_reply(400, problem, error_type="ValidationException")
    return None


def frames_of(events: Sequence[Mapping[str, Any]]) -> list[bytes]:
    """``events`` as frames (``event_frame`` each)."""
    return [event_frame(e) for e in events]

"""Amazon Bedrock: the loopback server proven with boto3's ``bedrock-runtime`` client
(Converse and ConverseStream, its signature check), reactcore's SigV4 signature against
botocore's, the event-stream reader (frames cut across chunks, CRC, size bound), secrets
kept out of errors, the provider string, and the wire mapping of reasoning, caching,
images and documents. The agent scenarios (tool round trip, parallel calls, streaming,
reasoning through a checkpoint, retries) run on Bedrock in test_agent_providers.py."""

from __future__ import annotations

import base64
import datetime
import json
import struct
from typing import Any

import boto3
import botocore.auth
import httpx
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from reactcore import (
    AssistantMessage,
    FilePart,
    ImagePart,
    ModelError,
    ModelHTTPError,
    ModelStreamError,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from reactcore.models import BedrockModel, ModelRequest, ToolSpec, infer_model
from reactcore.models._eventstream import MAX_FRAME_BYTES, FrameDecoder, encode_frame
from reactcore.models.bedrock import request_body
from reactcore.testing import (
    TEST_ACCESS_KEY_ID,
    TEST_SECRET_ACCESS_KEY,
    BedrockStreamReply,
    bedrock_error_reply,
    bedrock_reply,
    event_frame,
    exception_frame,
    reasoning_signature,
    serve_bedrock,
)

MODEL = "us.anthropic.claude-test-v1:0"
ASKS = AssistantMessage(
    "Checking.",
    [ToolCall("toolu_1", "weather", '{"city": "Paris"}')],
    reasoning="Paris first.",
)


def _boto3(url: str, secret: str = TEST_SECRET_ACCESS_KEY) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id=TEST_ACCESS_KEY_ID,
        aws_secret_access_key=secret,
        aws_session_token="session-token-of-the-test",
        config=Config(retries={"max_attempts": 1}),
    )


HI = [{"role": "user", "content": [{"text": "hi"}]}]


def test_boto3_converse_reads_the_server_answer() -> None:
    """boto3 signs a Converse request the server accepts (its signature recomputed with
    botocore) and parses the answer: reasoning with signature, text, a tool use, usage."""
    with serve_bedrock([bedrock_reply(ASKS)]) as server:
        answer = _boto3(server.base_url).converse(modelId=MODEL, messages=HI)
    content = answer["output"]["message"]["content"]
    assert content[0]["reasoningContent"]["reasoningText"] == {
        "text": "Paris first.",
        "signature": reasoning_signature("Paris first."),
    }
    assert content[1] == {"text": "Checking."}
    assert content[2]["toolUse"] == {
        "toolUseId": "toolu_1",
        "name": "weather",
        "input": {"city": "Paris"},
    }
    assert answer["stopReason"] == "tool_use"
    assert answer["usage"]["totalTokens"] == 15
    assert server.request_paths == [f"/model/{MODEL}/converse"]


def test_boto3_converse_stream_parses_every_frame() -> None:
    """boto3 parses every event-stream frame the server sends, cut across HTTP chunks:
    the reasoning deltas and signature, text, the tool use's start and input, the stop,
    the usage."""
    reply = BedrockStreamReply.of(ASKS, split=5)
    with serve_bedrock([reply]) as server:
        answer = _boto3(server.base_url).converse_stream(modelId=MODEL, messages=HI)
        events = list(answer["stream"])
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"]
    deltas = [e["contentBlockDelta"]["delta"] for e in events if "contentBlockDelta" in e]
    reasoning = "".join(
        d["reasoningContent"].get("text", "") for d in deltas if "reasoningContent" in d
    )
    assert reasoning == "Paris first."
    assert "".join(d["text"] for d in deltas if "text" in d) == "Checking."
    assert "".join(d["toolUse"]["input"] for d in deltas if "toolUse" in d) == '{"city": "Paris"}'
    assert len(events) == len(reply.frames)


def test_the_server_refuses_a_bad_signature() -> None:
    """A request signed with the wrong secret key gets Bedrock's 403 (boto3 reads it as
    ``InvalidSignatureException``); the script is not asked."""
    with serve_bedrock([bedrock_reply("never")]) as server:
        client = _boto3(server.base_url, secret="not-the-secret")
        with pytest.raises(ClientError) as caught:
            client.converse(modelId=MODEL, messages=HI)
    assert caught.value.response["Error"]["Code"] == "InvalidSignatureException"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_the_signature_equals_botocores_for_a_fixed_request_and_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """For the same request, time and credentials, reactcore's SigV4 headers are the ones
    boto3 sends (the model id's ``:`` encoded again in the canonical request)."""
    from botocore.credentials import ReadOnlyCredentials

    from reactcore.models._aws import sign_request

    fixed = datetime.datetime(2026, 12, 5, 1, 2, 3, tzinfo=datetime.UTC)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: fixed)
    sent: dict[str, Any] = {}

    def capture(request: Any, **kwargs: Any) -> None:
        sent["request"] = request
        raise KeyboardInterrupt  # stops boto3 before it sends

    client = _boto3("https://bedrock-runtime.us-east-1.amazonaws.com")
    client.meta.events.register("before-send.bedrock-runtime.Converse", capture)
    with pytest.raises(KeyboardInterrupt):
        client.converse(modelId=MODEL, messages=HI)
    theirs = sent["request"]
    ours = httpx.Request(
        "POST",
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
        f"{MODEL.replace(':', '%3A')}/converse",
        content=theirs.body,
        headers={"Content-Type": "application/json"},
    )
    assert str(ours.url) == theirs.url
    credentials = ReadOnlyCredentials(
        TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY, "session-token-of-the-test"
    )
    secrets = sign_request(ours, credentials, "us-east-1")
    for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
        assert ours.headers[name] == theirs.headers[name].decode()
    assert set(secrets) == {TEST_SECRET_ACCESS_KEY, "session-token-of-the-test"}


def _model(server_url: str, **options: Any) -> BedrockModel:
    return BedrockModel(
        MODEL,
        base_url=server_url,
        region="us-east-1",
        aws_access_key_id=TEST_ACCESS_KEY_ID,
        aws_secret_access_key=TEST_SECRET_ACCESS_KEY,
        aws_session_token="session-token-of-the-test",
        retry_backoff=0.01,
        **options,
    )


@pytest.mark.anyio
async def test_converse_whole_answer_and_reasoning_round_trip() -> None:
    """``call`` reads a whole Converse answer (reasoning kept signed with its position,
    text, the call, usage); sent back, the reasoning is unchanged, so the server (which
    refuses a changed signature) accepts it; a changed one is refused with 400."""
    with serve_bedrock(
        [bedrock_reply(ASKS), bedrock_reply("Sunny."), bedrock_reply("x")]
    ) as server:
        async with _model(server.base_url) as model:
            first = await model.call(ModelRequest([UserMessage("weather?")]))
            message = first.message
            assert message.reasoning == "Paris first." and message.tool_calls[0].name == "weather"
            assert message.provider_data["bedrock"]["reasoning"][0]["index"] == 0
            again = await model.call(ModelRequest([UserMessage("weather?"), message]))
            assert again.message.text == "Sunny."
            tampered = message.provider_data["bedrock"]["reasoning"][0] | {"text": "changed"}
            forged = AssistantMessage(
                "Checking.",
                message.tool_calls,
                provider_data={"bedrock": {"reasoning": [tampered]}},
            )
            with pytest.raises(ModelHTTPError) as caught:
                await model.call(ModelRequest([UserMessage("weather?"), forged]))
    assert caught.value.status_code == 400
    assert server.requests[1]["messages"][1]["content"][0] == {
        "reasoningContent": {
            "reasoningText": {
                "text": "Paris first.",
                "signature": reasoning_signature("Paris first."),
            }
        }
    }


TOOL_LOOP = [
    UserMessage("weather?"),
    AssistantMessage("", [ToolCall("toolu_1", "weather", '{"city": "Paris"}')]),
    ToolResponseMessage([ToolResponse("toolu_1", "weather", "Sunny.")]),
]
NO_TOOL_CONFIG = (
    "The toolConfig field must be defined when using toolUse and toolResult content blocks."
)


def test_the_server_refuses_tool_blocks_without_a_tool_config() -> None:
    """As Bedrock does, the loopback server refuses (400 ``ValidationException``, Bedrock's
    message) a conversation holding ``toolUse``/``toolResult`` blocks sent without a
    ``toolConfig``, and accepts the same conversation with one."""
    messages = [
        HI[0],
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "t1", "name": "w", "input": {}}}],
        },
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "ok"}]}}],
        },
    ]
    config = {"tools": [{"toolSpec": {"name": "w", "inputSchema": {"json": {"type": "object"}}}}]}
    with serve_bedrock([bedrock_reply("fine")]) as server:
        client = _boto3(server.base_url)
        with pytest.raises(ClientError) as caught:
            client.converse(modelId=MODEL, messages=messages)
        answer = client.converse(modelId=MODEL, messages=messages, toolConfig=config)
    assert caught.value.response["Error"] == {
        "Code": "ValidationException",
        "Message": NO_TOOL_CONFIG,
    }
    assert answer["output"]["message"]["content"] == [{"text": "fine"}]


@pytest.mark.anyio
async def test_a_step_without_visible_tools_sends_the_tools_the_conversation_used() -> None:
    """A tool loop's step with no visible tools (tool selection hid them, or the final
    step offers none) still has a ``toolConfig``, which Bedrock requires beside tool
    blocks: the tools the conversation called, by name, with a minimal schema and marked
    not offered (never their real schema); whole and streamed. A step with visible tools
    sends those only."""
    weather = ToolSpec("weather", "Weather.", {"type": "object", "properties": {}})
    hidden = ModelRequest(TOOL_LOOP, tool_specs=(weather,))
    replies = [
        bedrock_reply("Sunny in Paris."),
        BedrockStreamReply.of("Sunny."),
        bedrock_reply("x"),
    ]
    with serve_bedrock(replies) as server:
        async with _model(server.base_url) as model:
            answer = await model.call(hidden)
            async with model.stream(hidden) as chunks:
                async for _ in chunks:
                    pass
            await model.call(ModelRequest(TOOL_LOOP, tools=("weather",), tool_specs=(weather,)))
    assert answer.message.text == "Sunny in Paris."
    placeholder = {
        "toolSpec": {
            "name": "weather",
            "description": "Not offered at this step: do not call it.",
            "inputSchema": {"json": {"type": "object", "properties": {}}},
        }
    }
    assert server.requests[0]["toolConfig"] == {"tools": [placeholder]}
    assert server.requests[1]["toolConfig"] == {"tools": [placeholder]}
    assert server.requests[2]["toolConfig"]["tools"][0]["toolSpec"]["description"] == "Weather."
    assert "toolConfig" not in request_body(ModelRequest([UserMessage("hi")]))


@pytest.mark.anyio
async def test_throttling_is_retried_and_secrets_never_leave_in_errors() -> None:
    """A ``ThrottlingException`` (429) is retried with the layer's backoff; a server that
    echoes the secret key and the session token (in the body, in the request id header)
    gets neither into the error, its repr, the retry log or the retry events."""
    from structlog.testing import capture_logs

    from reactcore.models.base import RETRY_LISTENER

    echo = f"bad {TEST_SECRET_ACCESS_KEY} and session-token-of-the-test"
    script = [
        bedrock_error_reply(429, echo, headers={"x-amzn-requestid": echo}),
        bedrock_reply("Fine."),
        bedrock_error_reply(400, echo, error_type="ValidationException"),
    ]
    retries: list[Any] = []

    async def listener(*args: Any, **kwargs: Any) -> None:
        retries.append((args, kwargs))

    with serve_bedrock(script) as server, capture_logs() as logs:
        async with _model(server.base_url) as model:
            request = ModelRequest([UserMessage("hi")], context={RETRY_LISTENER: listener})
            answer = await model.call(request)
            assert answer.message.text == "Fine."
            with pytest.raises(ModelHTTPError) as caught:
                await model.call(ModelRequest([UserMessage("hi")]))
    seen = f"{caught.value} {caught.value.body} {caught.value!r} {logs} {retries}"
    assert TEST_SECRET_ACCESS_KEY not in seen and "session-token-of-the-test" not in seen
    assert "[api key]" in str(caught.value)
    assert TEST_SECRET_ACCESS_KEY not in repr(_model("http://x"))
    assert len(server.requests) == 3 and len(retries) == 1
    assert any(entry["event"] == "model_request_retry" for entry in logs)


@pytest.mark.anyio
async def test_a_corrupted_frame_from_the_server_is_a_stream_error() -> None:
    """A frame whose payload was damaged in transit fails its CRC: the stream ends with
    ``ModelStreamError``, not with what the damaged bytes would say."""
    frame = bytearray(
        event_frame({"contentBlockDelta": {"delta": {"text": "hi"}, "contentBlockIndex": 0}})
    )
    frame[-6] ^= 0x20
    frames = [event_frame({"messageStart": {"role": "assistant"}}), bytes(frame)]
    with serve_bedrock([BedrockStreamReply(frames, split=4)]) as server:
        async with _model(server.base_url) as model:
            with pytest.raises(ModelStreamError, match="CRC"):  # noqa: PT012 - the stream's block
                async with model.stream(ModelRequest([UserMessage("hi")])) as chunks:
                    async for _ in chunks:
                        pass


@pytest.mark.anyio
async def test_an_exception_frame_in_the_stream_is_a_stream_error() -> None:
    """An in-stream ``throttlingException`` frame ends the stream with ``ModelStreamError``
    naming it, the secret key blanked out."""
    frames = [event_frame({"messageStart": {"role": "assistant"}})]
    frames.append(exception_frame("throttlingException", f"slow down {TEST_SECRET_ACCESS_KEY}"))
    with serve_bedrock([BedrockStreamReply(frames)]) as server:
        async with _model(server.base_url) as model:
            with pytest.raises(ModelStreamError) as caught:  # noqa: PT012 - the stream's block
                async with model.stream(ModelRequest([UserMessage("hi")])) as chunks:
                    async for _ in chunks:
                        pass
    assert "throttlingException" in str(caught.value)
    assert TEST_SECRET_ACCESS_KEY not in str(caught.value)


def test_frames_cut_anywhere_are_decoded_in_order() -> None:
    """Frames fed a byte at a time come out whole and in order."""
    data = b"".join(encode_frame({":event-type": f"e{i}"}, b'{"n":%d}' % i) for i in range(3))
    decoder = FrameDecoder()
    frames = [f for byte in data for f in decoder.feed(bytes([byte]))]
    assert [(h[":event-type"], p) for h, p in frames] == [
        (f"e{i}", b'{"n":%d}' % i) for i in range(3)
    ]
    assert not decoder.pending


def test_a_bad_crc_or_an_oversized_frame_is_a_stream_error() -> None:
    """A flipped payload byte fails the message CRC; a prelude announcing a frame past
    ``MAX_FRAME_BYTES`` is refused before it is read."""
    frame = bytearray(encode_frame({":event-type": "x"}, b"{}"))
    frame[-5] ^= 1
    with pytest.raises(ModelStreamError, match="CRC"):
        FrameDecoder().feed(bytes(frame))
    import zlib

    prelude = struct.pack(">II", MAX_FRAME_BYTES + 1, 0)
    big = prelude + struct.pack(">I", zlib.crc32(prelude))
    with pytest.raises(ModelStreamError, match="longer than"):
        FrameDecoder().feed(big)


def test_the_provider_string_reads_the_aws_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """``"bedrock:<model id>"`` is a BedrockModel; the endpoint override is
    ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, then ``AWS_ENDPOINT_URL``; ``AWS_REGION`` sets
    the region; a model string never needs a key up front."""
    monkeypatch.delenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://general.example")
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    model = infer_model(f"bedrock:{MODEL}")
    assert isinstance(model, BedrockModel) and model.base_url == "http://general.example"
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "http://bedrock.example/")
    model = infer_model(f"bedrock:{MODEL}")
    assert isinstance(model, BedrockModel) and model.base_url == "http://bedrock.example"
    monkeypatch.delenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME")
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    model = BedrockModel(MODEL)
    request = ModelRequest([UserMessage("hi")])
    assert model._url(request, stream=True) == (
        "https://bedrock-runtime.eu-west-3.amazonaws.com/model/"
        "us.anthropic.claude-test-v1%3A0/converse-stream"
    )


def test_the_request_carries_images_documents_cache_points_and_thinking() -> None:
    """Images and documents become ``image``/``document`` blocks (base64 bytes, a name
    Bedrock takes); ``cache_prompt`` puts ``cachePoint`` after the system prompt, the tools
    and the last block; a thinking budget goes in ``additionalModelRequestFields``;
    ``tool_choice="required"`` is ``{"any": {}}``."""
    from reactcore import SystemMessage
    from reactcore.models import ChatOptions, ToolSpec

    user = UserMessage(
        "look",
        parts=[
            ImagePart("data:image/png;base64,iVBORw0KGgo="),
            FilePart(file_data="data:application/pdf;base64,JVBERi0=", filename="report v2.pdf"),
        ],
    )
    request = ModelRequest(
        [user],
        system_message=SystemMessage("Be brief."),
        tool_specs=[ToolSpec("weather", "The weather.", {"type": "object"})],
        tools=["weather"],
        options=ChatOptions(tool_choice="required", max_tokens=100),
    )
    body = request_body(request, thinking_budget=1024, cache_prompt=True)
    assert body["system"] == [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}]
    tools = body["toolConfig"]["tools"]
    assert tools[0]["toolSpec"]["inputSchema"] == {"json": {"type": "object"}}
    assert tools[-1] == {"cachePoint": {"type": "default"}}
    assert body["toolConfig"]["toolChoice"] == {"any": {}}
    content = body["messages"][0]["content"]
    assert content[1] == {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}}
    assert content[2] == {
        "document": {"format": "pdf", "name": "report v2-pdf", "source": {"bytes": "JVBERi0="}}
    }
    assert content[-1] == {"cachePoint": {"type": "default"}}
    assert body["inferenceConfig"] == {"maxTokens": 100}
    assert body["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 1024}
    }
    json.dumps(body)


@pytest.mark.anyio
async def test_cache_usage_is_read() -> None:
    """Cache reads and writes count in the prompt and are reported apart."""
    from reactcore.models import Usage

    usage = Usage(100, 5, 105, cached_tokens=60, cache_creation_tokens=30)
    with serve_bedrock([bedrock_reply("ok", usage=usage)]) as server:
        async with _model(server.base_url) as model:
            answer = await model.call(ModelRequest([UserMessage("hi")]))
    assert answer.usage == usage
    assert server.requests[0]["messages"] == [{"role": "user", "content": [{"text": "hi"}]}]


@pytest.mark.anyio
async def test_converse_stream_reads_frames_cut_across_chunks() -> None:
    """``stream`` asks for the event stream (``Accept``), reads frames cut every 3 bytes
    into the same message a whole answer gives: reasoning signed with its position, text,
    the call, usage."""
    from reactcore.models import ChunkAssembler

    with serve_bedrock([BedrockStreamReply.of(ASKS, split=3), bedrock_reply(ASKS)]) as server:
        async with _model(server.base_url) as model:
            assembler = ChunkAssembler()
            async with model.stream(ModelRequest([UserMessage("hi")])) as chunks:
                async for chunk in chunks:
                    assembler.add(chunk)
            whole = await model.call(ModelRequest([UserMessage("hi")]))
    streamed = assembler.result().message
    assert streamed.text == whole.message.text == "Checking."
    assert streamed.reasoning == whole.message.reasoning == "Paris first."
    assert streamed.tool_calls == whole.message.tool_calls
    assert streamed.provider_data == whole.message.provider_data
    assert server.request_headers[0]["accept"] == "application/vnd.amazon.eventstream"
    assert server.request_paths[0].endswith("/converse-stream")
    assert server.request_headers[0]["x-amz-security-token"] == "session-token-of-the-test"


def _no_aws_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """An environment where botocore finds only what the test puts there."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_BEARER_TOKEN_BEDROCK",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.mark.anyio
async def test_the_standard_chain_environment_and_profiles_sign(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Without keys given, botocore's chain is used: the environment's keys with
    ``AWS_DEFAULT_REGION``, then a profile of the shared credentials file; the server
    accepts both signatures. An unknown profile is a ``ModelError`` naming it."""
    _no_aws_files(monkeypatch, tmp_path)
    (tmp_path / "credentials").write_text(
        f"[dev]\naws_access_key_id = {TEST_ACCESS_KEY_ID}\n"
        f"aws_secret_access_key = {TEST_SECRET_ACCESS_KEY}\n"
    )
    (tmp_path / "config").write_text("[profile dev]\nregion = eu-central-1\n")
    with serve_bedrock([bedrock_reply("env"), bedrock_reply("profile")]) as server:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", TEST_ACCESS_KEY_ID)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", TEST_SECRET_ACCESS_KEY)
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
        async with BedrockModel(MODEL, base_url=server.base_url) as model:
            assert (await model.call(ModelRequest([UserMessage("hi")]))).message.text == "env"
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
        monkeypatch.delenv("AWS_DEFAULT_REGION")
        async with BedrockModel(MODEL, base_url=server.base_url, profile="dev") as model:
            answer = await model.call(ModelRequest([UserMessage("hi")]))
            assert answer.message.text == "profile"
        async with BedrockModel(MODEL, base_url=server.base_url, profile="nope") as model:
            with pytest.raises(ModelError, match="ProfileNotFound"):
                await model.call(ModelRequest([UserMessage("hi")]))
    assert "/us-west-2/bedrock/" in server.request_headers[0]["authorization"]
    assert "/eu-central-1/bedrock/" in server.request_headers[1]["authorization"]
    assert len(server.requests) == 2


@pytest.mark.anyio
async def test_credentials_refresh_in_a_worker_thread_without_blocking_the_loop() -> None:
    """Refreshable credentials due for refresh are refreshed by botocore in a worker
    thread while the event loop goes on; once fresh they are cached (no refresh, no
    thread, on the next request)."""
    import threading

    import anyio
    from botocore.credentials import RefreshableCredentials

    from reactcore.models._aws import AWSAuth

    started, go = threading.Event(), threading.Event()
    threads: list[int] = []

    def refresh() -> dict[str, str]:
        threads.append(threading.get_ident())
        started.set()
        go.wait(10)
        later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)
        return {
            "access_key": "AKIDFRESH",
            "secret_key": "fresh-secret",
            "token": "fresh-token",
            "expiry_time": later.isoformat(),
        }

    soon = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=2)
    stale = {
        "access_key": "AKIDOLD",
        "secret_key": "old",
        "token": "t",
        "expiry_time": soon.isoformat(),
    }
    source = RefreshableCredentials.create_from_metadata(stale, refresh, "test")
    auth = AWSAuth("us-east-1", credentials=source)
    found: list[Any] = []

    async def resolve() -> None:
        found.append(await auth.resolve())

    async with anyio.create_task_group() as tg:
        tg.start_soon(resolve)
        await anyio.to_thread.run_sync(started.wait, 10)
        assert found == []  # the refresh is under way; this task still runs
        go.set()
    assert found[0][0].access_key == "AKIDFRESH" and found[0][1] == "us-east-1"
    assert threads and threads[0] != threading.get_ident()
    again = await auth.resolve()
    assert again[0].secret_key == "fresh-secret" and len(threads) == 1


def test_a_tool_loop_keeps_one_thinking_mode() -> None:
    """With thinking on, a tool loop whose first answer has no reasoning (another
    provider's, through a fallback) is continued without thinking, as Claude requires; one
    that began with signed reasoning keeps thinking and its block; a new user turn thinks
    again."""
    from reactcore import ToolResponse, ToolResponseMessage

    call = ToolCall("toolu_1", "weather", '{"city": "Paris"}')
    results = ToolResponseMessage([ToolResponse("toolu_1", "weather", "sunny")])
    signed = {"index": 0, "text": "Paris.", "signature": reasoning_signature("Paris.")}
    thought = AssistantMessage("", [call], provider_data={"bedrock": {"reasoning": [signed]}})
    foreign = AssistantMessage("", [call])
    on = {"thinking": {"type": "enabled", "budget_tokens": 1024}}

    def body(*messages: Any) -> dict[str, Any]:
        return request_body(ModelRequest([UserMessage("w?"), *messages]), thinking_budget=1024)

    assert "additionalModelRequestFields" not in body(foreign, results)
    kept = body(thought, results)
    assert kept["additionalModelRequestFields"] == on
    assert "reasoningContent" in kept["messages"][1]["content"][0]
    assert body(foreign, results, UserMessage("and Rome?"))["additionalModelRequestFields"] == on


def _as_params(value: Any) -> Any:
    """A Converse JSON body as boto3's parameters: blobs (``bytes``) decoded from base64."""
    if isinstance(value, dict):
        return {
            k: base64.b64decode(v) if k == "bytes" and isinstance(v, str) else _as_params(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_as_params(v) for v in value]
    return value


def test_requests_validate_against_botocores_converse_shape() -> None:
    """What reactcore sends is a valid ``ConverseRequest`` by botocore's own service model
    (the shape boto3 checks its parameters against): system and cache points, tools and
    tool choice, images and documents, a tool loop with signed reasoning, ``toolUse`` and
    ``toolResult`` blocks with a status, and a step with no visible tools."""
    import botocore.session
    from botocore.validate import ParamValidator

    from reactcore import SystemMessage
    from reactcore.models import ChatOptions

    shape = (
        botocore.session.get_session()
        .get_service_model("bedrock-runtime")
        .operation_model("Converse")
        .input_shape
    )
    user = UserMessage(
        "look",
        parts=[
            ImagePart("data:image/png;base64,iVBORw0KGgo="),
            FilePart(file_data="data:application/pdf;base64,JVBERi0=", filename="report v2.pdf"),
        ],
    )
    reasoning = {"index": 0, "text": "Weather first.", "signature": reasoning_signature("W")}
    call = AssistantMessage(
        "",
        [ToolCall("t1", "weather", '{"city": "Oslo"}')],
        reasoning="Weather first.",
        provider_data={"bedrock": {"reasoning": [reasoning]}},
    )
    results = ToolResponseMessage(
        [ToolResponse("t1", "weather", "rain"), ToolResponse("t2", "weather", "Error: x", True)]
    )
    spec = ToolSpec("weather", "The weather.", {"type": "object"})
    requests = [
        ModelRequest(
            [user],
            system_message=SystemMessage("Be brief."),
            tool_specs=[spec],
            tools=["weather"],
            options=ChatOptions(tool_choice="required", max_tokens=100, temperature=0.2),
        ),
        ModelRequest([user, call, results], tool_specs=[spec], tools=["weather"]),
        ModelRequest([user, call, results]),  # no visible tools: the used ones are named
    ]
    for request in requests:
        body = request_body(request, thinking_budget=1024, cache_prompt=True)
        report = ParamValidator().validate({"modelId": "m", **_as_params(body)}, shape)
        assert not report.has_errors(), report.generate_report()

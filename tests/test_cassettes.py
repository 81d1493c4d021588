"""Cassettes (``reactcore.testing.Cassette``): a run recorded against each provider's
loopback server replays with the server stopped — the same events and result — on asyncio
and trio; parallel batches of identical calls replay each call's own answer; a changed
prompt, tool schema or tool argument fails naming the field; tool answers with content
parts and pauses for approval (with their resumed leg) replay; no key reaches the file;
the modes; the pytest fixture and marker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import attrs
import httpx
import pytest

from reactcore import (
    Approve,
    AssistantMessage,
    AudioPart,
    FilePart,
    HumanInTheLoopHook,
    ImagePart,
    Interrupt,
    MemorySaver,
    ModelError,
    ModelRequest,
    ModelStreamError,
    OpenAIChatModel,
    ReactAgent,
    Reject,
    Resume,
    RunnableConfig,
    TextPart,
    ToolCall,
    ToolCallFinished,
    ToolCallResponse,
    ToolContext,
    UserMessage,
    tool,
)
from reactcore.models.base import ModelChunk
from reactcore.testing import (
    Cassette,
    CassetteError,
    CassetteMismatchError,
    HTTPReply,
    SSEReply,
    serve_openai_compatible,
)
from tests.providers import PROVIDERS, Provider

pytestmark = pytest.mark.anyio
pytest_plugins = ["pytester"]
OPENAI = PROVIDERS[0]
DEAD_URL = "http://127.0.0.1:9/v1"  # the discard port: nothing answers there


# Vertex's models fetch their OAuth token from the (stopped) server's token endpoint, not
# through the model's HTTP client: a replay of them takes an offline token provider
# (docs/testing-cassettes.md), which these shared drivers do not use.
RECORDED = [p for p in PROVIDERS if p.name not in ("google-vertex", "anthropic-vertex")]


@pytest.fixture(params=RECORDED, ids=lambda p: p.name)
def provider(request: pytest.FixtureRequest) -> Provider:
    return request.param  # type: ignore[no-any-return]


@tool
async def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def asks(*cities: str) -> AssistantMessage:
    calls = [
        ToolCall(f"call_{i}", "weather", json.dumps({"city": c})) for i, c in enumerate(cities)
    ]
    return AssistantMessage("Checking.", calls)


async def run(
    agent: ReactAgent, prompt: str | Resume, config: RunnableConfig | None = None
) -> tuple[list[Any], Any]:
    """The events of a run of ``agent`` (tool durations zeroed: they are timings) and
    its result."""
    events = []
    async with agent.start(prompt, config) as handle:
        async for event in handle.events():
            if isinstance(event, ToolCallFinished):
                event = attrs.evolve(event, duration=0.0)
            events.append(event)
        result = await handle.result()
    return events, result


def agent_on(
    model: Any, cassette: Cassette, *, tools: list[Any] | None = None, parallel: bool = False
) -> ReactAgent:
    return ReactAgent(
        "w",
        model,
        tools=tools or [weather],
        interceptors=[cassette],
        parallel_tool_execution=parallel,
    )


async def test_a_recorded_run_replays_with_the_server_stopped(
    provider: Provider, tmp_path: Path
) -> None:
    """Recorded against the provider's loopback server (streamed answers, two tool
    calls), the run replays from the cassette after the server has stopped: the same
    events, chunk for chunk, and the same messages and result; the tool is not run."""
    path = tmp_path / "run.json"
    script = [provider.reply(asks("Paris", "Rome")), provider.reply("All sunny.")]
    with provider.serve(script) as server, Cassette(path, mode="record") as cassette:
        recorded = await run(
            agent_on(provider.model(server, http_client=cassette.http_client), cassette), "weather?"
        )
    assert len(server.requests) == 2
    ran: list[str] = []

    @tool(name="weather")
    async def counted(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return "not this"

    with Cassette(path, mode="replay") as cassette:
        model = provider.model(server, http_client=cassette.http_client)
        replayed = await run(agent_on(model, cassette, tools=[counted]), "weather?")
    assert replayed[0] == recorded[0]
    assert replayed[1].messages == recorded[1].messages
    assert (replayed[1].text, replayed[1].usage) == (recorded[1].text, recorded[1].usage)
    assert recorded[1].text == "All sunny." and ran == []


async def test_parallel_identical_calls_replay_their_own_answers(tmp_path: Path) -> None:
    """A parallel batch of two identical calls (same tool, same arguments) whose tool
    answered differently each time replays each call id's own recorded answer, and the
    per-call events and the result are the recorded ones."""
    answers = iter(["first", "second"])

    @tool(name="weather")
    async def changing(city: str) -> str:
        """The weather in a city."""
        return next(answers)

    path = tmp_path / "batch.json"
    script = [OPENAI.reply(asks("Oslo", "Oslo")), OPENAI.reply("Done.")]
    with OPENAI.serve(script) as server, Cassette(path, mode="record") as cassette:
        model = OPENAI.model(server, http_client=cassette.http_client)
        recorded = await run(agent_on(model, cassette, tools=[changing], parallel=True), "go")
    with Cassette(path, mode="replay") as cassette:
        model = OPENAI.model(server, http_client=cassette.http_client)
        replayed = await run(agent_on(model, cassette, tools=[changing], parallel=True), "go")
    texts = {r.id: r.response_data for r in replayed[1].messages[2].responses}
    assert texts == {r.id: r.response_data for r in recorded[1].messages[2].responses}
    assert sorted(texts.values()) == ["first", "second"]
    for call_id in ("call_0", "call_1"):
        mine = [e for e in replayed[0] if getattr(e, "call_id", None) == call_id]
        assert mine == [e for e in recorded[0] if getattr(e, "call_id", None) == call_id]
    assert replayed[1].messages == recorded[1].messages


PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(48))
PARTS = (
    TextPart("caption: the front"),
    ImagePart.from_bytes(PNG, "image/png", detail="low"),
    FilePart.from_bytes(b"%PDF-1.4 the report", "application/pdf", "report.pdf"),
    AudioPart("UklGRiQAAABXQVZF", "wav"),
)


async def test_a_tool_answer_with_content_parts_replays(tmp_path: Path) -> None:
    """A tool answering with content parts (text, an image, a file, audio) is recorded
    with the parts in the checkpoints' tagged JSON form (inline data the base64 data URL
    it is); replayed with the tool replaced by one that fails if run, the events and the
    result are the recorded ones, the tool response holds the same parts, and the next
    model request — which carries them (``tool_media="user_message"``) — matches its
    recording."""

    @tool
    async def photo(subject: str) -> ToolCallResponse:
        """A photo of the subject (a camera service, in real life)."""
        return ToolCallResponse(f"a photo of {subject}", parts=PARTS)

    @tool(name="photo")
    async def broken(subject: str) -> ToolCallResponse:
        """A photo of the subject (a camera service, in real life)."""
        raise AssertionError("the tool ran in a replay")

    def model(server: Any, cassette: Cassette) -> OpenAIChatModel:
        chat = OPENAI.model(server, http_client=cassette.http_client)
        return attrs.evolve(chat, tool_media="user_message")  # type: ignore[no-any-return]

    path = tmp_path / "parts.json"
    ask = AssistantMessage("Looking.", [ToolCall("c1", "photo", '{"subject": "the house"}')])
    script = [OPENAI.reply(ask), OPENAI.reply("A red house.")]
    with OPENAI.serve(script) as server, Cassette(path, mode="record") as cassette:
        recorded = await run(agent_on(model(server, cassette), cassette, tools=[photo]), "look")
    image = PARTS[1]
    assert isinstance(image, ImagePart)
    assert image.url in json.dumps(server.requests[1])  # the parts reached the model
    document = json.loads(path.read_text(encoding="utf-8"))
    answer = next(i for i in document["interactions"] if i["kind"] == "tool")["response"]
    assert answer["parts"][1] == {"type": "image", "url": image.url, "detail": "low"}
    assert [p["type"] for p in answer["parts"]] == ["text", "image", "file", "audio"]
    with Cassette(path, mode="replay") as cassette:
        replayed = await run(agent_on(model(server, cassette), cassette, tools=[broken]), "look")
    assert replayed[0] == recorded[0]
    assert replayed[1].messages == recorded[1].messages
    assert replayed[1].text == recorded[1].text == "A red house."
    assert replayed[1].messages[2].responses[0].parts == PARTS
    finished = [e for e in replayed[0] if isinstance(e, ToolCallFinished)]
    assert finished[0].response.parts == PARTS
    answer["parts"][1]["type"] = "video"  # a damaged file: said so, not replayed wrong
    path.write_text(json.dumps(document), encoding="utf-8")
    with Cassette(path, mode="replay") as cassette, pytest.raises(CassetteError) as caught:
        await run(agent_on(model(server, cassette), cassette, tools=[broken]), "look")
    assert "is a damaged cassette: a malformed tool answer" in str(caught.value)


async def test_a_pause_for_approval_and_its_resume_replay(tmp_path: Path) -> None:
    """A tool that pauses the run for approval (``ToolCallResponse(interrupt=...)``) and
    runs again on ``Resume``: both legs are recorded (the second with its decisions) and
    replay with the tool replaced by one that fails if run — the same events and results,
    the pause listing the same waiting call; resumed with another decision, the replay
    fails naming it."""

    @tool
    async def pay(amount: int, context: ToolContext) -> Any:
        """Pay, once a human confirmed."""
        if context.decisions is None:
            confirm = ToolCall("ok", "confirm_payment", json.dumps({"amount": amount}))
            return ToolCallResponse("asking", interrupt=Interrupt((confirm,)))
        approved = isinstance(context.decisions.decisions.get("ok"), Approve)
        return f"paid {amount}" if approved else "not paid"

    @tool(name="pay")
    async def broken(amount: int, context: ToolContext) -> Any:
        """Pay, once a human confirmed."""
        raise AssertionError("the tool ran in a replay")

    async def both_legs(agent: ReactAgent, decision: Any = None) -> list[Any]:
        config = RunnableConfig(thread_id="t")
        first = await run(agent, "pay 5", config)
        second = await run(agent, Resume({"c1/ok": decision or Approve()}), config)
        return [first, second]

    def agent(model: Any, cassette: Cassette, tools: list[Any]) -> ReactAgent:
        return attrs.evolve(agent_on(model, cassette, tools=tools), saver=MemorySaver())

    path = tmp_path / "pause.json"
    ask = AssistantMessage("", [ToolCall("c1", "pay", '{"amount": 5}')])
    script = [OPENAI.reply(ask), OPENAI.reply("Paid.")]
    with OPENAI.serve(script) as server, Cassette(path, mode="record") as cassette:
        model = OPENAI.model(server, http_client=cassette.http_client)
        recorded = await both_legs(agent(model, cassette, [pay]))
    paused, finished = recorded[0][1], recorded[1][1]
    assert paused.interrupt.calls == (ToolCall("c1/ok", "confirm_payment", '{"amount": 5}'),)
    assert finished.text == "Paid." and finished.messages[2].responses[0].response_data == (
        "paid 5"
    )
    with Cassette(path, mode="replay") as cassette:
        replayed = await both_legs(agent(dead_model(cassette), cassette, [broken]))
    for (events, result), (events_then, result_then) in zip(replayed, recorded, strict=True):
        assert events == events_then
        assert result.status == result_then.status
        assert result.messages == result_then.messages
    assert replayed[0][1].interrupt == paused.interrupt
    with Cassette(path, mode="replay") as cassette, pytest.raises(CassetteMismatchError) as caught:
        await both_legs(agent(dead_model(cassette), cassette, [broken]), Reject("no"))
    assert caught.value.field == "$.decisions.ok.decision"
    assert (caught.value.recorded, caught.value.sent) == ("approve", "reject")


async def test_a_human_in_the_loop_pause_replays(tmp_path: Path) -> None:
    """A ``HumanInTheLoopHook`` pause comes before the tool runs: its two legs (paused,
    then resumed with ``Resume``) replay from the model traffic and the tool's recorded
    answer, with the same events and results, the tool not run."""

    @tool(name="weather")
    async def broken(city: str) -> str:
        """The weather in a city."""
        raise AssertionError("the tool ran in a replay")

    async def both_legs(model: Any, cassette: Cassette, tools: list[Any]) -> list[Any]:
        hook = HumanInTheLoopHook(["weather"])
        agent = attrs.evolve(
            agent_on(model, cassette, tools=tools), saver=MemorySaver(), hooks=[hook]
        )
        config = RunnableConfig(thread_id="t")
        first = await run(agent, "weather?", config)
        return [first, await run(agent, Resume({"call_0": Approve()}), config)]

    path = tmp_path / "approval.json"
    script = [OPENAI.reply(asks("Paris")), OPENAI.reply("Sunny.")]
    with OPENAI.serve(script) as server, Cassette(path, mode="record") as cassette:
        model = OPENAI.model(server, http_client=cassette.http_client)
        recorded = await both_legs(model, cassette, [weather])
    assert recorded[0][1].status == "interrupted" and recorded[1][1].text == "Sunny."
    with Cassette(path, mode="replay") as cassette:
        replayed = await both_legs(dead_model(cassette), cassette, [broken])
    for (events, result), (events_then, result_then) in zip(replayed, recorded, strict=True):
        assert events == events_then
        assert (result.status, result.messages) == (result_then.status, result_then.messages)


async def record_weather(path: Path, prompt: str = "weather?") -> None:
    script = [OPENAI.reply(asks("Paris")), OPENAI.reply("Sunny.")]
    with OPENAI.serve(script) as server, Cassette(path, mode="record") as cassette:
        await run(
            agent_on(OPENAI.model(server, http_client=cassette.http_client), cassette), prompt
        )


def dead_model(cassette: Cassette) -> OpenAIChatModel:
    """An OpenAI model on a URL where nothing answers, with another key than the
    recording's: only a replay can answer it."""
    return OpenAIChatModel(
        "test-model",
        base_url=DEAD_URL,
        api_key="sk-another-key",
        http_client=cassette.http_client,
        retry_backoff=0.01,
    )


async def test_a_changed_prompt_fails_naming_the_field(tmp_path: Path) -> None:
    """A replay whose request differs from the recording (another prompt) raises
    ``CassetteMismatchError`` out of the run, naming the first differing JSON path and
    both values."""
    path = tmp_path / "run.json"
    await record_weather(path)
    with Cassette(path, mode="replay") as cassette, pytest.raises(CassetteMismatchError) as caught:
        await agent_on(dead_model(cassette), cassette).invoke("weather in Rome?")
    error = caught.value
    assert error.field == "$.body.messages[0].content"
    assert (error.recorded, error.sent) == ("weather?", "weather in Rome?")
    assert "$.body.messages[0].content: recorded 'weather?', sent 'weather in Rome?'" in str(error)


async def test_a_mismatch_is_never_an_answer_of_the_model(tmp_path: Path) -> None:
    """With ``model_error_as_message=True`` (failed model calls become an assistant
    message), a mismatch still ends the run: it is the test's failure, not the model's."""
    path = tmp_path / "run.json"
    await record_weather(path)
    with Cassette(path, mode="replay") as cassette:
        agent = attrs.evolve(agent_on(dead_model(cassette), cassette), model_error_as_message=True)
        with pytest.raises(CassetteMismatchError):
            await agent.invoke("weather in Rome?")


async def test_a_changed_tool_schema_fails_naming_the_field(tmp_path: Path) -> None:
    """A tool whose parameter changed type sends another schema: the replay fails at
    that field of the request's tools."""
    path = tmp_path / "run.json"
    await record_weather(path)

    @tool(name="weather")
    async def by_number(city: int) -> str:
        """The weather in a city."""
        return "?"

    with Cassette(path, mode="replay") as cassette, pytest.raises(CassetteMismatchError) as caught:
        await agent_on(dead_model(cassette), cassette, tools=[by_number]).invoke("weather?")
    field = "$.body.tools[0].function.parameters.properties.city.type"
    assert caught.value.field == field
    assert f"{field}: recorded 'string', sent 'integer'" in str(caught.value)


async def test_a_changed_tool_call_fails_the_run_naming_the_argument(tmp_path: Path) -> None:
    """A tool call the recording does not hold is no error result for the model: the
    mismatch ends the run, naming the argument that differs."""
    path = tmp_path / "run.json"
    await record_weather(path)
    document = json.loads(path.read_text())
    for interaction in document["interactions"]:
        if interaction["kind"] == "tool":
            interaction["call"]["arguments"]["city"] = "Lima"
    path.write_text(json.dumps(document))
    with Cassette(path, mode="replay") as cassette, pytest.raises(CassetteMismatchError) as caught:
        await agent_on(dead_model(cassette), cassette).invoke("weather?")
    assert caught.value.field == "$.arguments.city"
    assert (caught.value.recorded, caught.value.sent) == ("Lima", "Paris")


async def test_a_replay_asking_more_than_was_recorded_fails(tmp_path: Path) -> None:
    """Sending the same request more often than it was recorded fails saying so."""
    path = tmp_path / "run.json"
    await record_weather(path)
    with Cassette(path, mode="replay") as cassette:
        agent = agent_on(dead_model(cassette), cassette)
        await agent.invoke("weather?")
        with pytest.raises(CassetteMismatchError, match="fewer times than the replay sends"):
            await agent.invoke("weather?")


async def test_identical_requests_replay_in_recorded_order(tmp_path: Path) -> None:
    """The same request sent twice, answered differently, replays its answers in the
    order they were recorded."""
    path = tmp_path / "twice.json"
    request = ModelRequest([UserMessage("hi")])
    script = [HTTPReply.completion("one"), HTTPReply.completion("two")]
    with serve_openai_compatible(script) as server, Cassette(path, mode="record") as cassette:
        model = OPENAI.model(server, http_client=cassette.http_client)
        recorded = [(await model.call(request)).message.text for _ in range(2)]
    with Cassette(path, mode="replay") as cassette:
        model = dead_model(cassette)
        replayed = [(await model.call(request)).message.text for _ in range(2)]
    assert recorded == replayed == ["one", "two"]


KEY = "sk-planted/4c2e+secret"
SPELLINGS = [KEY, json.dumps(KEY)[1:-1].replace("/", "\\/"), quote(KEY, safe=""), "4c2e+secret"]


async def test_no_key_reaches_the_cassette(tmp_path: Path) -> None:
    """A key planted in every request header (credentials and others), in the request
    body and URL, in the response's headers and body, and in a tool's arguments and
    answer is in the file in no spelling (as is, JSON-escaped, URL-encoded, the bearer
    token alone); the replay still matches (redacted the same way)."""
    path = tmp_path / "keys.json"
    echo = HTTPReply.from_json({"echo": KEY}, headers={"x-request-id": KEY, "x-other": KEY})
    headers = {
        "authorization": f"Bearer {KEY}",
        "x-api-key": KEY,
        "x-goog-api-key": KEY,
        "x-custom": KEY,
        "content-type": "application/json",
    }
    with serve_openai_compatible([echo]) as server, Cassette(path, mode="record") as cassette:
        url = f"{server.base_url}/chat/completions?key={quote(KEY)}"
        answer = await cassette.http_client.post(url, headers=headers, json={"prompt": KEY})
        assert answer.json() == {"echo": KEY}
        script = [OPENAI.reply(asks(KEY)), OPENAI.reply(f"It is {KEY}.")]
        with OPENAI.serve(script) as second:
            model = OPENAI.model(second, http_client=cassette.http_client)
            model = attrs.evolve(model, api_key=KEY)
            await agent_on(model, cassette).invoke(f"weather in {KEY}?")
    text = path.read_text(encoding="utf-8")
    assert not [s for s in SPELLINGS if s in text]
    assert "<redacted>" in text
    with Cassette(path, mode="replay") as cassette:
        replayed = await cassette.http_client.post(url, headers=headers, json={"prompt": KEY})
        assert replayed.json() == {"echo": "<redacted>"}
        assert "x-other" not in replayed.headers


async def test_listed_secrets_and_short_test_keys(tmp_path: Path) -> None:
    """A string listed in ``secrets=`` is blanked out wherever it appears; a test's short
    key (``"sk-x"``, under 8 characters) is not hunted for in bodies, where it would blank
    out ordinary text."""
    path = tmp_path / "listed.json"
    echo = HTTPReply.from_json({"echo": "hunter2-password and sk-x"})
    headers = {"authorization": "Bearer sk-x"}
    with (
        serve_openai_compatible([echo]) as server,
        Cassette(path, mode="record", secrets=["hunter2-password"]) as cassette,
    ):
        await cassette.http_client.post(
            f"{server.base_url}/chat/completions", headers=headers, json={"p": "hunter2-password"}
        )
    text = path.read_text(encoding="utf-8")
    assert "hunter2-password" not in text
    assert '"echo": "<redacted> and sk-x"' in text


async def test_a_connection_error_replays(tmp_path: Path) -> None:
    """A request that met a connection error (nothing listening) replays as the same
    error, without connecting."""
    path = tmp_path / "refused.json"
    request = ModelRequest([UserMessage("hi")])
    with Cassette(path, mode="record") as cassette:
        model = attrs.evolve(dead_model(cassette), max_retries=0)
        with pytest.raises(ModelError) as recorded:
            await model.call(request)
    with Cassette(path, mode="replay", transport=Unreachable()) as cassette:
        model = attrs.evolve(dead_model(cassette), max_retries=0)
        with pytest.raises(ModelError) as replayed:
            await model.call(request)
    assert str(replayed.value) == str(recorded.value)
    assert "ConnectError" in str(replayed.value)


class Unreachable(httpx.AsyncBaseTransport):
    """A transport that fails the test if anything is sent through it."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        raise AssertionError("a replay sent a request")


async def test_the_modes(tmp_path: Path) -> None:
    """``replay`` without a file is a ``CassetteError``; ``once`` records when there is
    no file and replays when there is one (with no server); ``record`` sends again and
    replaces the file."""
    path = tmp_path / "once.json"
    with pytest.raises(CassetteError, match="no cassette at"):
        Cassette(path, mode="replay").begin()
    script = [OPENAI.reply("one"), OPENAI.reply("two")]
    with OPENAI.serve(script) as server:
        with Cassette(path) as cassette:
            assert cassette.recording
            model = OPENAI.model(server, http_client=cassette.http_client)
            assert (await agent_on(model, cassette).invoke("hi")).text == "one"
        with Cassette(path) as cassette:
            assert not cassette.recording
            assert (await agent_on(dead_model(cassette), cassette).invoke("hi")).text == "one"
        with Cassette(path, mode="record") as cassette:
            model = OPENAI.model(server, http_client=cassette.http_client)
            assert (await agent_on(model, cassette).invoke("hi")).text == "two"
    with Cassette(path, mode="replay") as cassette:
        assert (await agent_on(dead_model(cassette), cassette).invoke("hi")).text == "two"


async def read_stream(model: Any, request: ModelRequest, into: list[ModelChunk]) -> None:
    """The chunks of ``model``'s streamed answer to ``request``, into ``into``."""
    async with model.stream(request) as chunks:
        async for chunk in chunks:
            into.append(chunk)


async def test_whole_answers_errors_and_retries_replay(tmp_path: Path) -> None:
    """A whole (non-streamed) answer is kept as JSON and parsed the same; a 429 and the
    retry after it replay in order; a stream cut by the server replays as the same cut."""
    path = tmp_path / "whole.json"
    script = [
        HTTPReply.error(429, "busy", headers={"retry-after": "0"}),
        HTTPReply.completion("whole"),
        SSEReply(SSEReply.of("cut short").events[:2], ending="cut"),
    ]
    request = ModelRequest([UserMessage("hi")])
    with serve_openai_compatible(script) as server, Cassette(path, mode="record") as cassette:
        model = OPENAI.model(server, http_client=cassette.http_client)
        first = await model.call(request)
        recorded_chunks: list[ModelChunk] = []
        with pytest.raises(ModelStreamError) as recorded_cut:
            await read_stream(model, request, recorded_chunks)
    document = json.loads(path.read_text())
    assert [i["response"]["status"] for i in document["interactions"]] == [429, 200, 200]
    assert document["interactions"][1]["response"]["body"]["object"] == "chat.completion"
    with Cassette(path, mode="replay") as cassette:
        model = dead_model(cassette)
        assert await model.call(request) == first
        replayed_chunks: list[ModelChunk] = []
        with pytest.raises(ModelStreamError) as replayed_cut:
            await read_stream(model, request, replayed_chunks)
    # The same error, but for the host (the recording's server, the replay's dead URL).
    tail = "/v1/chat/completions: "
    assert str(replayed_cut.value).split(tail)[1] == str(recorded_cut.value).split(tail)[1]
    assert replayed_chunks == recorded_chunks and recorded_chunks


def test_bad_options_are_named() -> None:
    """Wrong option values raise errors naming the parameter."""
    with pytest.raises(ValueError, match=r"Cassette\.mode must be one of 'record', 'replay'"):
        Cassette("x.json", mode="sometimes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Cassette\.path"):
        Cassette(3)  # type: ignore[arg-type]


PLUGGED_TEST = """
import pytest
from reactcore import ReactAgent, OpenAIChatModel
from reactcore.testing import serve_openai_compatible, SSEReply

pytestmark = pytest.mark.anyio

@pytest.fixture
def anyio_backend():
    return "asyncio"

async def run(cassette, server_url):
    model = OpenAIChatModel("m", base_url=server_url, api_key="sk-x",
                            http_client=cassette.http_client)
    return (await ReactAgent("a", model, interceptors=[cassette]).invoke("hi")).text

async def test_default(cassette):
    if cassette.recording:
        with serve_openai_compatible([SSEReply.of("recorded")]) as server:
            assert await run(cassette, server.base_url) == "recorded"
    else:
        assert await run(cassette, "http://127.0.0.1:9/v1") == "recorded"

@pytest.mark.cassette("named/one.json", mode="replay")
async def test_marked(cassette):
    assert await run(cassette, "http://127.0.0.1:9/v1") == "recorded"

async def test_failing(cassette):
    with serve_openai_compatible([SSEReply.of("x")]) as server:
        await run(cassette, server.base_url)
    assert False
"""


def test_the_pytest_fixture_and_marker(pytester: pytest.Pytester) -> None:
    """The ``cassette`` fixture records into ``cassettes/<module>/<test>.json`` when the
    test passes (a failing test leaves no file), replays it on the next run (and under
    ``--cassette-mode=replay``); a marker names another file and mode."""
    plugin = ["-p", "reactcore.pytest_plugin"]  # a no-op where the entry point loaded it
    pytester.makepyfile(test_plugged=PLUGGED_TEST)
    folder = pytester.path / "cassettes" / "test_plugged"
    (pytester.path / "named").mkdir()
    first = pytester.runpytest_inprocess(*plugin, "-p", "anyio", "-k", "default or failing")
    first.assert_outcomes(passed=1, failed=1)
    assert [p.name for p in folder.iterdir()] == ["test_default.json"]
    (folder / "test_default.json").rename(pytester.path / "named" / "one.json")
    second = pytester.runpytest_inprocess(*plugin, "-p", "anyio", "-k", "marked")
    second.assert_outcomes(passed=1)
    (pytester.path / "named" / "one.json").rename(folder / "test_default.json")
    third = pytester.runpytest_inprocess(
        *plugin, "-p", "anyio", "--cassette-mode=replay", "-k", "default"
    )
    third.assert_outcomes(passed=1)
    fourth = pytester.runpytest_inprocess(
        *plugin, "-p", "anyio", "--cassette-mode=replay", "-k", "failing"
    )
    fourth.assert_outcomes(errors=1)
    fourth.stdout.fnmatch_lines(["*CassetteError: no cassette at*"])

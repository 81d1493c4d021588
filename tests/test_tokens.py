"""Token accounting: the approximate counter's documented formula, the correction of
``count_tokens`` by the provider's reported usage (scripted and over a real loopback
OpenAI-compatible server), and ``TiktokenCounter``'s exact counts against values OpenAI
published, with its errors for what cannot be loaded.

Async tests run on asyncio and trio."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from reactcore import (
    ApproximateTokenCounter,
    AssistantMessage,
    ImagePart,
    ModelHandler,
    ModelRequest,
    ModelResponse,
    OpenAIChatModel,
    ReactAgent,
    SystemMessage,
    TextPart,
    TiktokenCounter,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    ToolSpec,
    Usage,
    UserMessage,
    count_tokens,
    tool,
)
from reactcore.testing import ScriptedChatModel, SSEReply, serve_openai_compatible
from tests.helpers import asks

pytestmark = pytest.mark.anyio

APPROX = ApproximateTokenCounter()


def raw(request: ModelRequest) -> int:
    """The default counter's figure for ``request``, uncorrected (no run context)."""
    return count_tokens(attrs.evolve(request, context={}))


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"{key}: " + "value " * 50


@attrs.define
class Probe:
    """A model interceptor recording what ``count_tokens`` says of each request."""

    seen: list[tuple[int, int]] = attrs.field(factory=list)

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        self.seen.append((count_tokens(request), raw(request)))
        return await handler(request)


# --- the approximate counter ------------------------------------------------------------


def test_the_approximate_counter_is_exactly_its_documented_formula() -> None:
    """ceil(C / 4) + 4 per entry + 1000 per media part + 3: C counts roles, texts, call
    ids, names and arguments, results and text parts, non-ASCII text in UTF-8 bytes, and
    each tool's name, description and compact JSON Schema."""
    messages = [
        SystemMessage("You are terse."),  # "system" 6 + 14
        UserMessage("héllo", parts=[TextPart("abc"), ImagePart("https://x.test/a.png")]),
        AssistantMessage("", [ToolCall("c1", "get", '{"a":1}')]),  # 9 + 2 + 3 + 7
        ToolResponseMessage([ToolResponse("c1", "get", "42")]),  # 4 + 2 + 2
    ]
    spec = ToolSpec("get", "Get it.", {"type": "object"})  # 3 + 7 + 17
    chars = (6 + 14) + (4 + 6 + 3) + (9 + 2 + 3 + 7) + (4 + 2 + 2) + (3 + 7 + 17)
    expected = math.ceil(chars / 4) + 5 * 4 + 1 * 1000 + 3
    assert APPROX.count(messages, [spec]) == expected
    assert APPROX.count([]) == 3
    custom = ApproximateTokenCounter(
        chars_per_token=2, tokens_per_message=0, media_tokens=0, tokens_per_request=0
    )
    assert custom.count([UserMessage("abcd")]) == math.ceil((4 + 4) / 2)


def test_each_tool_result_is_an_entry_and_an_image_a_fixed_cost() -> None:
    """Two results in one message cost two entries; an image costs ``media_tokens``
    whatever its data's size."""
    one = ToolResponseMessage([ToolResponse("a", "t", "x")])
    two = ToolResponseMessage([ToolResponse("a", "t", "x"), ToolResponse("b", "t", "x")])
    assert APPROX.count([two]) - APPROX.count([one]) == 4 + 1  # an entry, and "tool"+"b"+"x"
    small = UserMessage("", parts=[ImagePart.from_bytes(b"\x89PNG\r\n\x1a\n" * 2, "image/png")])
    large = UserMessage("", parts=[ImagePart.from_bytes(b"\x89PNG\r\n\x1a\n" * 9999, "image/png")])
    assert APPROX.count([small]) == APPROX.count([large])


async def test_count_tokens_is_corrected_by_the_last_reported_usage() -> None:
    """The first request of a run is counted as estimated; each later one times reported /
    estimated of the run's last call that reported usage (a call reporting none keeps the
    last factor); a new run starts uncorrected."""
    reports = iter([3.0, None, 2.0])

    def usage(request: ModelRequest, message: AssistantMessage) -> Usage:
        factor = next(reports, None)
        return Usage() if factor is None else Usage(round(raw(request) * factor), 1)

    script = [asks(("c1", "lookup", {"key": "a"})), asks(("c2", "lookup", {"key": "b"}))]
    model = ScriptedChatModel([*script, asks(("c3", "lookup", {"key": "c"})), "done", "again"])
    model.usage = usage
    probe = Probe()
    agent = ReactAgent("a", model, tools=[lookup], interceptors=[probe])
    await agent.invoke("go")
    (c0, r0), (c1, r1), (c2, r2), (c3, r3) = probe.seen
    assert c0 == r0  # nothing reported yet
    assert c1 == round(r1 * round(r0 * 3.0) / r0)  # call 0 reported 3x
    assert c2 == round(r2 * round(r0 * 3.0) / r0)  # call 1 reported nothing: still call 0's
    assert c3 == round(r3 * round(r2 * 2.0) / r2)  # call 2 reported 2x
    assert r0 < r1 < r2 < r3
    await agent.invoke("again")
    assert probe.seen[-1][0] == probe.seen[-1][1]


async def test_the_agents_counter_is_the_one_count_tokens_uses() -> None:
    """``ReactAgent(token_counter=…)`` is what ``count_tokens`` counts with in a run; a
    counter passed to it wins."""
    fine = ApproximateTokenCounter(chars_per_token=1)
    probe, seen = Probe(), []

    class Explicit:
        async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
            seen.append(count_tokens(request, APPROX))
            return await handler(request)

    model = ScriptedChatModel(["hi"])
    agent = ReactAgent("a", model, interceptors=[probe, Explicit()], token_counter=fine)
    await agent.invoke("hello there")
    sent = list(model.requests[0].messages)
    assert probe.seen[0][0] == fine.count(sent) != APPROX.count(sent)
    assert seen == [APPROX.count(sent)]


async def test_reported_usage_from_a_real_server_corrects_the_next_estimate() -> None:
    """Over HTTP: the usage an OpenAI-compatible server streams with its answer is what the
    next request's count is corrected by."""
    probe = Probe()
    replies = [
        SSEReply.of(asks(("c1", "lookup", {"key": "k"})), usage=Usage(1000, 5, 1005)),
        SSEReply.of("done", usage=Usage(1200, 2, 1202)),
    ]
    with serve_openai_compatible(replies) as server:
        model = OpenAIChatModel("test-model", base_url=server.base_url, api_key="sk-test")
        agent = ReactAgent("a", model, tools=[lookup], interceptors=[probe])
        result = await agent.invoke("look k up")
    assert result.text == "done"
    (c0, r0), (c1, r1) = probe.seen
    assert c0 == r0
    assert c1 == round(r1 * 1000 / r0)


# --- tiktoken ---------------------------------------------------------------------------

CL100K = TiktokenCounter.for_encoding("cl100k_base")

# OpenAI's cookbook ("How to count tokens with tiktoken"): the API reported 129 prompt
# tokens for these messages with gpt-4-0613 (cl100k_base). Four carry a ``name``, which
# costs 1 token more than the name's own tokens.
COOKBOOK = [
    (
        None,
        "You are a helpful, pattern-following assistant that translates corporate "
        "jargon into plain English.",
    ),
    ("example_user", "New synergies will help drive top-line growth."),
    ("example_assistant", "Things working well together will increase revenue."),
    (
        "example_user",
        "Let's circle back when we have more bandwidth to touch base on "
        "opportunities for increased leverage.",
    ),
    ("example_assistant", "Let's talk later when we're less busy about how to do better."),
]
QUESTION = "This late pivot means we don't have time to boil the ocean for the client deliverable."


def test_tiktoken_counts_the_tokens_openai_publishes() -> None:
    """tiktoken's own examples ("tiktoken is great!": 6 tokens, "hello world": 2) and the
    cookbook's chat request: the counter plus what the names cost gives the 129 prompt
    tokens the API reported."""
    assert CL100K.tokens("tiktoken is great!") == 6
    assert CL100K.tokens("hello world") == 2
    messages = [SystemMessage(text) for _, text in COOKBOOK] + [UserMessage(QUESTION)]
    names = sum(1 + CL100K.tokens(name) for name, _ in COOKBOOK if name)
    assert CL100K.count(messages) + names == 129
    assert CL100K.count([]) == 3
    assert CL100K.tokens("<|endoftext|>") > 1  # a special token's text is plain text here


def test_tiktoken_counts_tools_by_the_published_estimate() -> None:
    """A tool costs 7 + its ``name:description`` (final period dropped) + 3 for its
    parameters + per parameter 3 + ``name:type:description``, an enum -3 + 3 and its
    tokens per value; the block 12. Calls and results are framed like messages."""
    spec = ToolSpec(
        "get_weather",
        "Get the weather.",
        {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city."},
                "unit": {"type": "string", "enum": ["c", "f"]},
            },
        },
    )
    t = CL100K.tokens
    expected = (
        12
        + 7
        + t("get_weather:Get the weather")
        + 3
        + (3 + t("city:string:The city"))
        + (3 + (-3 + 3 + t("c") + 3 + t("f")) + t("unit:string:"))
    )
    assert CL100K.count([], [spec]) == 3 + expected
    answer = AssistantMessage("", [ToolCall("c1", "get_weather", '{"city":"Oslo"}')])
    result = ToolResponseMessage([ToolResponse("c1", "get_weather", "4 C")])
    framed = 3 + t("assistant") + t("c1") + t("get_weather") + t('{"city":"Oslo"}')
    framed += 3 + t("tool") + t("c1") + t("4 C")
    assert CL100K.count([answer, result]) == 3 + framed


def test_tiktoken_errors_say_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unknown model or encoding is a ValueError naming it. An encoding that must be
    downloaded and cannot be (an empty cache, and the download sent to a closed port on
    loopback through HTTPS_PROXY) is a RuntimeError naming it and the cache; cl100k_base,
    with its offline copy installed, loads all the same."""
    with pytest.raises(ValueError, match="does not know the model 'claude-3'"):
        TiktokenCounter.for_model("claude-3")
    with pytest.raises(ValueError, match="no encoding 'nope'"):
        TiktokenCounter.for_encoding("nope")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    for name in ("NO_PROXY", "no_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    with pytest.raises(RuntimeError, match="'o200k_base' cannot be loaded") as info:
        TiktokenCounter.for_model("gpt-4o")
    assert "TIKTOKEN_CACHE_DIR" in str(info.value)
    assert TiktokenCounter.for_model("gpt-4").tokens("hello world") == 2


def test_without_tiktoken_the_counter_asks_for_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """With tiktoken not importable, making a counter is an ImportError naming the extra."""
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(ImportError, match=r"reactcore\[tiktoken\]"):
        TiktokenCounter.for_encoding("cl100k_base")


async def test_an_exact_counter_is_corrected_by_nothing_when_the_provider_agrees() -> None:
    """With ``TiktokenCounter`` as the agent's counter and a provider reporting exactly its
    count, ``count_tokens`` is the exact count of each request."""
    probe = Probe()

    def usage(request: ModelRequest, message: AssistantMessage) -> Usage:
        messages = [m for m in (request.system_message, *request.messages) if m is not None]
        return Usage(CL100K.count(messages, request.visible_tool_specs()), 1)

    model = ScriptedChatModel([asks(("c", "lookup", {"key": "k"})), "done"], usage=usage)
    agent = ReactAgent(
        "a",
        model,
        tools=[lookup],
        system_prompt="Be brief.",
        interceptors=[probe],
        token_counter=CL100K,
    )
    await agent.invoke("look k up")
    second = model.requests[1]
    assert probe.seen[1][0] == CL100K.count(
        [second.system_message, *second.messages], second.visible_tool_specs()
    )

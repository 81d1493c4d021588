"""Token accounting: the approximate counter's documented formula, the correction of
``count_tokens`` by the provider's reported usage — a fixed part and a factor, fitted
(scripted, and over the loopback server of each provider's wire), and
``TiktokenCounter``'s exact counts against values OpenAI published, with its errors for
what cannot be loaded.

Async tests run on asyncio and trio."""

from __future__ import annotations

import json
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
    ReactAgent,
    SummarizationHook,
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
from reactcore._tokens import FACTOR_RANGE, Correction
from reactcore.testing import ScriptedChatModel, ServerReply
from tests.helpers import asks
from tests.providers import PROVIDERS, Provider

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


@pytest.mark.parametrize(
    ("pairs", "fixed", "factor"),
    [
        ([], 0, 1),
        ([(100, 600)], 500, 1),  # one call, the provider above: a fixed part
        ([(1000, 500)], 0, 0.5),  # one call, the provider below: a factor
        ([(100, 10)], 0, 0.25),  # ... kept within FACTOR_RANGE
        ([(1000, 1000), (1010, 5000)], 1995, 1),  # nearly one size: as one call
        ([(100, 2200), (1100, 4200), (600, 3200)], 2000, 2),  # a line: found exactly
        ([(1000, 500), (3000, 2500)], 0, 0.8),  # a negative fixed part: through the origin
        ([(1000, 1000), (2000, 100_000)], 44_500, 4),  # too steep: the factor capped
    ],
)
def test_the_correction_fits_a_fixed_part_and_a_factor(
    pairs: list[tuple[int, int]], fixed: float, factor: float
) -> None:
    """``Correction.fit`` of (count, reported) pairs: least squares for fixed + factor ×
    count, the factor within ``FACTOR_RANGE``, the fixed part never negative; from one
    size of request, a surplus is a fixed part and a shortfall a factor."""
    assert FACTOR_RANGE == (0.25, 4.0)
    found = Correction.fit(pairs)
    assert (found.fixed, found.factor) == (pytest.approx(fixed), pytest.approx(factor))


async def test_count_tokens_is_corrected_by_the_runs_reported_usage() -> None:
    """A provider reporting 2000 + 2 × the count: the first request of a run is counted
    as estimated; after one reported call the difference is a fixed part (count + 2000 +
    count₀); a call reporting nothing changes nothing; after two the fit is the provider's
    own line, exactly; a new run starts uncorrected."""
    reports = iter([True, False, True])

    def usage(request: ModelRequest, message: AssistantMessage) -> Usage:
        return Usage(2000 + 2 * raw(request), 1) if next(reports, False) else Usage()

    script = [asks(("c1", "lookup", {"key": "a"})), asks(("c2", "lookup", {"key": "b"}))]
    model = ScriptedChatModel([*script, asks(("c3", "lookup", {"key": "c"})), "done", "again"])
    model.usage = usage
    probe = Probe()
    agent = ReactAgent("a", model, tools=[lookup], interceptors=[probe])
    await agent.invoke("go")
    (c0, r0), (c1, r1), (c2, r2), (c3, r3) = probe.seen
    assert c0 == r0  # nothing reported yet
    assert c1 == r1 + 2000 + r0  # call 0 reported 2000 + 2 r0: its surplus, fixed
    assert c2 == r2 + 2000 + r0  # call 1 reported nothing: the same
    assert c3 == 2000 + 2 * r3  # calls 0 and 2: the line itself
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


TOOL_PROMPT = 3000  # the provider's own prompt for tool use, which no counter sees
PAGE = "value " * 1500  # 9,000 characters: JSON carries them as they are


@tool
def page(key: str) -> str:
    """Read a page."""
    return f"{key}: {PAGE}"


@pytest.mark.parametrize("provider", PROVIDERS, ids=lambda p: p.name)
async def test_a_fixed_provider_overhead_is_not_a_factor(provider: Provider) -> None:
    """Over each provider's wire (a loopback server reporting, as prompt tokens, a tool-use
    prompt of its own plus a quarter of the request body's characters): after a small
    first request, the estimates of the two larger ones stay within 15% of what the
    server then reports; and a ``SummarizationHook`` whose threshold no request passed
    does not summarise."""
    reported: list[int] = []
    answers = iter([asks(("c1", "page", {"key": "a"})), asks(("c2", "page", {"key": "b"})), "done"])

    def reply(body: Any) -> ServerReply:
        reported.append(TOOL_PROMPT + len(json.dumps(body)) // 4)
        # Each driver's reply type builds a streamed answer with the usage given.
        return type(provider.reply("")).of(next(answers), usage=Usage(reported[-1], 5))

    probe = Probe()
    summariser = ScriptedChatModel(["a summary"])
    hook = SummarizationHook(trigger_tokens=10_000, keep_last=1, model=summariser)
    with provider.serve(reply) as server:
        agent = ReactAgent(
            "a", provider.model(server), tools=[page], interceptors=[probe], hooks=[hook]
        )
        result = await agent.invoke("read pages a and b")
    assert result.text == "done"
    assert len(reported) == 3 and max(reported) < 10_000
    estimates = [estimate for estimate, _ in probe.seen]
    for estimate, actual in zip(estimates[1:], reported[1:], strict=True):
        assert abs(estimate - actual) <= 0.15 * actual, (estimates, reported)
    assert summariser.requests == []


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

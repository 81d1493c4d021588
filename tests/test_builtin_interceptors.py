"""Built-in interceptors (ModelRetryInterceptor, ToolRetryInterceptor,
ModelFallbackInterceptor, ToolSelectionInterceptor) and the shared ``Backoff``, end to end
through ``ReactAgent.invoke`` with ``ScriptedChatModel``s, and directly where simpler.

Every async test runs on asyncio and trio; retries use millisecond delays.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import pytest
from structlog.testing import capture_logs

from reactcore import (
    AssistantMessage,
    ModelFallbackInterceptor,
    ModelHTTPError,
    ModelRequest,
    ModelRetryInterceptor,
    ModelTimeoutError,
    ReactAgent,
    Tool,
    ToolResponse,
    ToolResponseMessage,
    ToolRetryInterceptor,
    ToolSelectionInterceptor,
    UserMessage,
    tool,
)
from reactcore._backoff import Backoff
from reactcore.interceptors import is_retryable_model_error
from reactcore.models.openai import OpenAIChatModel
from reactcore.models.scripted import ScriptedChatModel
from reactcore.testing import HTTPReply, ServerReply, SSEReply, serve_openai_compatible
from tests.helpers import call

pytestmark = pytest.mark.anyio

FAST = {"initial_delay": 0.001}


def http_error(status: int) -> ModelHTTPError:
    return ModelHTTPError(f"HTTP {status}", status_code=status)


def seen_responses(request: ModelRequest) -> list[ToolResponse]:
    """The tool responses a model request shows the model."""
    return [r for m in request.messages if isinstance(m, ToolResponseMessage) for r in m.responses]


def failing_tool(
    name: str, calls: list[int], failures: Sequence[BaseException | None], **kwargs: Any
) -> Tool:
    """A tool raising ``failures[n]`` on its n-th call (``None``: succeed; the last item
    repeats); every call is counted in ``calls``."""

    @tool(name=name, **kwargs)
    async def run() -> str:
        calls.append(1)
        failure = failures[min(len(calls), len(failures)) - 1]
        if failure is not None:
            raise failure
        return "ok"

    return run


async def tool_turn(*interceptors: Any, tools: Sequence[Tool], name: str) -> ToolResponse:
    """Run one model turn calling ``name``, then an answer; the response the model saw.

    The interceptors bring no tools of their own: the model sees exactly ``tools``.
    """
    model = ScriptedChatModel([AssistantMessage("", [call("c1", name)]), "done"])
    agent = ReactAgent("a", model, tools=tools, interceptors=list(interceptors))
    result = await agent.invoke("go")
    assert model.requests[0].tools == tuple(t.name for t in tools)
    assert result.text == "done"
    (response,) = seen_responses(model.requests[1])
    return response


def three_tools() -> list[Tool]:
    """Tools a, b and c, each described as "the <name> tool"."""

    def make(name: str) -> Tool:
        async def run() -> str:
            return name

        return Tool.from_function(run, name=name, description=f"the {name} tool")

    return [make("a"), make("b"), make("c")]


# --- Backoff ------------------------------------------------------------------------------


def test_backoff_without_jitter_grows_by_the_factor_up_to_max_delay() -> None:
    """With jitter=0 the n-th retry waits initial · factor^(n-1), capped at max_delay."""
    backoff = Backoff(initial_delay=1.0, backoff_factor=2.0, max_delay=10.0, jitter=0)
    assert [backoff.delay(n) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_backoff_jitter_stays_within_its_bounds() -> None:
    """With jitter j every delay lies in [base·(1-j), base·(1+j)] around the capped base,
    and delays do vary (statistical: 200 draws, never all on one side of the base)."""
    backoff = Backoff(initial_delay=1.0, backoff_factor=3.0, max_delay=5.0, jitter=0.25)
    for retry, base in [(1, 1.0), (2, 3.0), (3, 5.0), (4, 5.0)]:
        draws = [backoff.delay(retry) for _ in range(200)]
        assert all(base * 0.75 <= d <= base * 1.25 for d in draws)
        assert min(draws) < base < max(draws)


def test_backoff_many_retries_stay_capped() -> None:
    """A retry count far past the cap gives max_delay, not an OverflowError."""
    backoff = Backoff(initial_delay=1.0, backoff_factor=2.0, max_delay=5.0, jitter=0)
    assert backoff.delay(5000) == 5.0


BAD_BACKOFF = [
    ({"initial_delay": -1.0}, "negative"),
    ({"max_delay": -1.0}, "negative"),
    ({"backoff_factor": 0.5}, "backoff_factor"),
    ({"jitter": 1.0}, "jitter"),
    ({"jitter": -0.1}, "jitter"),
]


@pytest.mark.parametrize(("settings", "match"), BAD_BACKOFF)
def test_backoff_bad_settings_are_value_errors(settings: dict[str, float], match: str) -> None:
    """Negative delays, a shrinking factor, or jitter outside [0, 1) → ValueError."""
    with pytest.raises(ValueError, match=match):
        Backoff(**settings)


@pytest.mark.parametrize("interceptor", [ModelRetryInterceptor, ToolRetryInterceptor])
@pytest.mark.parametrize(
    ("settings", "match"), [({"max_attempts": 0}, "max_attempts"), *BAD_BACKOFF]
)
def test_retry_bad_settings_are_value_errors_at_construction(
    interceptor: Any, settings: dict[str, float], match: str
) -> None:
    """A retry interceptor with bad settings is refused when built, not at its first call."""
    with pytest.raises(ValueError, match=match):
        interceptor(**settings)


# --- ModelRetryInterceptor ----------------------------------------------------------------


def test_retryable_model_errors() -> None:
    """Timeouts, 408/409/429 and 5xx are retried; other statuses and other errors are not."""
    assert all(is_retryable_model_error(http_error(s)) for s in (408, 409, 429, 500, 503))
    assert not any(is_retryable_model_error(http_error(s)) for s in (400, 401, 404, 422))
    assert is_retryable_model_error(ModelTimeoutError("slow"))
    assert not is_retryable_model_error(ValueError("bug"))


async def test_model_retry_succeeds_on_the_third_attempt() -> None:
    """A 503 then a timeout then an answer: the run answers, after 3 identical requests."""
    model = ScriptedChatModel([http_error(503), ModelTimeoutError("slow"), "done"])
    agent = ReactAgent("a", model, interceptors=[ModelRetryInterceptor(**FAST)])
    result = await agent.invoke("go")
    assert result.text == "done"
    assert len(model.requests) == 3
    assert result.model_calls == 1
    assert model.requests[0] == model.requests[1] == model.requests[2]


async def test_model_retry_does_not_retry_a_client_error() -> None:
    """A 400 is raised at once: one request, the error itself."""
    error = http_error(400)
    model = ScriptedChatModel([error, "unused"])
    agent = ReactAgent("a", model, interceptors=[ModelRetryInterceptor(**FAST)])
    with pytest.raises(ModelHTTPError) as info:
        await agent.invoke("go")
    assert info.value is error
    assert len(model.requests) == 1


async def test_model_retry_raises_the_last_error_when_attempts_run_out() -> None:
    """max_attempts=2 and two failures: the second (last) error is raised, after 2 requests."""
    last = http_error(502)
    model = ScriptedChatModel([http_error(503), last, "unused"])
    agent = ReactAgent("a", model, interceptors=[ModelRetryInterceptor(max_attempts=2, **FAST)])
    with pytest.raises(ModelHTTPError) as info:
        await agent.invoke("go")
    assert info.value is last
    assert len(model.requests) == 2


async def test_model_retry_waits_longer_each_time() -> None:
    """Without jitter the waits between attempts are initial · factor^(n-1), capped."""
    model = ScriptedChatModel([http_error(503)] * 4 + ["done"])
    retry = ModelRetryInterceptor(
        max_attempts=5, initial_delay=0.001, backoff_factor=2, max_delay=0.005, jitter=0
    )
    agent = ReactAgent("a", model, interceptors=[retry])
    with capture_logs() as logs:
        result = await agent.invoke("go")
    assert result.text == "done"
    retries = [e for e in logs if e["event"] == "model_call_retry"]
    assert [e["delay_s"] for e in retries] == [0.001, 0.002, 0.004, 0.005]
    assert [e["attempt"] for e in retries] == [1, 2, 3, 4]


async def test_model_retry_custom_predicate() -> None:
    """``retry_on`` decides what is retried: here a ValueError is."""
    model = ScriptedChatModel([ValueError("flaky"), "done"])
    retry = ModelRetryInterceptor(retry_on=lambda e: isinstance(e, ValueError), **FAST)
    result = await ReactAgent("a", model, interceptors=[retry]).invoke("go")
    assert result.text == "done"
    assert len(model.requests) == 2


# --- ToolRetryInterceptor -----------------------------------------------------------------


async def test_tool_retry_returns_the_success_after_two_failures() -> None:
    """A tool failing twice then succeeding: the model sees the success; 3 calls made."""
    calls: list[int] = []
    flaky = failing_tool("flaky", calls, [ValueError("1"), ValueError("2"), None])
    response = await tool_turn(ToolRetryInterceptor(**FAST), tools=[flaky], name="flaky")
    assert response == ToolResponse("c1", "flaky", "ok")
    assert len(calls) == 3


async def test_tool_retry_gives_up_after_max_attempts() -> None:
    """A tool that always fails: 3 calls, then the error response 'Tool call failed after
    3 attempts: ValueError: …'."""
    calls: list[int] = []
    broken = failing_tool("broken", calls, [ValueError("boom")])
    response = await tool_turn(ToolRetryInterceptor(**FAST), tools=[broken], name="broken")
    assert response.is_error
    assert response.response_data == "Tool call failed after 3 attempts: ValueError: boom"
    assert len(calls) == 3


async def test_tool_retry_only_for_the_listed_tools() -> None:
    """``tools=`` limits retries to those names: another tool fails once and gets the
    normal error processor text."""
    calls: list[int] = []
    broken = failing_tool("broken", calls, [ValueError("boom")])
    retry = ToolRetryInterceptor(tools=["other"], **FAST)
    response = await tool_turn(retry, tools=[broken], name="broken")
    assert response.is_error
    assert response.response_data == "Error: ValueError: boom (tool 'broken')"
    assert len(calls) == 1


async def test_tool_retry_only_for_the_listed_exception_types() -> None:
    """``retry_on`` limits retries to those types: a KeyError is retried, a ValueError
    goes straight to the normal error processor text."""
    key_calls: list[int] = []
    keyed = failing_tool("keyed", key_calls, [KeyError("k"), None])
    retry = ToolRetryInterceptor(retry_on=(KeyError,), **FAST)
    assert (await tool_turn(retry, tools=[keyed], name="keyed")).response_data == "ok"
    assert len(key_calls) == 2

    value_calls: list[int] = []
    valued = failing_tool("valued", value_calls, [ValueError("v"), None])
    response = await tool_turn(retry, tools=[valued], name="valued")
    assert response.response_data == "Error: ValueError: v (tool 'valued')"
    assert len(value_calls) == 1


async def test_tool_retry_does_not_retry_bad_arguments() -> None:
    """Arguments that do not fit the tool are not retried (they would fail the same way):
    the tool never runs and the model gets the node's usual argument error."""
    calls: list[int] = []

    @tool
    async def typed(n: int) -> str:
        calls.append(n)
        return "ok"

    model = ScriptedChatModel([AssistantMessage("", [call("c1", "typed", n="x")]), "done"])
    agent = ReactAgent("a", model, tools=[typed], interceptors=[ToolRetryInterceptor(**FAST)])
    await agent.invoke("go")
    (response,) = seen_responses(model.requests[1])
    assert response.is_error
    assert response.response_data.startswith("Error: invalid arguments for tool 'typed'")
    assert calls == []


async def test_tool_retry_happens_inside_the_call_timeout() -> None:
    """Retries count against the call's timeout: a tool failing fast with a long backoff is
    cut off by its timeout, with the timeout response."""
    calls: list[int] = []
    broken = failing_tool("broken", calls, [ValueError("boom")], timeout=0.05)
    retry = ToolRetryInterceptor(initial_delay=30.0, jitter=0)
    response = await tool_turn(retry, tools=[broken], name="broken")
    assert response.is_error
    assert "timed out" in response.response_data
    assert len(calls) == 1


# --- ModelFallbackInterceptor -------------------------------------------------------------


async def test_fallback_answers_when_the_primary_fails() -> None:
    """A 500 from the primary: the fallback's answer is used, for the same messages."""
    primary = ScriptedChatModel([http_error(500)])
    fallback = ScriptedChatModel(["from fallback"])
    agent = ReactAgent("a", primary, interceptors=[ModelFallbackInterceptor([fallback])])
    result = await agent.invoke("go")
    assert result.text == "from fallback"
    assert len(fallback.requests) == 1
    assert fallback.requests[0].messages == primary.requests[0].messages
    assert fallback.requests[0].messages == (UserMessage("go"),)


async def test_fallback_tries_each_model_and_raises_the_last_error() -> None:
    """Every model failing: each is asked once, in order, and the last error is raised."""
    last = ModelTimeoutError("slow")
    primary = ScriptedChatModel([http_error(500)])
    first, second = ScriptedChatModel([http_error(503)]), ScriptedChatModel([last])
    agent = ReactAgent("a", primary, interceptors=[ModelFallbackInterceptor([first, second])])
    with pytest.raises(ModelTimeoutError) as info:
        await agent.invoke("go")
    assert info.value is last
    assert [len(m.requests) for m in (primary, first, second)] == [1, 1, 1]


async def test_fallback_does_not_catch_non_model_errors() -> None:
    """A ValueError from the primary is a bug, not an outage: raised, no fallback asked."""
    primary = ScriptedChatModel([ValueError("bug")])
    fallback = ScriptedChatModel(["unused"])
    agent = ReactAgent("a", primary, interceptors=[ModelFallbackInterceptor([fallback])])
    with pytest.raises(ValueError, match="bug"):
        await agent.invoke("go")
    assert fallback.requests == []


async def test_fallback_after_retries_of_the_primary() -> None:
    """Fallback outside retry: the primary is retried to the end, then the fallback answers."""
    primary = ScriptedChatModel([http_error(503), http_error(503)])
    fallback = ScriptedChatModel(["from fallback"])
    interceptors = [
        ModelFallbackInterceptor([fallback]),
        ModelRetryInterceptor(max_attempts=2, **FAST),
    ]
    result = await ReactAgent("a", primary, interceptors=interceptors).invoke("go")
    assert result.text == "from fallback"
    assert len(primary.requests) == 2


async def test_fallback_placed_inside_selection_gets_the_narrowed_request() -> None:
    """Interceptors outside the fallback apply to the fallback model too: it gets the
    request tool selection narrowed."""
    primary = ScriptedChatModel([http_error(500)])
    fallback = ScriptedChatModel(["from fallback"])
    interceptors = [
        ToolSelectionInterceptor(lambda r: ["a"]),
        ModelFallbackInterceptor([fallback]),
    ]
    agent = ReactAgent("x", primary, tools=three_tools(), interceptors=interceptors)
    assert (await agent.invoke("go")).text == "from fallback"
    assert fallback.requests[0].tools == ("a",)


async def test_fallback_models_go_through_the_inner_interceptors() -> None:
    """Interceptors inside the fallback (listed after it) apply to the fallback models as
    they do to the primary: here the fallback sees the narrowed tools."""
    primary = ScriptedChatModel([http_error(500)])
    fallback = ScriptedChatModel(["from fallback"])
    interceptors = [
        ModelFallbackInterceptor([fallback]),
        ToolSelectionInterceptor(lambda r: ["a"]),
    ]
    agent = ReactAgent("x", primary, tools=three_tools(), interceptors=interceptors)
    assert (await agent.invoke("go")).text == "from fallback"
    assert primary.requests[0].tools == ("a",)
    assert fallback.requests[0].tools == ("a",)


# --- ToolSelectionInterceptor -------------------------------------------------------------


async def selected(interceptor: ToolSelectionInterceptor) -> tuple[str, ...]:
    """The tool names the main model is shown when ``interceptor`` narrows a, b, c."""
    model = ScriptedChatModel(["done"])
    await ReactAgent("x", model, tools=three_tools(), interceptors=[interceptor]).invoke("go")
    return model.requests[0].tools


async def test_selection_by_callable_keeps_picks_and_always_include() -> None:
    """A selector returning ["b"]: the request names b, plus the always_include tools."""
    assert await selected(ToolSelectionInterceptor(lambda r: ["b"])) == ("b",)
    assert await selected(ToolSelectionInterceptor(lambda r: ["b"], always_include=["c"])) == (
        "b",
        "c",
    )


async def test_selection_by_async_callable() -> None:
    """An async selector is awaited; it sees the request with every tool."""
    seen: list[tuple[str, ...]] = []

    async def pick(request: ModelRequest) -> list[str]:
        seen.append(request.tools)
        return ["c"]

    assert await selected(ToolSelectionInterceptor(pick)) == ("c",)
    assert seen == [("a", "b", "c")]


async def test_selection_max_tools_caps_the_picks() -> None:
    """max_tools keeps that many picks, the selector's first ones, plus always_include;
    names of unknown tools are ignored."""
    selector = ToolSelectionInterceptor(lambda r: ["zzz", "c", "a", "b"], max_tools=1)
    assert await selected(selector) == ("c",)
    with_extra = ToolSelectionInterceptor(
        lambda r: ["c", "a", "b"], max_tools=2, always_include=["b"]
    )
    assert await selected(with_extra) == ("a", "b", "c")


async def test_selection_by_model() -> None:
    """A ChatModel selector is asked (with the tools and the last user message) and its
    JSON answer '["a"]' narrows the main model's tools to a."""
    selector = ScriptedChatModel(['["a"]'])
    assert await selected(ToolSelectionInterceptor(selector)) == ("a",)
    (request,) = selector.requests
    prompt = request.messages[0].text
    assert "- a: the a tool" in prompt
    assert "- c: the c tool" in prompt
    assert prompt.endswith("go")


@pytest.mark.parametrize(
    "answer", ["I would use a", "[" * 100_000 + "]" * 100_000, '["a", 1' + "0" * 5000 + "]"]
)
async def test_selection_by_model_with_unusable_answer_keeps_always_include(answer: str) -> None:
    """A selector model answering non-JSON, or JSON past the bounded parser's limits
    (100,000 nested arrays, a 5,000-digit number), narrows the tools to always_include
    only — never a RecursionError out of the model call."""
    selector = ScriptedChatModel([answer])
    assert await selected(ToolSelectionInterceptor(selector, always_include=["c"])) == ("c",)


def test_selection_negative_max_tools_is_a_value_error() -> None:
    """max_tools below 0 is refused at construction (it would silently drop the last pick)."""
    with pytest.raises(ValueError, match="max_tools"):
        ToolSelectionInterceptor(lambda r: [], max_tools=-1)


# --- ModelRetryInterceptor over HTTP: Retry-After -----------------------------------------


def _replies(first: HTTPReply, then: ServerReply) -> Callable[[Any], ServerReply]:
    """A script: ``first`` (an HTTP date in ``retry-after`` is made as the request
    arrives: 1.5 s ahead, at least 0.5 s once rounded to the second), then ``then``."""
    sent: list[int] = []

    def reply(_: Any) -> ServerReply:
        sent.append(1)
        if len(sent) > 1:
            return then
        if first.headers.get("retry-after") == "date":
            date = email.utils.formatdate(time.time() + 1.5, usegmt=True)
            return attrs.evolve(first, headers={"retry-after": date})
        return first

    return reply


@pytest.mark.parametrize(
    ("headers", "at_least"),
    [
        ({"retry-after": "0.3"}, 0.3),
        ({"retry-after-ms": "300"}, 0.3),
        ({"retry-after": "date"}, 0.45),
    ],
    ids=["seconds", "milliseconds", "http-date"],
)
async def test_model_retry_waits_at_least_what_retry_after_asks(
    headers: dict[str, str], at_least: float
) -> None:
    """A 429 with ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``, from a
    model that does not retry itself: the error carries the wait (``retry_after``) and the
    interceptor waits at least that long before the second request, far more than its own
    backoff of 1 ms."""
    script = _replies(HTTPReply.error(429, "slow down", headers=headers), SSEReply.of("done"))
    with serve_openai_compatible(script) as server:
        model = OpenAIChatModel("m", base_url=server.base_url, api_key="k", max_retries=0)
        agent = ReactAgent("a", model, interceptors=[ModelRetryInterceptor(jitter=0, **FAST)])
        async with model:
            result = await agent.invoke("go")
    assert result.text == "done"
    first, second = server.request_times
    assert second - first >= at_least


async def test_model_error_carries_retry_after_and_the_cap_fails_fast() -> None:
    """A 429 asking for 120 s, above the interceptor's ``retry_after_cap`` of 60 s: the
    error (``retry_after == 120``) is raised at once, after one request."""
    script = [HTTPReply.error(429, "later", headers={"retry-after": "120"})]
    with serve_openai_compatible(script) as server:
        model = OpenAIChatModel("m", base_url=server.base_url, api_key="k", max_retries=0)
        agent = ReactAgent("a", model, interceptors=[ModelRetryInterceptor(**FAST)])
        start = time.monotonic()
        async with model:
            with pytest.raises(ModelHTTPError) as info:
                await agent.invoke("go")
    assert time.monotonic() - start < 5
    assert info.value.retry_after == 120
    assert info.value.status_code == 429
    assert len(server.requests) == 1

"""ReactAgent: the loop end to end with ScriptedChatModel — tool turns, return_direct,
limits, structured output, hooks, errors raised as themselves."""

from __future__ import annotations

import json
from typing import Any

import anyio
import attrs
import pytest

from reactcore import (
    AgentResult,
    MaxIterationsExceeded,
    ModelHandler,
    ModelHTTPError,
    ModelRequest,
    OutputParseError,
    OverAllState,
    ReactAgent,
    RunnableConfig,
    ToolContext,
    ToolResponseMessage,
    Usage,
    UserMessage,
    tool,
)
from reactcore.models.scripted import ScriptedChatModel
from tests.helpers import asks

pytestmark = pytest.mark.anyio


@tool
async def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool(return_direct=True)
async def lookup(key: str) -> str:
    """Look a key up and answer with it directly."""
    return f"value of {key}"


async def test_two_turn_tool_conversation() -> None:
    """The model calls a tool, sees its answer, then answers; the result has the final
    text, the whole conversation, the model-call count and the summed usage."""
    model = ScriptedChatModel(
        [asks(("c1", "weather", {"city": "Oslo"})), "It is sunny in Oslo."],
        usage=Usage(10, 5, 15),
    )
    agent = ReactAgent("forecaster", model, tools=[weather])
    result = await agent.invoke("Weather in Oslo?")
    assert isinstance(result, AgentResult)
    assert result.text == "It is sunny in Oslo."
    assert result.model_calls == 2
    assert result.usage == Usage(20, 10, 30)
    kinds = [type(m).__name__ for m in result.messages]
    assert kinds == ["UserMessage", "AssistantMessage", "ToolResponseMessage", "AssistantMessage"]
    second = model.requests[1].messages
    assert isinstance(second[-1], ToolResponseMessage)
    assert second[-1].responses[0].response_data == "sunny in Oslo"


@pytest.mark.parametrize(
    "given",
    [
        "hello",
        UserMessage("hello"),
        [UserMessage("hello")],
        {"messages": [UserMessage("hello")], "topic": "t"},
        {"input": "hello"},
    ],
)
async def test_input_forms(given: Any) -> None:
    """A string, a message, a list of messages or a state dict all start a run."""
    model = ScriptedChatModel(["hi"])
    result = await ReactAgent("a", model).invoke(given)
    assert result.text == "hi"
    assert model.requests[0].messages[-1] == UserMessage("hello")


@pytest.mark.parametrize("parallel", [False, True])
async def test_return_direct_ends_after_the_tools(parallel: bool) -> None:
    """When every called tool is return_direct the run ends after the tools: one response
    is the final text; several are a JSON array. The model is called once."""
    model = ScriptedChatModel([asks(("1", "lookup", {"key": "a"}))])
    agent = ReactAgent("a", model, tools=[lookup], parallel_tool_execution=parallel)
    result = await agent.invoke("go")
    assert result.text == "value of a"
    assert result.model_calls == 1
    model = ScriptedChatModel([asks(("1", "lookup", {"key": "a"}), ("2", "lookup", {"key": "b"}))])
    agent = ReactAgent("a", model, tools=[lookup], parallel_tool_execution=parallel)
    result = await agent.invoke("go")
    assert json.loads(result.text) == ["value of a", "value of b"]
    assert len(model.requests) == 1


async def test_mixed_return_direct_goes_back_to_the_model() -> None:
    """With a non-return_direct tool in the batch, the model is called again."""
    model = ScriptedChatModel(
        [asks(("1", "lookup", {"key": "a"}), ("2", "weather", {"city": "x"})), "done"]
    )
    result = await ReactAgent("a", model, tools=[lookup, weather]).invoke("go")
    assert result.text == "done"
    assert result.model_calls == 2


async def test_max_iterations_raises_with_the_conversation() -> None:
    """A model that never stops calling tools trips max_iterations (raised as itself)."""
    model = ScriptedChatModel([asks((str(i), "weather", {"city": "x"})) for i in range(10)])
    agent = ReactAgent("a", model, tools=[weather], max_iterations=3)
    with pytest.raises(MaxIterationsExceeded) as info:
        await agent.invoke("loop")
    assert len(model.requests) == 3
    assert isinstance(info.value.messages[-1], ToolResponseMessage)


async def test_max_iterations_none_disables_the_cap() -> None:
    """max_iterations=None lets the loop go on until the model answers."""
    script: list[Any] = [asks((str(i), "weather", {"city": "x"})) for i in range(30)]
    model = ScriptedChatModel([*script, "finally"])
    result = await ReactAgent("a", model, tools=[weather], max_iterations=None).invoke("go")
    assert result.text == "finally"
    assert result.model_calls == 31


@attrs.frozen
class Forecast:
    city: str
    temperature: int


async def test_structured_output_parsed_with_cattrs() -> None:
    """output_type parses the final answer (a code fence is tolerated) into an instance."""
    model = ScriptedChatModel(['```json\n{"city": "Oslo", "temperature": 7}\n```'])
    result = await ReactAgent("a", model, output_type=Forecast).invoke("forecast")
    assert result.output == Forecast("Oslo", 7)


@pytest.mark.parametrize(
    ("text", "match"),
    [("not json", "not JSON"), ('{"city": "Oslo", "temperature": "warm"}', "temperature")],
)
async def test_unparseable_output_raises_with_raw_text(text: str, match: str) -> None:
    """An answer that does not fit output_type, twice (the model is asked again once, by
    default) → OutputParseError holding the raw text."""
    model = ScriptedChatModel([text, text])
    with pytest.raises(OutputParseError, match=match) as info:
        await ReactAgent("a", model, output_type=Forecast).invoke("forecast")
    assert info.value.raw == text


async def test_model_errors_raise_as_themselves() -> None:
    """A model failure reaches the caller as itself, not wrapped in an ExceptionGroup."""
    model = ScriptedChatModel([ModelHTTPError("boom", status_code=500)])
    with pytest.raises(ModelHTTPError) as info:
        await ReactAgent("a", model).invoke("x")
    assert info.value.status_code == 500


def test_construction_errors() -> None:
    """An empty name → ValueError."""
    with pytest.raises(ValueError, match=r"ReactAgent\.name must not be empty"):
        ReactAgent(" ", ScriptedChatModel([]))


async def test_no_tools_means_no_tool_node() -> None:
    """Without tools there is no tool node: an answer with tool calls ends the run."""
    agent = ReactAgent("a", ScriptedChatModel([asks(("1", "ghost", {}))]))
    assert agent.tool_node is None
    result = await agent.invoke("x")
    assert result.model_calls == 1


async def test_hooks_run_at_their_positions_and_update_state() -> None:
    """before_agent, before_model, after_model and after_agent run in loop order; their
    updates land in the state."""
    seen: list[str] = []

    class Trace:
        name = "trace"

        async def before_agent(self, state: OverAllState, config: RunnableConfig) -> Any:
            seen.append("before_agent")
            return {"started": True}

        async def before_model(self, state: OverAllState, config: RunnableConfig) -> Any:
            seen.append("before_model")

        async def after_model(self, state: OverAllState, config: RunnableConfig) -> Any:
            seen.append("after_model")

        async def after_agent(self, state: OverAllState, config: RunnableConfig) -> Any:
            seen.append("after_agent")
            return {"ended": state["started"]}

    model = ScriptedChatModel([asks(("1", "weather", {"city": "x"})), "done"])
    result = await ReactAgent("a", model, tools=[weather], hooks=[Trace()]).invoke("x")
    assert seen == [
        "before_agent",
        "before_model",
        "after_model",
        "before_model",
        "after_model",
        "after_agent",
    ]
    assert result.state["ended"] is True


async def test_dynamic_tool_from_model_interceptor_runs_in_tool_node() -> None:
    """A tool added by a model interceptor is visible to the model and resolvable by the
    tool node in the same run."""

    @tool
    async def secret() -> str:
        return "from a dynamic tool"

    class AddTool:
        async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
            return await handler(
                attrs.evolve(request, tools=(*request.tools, "secret"), dynamic_tools=(secret,))
            )

    model = ScriptedChatModel([asks(("1", "secret", {})), "ok"])
    agent = ReactAgent("a", model, tools=[weather], interceptors=[AddTool()])
    result = await agent.invoke("x")
    assert result.messages[2].responses[0].response_data == "from a dynamic tool"
    assert "secret" in model.requests[0].tools


async def test_tool_state_updates_and_tool_context_reach_the_result() -> None:
    """Tool updates merge into the run's state; tool_context reaches the tools."""

    @tool
    async def remember(ctx: ToolContext) -> str:
        ctx.update["user"] = ctx.tool_context["user"]
        return "ok"

    model = ScriptedChatModel([asks(("1", "remember", {})), "done"])
    agent = ReactAgent("a", model, tools=[remember], tool_context={"user": "ada"})
    result = await agent.invoke("x")
    assert result.state["user"] == "ada"


async def test_parallel_tools_through_the_agent() -> None:
    """parallel_tool_execution runs the calls of a turn at once (all 3 wait on each other)."""
    arrived = 0
    all_in = anyio.Event()

    @tool
    async def meet() -> str:
        nonlocal arrived
        arrived += 1
        if arrived == 3:
            all_in.set()
        with anyio.fail_after(5):
            await all_in.wait()
        return "met"

    model = ScriptedChatModel([asks(*((str(i), "meet", {}) for i in range(3))), "done"])
    agent = ReactAgent("a", model, tools=[meet], parallel_tool_execution=True)
    result = await agent.invoke("x")
    assert [r.response_data for r in result.messages[2].responses] == ["met"] * 3


async def test_dynamic_tools_run_even_when_the_agent_has_no_tools_of_its_own() -> None:
    """An agent without tools but with a model interceptor that adds one still has a tool
    node to run it."""

    @tool
    async def late() -> str:
        return "added at run time"

    class AddTool:
        async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
            return await handler(attrs.evolve(request, tools=("late",), dynamic_tools=(late,)))

    model = ScriptedChatModel([asks(("1", "late", {})), "ok"])
    result = await ReactAgent("a", model, interceptors=[AddTool()]).invoke("x")
    assert result.messages[2].responses[0].response_data == "added at run time"

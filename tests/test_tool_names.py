"""Tool names are unique wherever tools meet: no tool silently shadows another.

Two different tools with one name are a ``ValueError`` naming the name, both functions
and where each came from — at construction for an agent's, a node's, a hook's and an
interceptor's tools, at the model call for a dynamic tool an interceptor adds. The same
tool (or the same function) listed twice is one tool.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from reactcore import (
    AgentLlmNode,
    AgentToolNode,
    ModelHandler,
    ModelRequest,
    OverAllState,
    ReactAgent,
    RunnableConfig,
    Tool,
    UserMessage,
    tool,
)
from reactcore.models.scripted import ScriptedChatModel
from tests.helpers import asks, call, calls_state

pytestmark = pytest.mark.anyio


@tool(name="lookup")
async def lookup_city(city: str) -> str:
    """Look a city up."""
    return f"city {city}"


@tool(name="lookup")
async def lookup_user(user: str) -> str:
    """Look a user up."""
    return f"user {user}"


def clash(first: str, second: str) -> str:
    """The error text for lookup_city (from ``first``) against lookup_user (``second``)."""
    module = lookup_city.func.__module__
    return (
        f"two tools are named 'lookup': {module}.lookup_city ({first}) and "
        f"{module}.lookup_user ({second}); tool names must be unique "
        "(rename one with @tool(name=...))"
    )


def test_two_agent_tools_with_one_name_are_refused() -> None:
    """`ReactAgent(tools=[a, b])` with both named `lookup` is a ValueError naming both
    functions; so are the nodes built alone."""
    with pytest.raises(ValueError, match="two tools are named 'lookup'") as info:
        ReactAgent("a", ScriptedChatModel([]), tools=[lookup_city, lookup_user])
    assert str(info.value) == clash("the agent's tools", "the agent's tools")
    with pytest.raises(ValueError, match="two tools are named 'lookup'") as info:
        AgentToolNode([lookup_city, lookup_user])
    assert str(info.value) == clash("the node's tools", "the node's tools")
    with pytest.raises(ValueError, match="two tools are named 'lookup'"):
        AgentLlmNode(ScriptedChatModel([]), tools=[lookup_city, lookup_user])


def test_the_same_tool_or_function_twice_is_one_tool() -> None:
    """The same Tool object, or the same plain function, listed twice is no clash: the
    model sees it once."""

    def ping() -> str:
        return "pong"

    agent = ReactAgent("a", ScriptedChatModel([]), tools=[lookup_city, ping, lookup_city, ping])
    assert agent.tool_node is not None
    assert agent.tool_node.tool_names == ["lookup", "ping"]
    assert AgentToolNode([ping, ping]).tool_names == ["ping"]


@attrs.frozen
class Bringer:
    """A tool interceptor bringing its own tools."""

    tools: tuple[Tool, ...]

    async def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)


def test_interceptor_tool_named_like_an_agent_tool_is_refused() -> None:
    """An interceptor's tool and an agent's tool with one name: refused at construction;
    an interceptor bringing the very tool the agent lists is fine."""
    with pytest.raises(ValueError, match="two tools are named 'lookup'") as info:
        ReactAgent(
            "a", ScriptedChatModel([]), tools=[lookup_user], interceptors=[Bringer((lookup_city,))]
        )
    assert str(info.value) == clash("interceptor Bringer", "the agent's tools")
    agent = ReactAgent(
        "a", ScriptedChatModel([]), tools=[lookup_city], interceptors=[Bringer((lookup_city,))]
    )
    assert agent.llm_node.tools == [lookup_city]


@attrs.frozen
class AddsDynamic:
    """A model interceptor adding dynamic tools (and naming them for the model)."""

    extra: tuple[Tool, ...]

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
        names = (*request.tools, *(t.name for t in self.extra))
        return await handler(attrs.evolve(request, tools=names, dynamic_tools=self.extra))


@pytest.mark.parametrize("as_message", [False, True])
async def test_dynamic_tool_named_like_an_agent_tool_is_refused_at_the_model_call(
    as_message: bool,
) -> None:
    """A dynamic tool named like an agent tool is a ValueError when the interceptor adds
    it — before the model is asked, and even with model_error_as_message=True (it is a
    bug in the agent's set-up, not a model failure)."""
    model = ScriptedChatModel(["never"])
    agent = ReactAgent(
        "a",
        model,
        tools=[lookup_city],
        interceptors=[AddsDynamic((lookup_user,))],
        model_error_as_message=as_message,
    )
    with pytest.raises(ValueError, match="two tools are named 'lookup'") as info:
        await agent.invoke("go")
    assert str(info.value) == clash("the agent's tools", "a model interceptor's dynamic tools")
    assert model.requests == []


async def test_two_dynamic_tools_with_one_name_are_refused() -> None:
    """Two different dynamic tools with one name in one request are refused too."""
    node = AgentLlmNode(
        ScriptedChatModel(["never"]), model_interceptors=[AddsDynamic((lookup_city, lookup_user))]
    )
    with pytest.raises(ValueError, match="two tools are named 'lookup'"):
        await node(OverAllState({"messages": [UserMessage("go")]}))


async def test_dynamic_tool_that_is_the_agent_tool_is_fine() -> None:
    """Re-adding the agent's own tool as a dynamic tool is no clash; it runs."""
    model = ScriptedChatModel([asks(("1", "lookup", {"city": "Oslo"})), "ok"])
    agent = ReactAgent("a", model, tools=[lookup_city], interceptors=[AddsDynamic((lookup_city,))])
    result = await agent.invoke("go")
    assert result.messages[2].responses[0].response_data == "city Oslo"


async def test_dynamic_tools_in_the_context_with_one_name_are_refused() -> None:
    """A hand-built run context listing two different dynamic tools with one name."""
    config = RunnableConfig(context={"dynamic_tools": [lookup_city, lookup_user]})
    with pytest.raises(ValueError, match="two tools are named 'lookup'"):
        await AgentToolNode([])(calls_state(call("1", "lookup", city="x")), config)

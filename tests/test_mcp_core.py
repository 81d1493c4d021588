"""The core seams ``reactcore.mcp`` builds on, tested without MCP: tools made of a JSON
Schema, tools answering with a ``ToolCallResponse``, ``ToolResponse.data`` in checkpoints,
and toolsets in ``ReactAgent(tools=[...])``."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import attrs
import pytest
from helpers import asks, call, calls_state

from reactcore import (
    AgentToolNode,
    Checkpoint,
    ModelHandler,
    ModelRequest,
    ModelResponse,
    OverAllState,
    ReactAgent,
    Tool,
    ToolArgumentError,
    ToolCallResponse,
    ToolContext,
    ToolResponse,
    ToolResponseMessage,
    Toolset,
    dump_checkpoint,
    load_checkpoint,
    tool,
)
from reactcore.testing import ScriptedChatModel

SCHEMA = {"type": "object", "properties": {"x-y": {"type": "integer"}}, "required": ["x-y"]}


def only_ints(arguments: dict[str, Any]) -> str | None:
    bad = [k for k, v in arguments.items() if not isinstance(v, int)]
    return f"{bad[0]} must be an integer" if bad else None


def schema_tool(name: str = "remote") -> Tool:
    async def run(**arguments: Any) -> str:
        return f"got {json.dumps(arguments, sort_keys=True)}"

    return Tool.from_schema(name, "A remote tool.", SCHEMA, run, check=only_ints)


def test_from_schema_keeps_the_schema_and_checks_arguments() -> None:
    """``Tool.from_schema``: the schema is the model's as given; ``check`` decides, and its
    words reach the model as ``invalid arguments for tool '<name>': …``."""
    remote = schema_tool()
    assert remote.parameters is SCHEMA
    assert remote.is_async and not remote.wants_context
    assert remote.parse_arguments('{"x-y": 3}') == {"x-y": 3}
    with pytest.raises(ToolArgumentError) as caught:
        remote.parse_arguments('{"x-y": "3"}')
    assert str(caught.value) == "invalid arguments for tool 'remote': x-y must be an integer"
    with pytest.raises(ToolArgumentError, match="expected a JSON object, got array"):
        remote.parse_arguments("[1]")
    with pytest.raises(ValueError, match="timeout must be positive"):
        Tool.from_schema("t", "", SCHEMA, lambda: None, check=only_ints, timeout=0)


@pytest.mark.anyio
async def test_a_schema_tool_may_take_the_calls_context() -> None:
    """``Tool.from_schema(..., context="ctx")``: the function also gets the call's
    ``ToolContext`` as ``ctx`` (not a parameter the model sees), beside the arguments."""
    seen: list[Any] = []

    async def run(ctx: ToolContext, **arguments: Any) -> str:
        seen.append((ctx.call.id, arguments))
        return "ok"

    remote = Tool.from_schema("remote", "", SCHEMA, run, check=only_ints, context="ctx")
    assert remote.wants_context and remote.parameters is SCHEMA
    await AgentToolNode([remote])(calls_state(call("1", "remote", **{"x-y": 7})))
    assert seen == [("1", {"x-y": 7})]


@pytest.mark.anyio
async def test_a_schema_tool_through_the_node() -> None:
    """Through the node: checked arguments (any JSON keys) reach the function as keywords;
    rejected ones answer the model and the function is not called."""
    node = AgentToolNode([schema_tool()])
    update = await node(
        calls_state(call("1", "remote", **{"x-y": 7}), call("2", "remote", **{"x-y": "7"}))
    )
    ok, rejected = update["messages"][-1].responses
    assert ok.response_data == 'got {"x-y": 7}'
    assert rejected.response_data == (
        "Error: invalid arguments for tool 'remote': x-y must be an integer"
    )
    assert rejected.is_error


@pytest.mark.anyio
async def test_a_tool_may_answer_with_a_tool_call_response() -> None:
    """A tool returning a ``ToolCallResponse`` says itself what the model reads (an error,
    or not) and what callers get in ``ToolResponse.data``; the state update of a call that
    did not answer with an error counts, as for any tool."""

    @tool
    def lookup(key: str, context: ToolContext) -> ToolCallResponse:
        """Look a key up."""
        context.update["looked"] = [key]
        if key == "missing":
            return ToolCallResponse(f"Error: no {key}", is_error=True, data={"tried": key})
        return ToolCallResponse(f"found {key}", data={"value": 1})

    node = AgentToolNode([lookup])
    update = await node(
        calls_state(call("1", "lookup", key="k"), call("2", "lookup", key="missing"))
    )
    found, missing = update["messages"][-1].responses
    assert found == ToolResponse("1", "lookup", "found k")
    assert missing == ToolResponse("2", "lookup", "Error: no missing", is_error=True)
    assert (found.data, missing.data) == ({"value": 1}, {"tried": "missing"})
    assert update["looked"] == ["k"]


def test_response_data_is_stored_only_when_set() -> None:
    """A checkpoint keeps ``ToolResponse.data`` when there is some and loads it back; a
    response without data is stored as before (no ``data`` key)."""
    responses = ToolResponseMessage(
        [ToolResponse("1", "a", "x"), ToolResponse("2", "b", "y", data={"content": [1]})]
    )
    state = OverAllState({"messages": [responses]})
    text = dump_checkpoint(Checkpoint("t", state, "model", 1, "r"))
    stored = json.loads(text)["state"]["values"]["messages"]["value"][0]["responses"]
    assert "data" not in stored[0]
    assert stored[1]["data"] == {"content": [1]}
    loaded = load_checkpoint(text).state["messages"][0].responses
    assert [r.data for r in loaded] == [None, {"content": [1]}]


@attrs.define
class FakeToolset:
    """A toolset without MCP: one tool, added to each model request, resolved by name."""

    tool: Tool
    resolved: list[str] = attrs.Factory(list)

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        return await handler(
            attrs.evolve(
                request,
                tools=(*request.tools, self.tool.name),
                dynamic_tools=(*request.dynamic_tools, self.tool),
            )
        )

    def resolve(self, name: str) -> Tool | None:
        self.resolved.append(name)
        return self.tool if name == self.tool.name else None


@pytest.mark.anyio
async def test_toolsets_in_the_agents_tools() -> None:
    """``ReactAgent(tools=[toolset, tool])``: the toolset is not made into a tool; its tools
    reach the model through it and the node, and its resolver is asked after the agent's."""

    @tool
    def local() -> str:
        """A local tool."""
        return "here"

    toolset = FakeToolset(schema_tool())
    assert isinstance(toolset, Toolset)
    model = ScriptedChatModel([asks(("c1", "remote", {"x-y": 1}), ("c2", "local", {})), "done"])
    asked: list[str] = []

    def own(name: str) -> Tool | None:
        asked.append(name)
        return None

    agent = ReactAgent("t", model, tools=[toolset, local], tool_resolver=own)
    assert agent.tool_node is not None
    assert agent.tool_node.tool_names == ["local"]
    assert agent.tool_node.resolve("remote", agent_config()) is toolset.tool
    assert asked == ["remote"]
    result = await agent.invoke("go")
    assert [s.name for s in model.requests[0].visible_tool_specs()] == ["local", "remote"]
    answers = result.messages[-2]
    assert isinstance(answers, ToolResponseMessage)
    assert [r.response_data for r in answers.responses] == ['got {"x-y": 1}', "here"]


def agent_config() -> Any:
    from reactcore import RunnableConfig

    return RunnableConfig()


def test_import_reactcore_does_not_import_mcp() -> None:
    """``import reactcore`` never loads the MCP SDK (only ``reactcore.mcp`` does)."""
    code = "import sys, reactcore; print('mcp' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_mcp_modules_exports() -> None:
    """``reactcore.mcp.__all__`` is sorted, importable, and its ``MCPError`` is reactcore's."""
    import reactcore
    import reactcore.mcp

    assert reactcore.mcp.__all__ == sorted(reactcore.mcp.__all__)
    assert all(hasattr(reactcore.mcp, name) for name in reactcore.mcp.__all__)
    assert reactcore.mcp.MCPError is reactcore.MCPError

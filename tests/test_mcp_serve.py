"""``reactcore.mcp.serve``: a reactcore agent as an MCP server, called by real MCP clients."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
import pytest
from helpers import call
from mcp import Client, StdioServerParameters
from mcp_servers.agent_server import make_agent, reply
from test_mcp import run_calls

import reactcore
from reactcore import AgentToolNode, HumanInTheLoopHook, MemorySaver, ReactAgent, tool
from reactcore.mcp import MCPToolset, serve
from reactcore.testing import ScriptedChatModel

pytestmark = pytest.mark.anyio

AGENT_SERVER = Path(__file__).parent / "mcp_servers" / "agent_server.py"


async def test_ask_runs_the_agent_and_reports_progress() -> None:
    """The server has one tool, ``ask`` (text in, the final text out); a call runs the
    agent once and the client is told of the run's steps as progress."""
    server = serve(make_agent(runs=1))
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async with Client(server) as client:
        listed = await client.list_tools()
        result = await client.call_tool("ask", {"text": "hello"}, progress_callback=on_progress)
    (ask,) = listed.tools
    assert ask.name == "ask"
    assert ask.description == "Ask the agent 'helper'; it answers with text."
    assert ask.input_schema["required"] == ["text"]
    assert not result.is_error
    assert [b.text for b in result.content] == ["The agent says: HELLO"]  # type: ignore[union-attr]
    assert sorted(progress) == [
        (1.0, "model call 1"),
        (2.0, "calling shout"),
        (3.0, "shout done"),
        (4.0, "model call 2"),
    ]


async def test_a_failed_run_is_an_error_result() -> None:
    """When the run fails (here the scripted model has no reply left), the client gets an
    error result, not a broken connection."""
    server = serve(make_agent(runs=0))
    async with Client(server) as client:
        result = await client.call_tool("ask", {"text": "hello"})
    assert result.is_error
    assert result.content[0].text == (  # type: ignore[union-attr]
        "Error executing tool ask: the run of agent 'helper' failed: ScriptExhaustedError: "
        "ScriptedChatModel has 0 replies and got request #1"
    )


async def test_an_agent_calls_a_served_agent_over_stdio() -> None:
    """A served agent in a subprocess, reached with ``MCPToolset.stdio``: a reactcore agent
    can use another one as a tool."""
    toolset = MCPToolset.stdio(sys.executable, [str(AGENT_SERVER)], prefix="helper_")
    async with toolset:
        (ask,) = toolset.tools
        assert (ask.name, ask.description) == ("helper_ask", "Ask the helper agent.")
        node = AgentToolNode(tool_resolver=toolset.resolve)
        (answer,) = await run_calls(node, call("1", "helper_ask", text="psst"))
    assert answer.response_data == "The agent says: PSST"


def approving_agent(ran: list[str]) -> ReactAgent:
    """The helper agent, with ``shout`` waiting for approval (it notes each text it shouts)."""

    @tool
    def shout(text: str) -> str:
        """Upper-case the text."""
        ran.append(text)
        return text.upper()

    return ReactAgent(
        "helper",
        ScriptedChatModel([reply] * 2),
        tools=[shout],
        hooks=[HumanInTheLoopHook(["shout"])],
        saver=MemorySaver(),
    )


def answering(
    asked: list[mt.ElicitRequestParams], content: dict[str, Any] | None
) -> Callable[..., Awaitable[mt.ElicitResult]]:
    """An elicitation callback noting what it is asked and answering ``content`` (accept),
    or declining when ``content`` is ``None``."""

    async def callback(context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params)
        if content is None:
            return mt.ElicitResult(action="decline")
        return mt.ElicitResult(action="accept", content=content)

    return callback


async def test_an_approval_is_asked_of_the_client_and_approve_runs_the_tool() -> None:
    """A served agent pausing for approval asks the client (an elicitation request naming
    the waiting call and its arguments); the client approves and the tool runs."""
    ran: list[str] = []
    asked: list[mt.ElicitRequestParams] = []
    server = serve(approving_agent(ran))
    callback = answering(asked, {"approve": True})
    async with Client(server, elicitation_callback=callback, mode="legacy") as client:
        result = await client.call_tool("ask", {"text": "hello"})
    assert not result.is_error
    assert [b.text for b in result.content] == ["The agent says: HELLO"]  # type: ignore[union-attr]
    assert ran == ["hello"]
    (params,) = asked
    assert params.message == (
        'Agent \'helper\' wants to call shout with {"text": "hello"}. Approve it?'
    )
    assert set(params.requested_schema["properties"]) == {"approve", "reason"}  # type: ignore[union-attr]


async def test_an_approval_is_asked_of_a_client_over_stdio() -> None:
    """The same with the served agent in a subprocess and the SDK's client over stdio:
    the client's elicitation callback gets the waiting call and approves it."""
    asked: list[mt.ElicitRequestParams] = []
    here = str(Path(reactcore.__file__).parents[1])  # the subprocess imports this reactcore
    params = StdioServerParameters(
        command=sys.executable, args=[str(AGENT_SERVER), "approve"], env={"PYTHONPATH": here}
    )
    callback = answering(asked, {"approve": True})
    async with Client(params, elicitation_callback=callback, mode="legacy") as client:
        result = await client.call_tool("ask", {"text": "far"})
    assert [b.text for b in result.content] == ["The agent says: FAR"]  # type: ignore[union-attr]
    assert [p.message for p in asked] == [
        'Agent \'helper\' wants to call shout with {"text": "far"}. Approve it?'
    ]


@pytest.mark.parametrize(
    ("content", "told"),
    [
        ({"approve": False, "reason": "not today"}, "not today"),
        (None, "The MCP client's user declined to approve this tool call."),
    ],
)
async def test_a_rejected_or_declined_approval_does_not_run_the_tool(
    content: dict[str, Any] | None, told: str
) -> None:
    """A client answering ``approve: false`` (with a reason) or declining the form: the
    tool does not run and the model is told why."""
    ran: list[str] = []
    asked: list[mt.ElicitRequestParams] = []
    server = serve(approving_agent(ran))
    async with Client(
        server, elicitation_callback=answering(asked, content), mode="legacy"
    ) as client:
        result = await client.call_tool("ask", {"text": "hello"})
    assert not result.is_error
    assert ran == []
    assert len(asked) == 1
    assert told in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_client_cancelling_its_ask_cancels_the_run(mode: str) -> None:
    """A client that cancels its ``ask`` call (``notifications/cancelled`` in the handshake
    protocol; the request's end in the newer one) cancels the served run: the tool running
    in it is cancelled."""
    started, cancelled = anyio.Event(), anyio.Event()

    @tool
    async def shout(text: str) -> str:
        """Wait until cancelled."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return text  # pragma: no cover

    agent = ReactAgent("helper", ScriptedChatModel([reply] * 2), tools=[shout])
    scopes: list[anyio.CancelScope] = []

    async with Client(serve(agent), mode=mode) as client, anyio.create_task_group() as tg:

        async def ask() -> None:
            with anyio.CancelScope() as scope:
                scopes.append(scope)
                await client.call_tool("ask", {"text": "hello"})

        tg.start_soon(ask)
        with anyio.fail_after(10):
            await started.wait()
        scopes[0].cancel()
        with anyio.fail_after(10):
            await cancelled.wait()


async def test_an_approval_without_a_back_channel_is_a_clear_error() -> None:
    """A client whose session cannot carry server requests (the newer protocol, in
    process) cannot be asked: the call is an error result saying which call waits and
    why, and the tool does not run."""
    ran: list[str] = []
    async with Client(serve(approving_agent(ran)), mode="auto") as client:
        result = await client.call_tool("ask", {"text": "hello"})
    assert result.is_error
    assert ran == []
    assert result.content[0].text.startswith(  # type: ignore[union-attr]
        "Error executing tool ask: the run of agent 'helper' waits for approval of shout and "
        "the client could not be asked: NoBackChannelError"
    )


async def test_sampling_makes_the_client_answer_the_agents_model_calls() -> None:
    """``serve(agent, sampling=True)``: each model call of the run is a
    ``sampling/createMessage`` request to the client, with the agent's system prompt, the
    conversation (the tool's result as a ``tool_result``) and its tools; the client's
    ``tool_use`` runs the agent's tool and its text is the answer. The agent's own model
    is not asked."""
    own = ScriptedChatModel([])
    ran: list[str] = []

    @tool
    def shout(text: str) -> str:
        """Upper-case the text."""
        ran.append(text)
        return text.upper()

    agent = ReactAgent("helper", own, tools=[shout], system_prompt="Be loud.")
    requests: list[mt.CreateMessageRequestParams] = []

    async def sample(context: Any, params: mt.CreateMessageRequestParams) -> Any:
        requests.append(params)
        last = params.messages[-1].content
        blocks = last if isinstance(last, list) else [last]
        for block in blocks:
            if isinstance(block, mt.ToolResultContent):
                said = block.content[0].text  # type: ignore[union-attr]
                return mt.CreateMessageResult(
                    role="assistant",
                    content=mt.TextContent(type="text", text=f"heard {said}"),
                    model="client-model",
                    stop_reason="endTurn",
                )
        use = mt.ToolUseContent(type="tool_use", id="u1", name="shout", input={"text": "hi"})
        return mt.CreateMessageResultWithTools(
            role="assistant", content=[use], model="client-model", stop_reason="toolUse"
        )

    server = serve(agent, sampling=True)
    can = mt.SamplingCapability(tools=mt.SamplingToolsCapability())
    async with Client(
        server, sampling_callback=sample, sampling_capabilities=can, mode="legacy"
    ) as client:
        result = await client.call_tool("ask", {"text": "hello"})
    assert [b.text for b in result.content] == ["heard HI"]  # type: ignore[union-attr]
    assert ran == ["hi"]
    assert own.requests == []
    first, second = requests
    assert first.system_prompt == "Be loud."
    assert [t.name for t in first.tools or []] == ["shout"]
    assert first.messages[0].content == mt.TextContent(type="text", text="hello")
    assert len(second.messages) == 3


async def test_a_client_without_sampling_fails_the_run_clearly() -> None:
    """With ``sampling=True`` and a client that cannot sample, the call is an error
    result saying the client did not answer the sampling request."""
    agent = ReactAgent("helper", ScriptedChatModel([]))
    async with Client(serve(agent, sampling=True), mode="legacy") as client:
        result = await client.call_tool("ask", {"text": "hello"})
    assert result.is_error
    assert "the MCP client did not answer the sampling request" in result.content[0].text  # type: ignore[union-attr]


def test_sampling_must_be_a_bool() -> None:
    """``sampling`` is a bool; anything else is a TypeError naming it."""
    with pytest.raises(TypeError, match=r"^sampling must be a bool, not str$"):
        serve(make_agent(), sampling="yes")  # type: ignore[arg-type]

"""MCPToolset against real MCP servers (the SDK's server API), over stdio and streamable HTTP.

The stdio server is a new subprocess per test; the HTTP one is one uvicorn subprocess on
127.0.0.1 for the module (tests use their own tags and tool names on it). Both log to a
file what the tests check on the server's side: handler starts and cancellations, and the
``notifications/cancelled`` they received.
"""

from __future__ import annotations

import os
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from helpers import asks, call, live_tasks
from mcp_support import (
    SERVER,
    SERVER_TOOLS,
    http_server,
    logged,
    records,
    responses,
    run_calls,
    stdio_toolset,
)

from reactcore import (
    AgentToolNode,
    MCPError,
    ReactAgent,
    ReactcoreError,
    RunCancelled,
    ToolResponse,
    tool,
)
from reactcore.mcp import MCPToolset
from reactcore.testing import ScriptedChatModel

pytestmark = pytest.mark.anyio

ToolsetFactory = Callable[..., MCPToolset]
# For what does not depend on the transport (mapping names, results, arguments): the
# shared HTTP server answers at once, where each stdio test starts a process.
HTTP_ONLY = pytest.mark.parametrize("transport", ["http"])


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The module's streamable-HTTP server: its URL and its log."""
    log = tmp_path_factory.mktemp("mcp-http") / "server.jsonl"
    with http_server("http", log) as url:
        yield url, log


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server_log(transport: str, tmp_path: Path, http_url: tuple[str, Path]) -> Path:
    """Where the test's server logs."""
    return tmp_path / "server.jsonl" if transport == "stdio" else http_url[1]


@pytest.fixture
def make_toolset(transport: str, server_log: Path, http_url: tuple[str, Path]) -> ToolsetFactory:
    """Make a toolset for the test's transport (options passed on)."""

    def make(**options: Any) -> MCPToolset:
        if transport == "stdio":
            return stdio_toolset(server_log, **options)
        return MCPToolset.streamable_http(http_url[0], **options)

    return make


def tag() -> str:
    return uuid.uuid4().hex[:8]


# --- listing and calling -------------------------------------------------------------------


async def test_lists_the_servers_tools_and_calls_them(make_toolset: ToolsetFactory) -> None:
    """Every tool of the server becomes a reactcore tool with the server's name, description
    and input schema as given; calls answer the model with the tool's text."""
    async with make_toolset() as toolset:
        names = [t.name for t in toolset.tools]
        assert names[: len(SERVER_TOOLS)] == SERVER_TOOLS
        assert toolset.server_name == "test-tools"
        add = toolset.resolve("add")
        assert add is not None
        assert add.description == "Add two integers; the sum comes as structured content."
        assert add.parameters["required"] == ["a", "b"]
        assert add.parameters["properties"]["a"] == {"title": "A", "type": "integer"}
        # One limiter for the server's tools: max_concurrency (8) calls at once.
        assert {id(t.limiter) for t in toolset.tools} == {id(add.limiter)}
        assert add.limiter is not None and add.limiter.total_tokens == 8
        node = AgentToolNode(tool_resolver=toolset.resolve)
        echo, added = await run_calls(
            node, call("1", "echo", text="héllo"), call("2", "add", a=2, b=3)
        )
    assert (echo.response_data, echo.is_error) == ("héllo", False)
    # The server sends the sum as structuredContent and as its JSON text: read once.
    assert added.response_data == '{\n  "sum": 5\n}'
    # ``add`` declares an output schema: its checked structuredContent is the data.
    assert added.data == {"sum": 5}


async def test_stdio_command_env_and_cwd(tmp_path: Path) -> None:
    """``MCPToolset.stdio(command, args, env=, cwd=)``: the server runs in ``cwd`` and sees
    ``env`` (added to what the SDK passes on)."""
    toolset = MCPToolset.stdio(
        sys.executable,
        [str(SERVER), "stdio", str(tmp_path / "log.jsonl")],
        env={"REACTCORE_TEST": "from the test"},
        cwd=tmp_path,
    )
    async with toolset:
        node = AgentToolNode(tool_resolver=toolset.resolve)
        (answer,) = await run_calls(node, call("1", "where", variable="REACTCORE_TEST"))
    assert answer.response_data == f"{tmp_path} from the test None"


async def test_http_headers_and_own_client(http_url: tuple[str, Path]) -> None:
    """``headers=`` reach the server; an ``http_client`` of the caller's is used as given
    and left open when the toolset closes."""
    url = http_url[0]
    async with MCPToolset.streamable_http(url, headers={"X-Test": "by headers"}) as toolset:
        node = AgentToolNode(tool_resolver=toolset.resolve)
        (by_headers,) = await run_calls(node, call("1", "where", variable="NONE"))
    client = httpx2.AsyncClient(headers={"X-Test": "by client"})
    async with client:
        async with MCPToolset.streamable_http(url, http_client=client) as toolset:
            node = AgentToolNode(tool_resolver=toolset.resolve)
            (by_client,) = await run_calls(node, call("1", "where", variable="NONE"))
        assert not client.is_closed
    assert by_headers.response_data.endswith(" None by headers")
    assert by_client.response_data.endswith(" None by client")
    with pytest.raises(ValueError, match="give headers or http_client"):
        MCPToolset.streamable_http(url, headers={}, http_client=client)


@HTTP_ONLY
async def test_prefix_and_filter(make_toolset: ToolsetFactory) -> None:
    """``prefix`` goes before every name; ``allow`` and ``deny`` pick by the server's name."""
    async with make_toolset(prefix="srv_", allow={"echo", "add", "pid"}, deny={"add"}) as ts:
        assert [t.name for t in ts.tools] == ["srv_echo", "srv_pid"]
        assert ts.resolve("echo") is None
        assert ts.resolve("srv_add") is None
        node = AgentToolNode(tool_resolver=ts.resolve)
        (answer,) = await run_calls(node, call("1", "srv_echo", text="hi"))
    assert answer.response_data == "hi"


@HTTP_ONLY
async def test_results_for_the_model(transport: str, make_toolset: ToolsetFactory) -> None:
    """Images are described to the model and kept whole in ``data``; ``isError: true`` is an
    error response; text comes as the server wrote it."""
    async with make_toolset() as toolset:
        node = AgentToolNode(tool_resolver=toolset.resolve)
        picture, failed, looked = await run_calls(
            node,
            call("1", "picture"),
            call("2", "fail", message="disk full"),
            call("3", "lookup", kind="books", tags=["a", "b"]),
        )
    assert picture.response_data == "a red dot\n[image: image/png, 8 bytes]"
    assert not picture.is_error
    assert picture.data["content"][1] == {
        "type": "image",
        "data": "iVBORw0KGgo=",
        "mimeType": "image/png",
    }
    assert (failed.response_data, failed.is_error) == ("Error: disk full", True)
    assert looked.response_data == "books:3:a,b"


@HTTP_ONLY
async def test_arguments_checked_against_the_schema_before_the_call(
    make_toolset: ToolsetFactory, server_log: Path
) -> None:
    """Arguments that do not fit the server's schema answer the model like a local tool's
    would, and the server is not called."""
    mark = tag()
    async with make_toolset() as toolset:
        node = AgentToolNode(tool_resolver=toolset.resolve)
        wrong_type, missing, extra_ok = await run_calls(
            node,
            call("1", "block", tag=5),
            call("2", "add", a=1),
            call("3", "echo", text=mark),
        )
    assert wrong_type.response_data == (
        "Error: invalid arguments for tool 'block': tag: 5 is not of type 'string'"
    )
    assert missing.response_data == (
        "Error: invalid arguments for tool 'add': 'b' is a required property"
    )
    assert wrong_type.is_error and missing.is_error
    assert extra_ok.response_data == mark
    assert records(server_log, event="started", tag=5) == []


async def test_over_sse(tmp_path: Path) -> None:
    """A legacy server over HTTP+SSE lists and answers the same way."""
    with http_server("sse", tmp_path / "sse.jsonl") as url:
        async with MCPToolset.sse(url, prefix="old_") as toolset:
            assert [t.name for t in toolset.tools][:2] == ["old_echo", "old_add"]
            node = AgentToolNode(tool_resolver=toolset.resolve)
            (answer,) = await run_calls(node, call("1", "old_echo", text="still here"))
    assert answer.response_data == "still here"


# --- tool list changes ---------------------------------------------------------------------


async def test_relists_when_the_server_says_the_list_changed(make_toolset: ToolsetFactory) -> None:
    """On ``notifications/tools/list_changed`` the toolset lists again: a tool the server
    added at run time can be called."""
    name = f"extra_{tag()}"
    async with make_toolset() as toolset:
        assert toolset.listings == 1
        node = AgentToolNode(tool_resolver=toolset.resolve)
        (grown,) = await run_calls(node, call("1", "grow", name=name))
        assert grown.response_data == f"added {name}"
        with anyio.fail_after(10):
            await toolset.wait_for_listing(2)
        assert name in [t.name for t in toolset.tools]
        (answer,) = await run_calls(node, call("2", name, text="hi"))
    assert answer.response_data == f"{name}: hi"


# --- limits, timeouts, cancellation --------------------------------------------------------


async def test_parallel_calls_under_the_toolsets_limit(make_toolset: ToolsetFactory) -> None:
    """With the toolset's limiter at 2, at most two calls of the server run at once, though
    the node allows five: the server measured the peak."""
    mark = tag()
    limiter = anyio.CapacityLimiter(2)  # shared: given instead of max_concurrency
    async with make_toolset(limiter=limiter) as toolset:
        node = AgentToolNode(
            tool_resolver=toolset.resolve, parallel_tool_execution=True, max_parallel_tools=5
        )
        calls = [call(str(i), "work", tag=mark, seconds=0.3) for i in range(6)]
        answers = await run_calls(node, *calls)
        (peak,) = await run_calls(node, call("p", "peak", tag=mark))
    assert [a.response_data for a in answers] == [f"worked {mark}"] * 6
    assert peak.response_data == "2"


async def test_timeout_cancels_the_call_on_the_server(
    make_toolset: ToolsetFactory, server_log: Path
) -> None:
    """A timed-out call answers the model with the timeout, and the server receives
    ``notifications/cancelled`` for that request and its handler is cancelled."""
    mark = tag()
    async with make_toolset(timeout=0.5) as toolset:
        node = AgentToolNode(tool_resolver=toolset.resolve)
        (answer,) = await run_calls(node, call("1", "block", tag=mark))
        started = await logged(server_log, event="started", tag=mark)
        await logged(server_log, event="handler_cancelled", tag=mark)
        await logged(server_log, event="cancel_notification", request_id=started["request_id"])
    assert answer.response_data == "Error: Tool execution timed out after 0.5s (tool 'block')"


async def test_cancel_tool_cancels_the_call_on_the_server(
    make_toolset: ToolsetFactory, server_log: Path
) -> None:
    """``run.cancel_tool`` stops an MCP call like a local one: the model is told, the run
    goes on, and the server receives ``notifications/cancelled`` and cancels its handler."""
    mark = tag()
    model = ScriptedChatModel([asks(("c1", "block", {"tag": mark})), "stopped it"])
    async with make_toolset() as toolset:
        agent = ReactAgent("mcp", model, tools=[toolset])
        before = len(records(server_log, event="cancel_notification"))
        async with agent.start("go") as run:
            started = await logged(server_log, event="started", tag=mark)
            assert await run.cancel_tool("c1", "enough")
            result = await run.result()
        await logged(server_log, event="handler_cancelled", tag=mark)
        cancel = await logged(server_log, before + 1, event="cancel_notification")
    assert cancel["request_id"] == started["request_id"]
    (answer,) = responses(result.messages)
    assert answer.response_data == "Error: Tool execution was cancelled by the caller: enough"
    assert result.text == "stopped it"


# --- a full agent run ----------------------------------------------------------------------


async def test_agent_run_with_mcp_and_local_tools_in_one_parallel_batch(
    make_toolset: ToolsetFactory,
) -> None:
    """``ReactAgent(tools=[toolset, local])``: the model sees both kinds of tools, calls
    them in one parallel batch, and reads every answer in call order."""

    @tool
    def shout(text: str) -> str:
        """Upper-case the text (a local tool)."""
        return text.upper()

    model = ScriptedChatModel(
        [
            asks(
                ("c1", "mcp_echo", {"text": "from mcp"}),
                ("c2", "shout", {"text": "from here"}),
                ("c3", "mcp_add", {"a": 20, "b": 22}),
            ),
            "all done",
        ]
    )
    async with make_toolset(prefix="mcp_", allow={"echo", "add"}) as toolset:
        agent = ReactAgent("mixed", model, tools=[toolset, shout], parallel_tool_execution=True)
        result = await agent.invoke("go")
    seen = [s.name for s in model.requests[0].visible_tool_specs()]
    assert seen == ["shout", "mcp_echo", "mcp_add"]
    assert [(r.name, r.response_data) for r in responses(result.messages)] == [
        ("mcp_echo", "from mcp"),
        ("shout", "FROM HERE"),
        ("mcp_add", '{\n  "sum": 42\n}'),
    ]
    assert result.text == "all done"


# --- the server going away ------------------------------------------------------------------


async def test_server_killed_mid_call(tmp_path: Path) -> None:
    """The stdio server killed during a call: that call answers the model with an error
    naming the server, the run goes on, and the next call starts the server again."""
    log = tmp_path / "server.jsonl"
    mark = tag()
    model = ScriptedChatModel(
        [asks(("c1", "block", {"tag": mark})), asks(("c2", "pid", {})), "recovered"]
    )
    async with stdio_toolset(log) as toolset:
        agent = ReactAgent("crash", model, tools=[toolset])
        async with agent.start("go") as run:
            started = await logged(log, event="started", tag=mark)
            os.kill(started["pid"], signal.SIGKILL)
            result = await run.result()
    killed, pid = responses(result.messages)
    assert killed.response_data == (
        "Error: MCPError: MCP server 'test-tools' closed the connection during the call "
        "(tool 'block')"
    )
    assert killed.is_error
    assert not pid.is_error
    assert int(pid.response_data) != started["pid"]
    assert result.text == "recovered"


async def test_http_server_gone_mid_call(tmp_path: Path) -> None:
    """The HTTP server killed during a call: that call answers the model with an error
    naming the server; the next call tries to connect again and answers that it cannot."""
    log = tmp_path / "server.jsonl"
    mark = tag()
    answers: list[ToolResponse] = []
    with http_server("http", log) as url:
        async with MCPToolset.streamable_http(url) as toolset:
            node = AgentToolNode(tool_resolver=toolset.resolve)

            async def blocked() -> None:
                answers.extend(await run_calls(node, call("1", "block", tag=mark)))

            async with anyio.create_task_group() as group:
                group.start_soon(blocked)
                started = await logged(log, event="started", tag=mark)
                os.kill(started["pid"], signal.SIGKILL)
            answers.extend(await run_calls(node, call("2", "echo", text="anyone?")))
    killed, retried = answers
    assert killed.response_data == (
        "Error: MCPError: MCP server 'test-tools' closed the connection during the call "
        "(tool 'block')"
    )
    assert retried.response_data.startswith(
        "Error: MCPError: cannot connect to MCP server 'test-tools': "
    )
    assert retried.response_data.endswith(" (tool 'echo')")


async def test_cannot_connect_raises_mcp_error(tmp_path: Path) -> None:
    """A server that exits at once: ``async with`` raises ``MCPError`` naming it."""
    toolset = MCPToolset.stdio(sys.executable, ["-c", "pass"], name="broken")
    with pytest.raises(MCPError, match="cannot connect to MCP server 'broken'") as caught:
        async with toolset:
            pass
    assert caught.value.server == "broken"
    assert isinstance(caught.value, ReactcoreError)


async def test_cannot_reconnect_raises_mcp_error(tmp_path: Path) -> None:
    """When the process died and cannot be started again, a tool call answers the model
    with ``MCPError``, and the next model call raises it (the run fails with it)."""
    script = tmp_path / "server.py"
    script.write_text((Path(__file__).parent / "mcp_servers" / "tools_server.py").read_text())
    log = tmp_path / "server.jsonl"
    mark = tag()
    killed: list[ToolResponse] = []
    async with MCPToolset.stdio(sys.executable, [str(script), "stdio", str(log)]) as toolset:
        node = AgentToolNode(tool_resolver=toolset.resolve)

        async def blocked() -> None:
            killed.extend(await run_calls(node, call("1", "block", tag=mark)))

        async with anyio.create_task_group() as group:
            group.start_soon(blocked)
            started = await logged(log, event="started", tag=mark)
            script.unlink()
            os.kill(started["pid"], signal.SIGKILL)
        (answer,) = await run_calls(node, call("2", "pid"))
        agent = ReactAgent("gone", ScriptedChatModel(["never"]), tools=[toolset])
        with pytest.raises(MCPError, match="cannot connect to MCP server 'test-tools'"):
            await agent.invoke("go")
    assert killed[0].response_data.startswith("Error: MCPError: MCP server 'test-tools' closed")
    assert answer.response_data == (
        "Error: MCPError: cannot connect to MCP server 'test-tools': Connection closed (tool 'pid')"
    )


# --- errors out of the block ----------------------------------------------------------------


async def test_errors_leave_the_block_as_themselves(
    make_toolset: ToolsetFactory, server_log: Path
) -> None:
    """An error raised inside ``async with toolset`` leaves it as itself, never inside an
    ``ExceptionGroup``: ``except MCPError`` and ``except RunCancelled`` around the block
    match (a run cancelled then awaited in it raises ``RunCancelled``), and any other error
    is the very object raised."""
    mark = tag()
    model = ScriptedChatModel([asks(("c1", "block", {"tag": mark})), "never"])

    async def cancel_a_run_inside() -> None:
        async with make_toolset() as toolset:
            agent = ReactAgent("mcp", model, tools=[toolset])
            async with agent.start("go") as run:
                await logged(server_log, event="started", tag=mark)
                await run.cancel()
                await run.result()

    with pytest.raises(RunCancelled):
        await cancel_a_run_inside()
    matched: list[MCPError] = []
    try:
        async with make_toolset() as toolset:
            raise MCPError("from the block", server=toolset.server_name)
    except MCPError as exc:  # what the README's example does
        matched.append(exc)
    assert [e.server for e in matched] == ["test-tools"]
    error = ValueError("mine")
    with pytest.raises(ValueError, match="mine") as caught:
        async with make_toolset():
            raise error
    assert caught.value is error
    assert toolset.tools == ()


# --- structure -----------------------------------------------------------------------------


async def test_leaving_the_context_leaves_no_task_and_no_process(
    transport: str, make_toolset: ToolsetFactory
) -> None:
    """Inside ``async with`` the session has tasks (and, for stdio, a process); after it,
    every task has ended and the subprocess has exited."""
    before = live_tasks()
    async with make_toolset() as toolset:
        assert live_tasks() > before
        pid_tool = toolset.resolve("pid")
        assert pid_tool is not None
        pid = int((await pid_tool.func()).text)
    assert live_tasks() == before
    assert toolset.tools == ()
    if transport == "stdio":
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


async def test_not_open_is_an_error(make_toolset: ToolsetFactory) -> None:
    """A toolset used outside its ``async with`` says so (and resolves nothing)."""
    toolset = make_toolset()
    assert toolset.resolve("echo") is None
    agent = ReactAgent("closed", ScriptedChatModel(["x"]), tools=[toolset])
    with pytest.raises(RuntimeError, match="is not open: use it inside `async with toolset:`"):
        await agent.invoke("go")

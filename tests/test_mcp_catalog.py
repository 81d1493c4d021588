"""Beside tool calls, against a real server: resources, templates, prompts, subscriptions,
tool annotations (approval, retries) and structured output.

The server is ``tests/mcp_servers/catalog_server.py`` (the SDK's ``MCPServer``), over
stdio (a new process per test) and streamable HTTP (one process for the module; tests
use their own URIs and tags on it), on asyncio and trio.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from helpers import asks, call
from mcp_support import http_server, responses, run_calls, stdio_toolset, toolset_maker

from reactcore import (
    AgentToolNode,
    Approve,
    AssistantMessage,
    FilePart,
    ImagePart,
    MemorySaver,
    ReactAgent,
    Resume,
    RunnableConfig,
    TextPart,
    ToolAnnotations,
    UserMessage,
)
from reactcore.hooks import HumanInTheLoopHook
from reactcore.interceptors import ToolRetryInterceptor
from reactcore.mcp import (
    MCPError,
    MCPToolset,
    Prompt,
    PromptArgument,
    Resource,
    ResourceContents,
    ResourceTemplate,
)
from reactcore.testing import ScriptedChatModel

pytestmark = pytest.mark.anyio

CATALOG = Path(__file__).parent / "mcp_servers" / "catalog_server.py"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
Factory = Callable[..., MCPToolset]


@pytest.fixture(scope="module")
def catalog_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The catalog server over streamable HTTP, for the module."""
    with http_server("http", tmp_path_factory.mktemp("catalog") / "log", CATALOG) as url:
        yield url


@pytest.fixture(params=["stdio", "http"])
def catalog(request: pytest.FixtureRequest, catalog_url: str) -> Factory:
    """Make a toolset on the catalog server over the test's transport (options passed on)."""
    return toolset_maker(request.param, CATALOG, catalog_url)


def tag() -> str:
    return uuid.uuid4().hex[:8]


async def test_resources_templates_and_prompts_are_reactcore_values(catalog: Factory) -> None:
    """Resources and templates are listed as ``Resource`` / ``ResourceTemplate``; reading one
    gives its contents as content parts (text, an image, a file for other bytes); prompts
    are listed as ``Prompt`` and filled in as reactcore messages (text, and an image part)."""
    async with catalog() as toolset:
        resources = await toolset.list_resources()
        templates = await toolset.list_resource_templates()
        todo = await toolset.read_resource("notes://todo")
        dot = await toolset.read_resource("images://dot.png")
        report = await toolset.read_resource("files://report.bin")
        from_template = await toolset.read_resource("notes://nothing")
        prompts = await toolset.list_prompts()
        review = await toolset.get_prompt("review", {"code": "x = 1"})
        look = await toolset.get_prompt("look")
    assert resources[0] == Resource(
        "notes://todo", "todo", description="What to buy.", mime_type="text/plain"
    )
    assert [r.uri for r in resources] == ["notes://todo", "images://dot.png", "files://report.bin"]
    assert templates == (
        ResourceTemplate(
            "notes://{title}", "note", description="A note by its title.", mime_type="text/plain"
        ),
    )
    assert todo == (ResourceContents("notes://todo", TextPart("milk, eggs"), "text/plain"),)
    assert todo[0].text == "milk, eggs"
    assert dot == (
        ResourceContents("images://dot.png", ImagePart.from_bytes(PNG, "image/png"), "image/png"),
    )
    octets = "application/octet-stream"
    assert report[0].part == FilePart.from_bytes(bytes(range(7)), octets, "report.bin")
    assert from_template[0].text == "no note nothing"
    assert prompts == (
        Prompt(
            "review",
            description="Ask for a code review.",
            arguments=(PromptArgument("code", required=True), PromptArgument("language")),
        ),
        Prompt("look", description="Ask about an image."),
    )
    assert review.description == "Ask for a code review."
    assert review.messages == (
        UserMessage("Review this python code:\nx = 1"),
        AssistantMessage("I will look at naming first."),
    )
    assert look.messages == (UserMessage("", parts=(ImagePart.from_bytes(PNG, "image/png"),)),)


async def test_errors_of_resources_and_prompts_name_the_server(catalog: Factory) -> None:
    """An unknown resource or prompt is an ``MCPError`` naming the server and saying what it
    answered; prompt arguments that are not strings are a ``TypeError`` before asking."""
    async with catalog() as toolset:
        with pytest.raises(MCPError, match="MCP server 'catalog' answered with an error: "):
            await toolset.read_resource("nope://x")
        with pytest.raises(MCPError, match="MCP server 'catalog' answered with an error: "):
            await toolset.get_prompt("nope")
        with pytest.raises(TypeError, match="get_prompt arguments must be a mapping of str"):
            await toolset.get_prompt("review", {"code": 1})  # type: ignore[dict-item]
        with pytest.raises(TypeError, match="read_resource uri must be a non-empty str"):
            await toolset.read_resource(5)  # type: ignore[arg-type]


async def test_subscribing_where_the_server_offers_no_subscriptions(tmp_path: Path) -> None:
    """A server whose capabilities do not offer ``resources.subscribe`` (the SDK's
    ``MCPServer`` as it comes): ``subscribe`` raises ``MCPError`` saying so, and nothing
    is left subscribed."""
    async with stdio_toolset(tmp_path / "log") as toolset:
        with pytest.raises(MCPError, match="'test-tools' does not offer resource subscriptions"):
            async with toolset.subscribe("notes://todo"):
                pass


async def test_a_subscription_receives_the_servers_update(catalog: Factory) -> None:
    """``subscribe(uri)`` asks the server (``resources/subscribe``); its update notification
    reaches the block's stream as the URI; after the block the server is told
    (``resources/unsubscribe``: no more updates), and the toolset's closing ends a
    stream still open."""
    uri = f"notes://{tag()}"
    async with catalog() as toolset:
        node = AgentToolNode(tool_resolver=toolset.resolve)
        async with toolset.subscribe(uri) as updates:
            (told,) = await run_calls(node, call("1", "touch", uri=uri, text="new"))
            assert told.response_data == "true"  # the server had the subscription
            with anyio.fail_after(10):
                assert await updates.receive() == uri
        (told,) = await run_calls(node, call("2", "touch", uri=uri, text="newer"))
        assert told.response_data == "false"  # unsubscribed on leaving the block
        async with toolset.subscribe(uri) as updates:
            pass
        open_updates = toolset.subscribe(uri)
        stream = await open_updates.__aenter__()
    with anyio.fail_after(5):
        assert [u async for u in stream] == []  # ended by the toolset's closing
    await open_updates.__aexit__(None, None, None)


async def test_a_subscription_is_made_again_after_a_reconnection() -> None:
    """The server's process crashes while a subscription is open: the next call starts a
    new process, the toolset subscribes there again, and its update reaches the same
    stream; leaving the block unsubscribes on the new session."""
    uri = "notes://again"
    async with toolset_maker("stdio", CATALOG, "")() as toolset:
        node = AgentToolNode(tool_resolver=toolset.resolve)
        async with toolset.subscribe(uri) as updates:
            (crashed,) = await run_calls(node, call("1", "crash"))
            assert "closed the connection during the call" in crashed.response_data
            (told,) = await run_calls(node, call("2", "touch", uri=uri, text="after"))
            assert told.response_data == "true"  # the new process has the subscription
            with anyio.fail_after(10):
                assert await updates.receive() == uri
        (told,) = await run_calls(node, call("3", "touch", uri=uri, text="later"))
        assert told.response_data == "false"


async def test_the_model_reads_resources_through_the_resource_tool(catalog: Factory) -> None:
    """``resource_tool=True``: a ``read_resource`` tool (read-only, idempotent) naming the
    server's resources and templates; its answer holds the text, and an image as a part."""
    model = ScriptedChatModel(
        [asks(("1", "cat_read_resource", {"uri": "images://dot.png"})), "a dot"]
    )
    async with catalog(resource_tool=True, prefix="cat_") as toolset:
        reader = toolset.resolve("cat_read_resource")
        assert reader is not None
        assert reader.annotations == ToolAnnotations(read_only=True, idempotent=True)
        assert "- notes://todo: todo — What to buy." in reader.description
        assert "- notes://{title}: note — A note by its title." in reader.description
        result = await ReactAgent("a", model, tools=[toolset]).invoke("what is the dot?")
    (answer,) = responses(result.messages)
    assert answer.response_data == "images://dot.png: [image: image/png, 16 bytes]"
    assert answer.parts == (ImagePart.from_bytes(PNG, "image/png"),)


async def test_annotations_ask_approval_and_decide_retries(catalog: Factory) -> None:
    """The server's annotations stay on each tool. ``approve_destructive`` pauses before the
    destructive tool only; ``ToolRetryInterceptor`` retries the idempotent flaky tool (the
    model sees its success) and not the non-idempotent one (the model sees its first
    failure; the server was called once)."""
    again, once = tag(), tag()
    script = [
        asks(("d1", "delete_note", {"title": "old"}), ("r1", "read_flaky", {"tag": again})),
        asks(("a1", "append_flaky", {"tag": once}), ("n1", "attempts", {"tag": once})),
        "done",
    ]
    async with catalog() as toolset:
        delete = toolset.resolve("delete_note")
        assert delete is not None and delete.annotations is not None
        assert delete.annotations.destructive is True
        agent = ReactAgent(
            "a",
            ScriptedChatModel(script),
            tools=[toolset],
            hooks=[HumanInTheLoopHook(approve_destructive=True)],
            interceptors=[ToolRetryInterceptor(initial_delay=0.001)],
            saver=MemorySaver(),
        )
        config = RunnableConfig(thread_id=tag())
        paused = await agent.invoke("tidy up", config)
        assert paused.status == "interrupted"
        assert [c.id for c in paused.interrupt.calls] == ["d1"]
        done = await agent.invoke(Resume({"d1": Approve()}), config)
    answers = {r.id: r for r in responses(done.messages)}
    assert answers["d1"].response_data == "deleted old"
    assert answers["r1"].response_data == f"ok {again}"
    assert answers["a1"].is_error
    assert f"flaky {once}" in answers["a1"].response_data
    assert answers["n1"].response_data == "1"


async def test_structured_output_is_checked_and_kept_as_data(catalog: Factory) -> None:
    """A tool with an output schema: fitting ``structuredContent`` is the response's data;
    content that does not fit answers the model with an error saying where."""
    async with catalog() as toolset:
        node = AgentToolNode(tool_resolver=toolset.resolve)
        good, bad = await run_calls(
            node, call("1", "forecast", city="Oslo"), call("2", "bad_forecast")
        )
    assert good.data == {"city": "Oslo", "temp": 21.5}
    assert not good.is_error
    assert bad.is_error
    assert (
        "MCP server 'catalog' answered with structured content that does not fit the tool's "
        "output schema: temp: 'warm' is not of type 'number'"
    ) in bad.response_data


async def test_blobs_that_are_not_base64_are_an_error() -> None:
    """A resource blob that is not base64 is an ``MCPError`` naming the server and URI."""
    import mcp.types as mt

    from reactcore.mcp._content import resource_part

    blob = mt.BlobResourceContents(uri="files://x", blob="not base64!")
    with pytest.raises(MCPError, match="'s' sent the resource files://x whose data is not"):
        resource_part(blob, "s")
    fine = mt.BlobResourceContents(uri="files://x", blob=base64.b64encode(PNG).decode())
    assert resource_part(fine, "s") == ImagePart.from_bytes(PNG, "image/png")

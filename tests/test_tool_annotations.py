"""Tool annotations on any tool (``ToolAnnotations``), and the built-ins that read them:
``HumanInTheLoopHook(approve_destructive=True)`` and ``ToolRetryInterceptor``'s default
of not retrying tools known not to be idempotent. No server: local ``@tool``s carry the
annotations an MCP server would give (``test_mcp_catalog.py`` does it with a server)."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import call

from reactcore import (
    AssistantMessage,
    MemorySaver,
    ReactAgent,
    RunnableConfig,
    Tool,
    ToolAnnotations,
    tool,
)
from reactcore.hooks import HumanInTheLoopHook
from reactcore.interceptors import ToolRetryInterceptor
from reactcore.testing import ScriptedChatModel

pytestmark = pytest.mark.anyio

FAST = {"initial_delay": 0.001}
IDEMPOTENT = ToolAnnotations(idempotent=True)
READ_ONLY = ToolAnnotations(read_only=True)
NOT_IDEMPOTENT = ToolAnnotations(idempotent=False)
UNSAID = ToolAnnotations(title="Says nothing of idempotence")


def flaky(name: str, annotations: ToolAnnotations | None, calls: list[str]) -> Tool:
    """A tool that fails its first call and answers ``ok`` after."""

    @tool(name=name, annotations=annotations)
    async def run() -> str:
        calls.append(name)
        if calls.count(name) == 1:
            raise ConnectionError(f"{name} failed")
        return "ok"

    return run


@pytest.mark.parametrize(
    ("annotations", "retried"),
    [
        (None, True),  # claims nothing: retried, as before annotations existed
        (IDEMPOTENT, True),
        (READ_ONLY, True),
        (NOT_IDEMPOTENT, False),
        (UNSAID, False),  # MCP's default idempotentHint is false
    ],
)
async def test_tool_retry_skips_tools_known_not_to_be_idempotent(
    annotations: ToolAnnotations | None, retried: bool
) -> None:
    """By default a failed call is retried unless its tool's annotations say it is neither
    idempotent nor read-only; then the model gets the first failure and the tool ran once.
    ``idempotent_only=False`` retries every tool."""
    for retry, expect in (
        (ToolRetryInterceptor(**FAST), retried),
        (ToolRetryInterceptor(idempotent_only=False, **FAST), True),
    ):
        calls: list[str] = []
        model = ScriptedChatModel([AssistantMessage("", [call("c1", "t")]), "done"])
        agent = ReactAgent("a", model, tools=[flaky("t", annotations, calls)], interceptors=[retry])
        result = await agent.invoke("go")
        answer = result.messages[-2].responses[0]
        assert (answer.response_data == "ok", len(calls)) == (expect, 2 if expect else 1)


async def test_approve_destructive_pauses_for_tools_marked_destructive() -> None:
    """``approve_destructive=True`` pauses before calls of a tool whose annotations say it
    is destructive (and not read-only), with or without ``approve_on``; tools without
    annotations, or marked not destructive, run."""
    runs: list[str] = []

    def named(name: str, annotations: ToolAnnotations | None) -> Tool:
        @tool(name=name, annotations=annotations)
        async def run() -> str:
            runs.append(name)
            return name

        return run

    tools = [
        named("wipe", ToolAnnotations(destructive=True)),
        named("odd", ToolAnnotations(destructive=True, read_only=True)),  # the hint means nothing
        named("add", ToolAnnotations(destructive=False)),
        named("plain", None),
    ]
    script = [AssistantMessage("", [call(t.name[0], t.name) for t in tools]), "done"]
    agent = ReactAgent(
        "a",
        ScriptedChatModel(script),
        tools=tools,
        hooks=[HumanInTheLoopHook(approve_destructive=True)],
        saver=MemorySaver(),
    )
    paused = await agent.invoke("go", RunnableConfig(thread_id="t"))
    assert paused.status == "interrupted"
    assert [c.id for c in paused.interrupt.calls] == ["w"]
    assert runs == []
    assert HumanInTheLoopHook().approve_destructive is False


@pytest.mark.parametrize(
    ("field", "value"), [("destructive", "yes"), ("idempotent", 1), ("title", 5)]
)
async def test_annotations_are_checked_and_kept_on_the_tool(field: str, value: Any) -> None:
    """A hint that is not a bool (or a title that is not a str) is a ``TypeError`` naming
    the field; ``@tool(annotations=...)`` keeps the value on the ``Tool``, default None."""
    with pytest.raises(TypeError, match=field):
        ToolAnnotations(**{field: value})
    with pytest.raises(TypeError, match="annotations"):
        tool(name="t", annotations={"destructive": True})(lambda: None)  # type: ignore[arg-type]

    @tool(annotations=READ_ONLY)
    def look() -> str:
        return "seen"

    @tool
    def plain() -> str:
        return "plain"

    assert look.annotations == READ_ONLY
    assert plain.annotations is None

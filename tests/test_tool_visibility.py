"""A tool hidden from the model never runs.

Model interceptors narrow ``request.tools`` (tool selection, per-user or per-tenant
policies); the LLM node records on the assistant message the tools the model was shown
in the request that produced its calls (``visible_tools``), the record survives a
checkpoint, and the tool node refuses a call of a tool it knows but the model was not
shown — without calling the tool or its interceptors. Every test runs on asyncio and
trio; those that run tool batches run in sequential and parallel mode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from reactcore import (
    AgentLlmNode,
    AgentToolNode,
    Approve,
    AssistantMessage,
    Edit,
    ModelFallbackInterceptor,
    ModelHandler,
    ModelHTTPError,
    ModelRequest,
    ModelResponse,
    OverAllState,
    ReactAgent,
    Resume,
    RunnableConfig,
    SqliteSaver,
    ToolCallRequest,
    ToolHandler,
    ToolResponseMessage,
    ToolSelectionInterceptor,
    UserMessage,
    tool,
)
from reactcore._checkpoint import Checkpoint, dump_checkpoint, load_checkpoint
from reactcore.hooks import HumanInTheLoopHook
from reactcore.models.scripted import ScriptedChatModel
from tests.helpers import asks, call, calls_state

pytestmark = pytest.mark.anyio

HIDDEN = "Error: Tool not available: delete_all. Available tools: search"


@attrs.define
class Ledger:
    """What ran: the tools themselves, and the tool interceptors' handler calls."""

    tools: list[str] = attrs.field(factory=list)
    intercepted: list[str] = attrs.field(factory=list)

    async def wrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> Any:
        self.intercepted.append(request.call.name)
        return await handler(request)

    def make_tools(self) -> list[Any]:
        @tool
        async def search(query: str) -> str:
            """Search the documents."""
            self.tools.append("search")
            return f"found {query}"

        @tool
        async def delete_all() -> str:
            """Delete every document."""
            self.tools.append("delete_all")
            return "everything deleted"

        return [search, delete_all]


def responses_seen(model: ScriptedChatModel, turn: int) -> list[tuple[str, str, bool]]:
    """(id, text, is_error) of the tool responses the model saw in request ``turn``."""
    message = model.requests[turn].messages[-1]
    assert isinstance(message, ToolResponseMessage)
    return [(r.id, r.response_data, r.is_error) for r in message.responses]


CALLS = asks(("s1", "search", {"query": "q"}), ("d1", "delete_all", {}))


@pytest.mark.parametrize("parallel", [False, True])
async def test_tool_hidden_by_tool_selection_never_runs(parallel: bool) -> None:
    """ToolSelectionInterceptor shows the model only `search`; the model calls
    `delete_all` anyway: it is answered as not available, neither the tool nor the tool
    interceptors' handler is called, and the visible call runs."""
    ledger = Ledger()
    model = ScriptedChatModel([CALLS, "done"])
    agent = ReactAgent(
        "a",
        model,
        tools=ledger.make_tools(),
        interceptors=[ToolSelectionInterceptor(lambda r: ["search"]), ledger],
        parallel_tool_execution=parallel,
    )
    result = await agent.invoke("tidy up")
    assert model.requests[0].tools == ("search",)
    assert result.messages[1].visible_tools == ("search",)
    assert responses_seen(model, 1) == [("s1", "found q", False), ("d1", HIDDEN, True)]
    assert ledger.tools == ["search"]
    assert ledger.intercepted == ["search"]


@attrs.frozen
class TenantPolicy:
    """A custom model interceptor: shows only the tools the run's tenant may use."""

    allowed: dict[str, tuple[str, ...]]

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
        tenant = request.context["tenant"]
        kept = [n for n in request.tools if n in self.allowed[tenant]]
        return await handler(attrs.evolve(request, tools=kept))


@pytest.mark.parametrize("parallel", [False, True])
async def test_tool_hidden_by_a_custom_interceptor_never_runs(parallel: bool) -> None:
    """A `wrap_model_call` filtering by tenant hides `delete_all` from tenant "guest":
    the guest's call is refused; the admin's same call runs."""
    policy = TenantPolicy({"guest": ("search",), "admin": ("search", "delete_all")})
    for tenant, ran, answer in [
        ("guest", ["search"], (HIDDEN, True)),
        ("admin", ["search", "delete_all"], ("everything deleted", False)),
    ]:
        ledger = Ledger()
        model = ScriptedChatModel([CALLS, "done"])
        agent = ReactAgent(
            "a",
            model,
            tools=ledger.make_tools(),
            interceptors=[policy, ledger],
            parallel_tool_execution=parallel,
        )
        await agent.invoke("tidy up", RunnableConfig(context={"tenant": tenant}))
        assert responses_seen(model, 1)[1][1:] == answer, tenant
        assert sorted(ledger.tools) == sorted(ran)
        assert sorted(ledger.intercepted) == sorted(ran)


@pytest.mark.parametrize("parallel", [False, True])
async def test_hidden_tool_stays_hidden_after_a_resume_from_sqlite(
    parallel: bool, tmp_path: Path
) -> None:
    """The run pauses for approval of both calls and is checkpointed in SQLite; a new
    agent on the same file, without any interceptor, resumes it: editing the hidden call
    is refused, approving it answers "not available" — the visible set came back from
    the checkpoint, it was not recomputed."""
    path = tmp_path / "runs.db"
    hitl = HumanInTheLoopHook({"search": True, "delete_all": True})
    first = Ledger()
    async with SqliteSaver(path) as saver:
        agent = ReactAgent(
            "a",
            ScriptedChatModel([CALLS]),
            tools=first.make_tools(),
            hooks=[hitl],
            interceptors=[ToolSelectionInterceptor(lambda r: ["search"])],
            saver=saver,
        )
        paused = await agent.invoke("tidy up", RunnableConfig(thread_id="t"))
    assert [c.id for c in paused.interrupt.calls] == ["s1", "d1"]
    second = Ledger()
    model = ScriptedChatModel(["done"])
    async with SqliteSaver(path) as saver:
        agent = ReactAgent(
            "a",
            model,
            tools=second.make_tools(),
            hooks=[hitl],
            interceptors=[second],
            saver=saver,
            parallel_tool_execution=parallel,
        )
        with pytest.raises(ValueError, match="cannot edit call d1: tool 'delete_all' is not"):
            await agent.invoke(Resume({"d1": Edit({})}), RunnableConfig(thread_id="t"))
        result = await agent.invoke(
            Resume({"s1": Approve(), "d1": Approve()}), RunnableConfig(thread_id="t")
        )
    assert result.text == "done"
    assert responses_seen(model, 0) == [("s1", "found q", False), ("d1", HIDDEN, True)]
    assert first.tools == []
    assert second.tools == ["search"]
    assert second.intercepted == ["search"]


@pytest.mark.parametrize("parallel", [False, True])
async def test_node_rule_visible_runs_hidden_refused_unknown_goes_to_resolver(
    parallel: bool,
) -> None:
    """With `visible_tools=("echo", "late")`: echo (own, visible) and late (dynamic,
    visible) run; secret (own, hidden) and extra (dynamic, hidden) are refused even
    though the resolver knows secret; `elsewhere` (known to neither) goes to the
    resolver and runs."""
    ran: list[str] = []

    def make(name: str) -> Any:
        @tool(name=name)
        async def run() -> str:
            ran.append(name)
            return f"{name} ran"

        return run

    echo, secret, late, extra, elsewhere = (
        make(n) for n in ("echo", "secret", "late", "extra", "elsewhere")
    )
    asked: list[str] = []

    def resolver(name: str) -> Any:
        asked.append(name)
        return {"elsewhere": elsewhere, "secret": make("secret")}.get(name)

    node = AgentToolNode([echo, secret], tool_resolver=resolver, parallel_tool_execution=parallel)
    config = RunnableConfig(context={"dynamic_tools": [late, extra]})
    message = AssistantMessage(
        "",
        [call(str(i), n) for i, n in enumerate(["echo", "secret", "late", "extra", "elsewhere"])],
        visible_tools=("echo", "late"),
    )
    update = await node(OverAllState({"messages": [UserMessage("go"), message]}), config)
    texts = [r.response_data for r in update["messages"][-1].responses]
    refused = "Error: Tool not available: {}. Available tools: echo, late"
    assert texts == [
        "echo ran",
        refused.format("secret"),
        "late ran",
        refused.format("extra"),
        "elsewhere ran",
    ]
    assert sorted(ran) == ["echo", "elsewhere", "late"]
    assert asked == ["elsewhere"]


async def test_without_a_record_every_tool_may_run() -> None:
    """A hand-built assistant message (visible_tools=None) lets every tool run."""
    ledger = Ledger()
    node = AgentToolNode(ledger.make_tools())
    update = await node(calls_state(call("d1", "delete_all")))
    assert update["messages"][-1].responses[0].response_data == "everything deleted"


async def test_return_direct_ignores_a_hidden_tool() -> None:
    """A hidden return_direct tool does not end the run: its call is refused and the
    batch goes back to the model."""

    @tool(return_direct=True)
    async def finish() -> str:
        return "final"

    node = AgentToolNode([finish])
    hidden = AssistantMessage("", [call("f1", "finish")], visible_tools=())
    visible = attrs.evolve(hidden, visible_tools=("finish",))
    for message, direct in [(hidden, False), (visible, True)]:
        update = await node(OverAllState({"messages": [UserMessage("go"), message]}))
        answer = update["messages"][-1]
        assert (answer.metadata.get("finish_reason") == "return_direct") is direct
    assert answer.responses[0].response_data == "final"


async def test_dynamic_tools_added_for_the_request_are_visible() -> None:
    """A dynamic tool the interceptor adds and names in `tools` is visible and runs; one
    added but not named in `tools` was never shown to the model and is refused."""

    @tool
    async def shown() -> str:
        return "shown ran"

    @tool
    async def unlisted() -> str:
        return "unlisted ran"

    class Adds:
        async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
            more = attrs.evolve(
                request, tools=(*request.tools, "shown"), dynamic_tools=(shown, unlisted)
            )
            return await handler(more)

    ledger = Ledger()
    model = ScriptedChatModel([asks(("1", "shown", {}), ("2", "unlisted", {})), "ok"])
    agent = ReactAgent("a", model, tools=ledger.make_tools(), interceptors=[Adds()])
    result = await agent.invoke("go")
    assert result.messages[1].visible_tools == ("search", "delete_all", "shown")
    assert [r.response_data for r in result.messages[2].responses] == [
        "shown ran",
        "Error: Tool not available: unlisted. Available tools: search, delete_all, shown",
    ]


# --- what the LLM node records ----------------------------------------------------------


def named(name: str) -> Any:
    """A tool called ``name`` answering its name."""

    @tool(name=name)
    async def run() -> str:
        return name

    return run


async def test_recorded_from_the_request_the_fallback_model_got() -> None:
    """The primary (shown a, b) fails; the fallback (shown only b, by an interceptor
    inside the fallback that narrows for it) answers with calls: the record is the
    fallback's request, the one that produced the calls."""

    class NarrowForFallback:
        async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
            if request.chat_model is not None:
                request = attrs.evolve(request, tools=("b",))
            return await handler(request)

    a_and_b = [named(n) for n in ("a", "b")]
    primary = ScriptedChatModel([ModelHTTPError("down", status_code=500)])
    fallback = ScriptedChatModel([asks(("1", "a", {}))])
    node = AgentLlmNode(
        primary,
        tools=a_and_b,
        model_interceptors=[ModelFallbackInterceptor([fallback]), NarrowForFallback()],
    )
    update = await node(OverAllState({"messages": [UserMessage("go")]}))
    assert primary.requests[0].tools == ("a", "b")
    assert update["messages"][0].visible_tools == ("b",)


async def test_recorded_when_an_interceptor_rebuilds_or_makes_the_answer() -> None:
    """An interceptor that rebuilds the model's answer (dropping the record) gets the
    last request sent; one that answers without any model gets the request as the node
    built it; an answer without calls records nothing."""

    class Rebuild:
        async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
            if request.messages[-1] == UserMessage("canned"):
                return ModelResponse(AssistantMessage("", [call("1", "a")]))
            narrowed = attrs.evolve(request, tools=("a",))
            got = await handler(narrowed)
            return ModelResponse(AssistantMessage("rebuilt", got.message.tool_calls))

    model = ScriptedChatModel([asks(("1", "b", {})), "no calls"])
    node = AgentLlmNode(model, tools=[named(n) for n in ("a", "b")], model_interceptors=[Rebuild()])

    async def answer(text: str) -> AssistantMessage:
        update = await node(OverAllState({"messages": [UserMessage(text)]}))
        message: AssistantMessage = update["messages"][0]
        return message

    assert (await answer("go")).visible_tools == ("a",)
    assert (await answer("canned")).visible_tools == ("a", "b")
    assert (await answer("again")).visible_tools is None


def test_the_record_round_trips_through_a_checkpoint_and_old_layout_is_kept() -> None:
    """`visible_tools` is dumped and loaded back as written; a message without it is
    dumped without the key (the schema-1 layout), and loads back as None."""
    recorded = AssistantMessage("", [call("1", "a")], visible_tools=("a", "b"))
    plain = AssistantMessage("", [call("2", "a")])
    state = OverAllState({"messages": [UserMessage("go"), recorded, plain]})
    text = dump_checkpoint(Checkpoint("t", state, "tools", 1, "r"))
    assert text.count('"visible_tools"') == 1
    loaded = load_checkpoint(text).state["messages"]
    assert loaded[1].visible_tools == ("a", "b")
    assert loaded[2].visible_tools is None
    assert loaded == [UserMessage("go"), recorded, plain]


async def test_resolver_cannot_unhide_a_hidden_tool_under_another_name() -> None:
    """A forgiving ``tool_resolver`` that maps ``Delete-All`` to the node's ``delete_all``
    tool does not bring back a tool hidden from the model: the call is answered "not
    available" and nothing runs. A resolver's own tool (unknown to the node) still runs."""
    ledger = Ledger()
    search, delete_all = ledger.make_tools()

    @tool
    async def archive() -> str:
        """Archive the documents."""
        ledger.tools.append("archive")
        return "archived"

    by_name = {"delete_all": delete_all, "archive": archive}
    node = AgentToolNode(
        [search, delete_all],
        tool_resolver=lambda name: by_name.get(name.replace("-", "_").lower()),
        tool_interceptors=[ledger],
    )
    asked = AssistantMessage(
        "", [call("d1", "Delete-All"), call("a1", "Archive")], visible_tools=("search",)
    )
    update = await node(OverAllState({"messages": [UserMessage("go"), asked]}))
    message = update["messages"][-1]
    assert isinstance(message, ToolResponseMessage)
    texts = [(r.is_error, r.response_data) for r in message.responses]
    assert texts == [
        (True, "Error: Tool not available: Delete-All. Available tools: search"),
        (False, "archived"),
    ]
    assert ledger.tools == ["archive"] and ledger.intercepted == ["Archive"]

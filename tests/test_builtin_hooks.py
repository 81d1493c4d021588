"""Built-in hooks (ModelCallLimitHook, ToolCallLimitHook, HumanInTheLoopHook) and the hook
protocol, end to end
through ``ReactAgent.invoke`` with a ``ScriptedChatModel``.

Every async test runs on asyncio and trio.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from reactcore import (
    ApprovalPolicy,
    Approve,
    AssistantMessage,
    CallLimitExceeded,
    HumanInTheLoopHook,
    MaxIterationsExceeded,
    MemorySaver,
    ModelCallLimitHook,
    ModelHandler,
    ModelRequest,
    ModelResponse,
    ReactAgent,
    Reject,
    Resume,
    RunnableConfig,
    Tool,
    ToolCall,
    ToolCallLimitHook,
    ToolCallRequest,
    ToolCallResponse,
    ToolHandler,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from reactcore.models.scripted import ScriptedChatModel
from tests.helpers import call

pytestmark = pytest.mark.anyio

MODEL_COUNT = "_model_call_count_"


def calling(name: str, turns: int, per_turn: int = 1) -> list[AssistantMessage]:
    """``turns`` model answers, each asking for ``per_turn`` calls of ``name`` (unique ids)."""
    return [
        AssistantMessage("", [call(f"{name}-{t}-{i}", name) for i in range(per_turn)])
        for t in range(turns)
    ]


def counting_tool(name: str, runs: list[str]) -> Tool:
    """A tool named ``name`` that records each execution in ``runs``."""

    @tool(name=name)
    async def run() -> str:
        runs.append(name)
        return f"{name} ran"

    return run


def tool_responses(messages: Sequence[Any]) -> list[ToolResponse]:
    """Every tool response of the conversation, in order."""
    return [r for m in messages if isinstance(m, ToolResponseMessage) for r in m.responses]


def seen_responses(request: ModelRequest) -> list[ToolResponse]:
    """The tool responses a model request shows the model."""
    return tool_responses(request.messages)


# --- ModelCallLimitHook -------------------------------------------------------------------


async def test_model_run_limit_ends_the_run_with_a_message() -> None:
    """run_limit=2 with a model that keeps calling a tool: exactly 2 model calls, then the
    run ends (no error) with the final text 'Model call limits exceeded: …'."""
    runs: list[str] = []
    model = ScriptedChatModel(calling("ping", 5))
    agent = ReactAgent(
        "a",
        model,
        tools=[counting_tool("ping", runs)],
        hooks=[ModelCallLimitHook(run_limit=2)],
    )
    result = await agent.invoke("go")
    assert len(model.requests) == 2
    assert result.model_calls == 2
    assert runs == ["ping", "ping"]
    assert result.text.startswith("Model call limits exceeded")
    assert "run limit (2/2)" in result.text
    assert isinstance(result.messages[-1], AssistantMessage)


async def test_model_run_limit_error_raises_call_limit_exceeded_itself() -> None:
    """exit_behavior="error" raises CallLimitExceeded itself (not wrapped in an
    ExceptionGroup), after exactly run_limit model calls."""
    model = ScriptedChatModel(calling("ping", 5))
    agent = ReactAgent(
        "a",
        model,
        tools=[counting_tool("ping", [])],
        hooks=[ModelCallLimitHook(run_limit=2, exit_behavior="error")],
    )
    with pytest.raises(CallLimitExceeded, match="Model call limits exceeded") as info:
        await agent.invoke("go")
    assert type(info.value) is CallLimitExceeded
    assert len(model.requests) == 2


@pytest.mark.parametrize(("prior", "allowed"), [(0, 3), (2, 1), (3, 0)])
async def test_model_thread_limit_counts_from_the_state(prior: int, allowed: int) -> None:
    """thread_limit counts the calls already recorded in the state (``_model_call_count_``
    of a dict input, as a checkpoint would restore it): with thread_limit=3 and N prior
    calls the run makes 3 - N calls, and the count in the final state is 3."""
    model = ScriptedChatModel(calling("ping", 5))
    agent = ReactAgent(
        "a",
        model,
        tools=[counting_tool("ping", [])],
        hooks=[ModelCallLimitHook(thread_limit=3)],
    )
    result = await agent.invoke({"messages": [UserMessage("go")], MODEL_COUNT: prior})
    assert len(model.requests) == allowed
    assert result.text.startswith("Model call limits exceeded")
    assert "thread limit (3/3)" in result.text
    assert result.state[MODEL_COUNT] == 3


async def test_model_limit_not_reached_leaves_the_answer_alone() -> None:
    """Under the limits the run ends normally with the model's answer, and the thread count
    in the state is the number of calls made."""
    model = ScriptedChatModel([*calling("ping", 1), "done"])
    agent = ReactAgent(
        "a",
        model,
        tools=[counting_tool("ping", [])],
        hooks=[ModelCallLimitHook(thread_limit=5, run_limit=5)],
    )
    result = await agent.invoke("go")
    assert result.text == "done"
    assert result.state[MODEL_COUNT] == 2


async def test_model_run_limit_is_per_run_even_with_a_reused_config() -> None:
    """The run limit counts this run only: a second ``invoke`` with the same
    ``RunnableConfig`` (as a conversation reuses its thread's config) starts again from 0."""
    model = ScriptedChatModel(["one", "two"])
    agent = ReactAgent("a", model, hooks=[ModelCallLimitHook(run_limit=1)])
    config = RunnableConfig(thread_id="t")
    first = await agent.invoke("go", config)
    second = await agent.invoke("again", config)
    assert (first.text, second.text) == ("one", "two")
    assert len(model.requests) == 2


@pytest.mark.parametrize("field", ["thread_limit", "run_limit"])
@pytest.mark.parametrize("hook", [ModelCallLimitHook, ToolCallLimitHook])
def test_negative_limit_is_a_value_error(hook: Any, field: str) -> None:
    """A negative limit is a misuse, refused at construction with ValueError."""
    with pytest.raises(ValueError, match=field):
        hook(**{field: -1})


@pytest.mark.parametrize("hook", [ModelCallLimitHook, ToolCallLimitHook])
def test_unknown_exit_behavior_is_a_value_error(hook: Any) -> None:
    """An exit_behavior the hook does not know is refused, not silently treated as another."""
    with pytest.raises(ValueError, match="exit_behavior"):
        hook(run_limit=1, exit_behavior="stop")


# --- ToolCallLimitHook --------------------------------------------------------------------


async def test_tool_limit_continue_blocks_the_calls_past_the_limit() -> None:
    """exit "continue", run_limit=1, one answer with 2 calls: the first runs, the second
    gets 'Error: Tool call limits exceeded: …' without running, and the model is called
    again and sees both responses, in call order."""
    runs: list[str] = []
    model = ScriptedChatModel([*calling("ping", 1, per_turn=2), "done"])
    agent = ReactAgent(
        "a", model, tools=[counting_tool("ping", runs)], hooks=[ToolCallLimitHook(run_limit=1)]
    )
    result = await agent.invoke("go")
    assert runs == ["ping"]
    assert result.text == "done"
    assert len(model.requests) == 2
    seen = seen_responses(model.requests[1])
    assert [r.id for r in seen] == ["ping-0-0", "ping-0-1"]
    assert seen[0] == ToolResponse("ping-0-0", "ping", "ping ran")
    assert seen[1].is_error
    assert seen[1].response_data.startswith("Error: Tool call limits exceeded: run limit")
    # one ToolResponseMessage answers the turn (the partial one was replaced)
    assert sum(isinstance(m, ToolResponseMessage) for m in result.messages) == 1


async def test_tool_limit_continue_all_blocked_goes_back_to_the_model() -> None:
    """When every call of a turn is past the limit, none runs and the model is asked again
    (the run does not end on the unanswered turn)."""
    runs: list[str] = []
    model = ScriptedChatModel([*calling("ping", 2), "done"])
    agent = ReactAgent(
        "a", model, tools=[counting_tool("ping", runs)], hooks=[ToolCallLimitHook(run_limit=1)]
    )
    result = await agent.invoke("go")
    assert runs == ["ping"]
    assert result.text == "done"
    assert len(model.requests) == 3
    last_seen = seen_responses(model.requests[2])
    assert last_seen[-1].is_error
    assert last_seen[-1].response_data.startswith("Error: Tool call limits exceeded")


async def test_tool_limit_tool_name_counts_only_that_tool() -> None:
    """With tool_name="a", calls of other tools are neither counted nor blocked."""
    runs: list[str] = []
    answer = AssistantMessage("", [call("1", "a"), call("2", "b"), call("3", "b"), call("4", "a")])
    model = ScriptedChatModel([answer, "done"])
    agent = ReactAgent(
        "x",
        model,
        tools=[counting_tool("a", runs), counting_tool("b", runs)],
        hooks=[ToolCallLimitHook(run_limit=1, tool_name="a")],
    )
    result = await agent.invoke("go")
    assert sorted(runs) == ["a", "b", "b"]
    seen = seen_responses(model.requests[1])
    assert [r.is_error for r in seen] == [False, False, False, True]
    assert result.state["_tool_call_count_a_"] == 1


async def test_tool_limit_end_answers_every_call_and_ends() -> None:
    """exit "end": past the limit, every call of the turn gets the error response (none
    runs, even those within the limit) and the run ends with 'Tool call limits
    exceeded: …' without another model call."""
    runs: list[str] = []
    model = ScriptedChatModel([*calling("ping", 1), *calling("ping", 1, per_turn=2), "unused"])
    agent = ReactAgent(
        "a",
        model,
        tools=[counting_tool("ping", runs)],
        hooks=[ToolCallLimitHook(run_limit=2, exit_behavior="end")],
    )
    result = await agent.invoke("go")
    assert runs == ["ping"]
    assert len(model.requests) == 2
    assert result.text.startswith("Tool call limits exceeded: run limit")
    last_turn = result.messages[-2]
    assert isinstance(last_turn, ToolResponseMessage)
    assert [r.id for r in last_turn.responses] == ["ping-0-0", "ping-0-1"]
    assert all(r.is_error for r in last_turn.responses)
    assert all(r.response_data.startswith("Error: Tool call limits") for r in last_turn.responses)


async def test_tool_limit_error_raises_call_limit_exceeded_itself() -> None:
    """exit "error" raises CallLimitExceeded itself, before any call of the turn runs."""
    runs: list[str] = []
    model = ScriptedChatModel(calling("ping", 1, per_turn=2))
    agent = ReactAgent(
        "a",
        model,
        tools=[counting_tool("ping", runs)],
        hooks=[ToolCallLimitHook(run_limit=1, exit_behavior="error")],
    )
    with pytest.raises(CallLimitExceeded, match="Tool call limits exceeded") as info:
        await agent.invoke("go")
    assert type(info.value) is CallLimitExceeded
    assert runs == []


async def test_tool_thread_limit_counts_from_the_state() -> None:
    """thread_limit counts tool calls already recorded in the state of a dict input."""
    runs: list[str] = []
    model = ScriptedChatModel([*calling("ping", 1, per_turn=2), "done"])
    agent = ReactAgent(
        "a",
        model,
        tools=[counting_tool("ping", runs)],
        hooks=[ToolCallLimitHook(thread_limit=3)],
    )
    result = await agent.invoke({"messages": [UserMessage("go")], "_tool_call_count_*_": 2})
    assert runs == ["ping"]
    assert result.state["_tool_call_count_*_"] == 3
    assert seen_responses(model.requests[1])[1].response_data == (
        "Error: Tool call limits exceeded: thread limit (3/3); 1 of the 2 calls of this turn "
        "not run"
    )


async def test_tool_limit_continue_message_counts_the_calls_let_through() -> None:
    """The text the model reads reports the counts after the calls of the turn that ran:
    thread limit 3 with 1 call before, a turn of 3 calls of 'ping' → 2 run, the third
    reads '(3/3)' and how many of the turn did not run; the run count too."""
    model = ScriptedChatModel([*calling("ping", 1, per_turn=3), "done"])
    agent = ReactAgent(
        "a",
        model,
        tools=[counting_tool("ping", [])],
        hooks=[ToolCallLimitHook(thread_limit=3, run_limit=2, tool_name="ping")],
    )
    state = {"messages": [UserMessage("go")], "_tool_call_count_ping_": 1}
    result = await agent.invoke(state)
    seen = seen_responses(model.requests[1])
    assert [r.is_error for r in seen] == [False, False, True]
    assert seen[2].response_data == (
        "Error: Tool call limits exceeded: thread limit (3/3), run limit (2/2); 1 of the 3 "
        "'ping' calls of this turn not run"
    )
    assert result.state["_tool_call_count_ping_"] == 3


@pytest.mark.parametrize("exit_behavior", ["end", "error"])
async def test_tool_limit_end_and_error_messages_count_before_the_turn(
    exit_behavior: str,
) -> None:
    """With "end" and "error" no call of the turn runs, so the counts are those before it,
    and the text says how many the turn asked for: one call made (run limit 2), a turn of
    3 → 'run limit (1/2); this turn asked for 3 more calls, none was run'."""
    runs: list[str] = []
    model = ScriptedChatModel([*calling("ping", 1), *calling("ping", 1, per_turn=3), "x"])
    hook = ToolCallLimitHook(run_limit=2, exit_behavior=exit_behavior)  # type: ignore[arg-type]
    agent = ReactAgent("a", model, tools=[counting_tool("ping", runs)], hooks=[hook])
    expected = (
        "Tool call limits exceeded: run limit (1/2); this turn asked for 3 more calls, none was run"
    )
    if exit_behavior == "error":
        with pytest.raises(CallLimitExceeded) as info:
            await agent.invoke("go")
        assert str(info.value) == expected
    else:
        result = await agent.invoke("go")
        assert result.text == expected
        last_turn = result.messages[-2]
        assert isinstance(last_turn, ToolResponseMessage)
        assert {r.response_data for r in last_turn.responses} == {f"Error: {expected}"}
    assert runs == ["ping"]


async def test_two_tool_limits_each_count_their_own_tool() -> None:
    """Two ToolCallLimitHooks for different tools both apply to the same turn: the first
    one blocking a call does not stop the second from counting and blocking its tool."""
    runs: list[str] = []
    answer = AssistantMessage("", [call("1", "a"), call("2", "a"), call("3", "b"), call("4", "b")])
    model = ScriptedChatModel([answer, "done"])
    agent = ReactAgent(
        "x",
        model,
        tools=[counting_tool("a", runs), counting_tool("b", runs)],
        hooks=[
            ToolCallLimitHook(run_limit=1, tool_name="a"),
            ToolCallLimitHook(run_limit=1, tool_name="b"),
        ],
    )
    result = await agent.invoke("go")
    assert runs == ["a", "b"]
    seen = seen_responses(model.requests[1])
    assert [r.id for r in seen] == ["1", "2", "3", "4"]
    assert [r.is_error for r in seen] == [False, True, False, True]
    assert result.state["_tool_call_count_b_"] == 1


async def test_model_limit_still_counts_when_a_tool_limit_jumps() -> None:
    """A ToolCallLimitHook listed before a ModelCallLimitHook (and jumping after the model)
    does not make the model calls go uncounted: the model limit still ends the run."""
    model = ScriptedChatModel(calling("ping", 6, per_turn=2))
    agent = ReactAgent(
        "a",
        model,
        tools=[counting_tool("ping", [])],
        hooks=[ToolCallLimitHook(run_limit=1), ModelCallLimitHook(run_limit=3)],
        max_iterations=5,
    )
    result = await agent.invoke("go")
    assert len(model.requests) == 3
    assert result.text.startswith("Model call limits exceeded")


# --- the hook protocol through ReactAgent -------------------------------------------------


class Recorder:
    """A hook recording ``<name>:<position>`` for every position it runs at."""

    def __init__(self, name: str, log: list[str], order: int | None = None) -> None:
        self.name = name
        self.log = log
        if order is not None:
            self.order = order

    async def before_agent(self, state: Any, config: Any) -> None:
        self.log.append(f"{self.name}:before_agent")

    async def before_model(self, state: Any, config: Any) -> None:
        self.log.append(f"{self.name}:before_model")

    async def after_model(self, state: Any, config: Any) -> None:
        self.log.append(f"{self.name}:after_model")

    async def after_agent(self, state: Any, config: Any) -> None:
        self.log.append(f"{self.name}:after_agent")


async def test_hooks_run_by_order_then_position() -> None:
    """Hooks run sorted by ``order`` (default 0), ties kept in list position, at every
    point of the loop: before_agent, before_model, after_model, after_agent."""
    log: list[str] = []
    hooks = [Recorder("x", log), Recorder("y", log, order=-1), Recorder("z", log)]
    agent = ReactAgent("a", ScriptedChatModel(["done"]), hooks=hooks)
    await agent.invoke("go")
    expected = [
        f"{name}:{position}"
        for position in ("before_agent", "before_model", "after_model", "after_agent")
        for name in ("y", "x", "z")
    ]
    assert log == expected


def test_duplicate_hook_names_are_refused_at_construction() -> None:
    """Two hooks with one name → ValueError when the agent is built."""
    with pytest.raises(ValueError, match="model_call_limit"):
        ReactAgent(
            "a",
            ScriptedChatModel([]),
            hooks=[ModelCallLimitHook(run_limit=1), ModelCallLimitHook(thread_limit=1)],
        )


class Jumper:
    """A before_model hook that sets ``marker`` and jumps to ``target``."""

    def __init__(self, target: str, can_jump_to: tuple[str, ...]) -> None:
        self.name = "jumper"
        self.target = target
        self.can_jump_to = can_jump_to

    async def before_model(self, state: Any, config: Any) -> dict[str, Any]:
        return {"marker": 1, "messages": [AssistantMessage("stopped")], "jump_to": self.target}


async def test_jump_to_an_undeclared_target_is_a_value_error() -> None:
    """A hook jumping to a target missing from its ``can_jump_to`` → ValueError, and the
    model is never called."""
    model = ScriptedChatModel(["unused"])
    agent = ReactAgent("a", model, hooks=[Jumper("end", ("model",))])
    with pytest.raises(ValueError, match="jumper"):
        await agent.invoke("go")
    assert model.requests == []


async def test_jump_to_is_applied_but_not_stored_in_the_state() -> None:
    """A declared jump takes effect (the run ends before the model) and the rest of the
    update is merged, but ``jump_to`` itself never lands in the state."""
    model = ScriptedChatModel(["unused"])
    agent = ReactAgent("a", model, hooks=[Jumper("end", ("end",))])
    result = await agent.invoke("go")
    assert model.requests == []
    assert result.text == "stopped"
    assert result.state["marker"] == 1
    assert "jump_to" not in result.state


class NotAnInterceptor:
    def wrap(self) -> None:
        """Neither wrap_model_call nor wrap_tool_call."""


def test_object_without_wrap_methods_is_a_type_error() -> None:
    """An object in ``interceptors`` with neither wrap method → TypeError at construction."""
    with pytest.raises(TypeError, match="neither wrap_model_call nor wrap_tool_call"):
        ReactAgent("a", ScriptedChatModel([]), interceptors=[NotAnInterceptor()])


class Both:
    """An interceptor wrapping both model calls and tool calls, recording each."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        self.seen.append("model")
        return await handler(request)

    async def wrap_tool_call(
        self, request: ToolCallRequest, handler: ToolHandler
    ) -> ToolCallResponse:
        self.seen.append(f"tool:{request.call.name}")
        return await handler(request)


async def test_interceptor_with_both_methods_joins_both_chains() -> None:
    """One object with wrap_model_call and wrap_tool_call wraps every model call and every
    tool call of the run."""
    both = Both()
    model = ScriptedChatModel([*calling("ping", 1), "done"])
    agent = ReactAgent("a", model, tools=[counting_tool("ping", [])], interceptors=[both])
    await agent.invoke("go")
    assert both.seen == ["model", "tool:ping", "model"]


class ToolBringer:
    """A hook bringing its own tool named ``ping``."""

    name = "bringer"

    def __init__(self, runs: list[str]) -> None:
        @tool(name="ping")
        async def hook_ping() -> str:
            runs.append("hook")
            return "from hook"

        self.tools = [hook_ping]


async def test_hook_tools_come_first() -> None:
    """Hook tools are listed before the agent's, and the model can call them."""
    runs: list[str] = []

    @tool
    async def other() -> str:
        return "other"

    model = ScriptedChatModel([*calling("ping", 1), "done"])
    agent = ReactAgent("a", model, tools=[other], hooks=[ToolBringer(runs)])
    await agent.invoke("go")
    assert model.requests[0].tools == ("ping", "other")
    assert runs == ["hook"]
    assert seen_responses(model.requests[1])[0].response_data == "from hook"


def test_hook_tool_named_like_an_agent_tool_is_refused() -> None:
    """A hook's tool and an agent's tool with one name: a ValueError at construction that
    names the name, both functions and where each came from — no tool is shadowed."""
    with pytest.raises(ValueError, match="two tools are named 'ping'") as info:
        ReactAgent(
            "a",
            ScriptedChatModel([]),
            tools=[counting_tool("ping", [])],
            hooks=[ToolBringer([])],
        )
    message = str(info.value)
    assert "ToolBringer.__init__.<locals>.hook_ping (hook 'bringer') and " in message
    assert message.endswith(
        "counting_tool.<locals>.run (the agent's tools); tool names must be unique "
        "(rename one with @tool(name=...))"
    )


async def test_max_iterations_still_applies_with_hooks() -> None:
    """Limit hooks do not replace max_iterations: without a limit that trips, a model that
    keeps calling tools still ends in MaxIterationsExceeded."""
    model = ScriptedChatModel(calling("ping", 5))
    agent = ReactAgent(
        "a",
        model,
        tools=[counting_tool("ping", [])],
        hooks=[ModelCallLimitHook(run_limit=10)],
        max_iterations=3,
    )
    with pytest.raises(MaxIterationsExceeded):
        await agent.invoke("go")
    assert len(model.requests) == 3


# --- HumanInTheLoopHook -------------------------------------------------------------------


def approval_agent(hook: HumanInTheLoopHook, runs: list[str], **options: Any) -> ReactAgent:
    """An agent with tools ``send`` and ``read`` (recording their runs) and ``hook``."""
    script = [AssistantMessage("", [call("s1", "send"), call("r1", "read")]), "done"]
    tools = [counting_tool("send", runs), counting_tool("read", runs)]
    return ReactAgent(
        "a", ScriptedChatModel(script), tools=tools, hooks=[hook], saver=MemorySaver(), **options
    )


async def test_approve_on_a_list_of_names_pauses_before_those_tools() -> None:
    """approve_on=["send"] (a list, as the API promised) pauses the run before any call of
    the batch runs, waiting for the send call only; approving it runs both, once."""
    runs: list[str] = []
    agent = approval_agent(HumanInTheLoopHook(["send"]), runs)
    config = RunnableConfig(thread_id="t")
    paused = await agent.invoke("go", config)
    assert paused.status == "interrupted"
    assert [c.id for c in paused.interrupt.calls] == ["s1"]
    assert runs == []
    done = await agent.invoke(Resume({"s1": Approve()}), config)
    assert done.text == "done"
    assert sorted(runs) == ["read", "send"]


async def test_approve_on_accepts_names_and_maps() -> None:
    """A list, tuple or set of names gives each the default policy; a map keeps the given
    policy, True means the default one, and False leaves the tool out."""
    policy = ApprovalPolicy("a human checks every mail")
    assert HumanInTheLoopHook(("send",)).approve_on == {"send": ApprovalPolicy()}
    assert HumanInTheLoopHook({"send", "read"}).approve_on.keys() == {"send", "read"}
    mapped = HumanInTheLoopHook({"send": policy, "read": True, "other": False})
    assert mapped.approve_on == {"send": policy, "read": ApprovalPolicy()}


@pytest.mark.parametrize(
    ("approve_on", "got"),
    [
        ("send", "got str 'send'"),
        (5, "got int 5"),
        ({"send": "yes"}, "got 'yes' for 'send'"),
        ([3], "got the key 3"),
    ],
)
async def test_approve_on_of_another_kind_is_a_type_error_at_construction(
    approve_on: Any, got: str
) -> None:
    """A string (which is iterable, but not a list of names), a number, a map to something
    other than a policy or a bool, or a name that is not a string: TypeError when the hook
    is built, saying what was expected and what was given."""
    with pytest.raises(TypeError, match="approve_on must be tool names") as info:
        HumanInTheLoopHook(approve_on)
    assert got in str(info.value)


async def test_unknown_tool_in_approve_on_is_a_value_error_listing_the_tools() -> None:
    """A name the agent has no tool for → ValueError when the agent is built, naming the
    unknown tools and listing the agent's."""
    with pytest.raises(ValueError, match="approve_on names tools") as info:
        approval_agent(HumanInTheLoopHook(["send", "sned", "zap"]), [])
    assert str(info.value) == (
        "hook 'human_in_the_loop': approve_on names tools the agent does not have: sned, zap "
        "(the agent's tools: read, send)"
    )


def resolving_agent(
    called: ToolCall, resolver: Any, hook: HumanInTheLoopHook, tools: Sequence[Tool] = ()
) -> tuple[ReactAgent, ScriptedChatModel]:
    """An agent (with a saver) whose model asks for ``called`` then says "done", finding
    tools through ``resolver``; and its model."""
    model = ScriptedChatModel([AssistantMessage("", [called]), "done"])
    agent = ReactAgent(
        "a", model, tools=tools, tool_resolver=resolver, hooks=[hook], saver=MemorySaver()
    )
    return agent, model


async def test_tool_names_are_not_checked_when_tools_come_at_run_time() -> None:
    """With a tool_resolver (tools known only at run time) the agent does not check the
    names, nor when the hook says check_tool_names=False (dynamic tools); the resolver's
    tool is then paused for like any other."""
    runs: list[str] = []
    late = counting_tool("late", runs)
    agent, _ = resolving_agent(call("l1", "late"), {"late": late}.get, HumanInTheLoopHook(["late"]))
    paused = await agent.invoke("go", RunnableConfig(thread_id="t"))
    assert [c.name for c in paused.interrupt.calls] == ["late"]
    assert runs == []
    unchecked = HumanInTheLoopHook(["dynamic"], check_tool_names=False)
    assert approval_agent(unchecked, []).hooks_in_order == [unchecked]


# --- Hooks see the tool that will run, after resolution ----------------------------------


def forgiving(*tools: Tool) -> Any:
    """A resolver that forgives the model's spelling: ``send-email`` and ``Send_Email``
    find the tool ``send_email``."""
    by_name = {t.name: t for t in tools}
    return lambda name: by_name.get(name.replace("-", "_").lower())


@pytest.mark.parametrize("where", ["agent_tool", "resolver_only"])
async def test_approval_applies_to_the_resolved_tool_not_the_name_written(where: str) -> None:
    """approve_on={"send_email": …} and a resolver mapping ``send-email`` to the
    ``send_email`` tool: a model call of ``send-email`` pauses for approval (the policy is
    applied to the tool that will run, not to the name the model wrote) and nothing is
    sent; approving it sends once, rejecting it sends nothing. The same whether
    ``send_email`` is also one of the agent's tools or comes from the resolver only."""
    for decision in ("approve", "reject"):
        sent: list[str] = []
        send = counting_tool("send_email", sent)
        agent, _ = resolving_agent(
            call("m1", "send-email"),
            forgiving(send),
            HumanInTheLoopHook({"send_email": ApprovalPolicy("check every mail")}),
            tools=[send] if where == "agent_tool" else [],
        )
        config = RunnableConfig(thread_id="t")
        paused = await agent.invoke("mail the attacker", config)
        assert paused.status == "interrupted"
        assert [(c.id, c.name) for c in paused.interrupt.calls] == [("m1", "send-email")]
        assert sent == []
        answer = Approve() if decision == "approve" else Reject("not allowed")
        done = await agent.invoke(Resume({"m1": answer}), config)
        assert done.text == "done"
        assert sent == (["send_email"] if decision == "approve" else [])


async def test_tool_limit_counts_the_resolved_tool_whatever_name_was_written() -> None:
    """ToolCallLimitHook(tool_name="send_email", run_limit=1) counts every call the
    resolver maps to ``send_email`` — ``send-email``, ``Send_Email``, ``send_email`` — as
    that tool's: one runs, the other two are answered with the limit error; a call of
    another tool is not counted."""
    runs: list[str] = []
    send, read = counting_tool("send_email", runs), counting_tool("read", runs)
    calls = [call("1", "send-email"), call("2", "Send_Email"), call("3", "read")]
    calls.append(call("4", "send_email"))
    model = ScriptedChatModel([AssistantMessage("", calls), "done"])
    agent = ReactAgent(
        "x",
        model,
        tools=[read],
        tool_resolver=forgiving(send),
        hooks=[ToolCallLimitHook(run_limit=1, tool_name="send_email")],
    )
    result = await agent.invoke("go")
    assert sorted(runs) == ["read", "send_email"]
    seen = {r.id: r for r in seen_responses(model.requests[1])}
    assert [seen[i].is_error for i in "1234"] == [False, True, False, True]
    assert seen["2"].response_data.startswith("Error: Tool call limits exceeded")
    assert result.state["_tool_call_count_send_email_"] == 1


async def test_hooks_and_the_node_see_one_resolution_per_model_answer() -> None:
    """A resolver whose answer changes during the run (a toolset whose tools change) is
    asked once per model answer: the approval hook and the tool node see the same tool. A
    call that resolved to nothing when the hook looked is answered "not available" — never
    run unapproved because the resolver later found a tool."""
    sent: list[str] = []
    send = counting_tool("send_email", sent)
    asked: list[str] = []

    def fickle(name: str) -> Tool | None:
        asked.append(name)
        return send if len(asked) > 1 else None

    hook = HumanInTheLoopHook(["send_email"])
    agent, model = resolving_agent(call("m1", "send-email"), fickle, hook)
    result = await agent.invoke("go", RunnableConfig(thread_id="t"))
    assert result.status == "finished"
    assert sent == [] and asked == ["send-email"]
    answer = seen_responses(model.requests[1])[0]
    assert answer.is_error and answer.response_data.startswith("Error: Tool not available")

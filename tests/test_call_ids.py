"""Every tool call has exactly one id: one answer, one approval decision.

The LLM node re-keys empty and repeated ids as a model's answer enters the state
(empty → ``call_<index>``, repeated → ``<id>_<n>``); the tool node refuses a hand-built
state with two calls under one id. Every test runs on asyncio and trio; those that run
tool batches run in sequential and parallel mode.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reactcore import (
    AgentLlmNode,
    AgentToolNode,
    Approve,
    OverAllState,
    ReactAgent,
    Reject,
    Resume,
    RunnableConfig,
    SqliteSaver,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from reactcore._llm_node import unique_call_ids
from reactcore.hooks import HumanInTheLoopHook
from reactcore.models.scripted import ScriptedChatModel
from tests.helpers import asks, call, calls_state

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["a", "b"], ["a", "b"]),
        (["c1", "c1"], ["c1", "c1_2"]),
        (["", "c1", "c1", "c1_2", ""], ["call_0", "c1", "c1_3", "c1_2", "call_4"]),
        (["call_1", "", "call_1_2"], ["call_1", "call_1_3", "call_1_2"]),
        (["x", "x", "x"], ["x", "x_2", "x_3"]),
    ],
)
def test_rekeying_is_deterministic_and_unique(ids: list[str], expected: list[str]) -> None:
    """Empty ids become call_<index>, repeats <id>_<n> avoiding every other id of the
    message; unique ids are kept; names and arguments are untouched."""
    calls = [ToolCall(i, f"t{n}", f'{{"n": {n}}}') for n, i in enumerate(ids)]
    out = unique_call_ids(calls)
    assert [c.id for c in out] == expected
    assert [(c.name, c.arguments) for c in out] == [(c.name, c.arguments) for c in calls]


@pytest.mark.parametrize("stream", [True, False])
async def test_llm_node_rekeys_repeated_ids_as_the_answer_enters(stream: bool) -> None:
    """A model answering two calls under `d1` (streamed or whole) enters the state as
    `d1` and `d1_2`; the model's next request carries those ids."""
    model = ScriptedChatModel([asks(("d1", "t", {"x": "a"}), ("d1", "t", {"x": "b"}))])
    node = AgentLlmNode(model)
    config = RunnableConfig(metadata={"_stream_": stream})
    update = await node(OverAllState({"messages": [UserMessage("go")]}), config)
    calls = update["messages"][0].tool_calls
    assert [(c.id, c.arguments) for c in calls] == [("d1", '{"x": "a"}'), ("d1_2", '{"x": "b"}')]


async def test_llm_node_gives_empty_ids_their_index() -> None:
    """Whole (non-streamed) answers may carry empty ids: they become call_<index>."""
    model = ScriptedChatModel([asks(("", "t", {}), ("", "t", {}))])
    config = RunnableConfig(metadata={"_stream_": False})
    update = await AgentLlmNode(model)(OverAllState({"messages": [UserMessage("go")]}), config)
    assert [c.id for c in update["messages"][0].tool_calls] == ["call_0", "call_1"]


@pytest.mark.parametrize("parallel", [False, True])
async def test_tool_node_refuses_calls_sharing_an_id(parallel: bool) -> None:
    """A hand-built state with two calls under `d1` is a ValueError naming the id; no
    call runs (no path answers two calls under one id)."""
    ran: list[str] = []

    @tool
    async def echo(x: str) -> str:
        ran.append(x)
        return x

    node = AgentToolNode([echo], parallel_tool_execution=parallel)
    state = calls_state(call("d1", "echo", x="a"), call("d1", "echo", x="b"), call("e", "echo"))
    with pytest.raises(ValueError, match="share an id: 'd1'"):
        await node(state)
    assert ran == []


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("stream", [True, False])
async def test_approval_of_one_of_two_calls_under_one_id_runs_only_that_call(
    parallel: bool, stream: bool, tmp_path: Path
) -> None:
    """The model asks `send_email(to=boss)` and `send_email(to=attacker)`, both as `c1`.
    They pause as `c1` and `c1_2`; a new agent on the same SQLite file resumes with
    `Resume({"c1": Approve()})`: `c1_2` still waits (nothing runs yet); rejecting it
    sends exactly the boss email and ends the run with one answer per call, paired by
    id."""
    sent: list[str] = []

    @tool
    async def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    def agent(model: ScriptedChatModel, saver: SqliteSaver) -> ReactAgent:
        return ReactAgent(
            "a",
            model,
            tools=[send_email],
            hooks=[HumanInTheLoopHook({"send_email": True})],
            saver=saver,
            parallel_tool_execution=parallel,
        )

    def config() -> RunnableConfig:
        return RunnableConfig(thread_id="t", metadata={"_stream_": stream})

    path = tmp_path / "runs.db"
    twice = asks(("c1", "send_email", {"to": "boss"}), ("c1", "send_email", {"to": "attacker"}))
    async with SqliteSaver(path) as saver:
        paused = await agent(ScriptedChatModel([twice]), saver).invoke("mail", config())
    assert [(c.id, c.arguments) for c in paused.interrupt.calls] == [
        ("c1", '{"to": "boss"}'),
        ("c1_2", '{"to": "attacker"}'),
    ]
    model = ScriptedChatModel(["done"])
    async with SqliteSaver(path) as saver:
        again = await agent(model, saver).invoke(Resume({"c1": Approve()}), config())
        assert sent == []
        assert [c.id for c in again.interrupt.calls] == ["c1_2"]
        result = await agent(model, saver).invoke(Resume({"c1_2": Reject("no")}), config())
    assert sent == ["boss"]
    assert result.text == "done"
    asking, answers = model.requests[0].messages[-2:]
    assert isinstance(answers, ToolResponseMessage)
    assert [c.id for c in asking.tool_calls] == [r.id for r in answers.responses]
    assert [(r.id, r.response_data, r.is_error) for r in answers.responses] == [
        ("c1", "sent to boss", False),
        ("c1_2", "no", True),
    ]

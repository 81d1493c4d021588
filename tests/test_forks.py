"""Forks and time travel (``saver.fork``, ``saver.history``, the edits), on
``MemorySaver``, ``SqliteSaver`` and ``PostgresSaver`` alike.

Forking a thread at any checkpoint and replaying the same scripted answers gives back
the original thread's later checkpoints; a fork stores only what it adds (its parent's
history is read, never copied); an edited fork goes on from its edit; a thread with
forks is not deleted; forks of forks read through every ancestor.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reactcore import (
    AssistantMessage,
    OverAllState,
    ReactAgent,
    RunnableConfig,
    ThreadHasForks,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from reactcore.savers import (
    AddedMessage,
    CallRef,
    Checkpoint,
    MemorySaver,
    SqliteSaver,
    change_arguments,
    drop_tool_result,
    replace_answer,
)
from reactcore.savers._log import SNAPSHOT_EVERY
from reactcore.savers._postgres import PostgresSaver
from reactcore.testing import ScriptedChatModel
from tests import pg
from tests.test_checkpoint import relaxed
from tests.test_savers import KINDS, open_saver

pytestmark = pytest.mark.anyio


@pytest.fixture(params=KINDS)
async def saver(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """Each saver in turn, fresh."""
    async with open_saver(request.param, tmp_path) as opened:
        yield opened


@tool
async def echo(text: str) -> str:
    """Give ``text`` back, twice."""
    return text * 2


def agent_on(saver: Any, answers: list[AssistantMessage]) -> ReactAgent:
    """An agent answering from ``answers``, its tool calls run one at a time (the
    order of the checkpoints of a batch is then the same in every run)."""
    return ReactAgent(
        "forks",
        model=ScriptedChatModel(answers),
        tools=[echo],
        saver=saver,
        parallel_tool_execution=False,
    )


def asks(*calls: tuple[str, str]) -> AssistantMessage:
    return AssistantMessage("", [ToolCall(i, "echo", f'{{"text": "{t}"}}') for i, t in calls])


def conversation(checkpoint: Checkpoint) -> tuple[Any, ...]:
    """What a replay must give back: everything but which run, when, and the step
    number within the run (a run resumed on a fork counts its steps from 1)."""
    return (
        dict(checkpoint.state),
        checkpoint.next,
        checkpoint.model_calls,
        checkpoint.interrupt,
        checkpoint.checkpoint_id,
    )


# --- replaying a fork gives back the original ---------------------------------------------

few = settings(relaxed, max_examples=8)  # (each example forks at every checkpoint)

turns = st.lists(
    st.lists(st.integers(min_value=1, max_value=2), max_size=2),  # calls per tool round
    min_size=1,
    max_size=2,
)


def scripts(rounds: list[list[int]]) -> list[list[AssistantMessage]]:
    """Per turn, the model's answers: a round of tool calls per entry, then a text."""
    ids = itertools.count()
    script = []
    for turn, calls in enumerate(rounds):
        answers: list[AssistantMessage] = []
        for n in calls:
            answers.append(asks(*((f"c{next(ids)}", f"t{turn}") for _ in range(n))))
        script.append([*answers, AssistantMessage(f"answer {turn}")])
    return script


async def replay_every_fork(saver: Any, rounds: list[list[int]]) -> None:
    """Run the turns of ``rounds`` on a thread; fork it at each checkpoint and replay
    the answers from there: the fork's checkpoints are the original's, and it stores
    what its own checkpoints add, not its parent's history."""
    run = uuid.uuid4().hex[:8]
    original = f"o-{run}"
    script = scripts(rounds)
    for turn, answers in enumerate(script):
        await agent_on(saver, answers).invoke(f"turn {turn}", RunnableConfig(thread_id=original))
    expected = await saver.list(original)
    total = (await saver.statistics(original)).stored_bytes
    for k, at in enumerate(expected, 1):
        fork = f"f-{run}-{k}"
        made = await saver.fork(original, str(k), fork)
        assert conversation(made) == conversation(at) and made.thread_id == fork
        assert (await saver.statistics(fork)).stored_bytes == 0
        # Replay: the answers the model had not given yet at checkpoint k, then the
        # turns after it.
        given = sum(isinstance(m, AssistantMessage) for m in at.state["messages"])
        turn = sum(isinstance(m, UserMessage) for m in at.state["messages"]) - 1
        done = sum(len(a) for a in script[:turn])
        if at.next != "end":
            rest = script[turn][given - done :]
            await agent_on(saver, rest).invoke(None, RunnableConfig(thread_id=fork))
        for later in range(turn + 1, len(script)):
            config = RunnableConfig(thread_id=fork)
            await agent_on(saver, script[later]).invoke(f"turn {later}", config)
        got = await saver.list(fork)
        assert [conversation(c) for c in got] == [conversation(c) for c in expected]
        assert {c.thread_id for c in got} == {fork}
        # Only what it adds: the bytes of its own records and messages, which are the
        # original's after checkpoint k (up to the digits of the times of its records
        # and of its segments' ids).
        stats = await saver.statistics(fork)
        assert stats.checkpoints == len(expected) - k
        prefix = f"p-{run}-{k}"
        for checkpoint in expected[:k]:
            await saver.put(prefix, attrs.evolve(checkpoint, thread_id=prefix))
        after = total - (await saver.statistics(prefix)).stored_bytes
        assert abs(stats.stored_bytes - after) <= 6 * stats.checkpoints
        if k < len(expected):
            assert stats.stored_bytes < total


@few
@given(turns)
def test_a_fork_replayed_gives_back_the_original_on_memory_and_sqlite(
    tmp_path_factory: Any, rounds: list[list[int]]
) -> None:
    """Random runs (turns of tool rounds, one or two calls each): forking at any
    checkpoint and replaying the same answers gives the original's later checkpoints
    exactly (conversation, next step, model calls, ids); the fork stores only what it
    adds (memory and SQLite; PostgreSQL below)."""
    folder = tmp_path_factory.mktemp("forks")

    async def check() -> None:
        for kind in ("memory", "sqlite"):
            async with open_saver(kind, folder) as opened:
                await replay_every_fork(opened, rounds)

    anyio.run(check)


def test_a_fork_replayed_gives_back_the_original_on_postgres() -> None:
    """The same property on PostgreSQL (one schema for every example)."""
    pg.require_server()

    async def check(rounds: list[list[int]], schema: str) -> None:
        async with PostgresSaver(pg.DSN, schema=schema, max_connections=2) as opened:
            await replay_every_fork(opened, rounds)

    with pg.fresh_schema() as schema:

        @few
        @given(turns)
        def replayed(rounds: list[list[int]]) -> None:
            anyio.run(check, rounds, schema)

        replayed()


# --- history ------------------------------------------------------------------------------


async def test_history_says_what_each_step_did(saver: Any) -> None:
    """``history`` gives, per checkpoint, its id, the node that ran, the messages it
    added (kinds, call names and ids) and the thread's status there."""
    answers = [asks(("a", "x"), ("b", "y")), AssistantMessage("done")]
    await agent_on(saver, answers).invoke("hi", RunnableConfig(thread_id="t"))
    steps = await saver.history("t")
    assert [s.checkpoint_id for s in steps] == [str(n) for n in range(1, len(steps) + 1)]
    assert [s.node for s in steps] == ["input", "model", "tools", "tools", "tools", "model"]
    assert steps[0].added == (AddedMessage("user"),)
    assert steps[1].added == (
        AddedMessage("assistant", (CallRef("a", "echo"), CallRef("b", "echo"))),
    )
    assert steps[2].added == (AddedMessage("tool", (CallRef("a", "echo"),)),)
    # The batch's second call completes the partial answer: one message replaced.
    assert steps[3].removed == 1
    assert steps[3].added == (AddedMessage("tool", (CallRef("a", "echo"), CallRef("b", "echo"))),)
    assert [s.status for s in steps] == ["unfinished"] * 5 + ["finished"]
    assert steps[-1].added == (AddedMessage("assistant"),) and steps[-1].next == "end"
    assert await saver.history("nobody") == []


# --- edits --------------------------------------------------------------------------------


async def test_an_edited_fork_goes_on_from_its_edit(saver: Any) -> None:
    """Each edit is stored as the fork's first own checkpoint (marked ``edited``), and
    a run on the fork goes on from it: a replaced answer ends the run or runs its calls;
    a dropped result runs only that call again; changed arguments run the call with
    them. The parent is untouched."""
    answers = [asks(("a", "x"), ("b", "y")), AssistantMessage("done")]
    await agent_on(saver, answers).invoke("hi", RunnableConfig(thread_id="t"))
    before = await saver.list("t")
    batch_done = next(c for c in before if c.next == "model" and len(c.state["messages"]) == 3)
    assert batch_done.checkpoint_id is not None

    # Replace the model's answer by a final one: the fork's run has ended there.
    made = await saver.fork("t", "2", "final", edit=replace_answer(AssistantMessage("no tools")))
    assert made.checkpoint_id == "3" and made.next == "end"
    assert made.metadata["edited"] == "answer"
    assert made.state["messages"][-1] == AssistantMessage("no tools")
    assert [s.node for s in await saver.history("final")] == ["input", "model", "edit"]
    await agent_on(saver, [AssistantMessage("next")]).invoke(
        "more", RunnableConfig(thread_id="final")
    )
    assert (await saver.get("final")).state["messages"][-1] == AssistantMessage("next")

    # Drop one result: only that call runs again.
    made = await saver.fork("t", batch_done.checkpoint_id, "again", edit=drop_tool_result("b"))
    assert made.next == "tools"
    assert [r.id for r in made.state["messages"][-1].responses] == ["a"]
    runs: list[str] = []

    @tool
    async def echo(text: str) -> str:  # the same tool, counting its calls
        """Give ``text`` back, twice."""
        runs.append(text)
        return text * 2

    agent = ReactAgent(
        "forks", model=ScriptedChatModel([AssistantMessage("redone")]), tools=[echo], saver=saver
    )
    await agent.invoke(None, RunnableConfig(thread_id="again"))
    assert runs == ["y"]
    messages = (await saver.get("again")).state["messages"]
    assert [r.response_data for r in messages[-2].responses] == ["xx", "yy"]

    # Change a call's arguments: it runs with them; its neighbour's result is kept.
    made = await saver.fork(
        "t", batch_done.checkpoint_id, "changed", edit=change_arguments("a", {"text": "z"})
    )
    assert made.state["messages"][1].tool_calls[0].arguments == '{"text": "z"}'
    await agent_on(saver, [AssistantMessage("changed")]).invoke(
        None, RunnableConfig(thread_id="changed")
    )
    last_batch = (await saver.get("changed")).state["messages"][-2]
    assert isinstance(last_batch, ToolResponseMessage)
    assert {r.id: r.response_data for r in last_batch.responses} == {"a": "zz", "b": "yy"}

    assert await saver.list("t") == before


async def test_edits_refuse_what_they_cannot_do(saver: Any) -> None:
    """An edit that does not fit the checkpoint (a call of an older batch, no assistant
    message, arguments that are no JSON object, an edit giving no checkpoint) raises a
    ``ValueError``/``TypeError`` naming what is wrong, and no fork is stored."""
    answers = [asks(("a", "x")), asks(("b", "y")), AssistantMessage("done")]
    await agent_on(saver, answers).invoke("hi", RunnableConfig(thread_id="t"))
    with pytest.raises(ValueError, match="call_id 'a' is not a call of the checkpoint's last"):
        await saver.fork("t", "6", "x", edit=drop_tool_result("a"))
    with pytest.raises(ValueError, match="no assistant message"):
        await saver.fork("t", "1", "x", edit=replace_answer(AssistantMessage("hm")))
    with pytest.raises(ValueError, match="arguments must be a JSON object"):
        change_arguments("a", "[1]")
    with pytest.raises(TypeError, match="edit must return a Checkpoint"):
        await saver.fork("t", "2", "x", edit=lambda c: c.state)
    with pytest.raises(TypeError, match="answer must be an AssistantMessage"):
        replace_answer("text")  # type: ignore[arg-type]
    assert await saver.get("x") is None and await saver.history("x") == []


# --- what a fork is -----------------------------------------------------------------------


async def test_fork_refuses_bad_ids(saver: Any) -> None:
    """A fork needs a free new thread id and a checkpoint of the parent: otherwise a
    ``ValueError`` naming the parameter, and nothing is stored."""
    await agent_on(saver, [AssistantMessage("done")]).invoke("hi", RunnableConfig(thread_id="t"))
    await agent_on(saver, [AssistantMessage("done")]).invoke("hi", RunnableConfig(thread_id="u"))
    with pytest.raises(ValueError, match="new_thread_id 'u' names a thread that exists"):
        await saver.fork("t", "1", "u")
    await saver.fork("t", "1", "f")
    with pytest.raises(ValueError, match="new_thread_id 'f' names a thread that exists"):
        await saver.fork("t", "2", "f")
    for unknown in ("0", "3", "x", "99"):
        with pytest.raises(ValueError, match=f"checkpoint_id '{unknown}' names no checkpoint"):
            await saver.fork("t", unknown, "g")
    with pytest.raises(ValueError, match="checkpoint_id '1' names no checkpoint of thread 'no'"):
        await saver.fork("no", "1", "g")
    with pytest.raises(ValueError, match="new_thread_id: a thread id must be a non-empty"):
        await saver.fork("t", "1", "")
    assert await saver.get("g") is None
    assert [i.thread_id for i in await saver.threads(status=None)] == ["f", "t", "u"]


async def test_a_thread_with_forks_is_not_deleted(saver: Any) -> None:
    """``delete`` of a thread that has forks raises ``ThreadHasForks`` naming them and
    deletes nothing; once they are deleted, it goes. A fork keeps reading its parent's
    history while it lives."""
    answers = [asks(("a", "x")), AssistantMessage("done")]
    await agent_on(saver, answers).invoke("hi", RunnableConfig(thread_id="t"))
    before = await saver.list("t")
    await saver.fork("t", "2", "f1")
    await saver.fork("t", "3", "f2")
    with pytest.raises(ThreadHasForks, match="'f1', 'f2' were forked from it") as raised:
        await saver.delete("t")
    assert raised.value.forks == ("f1", "f2") and raised.value.thread_id == "t"
    assert await saver.list("t") == before
    await saver.delete("f1")
    with pytest.raises(ThreadHasForks, match="'f2'"):
        await saver.delete("t")
    assert [c.state for c in await saver.list("f2")] == [c.state for c in before[:3]]
    await saver.delete("f2")
    await saver.delete("t")
    assert await saver.list("t") == [] and await saver.threads(status=None) == []
    assert (await saver.statistics()).stored_bytes == 0


async def test_a_fork_and_its_parent_going_on_differently_keep_their_own(saver: Any) -> None:
    """Forked at the parent's latest checkpoint, then both go on with other answers:
    each reads back its own messages (the fork's are never taken for the parent's at
    the same positions of the log, nor the other way round)."""
    await agent_on(saver, [AssistantMessage("one")]).invoke("hi", RunnableConfig(thread_id="t"))
    await saver.fork("t", "2", "f")
    for thread in ("f", "t"):
        answer = AssistantMessage(f"{thread} goes on")
        await agent_on(saver, [answer]).invoke("more", RunnableConfig(thread_id=thread))
    for thread in ("t", "f"):
        texts = [m.text for m in (await saver.list(thread))[-1].state["messages"]]
        assert texts == ["hi", "one", "more", f"{thread} goes on"]


async def test_forks_of_forks_read_through_every_ancestor(saver: Any) -> None:
    """A fork of a fork taken after the fork's own start reads both ancestors; one
    taken at or before it is a fork of the grandparent (so the middle thread can be
    deleted). Every checkpoint comes back, through ``list`` and by id, and each thread
    stores only its own checkpoints."""
    answers = [asks(("a", "x")), AssistantMessage("one")]
    await agent_on(saver, answers).invoke("hi", RunnableConfig(thread_id="t"))
    await saver.fork("t", "4", "b")  # after the batch: the model answers next
    await agent_on(saver, [AssistantMessage("b answers")]).invoke(
        None, RunnableConfig(thread_id="b")
    )
    # Its own answer, where its parent has another: read from its own rows.
    [*_, answered] = await saver.list("b")
    assert answered.state["messages"][-1] == AssistantMessage("b answers")
    assert (await saver.list("t"))[-1].state["messages"][-1] == AssistantMessage("one")
    await agent_on(saver, [asks(("c", "q")), AssistantMessage("b again")]).invoke(
        "more", RunnableConfig(thread_id="b")
    )
    b = await saver.list("b")
    await saver.fork("b", "7", "c")  # after b's start: reads t, then b
    await saver.fork("b", "2", "d")  # before it: a fork of t
    await agent_on(saver, [AssistantMessage("c answers")]).invoke(
        None, RunnableConfig(thread_id="c")
    )
    c = await saver.list("c")
    assert [x.state for x in c[:7]] == [x.state for x in b[:7]]
    assert c[-1].state["messages"][-1] == AssistantMessage("c answers")
    for checkpoint in c:
        assert checkpoint.checkpoint_id is not None
        assert await saver.get("c", checkpoint.checkpoint_id) == checkpoint
    assert (await saver.statistics("c")).checkpoints == len(c) - 7
    with pytest.raises(ThreadHasForks, match="'c'"):
        await saver.delete("b")
    with pytest.raises(ThreadHasForks, match="'b', 'd'"):
        await saver.delete("t")
    await saver.delete("c")
    await saver.delete("b")
    assert [x.state for x in await saver.list("d")] == [x.state for x in b[:2]]


async def test_forks_survive_reopening_the_store(tmp_path: Path) -> None:
    """A fork stored by one ``SqliteSaver`` reads back, and goes on, through another
    on the same file (the fork lives in the file, not in the saver object)."""
    path = tmp_path / "cp.db"
    async with SqliteSaver(path) as first:
        answers = [asks(("a", "x")), AssistantMessage("one")]
        await agent_on(first, answers).invoke("hi", RunnableConfig(thread_id="t"))
        await first.fork("t", "2", "f")
        expected = await first.list("f")
    async with SqliteSaver(path) as second:
        assert await second.list("f") == expected
        await agent_on(second, answers[1:]).invoke(None, RunnableConfig(thread_id="f"))
        assert [c.state for c in await second.list("f")] == [
            c.state for c in await second.list("t")
        ]


async def test_memory_fork_shares_the_parents_messages() -> None:
    """In ``MemorySaver`` a fork holds no copy of its parent's messages: the objects
    read back are the parent's own."""
    saver = MemorySaver()
    await agent_on(saver, [AssistantMessage("done")]).invoke("hi", RunnableConfig(thread_id="t"))
    await saver.fork("t", "2", "f")
    parent, fork = await saver.get("t"), await saver.get("f")
    assert parent is not None and fork is not None
    assert all(
        a is b for a, b in zip(parent.state["messages"], fork.state["messages"], strict=True)
    )
    assert (await saver.statistics("f")).messages == 0


@tool
async def fetch(key: str) -> str:
    """2 KB for ``key`` (stored apart, as a blob)."""
    return (key * 2048)[:2048]


async def test_forks_across_snapshots_and_blobs(saver: Any) -> None:
    """Forks taken on each side of a snapshot record (every ``SNAPSHOT_EVERY``-th), on
    it, and at the end, of a thread whose tool results are stored apart (blobs): every
    checkpoint of each fork comes back by ``list`` and by id, the large results from the
    parent's rows, and a run goes on from each (resumed mid-run, or with new input)."""
    per_turn = 5  # input, the model's call, the call's result, the batch, the end

    def turn_agent(n: int, first: int = 0) -> ReactAgent:
        answers: list[Any] = [asking(f"k{n}"), "ok"][first:]
        return ReactAgent("forks", model=ScriptedChatModel(answers), tools=[fetch], saver=saver)

    def asking(call_id: str) -> AssistantMessage:
        return AssistantMessage("", [ToolCall(call_id, "fetch", '{"key": "ab"}')])

    turns = SNAPSHOT_EVERY // per_turn + 2
    for n in range(turns):
        await turn_agent(n).invoke(f"turn {n}", RunnableConfig(thread_id="t"))
    original = await saver.list("t")
    assert len(original) == turns * per_turn
    assert (await saver.statistics("t")).blobs == 1
    last_turn = SNAPSHOT_EVERY // per_turn * per_turn
    for k in (last_turn, SNAPSHOT_EVERY + 1, last_turn + per_turn, len(original)):
        fork = f"f{k}"
        await saver.fork("t", str(k), fork)
        listed = await saver.list(fork)
        assert [c.state for c in listed] == [c.state for c in original[:k]]
        for checkpoint in listed[-3:]:
            assert checkpoint.checkpoint_id is not None
            assert await saver.get(fork, checkpoint.checkpoint_id) == checkpoint
        at = original[k - 1]
        if at.next == "end":
            await turn_agent(k).invoke("once more", RunnableConfig(thread_id=fork))
            own = per_turn
        else:  # in the middle of a turn: the model's last answer is still to come
            await turn_agent(k, first=1).invoke(None, RunnableConfig(thread_id=fork))
            own = -k % per_turn
        last = await saver.get(fork)
        assert last is not None and last.next == "end"
        assert last.state["messages"][-2].responses[0].response_data == "ab" * 1024
        assert len(await saver.list(fork)) == k + own
        assert (await saver.statistics(fork)).checkpoints == own


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])  # (MemorySaver keeps any value)
async def test_an_edit_that_cannot_be_stored_leaves_no_fork(kind: str, tmp_path: Path) -> None:
    """When the edited checkpoint cannot be stored (a state value no checkpoint can
    keep: ``TypeError`` from SQLite and PostgreSQL), the fork made for it is deleted
    again: no thread is left without its edit, and the parent can be deleted."""

    def unstorable(checkpoint: Checkpoint) -> Checkpoint:
        state = OverAllState(
            {**checkpoint.state, "lock": object()}, checkpoint.state.key_strategies
        )
        return attrs.evolve(checkpoint, state=state)

    async with open_saver(kind, tmp_path) as saver:
        config = RunnableConfig(thread_id="t")
        await agent_on(saver, [AssistantMessage("done")]).invoke("hi", config)
        with pytest.raises(TypeError):
            await saver.fork("t", "1", "f", edit=unstorable)
        assert await saver.get("f") is None
        assert [i.thread_id for i in await saver.threads(status=None)] == ["t"]
        await saver.delete("t")

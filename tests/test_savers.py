"""The layout every saver shares (``reactcore.savers``): message logs and deltas.

For ``MemorySaver``, ``SqliteSaver`` and ``PostgresSaver`` alike: stored bytes grow
linearly with the turns of a thread (not as their square), an image is stored once
however many checkpoints hold it, a history replaced by a summary or a message removed
starts a new segment of the log and runs resume on the right history, every checkpoint
comes back exactly (by id too, across snapshots), a checkpoint read back dumps
self-contained. Then the layouts written by earlier releases (SQLite 1 and 2,
PostgreSQL 2) upgraded on open, writers that share a file or a database, and SQLite's
query plan for the latest checkpoint.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import attrs
import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reactcore import (
    AssistantMessage,
    ImagePart,
    KeyStrategy,
    Message,
    ModelRequest,
    OverAllState,
    ReactAgent,
    Remove,
    RunnableConfig,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    dump_checkpoint,
    load_checkpoint,
    tool,
)
from reactcore.savers import Checkpoint, MemorySaver, SaverStatistics, SqliteSaver
from reactcore.savers._log import SNAPSHOT_EVERY
from reactcore.savers._postgres import PostgresSaver
from reactcore.savers._sql import STATEMENTS, Dialect
from reactcore.savers._sqlite import _connect
from reactcore.testing import ScriptedChatModel
from tests import pg
from tests.fixtures.make_saver_fixtures import PIXEL, fixture_threads
from tests.test_checkpoint import relaxed

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent / "fixtures"
KINDS = ["memory", "sqlite", "postgres"]


@asynccontextmanager
async def open_saver(kind: str, where: Path) -> AsyncIterator[Any]:
    """A fresh saver of ``kind`` (its file in ``where``, or a schema of its own)."""
    if kind == "memory":
        yield MemorySaver()
    elif kind == "sqlite":
        async with SqliteSaver(where / "cp.db") as sqlite_saver:
            yield sqlite_saver
    else:
        with pg.fresh_schema() as schema:
            async with PostgresSaver(pg.DSN, schema=schema, max_connections=2) as pg_saver:
                yield pg_saver


@pytest.fixture(params=KINDS)
async def saver(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """Each saver in turn, fresh."""
    async with open_saver(request.param, tmp_path) as opened:
        yield opened


def same(got: Checkpoint | None, expected: Checkpoint) -> None:
    """``got`` is ``expected`` exactly: equal, and the same JSON (types, key order)."""
    assert got is not None
    assert got == expected
    assert dump_checkpoint(got) == dump_checkpoint(expected)


# --- an agent with long turns -----------------------------------------------------------


@tool
async def fetch(key: str) -> str:
    """Fetch 10 KB for ``key``."""
    return (key * 10240)[:10240]


def reply(request: ModelRequest) -> AssistantMessage:
    """Asks for ``fetch`` on each user message (two calls in parallel), then answers."""
    last = request.messages[-1]
    if isinstance(last, UserMessage):
        calls = [
            ToolCall(f"{last.text}-{n}", "fetch", json.dumps({"key": f"{last.text}-{n} "}))
            for n in (1, 2)
        ]
        return AssistantMessage("", calls)
    return AssistantMessage(f"{len(request.messages)} messages so far.")


async def run_turns(saver: Any, thread_id: str, turns: int, hooks: Any = ()) -> ReactAgent:
    agent = ReactAgent(
        "long",
        ScriptedChatModel([reply] * (2 * turns)),
        tools=[fetch],
        parallel_tool_execution=True,
        hooks=list(hooks),
        saver=saver,
    )
    for turn in range(turns):
        await agent.invoke(f"turn {turn}", RunnableConfig(thread_id=thread_id))
    return agent


async def test_stored_bytes_grow_linearly_with_the_turns(saver: Any) -> None:
    """A thread of 40 turns (each: two parallel tool calls of 10 KB) stores about twice
    what a thread of 20 turns stores, not four times: a checkpoint stores what its step
    added, never the history again (a size assertion, on the saver's own count)."""
    with anyio.fail_after(120):
        await run_turns(saver, "short", 20)
        await run_turns(saver, "long", 40)
    short, long = await saver.statistics("short"), await saver.statistics("long")
    assert isinstance(short, SaverStatistics)
    assert 1.8 < long.stored_bytes / short.stored_bytes < 2.2
    assert long.stored_bytes < 40 * 2 * 10240 * 1.5  # each result about once
    assert long.messages >= 40 * 4  # every message in the log, once
    assert long.checkpoints == 2 * short.checkpoints


async def test_an_image_is_stored_once_over_many_checkpoints(saver: Any) -> None:
    """A user's image (a 100 KB data URL) stays in every checkpoint of ten turns, but is
    stored once: the thread holds its bytes once, and one blob (SQL savers: the text of
    the image is in exactly one row)."""
    image = PIXEL + "B" * 100_000
    agent = ReactAgent("eyes", ScriptedChatModel(["Nice."] * 10), saver=saver)
    config = RunnableConfig(thread_id="pic")
    await agent.invoke(UserMessage("Look.", [ImagePart(image)]), config)
    for turn in range(9):
        await agent.invoke(f"And now {turn}?", config)
    stats = await saver.statistics("pic")
    assert stats.blobs == 1
    assert len(image) < stats.stored_bytes < len(image) + 40_000
    assert stats.checkpoints == 20
    for checkpoint in await saver.list("pic"):
        assert checkpoint.state["messages"][0].parts[0].url == image
    if not isinstance(saver, MemorySaver):
        assert await rows_holding(saver, "B" * 1000) == 1


async def rows_holding(saver: Any, text: str) -> int:
    """How many rows of the saver's tables hold ``text``."""
    tables = ("checkpoints", "messages", "blobs")
    if isinstance(saver, SqliteSaver):
        with sqlite3.connect(saver.path) as conn:
            query = "SELECT count(*) FROM {} WHERE instr(body, ?) > 0"
            return sum(conn.execute(query.format(t), (text,)).fetchone()[0] for t in tables)
    with psycopg.connect(pg.DSN) as conn:
        found = 0
        for table in tables:
            row = conn.execute(
                f'SELECT count(*) FROM "{saver.schema}".{table} WHERE strpos(body, %s) > 0',
                (text,),
            ).fetchone()
            found += row[0] if row else 0
        return found


@attrs.frozen
class Summarise:
    """A ``before_model`` hook: once the history is longer than ``after`` messages, it
    is replaced by a summary and the last message (every message removed, two added)."""

    after: int
    name: str = "summarise"

    async def before_model(self, state: OverAllState, config: RunnableConfig) -> Any:
        messages = state["messages"]
        if len(messages) <= self.after:
            return None
        summary = SystemMessage(f"Summary of {len(messages) - 1} messages.")
        return {"messages": [*(Remove(m) for m in messages), summary, messages[-1]]}


async def test_a_history_replaced_by_a_summary_is_a_new_segment(saver: Any) -> None:
    """A hook replacing the history by a summary (as summarisation does) starts a new
    segment of the log: the run resumes on the summary, later turns append to it, and
    the checkpoints before still hold the whole history, exactly as they were."""
    with anyio.fail_after(60):
        await run_turns(saver, "t", 4, hooks=[Summarise(after=6)])
    checkpoints = await saver.list("t")
    lengths = [len(c.state["messages"]) for c in checkpoints]
    summaries = [
        i
        for i, c in enumerate(checkpoints)
        if isinstance(c.state["messages"][0], SystemMessage)
        and c.state["messages"][0].text.startswith("Summary")
    ]
    assert summaries and max(lengths[: summaries[0]]) > 6  # the long history, kept
    assert lengths[summaries[0]] == 3  # the summary, the last question, the answer
    assert (await saver.statistics("t")).messages == stored_messages(checkpoints)
    latest = await saver.get("t")
    assert latest is not None and latest.state["messages"] == checkpoints[-1].state["messages"]
    assert latest.state["messages"][0].text.startswith("Summary")
    assert latest.next == "end"
    for checkpoint in checkpoints:
        same(await saver.get("t", checkpoint.checkpoint_id), checkpoint)
    again = ReactAgent("long", ScriptedChatModel(["Still here."]), saver=saver)
    result = await again.invoke("Anyone?", RunnableConfig(thread_id="t"))
    assert result.messages[0] == latest.state["messages"][0]
    assert result.messages[-2:] == [UserMessage("Anyone?"), AssistantMessage("Still here.")]


async def test_a_message_removed_from_the_middle_is_a_new_segment(saver: Any) -> None:
    """A checkpoint without one earlier message (as removing it by hash does) stores
    only what follows it, as a new segment: each checkpoint comes back as it was put,
    and the latest has the message gone."""
    history: list[Message] = [UserMessage(f"m{i}") for i in range(8)]
    put = [
        Checkpoint("t", OverAllState({"messages": history}), "model", 0, "r"),
        Checkpoint("t", OverAllState({"messages": history[:3] + history[4:]}), "model", 1, "r"),
        Checkpoint(
            "t",
            OverAllState({"messages": [*history[:3], *history[4:], UserMessage("m8")]}),
            "model",
            2,
            "r",
        ),
    ]
    for checkpoint in put:
        await saver.put("t", checkpoint)
    stats = await saver.statistics("t")
    assert stats.messages == 8 + 4 + 1  # the 4 after the removed one stored again, once
    listed = await saver.list("t")
    for got, expected in zip(listed, put, strict=True):
        same(got, expected)
    same(await saver.get("t"), put[-1])
    assert UserMessage("m3") not in listed[-1].state["messages"]


def stored_messages(checkpoints: list[Checkpoint]) -> int:
    """How many messages a log holds for ``checkpoints``: each stores its messages from
    the first one that differs from the checkpoint before (a new segment from there)."""
    total, before = 0, []
    for checkpoint in checkpoints:
        now = checkpoint.state["messages"]
        common = next(
            (i for i, (a, b) in enumerate(zip(before, now, strict=False)) if a != b), None
        )
        common = min(len(before), len(now)) if common is None else common
        total, before = total + len(now) - common, now
    return total


# --- exactness --------------------------------------------------------------------------


def history_steps() -> st.SearchStrategy[list[tuple[str, int]]]:
    """What each next checkpoint does to the history: append n, replace the last, cut
    back to n, remove the n-th, replace it all, or change nothing."""
    kinds = st.sampled_from(["append", "replace_last", "cut", "remove", "summary", "same"])
    return st.lists(st.tuples(kinds, st.integers(0, 4)), min_size=1, max_size=45)


def checkpoints_of(steps: list[tuple[str, int]]) -> list[Checkpoint]:
    """The checkpoints of a thread whose history goes through ``steps``, with other
    keys changing too (added, removed, a strategy changed, a type switched)."""
    history: list[Message] = [SystemMessage("rules")]
    made = []
    for step, (kind, n) in enumerate(steps):
        if kind == "append":
            history += [UserMessage(f"{step}.{i}") for i in range(n + 1)]
        elif kind == "replace_last":
            history[-1] = ToolResponseMessage([ToolResponse(f"c{step}", "f", "x" * 1500)])
        elif kind == "cut":
            history = history[: max(1, len(history) - n)]
        elif kind == "remove" and len(history) > 1:
            del history[min(n, len(history) - 1)]
        elif kind == "summary":
            history = [SystemMessage(f"summary {step}"), *history[-n:]] if n else [history[0]]
        values: dict[str, Any] = {"messages": list(history), "step": step}
        if step % 3 == 0:
            values["flag"] = step % 2 == 0  # True and 1 must stay apart
        if step % 5 == 0:
            values["side"] = [UserMessage("aside")] if step % 10 else []
        strategies = {"tags": KeyStrategy.MERGE} if step % 7 == 0 else {}
        state = OverAllState(values, strategies)
        made.append(Checkpoint("t", state, "model", step, "r", created_at=float(step)))
    return made


@relaxed
@given(history_steps())
def test_every_checkpoint_comes_back_exactly(tmp_path_factory: Any, steps: Any) -> None:
    """Whatever happens to a history (appends, a last message replaced, cut back, a
    message removed, replaced by a summary; other keys added, removed, changing type,
    strategies changing; past snapshots), each saver gives back every checkpoint put,
    exactly, from ``list`` and from ``get`` by id (memory and SQLite; PostgreSQL below)."""
    expected = checkpoints_of(steps)
    folder = tmp_path_factory.mktemp("exact")

    async def check() -> None:
        for kind in ("memory", "sqlite"):
            async with open_saver(kind, folder) as saver:
                await saver.delete("t")
                await check_exact(saver, expected)

    anyio.run(check)


async def check_exact(saver: Any, expected: list[Checkpoint]) -> None:
    for checkpoint in expected:
        await saver.put("t", checkpoint)
    listed = await saver.list("t")
    assert len(listed) == len(expected)
    for got, put in zip(listed, expected, strict=True):
        same(got, put)
        same(await saver.get("t", got.checkpoint_id), put)
    same(await saver.get("t"), expected[-1])


async def test_every_checkpoint_comes_back_exactly_in_each_saver(saver: Any) -> None:
    """A long sequence of every kind of change, across two snapshots, comes back exactly
    from each saver, by ``list`` and by id; ids name nothing else."""
    steps = [(k, n) for n in range(3) for k in ("append", "replace_last", "remove", "same")]
    steps += [("summary", 2), ("cut", 1)] + [("append", 1)] * (2 * SNAPSHOT_EVERY)
    await check_exact(saver, checkpoints_of(steps))
    for unknown in ("0", "999", "x", "-1", "٣"):
        assert await saver.get("t", unknown) is None
    assert await saver.get("other", "1") is None


async def test_a_checkpoint_read_back_dumps_self_contained(saver: Any) -> None:
    """``dump_checkpoint`` of a checkpoint rebuilt from the log is the whole state: the
    image and the long tool result in the text itself, no reference into a saver; it
    loads back equal, and a fresh saver stores it as a thread of its own."""
    image = ImagePart(PIXEL)
    history: list[Message] = [
        UserMessage("look", [image]),
        AssistantMessage("", [ToolCall("c", "f")]),
        ToolResponseMessage([ToolResponse("c", "f", "y" * 5000)]),
    ]
    for n in range(1, 4):
        await saver.put(
            "t", Checkpoint("t", OverAllState({"messages": history[:n]}), "model", n, "r")
        )
    latest = await saver.get("t")
    assert latest is not None
    text = dump_checkpoint(latest)
    assert PIXEL in text and "y" * 5000 in text and '"blob"' not in text
    assert load_checkpoint(text) == latest
    other = MemorySaver()
    await other.put("t", load_checkpoint(text))
    same(await other.get("t"), latest)


# --- upgrades of released layouts -------------------------------------------------------


async def check_fixture(saver: Any, with_parts: bool) -> None:
    """Every checkpoint of the fixture comes back exactly, the threads keep their
    statuses, and a thread goes on (a new checkpoint stored incrementally)."""
    threads = fixture_threads(with_parts)
    for thread_id, checkpoints in threads.items():
        listed = await saver.list(thread_id)
        assert len(listed) == len(checkpoints)
        for got, expected in zip(listed, checkpoints, strict=True):
            same(got, expected)
        same(await saver.get(thread_id), checkpoints[-1])
    infos = {i.thread_id: i.status for i in await saver.threads(status=None)}
    assert infos == {"chat": "finished", "summarised": "finished", "pending": "interrupted"}
    chat = threads["chat"][-1]
    more = [*chat.state["messages"], UserMessage("And now?")]
    following = attrs.evolve(chat, state=OverAllState({**chat.state, "messages": more}), step=6)
    await saver.put("chat", following)
    same(await saver.get("chat"), following)
    stats = await saver.statistics("chat")
    assert stats.checkpoints == 7


@pytest.mark.parametrize(("name", "with_parts"), [("v1", False), ("v2", True)])
async def test_sqlite_files_of_earlier_layouts_are_upgraded(
    tmp_path: Path, name: str, with_parts: bool
) -> None:
    """A file written by the release of SQLite layout 1 (and of 2) opens in layout 5:
    each checkpoint converted into the log, exactly as it was; the rows of whole
    checkpoints gone; cancel requests name their run; forks kept; the file smaller for
    it, and reopened as it is."""
    path = tmp_path / "old.db"
    shutil.copy(FIXTURES / f"saver_sqlite_{name}.db", path)
    async with SqliteSaver(path) as saver:
        await check_fixture(saver, with_parts)
        await saver.fork("chat", "1", "chat-fork")
        assert [c.state for c in await saver.list("chat-fork")] == [
            c.state for c in (await saver.list("chat"))[:1]
        ]
        await saver.delete("chat-fork")
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (5,)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        cancels = [r[1] for r in conn.execute("PRAGMA table_info(cancel_requests)")]
    assert tables == {
        "checkpoints",
        "segments",
        "messages",
        "blobs",
        "threads",
        "cancel_requests",
        "forks",
    }
    assert cancels == ["thread_id", "requested_at", "owner"]
    async with SqliteSaver(path) as reopened:
        assert len(await reopened.list("chat")) == 7


async def test_a_postgres_schema_of_layout_2_is_upgraded() -> None:
    """A schema written by the release of PostgreSQL layout 2 (a ``pg_dump`` of it,
    loaded under a fresh name) is upgraded: each checkpoint converted into the
    log exactly, threads and leases kept, the thread going on; then in layout 4, with
    forks."""
    dump = (FIXTURES / "saver_postgres_v2.sql").read_text(encoding="utf-8")
    with pg.fresh_schema() as schema:
        with psycopg.connect(pg.DSN, autocommit=True) as conn:
            conn.execute(dump.replace("reactcore_fixture", schema))  # type: ignore[call-overload]
        async with PostgresSaver(pg.DSN, schema=schema) as saver:
            await check_fixture(saver, with_parts=True)
            async with saver.claim("pending", owner="run-new"):
                pass  # the lease table works on
            await saver.fork("chat", "1", "chat-fork")
            assert [c.state for c in await saver.list("chat-fork")] == [
                c.state for c in (await saver.list("chat"))[:1]
            ]
        with psycopg.connect(pg.DSN) as conn:
            [(version,)] = conn.execute(f'SELECT version FROM "{schema}".meta').fetchall()
            tables = {
                r[0]
                for r in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
                )
            }
    assert version == 4
    assert tables == {
        "checkpoints",
        "segments",
        "messages",
        "blobs",
        "threads",
        "leases",
        "meta",
        "forks",
    }


# --- writers sharing a store ------------------------------------------------------------


@asynccontextmanager
async def two_writers(kind: str, where: Path) -> AsyncIterator[tuple[Any, Any]]:
    """Two savers on one store (as two processes or replicas would have); for
    ``MemorySaver``, which has no store to share, the same object twice."""
    if kind == "memory":
        memory = MemorySaver()
        yield memory, memory
    elif kind == "sqlite":
        async with SqliteSaver(where / "cp.db") as a, SqliteSaver(where / "cp.db") as b:
            yield a, b
    else:
        with pg.fresh_schema() as schema:
            async with (
                PostgresSaver(pg.DSN, schema=schema, max_connections=2) as a,
                PostgresSaver(pg.DSN, schema=schema, max_connections=2) as b,
            ):
                yield a, b


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_writers_taking_turns_on_one_thread_see_each_other(tmp_path: Path, kind: str) -> None:
    """Two savers on one file (or database) write the same thread in turns, each
    remembering the thread as it last wrote it: each write finds the other's since and
    reads the thread again, and each ``get`` gives the other's latest, so every
    checkpoint is stored whole, in order. A thread the other deleted and wrote again
    (its records numbered from 1 again) is read again too, never mixed with the old."""
    history: list[Message] = []
    put = []
    async with two_writers(kind, tmp_path) as (a, b):
        for step in range(6):
            history = [*history, UserMessage(f"m{step}")]
            if step == 4:
                history = [SystemMessage("summary"), history[-1]]
            checkpoint = Checkpoint("t", OverAllState({"messages": history}), "model", step, "r")
            put.append(checkpoint)
            writer, reader = (a, b) if step % 2 == 0 else (b, a)
            await writer.put("t", checkpoint)
            same(await reader.get("t"), checkpoint)
        for reader in (a, b):
            listed = await reader.list("t")
            assert [c.step for c in listed] == list(range(6))
            for got, expected in zip(listed, put, strict=True):
                same(got, expected)
        await b.delete("t")
        again = [
            Checkpoint("t", OverAllState({"messages": [UserMessage(f"new {i}")]}), "end", i, "r2")
            for i in range(6)
        ]
        for checkpoint in again:
            await b.put("t", checkpoint)
        following = attrs.evolve(again[-1], step=6)
        await a.put("t", following)  # a still knows the old thread at its record 6
        same(await a.get("t"), following)
        listed = await b.list("t")
        assert [c.step for c in listed] == list(range(7))
        same(listed[-1], following)


# --- SQLite's query plans ---------------------------------------------------------------


def test_sqlite_reads_the_latest_checkpoint_through_its_indexes(tmp_path: Path) -> None:
    """The statements reading a thread (its latest records, a record by id, every
    record, its messages and blobs) search the primary keys and the index of snapshots:
    ``EXPLAIN QUERY PLAN`` shows no table scan and no temporary B-tree for ordering."""
    dialect = Dialect("sqlite", "")
    conn = _connect(str(tmp_path / "plan.db"), 1.0)  # the layout in place
    try:
        params = {"thread": "t", "seq": 3, "segments": "[1, 2]", "hashes": '["h"]'}
        for name in ("latest", "upto", "records", "segments", "messages", "blobs", "last_seq"):
            plan = conn.execute(f"EXPLAIN QUERY PLAN {dialect.sql(STATEMENTS[name])}", params)
            details = " | ".join(row[3] for row in plan.fetchall())
            assert "TEMP B-TREE" not in details, (name, details)
            assert "SCAN checkpoints" not in details and "SCAN messages" not in details, details
            assert "USING" in details, (name, details)
    finally:
        conn.close()

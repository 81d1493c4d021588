"""A thread whose stored log lost a row (a record, the snapshot the later records build
on, a segment, a message, a blob) is reported one way, by every read path of every
saver: ``DamagedThread`` naming the thread and the missing record. Never ``None`` (as if
the thread were new), a bare ``KeyError``, or ``ThreadBusy`` blaming another writer."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from reactcore import (
    Checkpoint,
    DamagedThread,
    MemorySaver,
    OverAllState,
    ReactAgent,
    ReactcoreError,
    RunnableConfig,
    SaverError,
    SqliteSaver,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from reactcore.postgres import PostgresSaver
from reactcore.testing import ScriptedChatModel
from tests import pg

pytestmark = pytest.mark.anyio

BIG = "tool output " * 200  # stored apart, as a blob
BLOB = hashlib.sha256(BIG.encode()).hexdigest()

HISTORY = [
    UserMessage("first"),
    ToolResponseMessage((ToolResponse("c1", "fetch", BIG),)),
    UserMessage("second"),
]
CHECKPOINTS = [
    Checkpoint("t", OverAllState({"messages": HISTORY[:n], "n": n}), "model", n, "r")
    for n in (1, 2, 3)
]

# What is removed, as SQL (SQLite and PostgreSQL), and the record the error names.
DAMAGE: dict[str, tuple[str, str]] = {
    "snapshot": ("checkpoints WHERE seq = 1", "checkpoint record 1"),
    "record": ("checkpoints WHERE seq = 2", "checkpoint record 2"),
    "segment": ("segments WHERE segment = 1", "segment 1"),
    "message": ("messages WHERE segment = 1 AND position = 0", "message 0 of segment 1"),
    "blob": ("blobs WHERE true", f"blob {BLOB}"),
}


def damage_memory(saver: MemorySaver, kind: str) -> None:
    """The same damage to ``MemorySaver``'s own objects (it keeps no blobs)."""
    thread = saver._threads["t"]
    if kind in ("snapshot", "record"):
        gone = 1 if kind == "snapshot" else 2
        thread.records = [r for r in thread.records if r.seq != gone]
    elif kind == "segment":
        del thread.head.segments[1]
    else:
        del thread.messages[(1, 0)]


@asynccontextmanager
async def damaged(kind: str, saver_kind: str, where: Path) -> AsyncIterator[Any]:
    """A saver reading the thread ``t`` of ``CHECKPOINTS`` after ``kind`` of damage: a
    saver of its own (as another process or replica), for SQLite and PostgreSQL."""
    table, _ = DAMAGE[kind]
    if saver_kind == "memory":
        memory = MemorySaver()
        for stored in CHECKPOINTS:
            await memory.put("t", stored)
        damage_memory(memory, kind)
        yield memory
    elif saver_kind == "sqlite":
        path = where / "cp.db"
        async with SqliteSaver(path) as writer:
            for stored in CHECKPOINTS:
                await writer.put("t", stored)
        with sqlite3.connect(path) as conn:
            assert conn.execute(f"DELETE FROM {table} AND thread_id = 't'").rowcount == 1
        async with SqliteSaver(path) as reader:
            yield reader
    else:
        with pg.fresh_schema() as schema:
            async with PostgresSaver(pg.DSN, schema=schema, max_connections=2) as writer:
                for stored in CHECKPOINTS:
                    await writer.put("t", stored)
            with psycopg.connect(pg.DSN, autocommit=True) as pg_conn:
                removed = pg_conn.execute(
                    f'DELETE FROM "{schema}".{table} AND thread_id = %s', ("t",)
                )
                assert removed.rowcount == 1
            async with PostgresSaver(pg.DSN, schema=schema, max_connections=2) as reader:
                yield reader


async def raises_damage(call: Callable[[], Any], record: str) -> None:
    with pytest.raises(DamagedThread) as info:
        await call()
    assert info.value.thread_id == "t"
    assert info.value.record == record
    assert str(info.value).startswith(f"thread 't' is damaged: its {record} is missing")
    assert isinstance(info.value, SaverError) and isinstance(info.value, ReactcoreError)


PAIRS = [
    (saver_kind, kind)
    for saver_kind in ("memory", "sqlite", "postgres")
    for kind in DAMAGE
    if not (saver_kind == "memory" and kind == "blob")
]


@pytest.mark.parametrize(("saver_kind", "kind"), PAIRS)
async def test_every_read_path_reports_a_damaged_thread(
    tmp_path: Path, saver_kind: str, kind: str
) -> None:
    """After the damage, ``list`` and ``get`` of the latest checkpoint by id raise
    ``DamagedThread`` with the thread and the missing record; and, in the savers that
    read the log for them (SQLite, PostgreSQL): ``get`` of the latest, ``put`` of the
    next checkpoint, and a run on the thread (resuming it, or with new input), which
    fails with it before calling the model. ``MemorySaver`` gives its latest checkpoint
    as it was put (it reads no log for it)."""
    _, record = DAMAGE[kind]
    async with damaged(kind, saver_kind, tmp_path) as saver:
        await raises_damage(lambda: saver.list("t"), record)
        await raises_damage(lambda: saver.get("t", checkpoint_id="3"), record)
        if kind not in ("record", "blob"):  # the first checkpoint needs these too
            await raises_damage(lambda: saver.get("t", checkpoint_id="1"), record)
        if saver_kind == "memory":
            assert await saver.get("t") == CHECKPOINTS[-1]
            return
        await raises_damage(lambda: saver.get("t"), record)
        following = Checkpoint("t", OverAllState({"n": 4}), "end", 4, "r")
        await raises_damage(lambda: saver.put("t", following), record)
        agent = ReactAgent("a", ScriptedChatModel([]), saver=saver)
        config = RunnableConfig(thread_id="t")
        await raises_damage(lambda: agent.invoke(None, config), record)
        await raises_damage(lambda: agent.invoke("more", config), record)
        assert [i.thread_id for i in await saver.threads()] == ["t"]  # listed still
        await saver.delete("t")  # the way out: the thread starts again
        await saver.put("t", following)
        assert await saver.list("t") == [following]

"""Payload stores and conversations by reference, on both backends (no Temporal server:
the workflow's and the activities' sides of ``reactcore.temporal._refs`` meet through a
real store, as they do across processes)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("temporalio", reason="the 'temporal' extra (temporalio) is not installed")

from reactcore import (
    AssistantMessage,
    PayloadMissing,
    ReactAgent,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from reactcore.temporal import FileStore, MemoryStore, PayloadStore, TemporalAgent
from reactcore.temporal._refs import Conversations, Reader, marked
from reactcore.temporal._store import digest
from reactcore.testing import ScriptedChatModel

pytestmark = pytest.mark.anyio


def turn(n: int, text: str) -> list[object]:
    call = ToolCall(f"c{n}", "look", "{}")
    return [
        AssistantMessage("", [call]),
        ToolResponseMessage([ToolResponse(call.id, "look", text)]),
    ]


@pytest.mark.parametrize("kind", ["file", "memory"])
async def test_a_store_keeps_blobs_by_key(kind: str, tmp_path: Path) -> None:
    """put then get gives the bytes back, from another store object on the same directory
    too (as another worker process would); an unknown key is None; a second put of a key
    changes nothing; a key that is no SHA-256 is a ValueError."""
    store: PayloadStore = FileStore(tmp_path) if kind == "file" else MemoryStore()
    data = b"hello" * 1000
    key = digest(data)
    assert await store.get(key) is None
    await store.put(key, data)
    await store.put(key, data)
    assert await store.get(key) == data
    if kind == "file":
        assert await FileStore(str(tmp_path)).get(key) == data
    with pytest.raises(ValueError, match="not a payload key"):
        await store.get("../etc/passwd")


async def test_a_growing_conversation_sends_only_what_the_store_lacks(tmp_path: Path) -> None:
    """Each turn's conversation names the previous one as its base and carries only the
    two new messages inline; the activity's side reads back exactly the messages sent.
    An edited earlier message breaks the prefix there: it alone goes inline, the later
    unchanged messages by key."""
    reader = Reader(FileStore(tmp_path))
    side = Conversations()
    messages: list[object] = [UserMessage("go")]
    previous = None
    for n in range(5):
        messages += turn(n, f"result {n}")
        conversation = side.of(messages)  # type: ignore[arg-type]
        assert conversation.base == previous
        assert len(conversation.inline) == (3 if n == 0 else 2)
        assert await reader.messages(conversation) == messages
        side.stored(conversation, len(messages))
        previous = conversation.key
    edited = list(messages)
    edited[6] = ToolResponseMessage([ToolResponse("c2", "look", "[cleared]")])
    conversation = side.of(edited)  # type: ignore[arg-type]
    assert len(conversation.keys) == len(edited) - 5  # from the node before the edit
    assert [json for json in conversation.inline.values()] == [
        json for json in conversation.inline.values() if "[cleared]" in json
    ]
    assert len(conversation.inline) == 1
    assert await Reader(FileStore(tmp_path)).messages(conversation) == edited


async def test_large_results_become_markers_and_come_back_whole() -> None:
    """A result over the limit is stored and replaced by a marker starting with its first
    characters; a message holding it reads back with the whole text. One under the limit
    stays itself."""
    reader = Reader(MemoryStore())
    big = "x" * 5000
    text = await reader.result_text(big, 4096)
    assert marked(text) == digest(big.encode())
    assert text.endswith("x" * 200) and len(text) < 300
    assert await reader.result_text("small", 4096) == "small"
    [_, message] = turn(0, text)
    back = await reader.expanded(message)  # type: ignore[arg-type]
    assert back.responses[0].response_data == big  # type: ignore[union-attr]


async def test_a_missing_entry_raises_payload_missing() -> None:
    """Reading a key the store lacks raises PayloadMissing (also a LookupError) naming
    the key."""
    key = digest(b"never stored")
    with pytest.raises(LookupError) as caught:
        await Reader(MemoryStore()).get(key)
    assert isinstance(caught.value, PayloadMissing)
    assert caught.value.key == key


def test_temporal_agent_checks_its_long_run_settings() -> None:
    """A store without get/put, a negative inline_limit or a zero continue_after_events
    is refused at construction, naming the parameter."""
    agent = ReactAgent("a", ScriptedChatModel(["hi"]))
    with pytest.raises(TypeError, match="store"):
        TemporalAgent(agent, store=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="inline_limit"):
        TemporalAgent(agent, inline_limit=-1)
    with pytest.raises(ValueError, match="continue_after_events"):
        TemporalAgent(agent, continue_after_events=0)


def test_a_dev_server_started_then_entered_is_one_process(tmp_path: Path) -> None:
    """``with DevServer(db).start()`` starts one server, not two (the second used to be
    left running after the block); starting a running server is refused; leaving the
    block stops it."""
    from reactcore.temporal.testing import DevServer

    with DevServer(str(tmp_path / "temporal.db")).start() as server:
        process = server.process
        assert process is not None and process.poll() is None
        with pytest.raises(RuntimeError, match="running already"):
            server.start()
        assert server.process is process
    assert process.poll() is not None and server.process is None


def test_a_dev_server_whose_port_is_taken_starts_on_another(tmp_path: Path) -> None:
    """A first start on a port another process listens on does not take that listener
    for the server (readiness is the server's own HTTP API answering): the server comes
    up on new ports and serves there."""
    import socket

    from reactcore.temporal.testing import DevServer

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with DevServer(str(tmp_path / "temporal.db"), port=port) as server:
            assert server.port != port
            assert server.process is not None and server.process.poll() is None

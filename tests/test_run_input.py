"""What a run is given, checked before anything runs: its input (anything but a str,
a message, a list of messages, a state dict, ``None`` or a ``Resume`` is a ``TypeError``
before the thread is claimed, a model called or a checkpoint written), its config (a
``RunnableConfig`` or a mapping of its fields), and a ``thread_id`` without a saver (said
once per agent). A failure while checkpointing never leaves a thread that can neither
resume nor take new input."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from structlog.testing import capture_logs

from reactcore import (
    MemorySaver,
    ReactAgent,
    ReplaceAll,
    Resume,
    RunnableConfig,
    SqliteSaver,
    TextPart,
    UserMessage,
)
from reactcore.models.openai import OpenAIChatModel
from reactcore.models.scripted import ScriptedChatModel
from reactcore.testing import SSEReply, serve_openai_compatible
from tests.helpers import asks

pytestmark = pytest.mark.anyio


@pytest.fixture
async def sqlite(tmp_path: Path) -> AsyncIterator[SqliteSaver]:
    """A SQLite saver in a fresh file, closed after the test."""
    async with SqliteSaver(tmp_path / "threads.db") as saver:
        yield saver


BAD_INPUTS = [
    pytest.param(42, "input must be a str, a Message, .* got int 42", id="int"),
    pytest.param(b"hi", "got bytes b'hi'; decode bytes to a str first", id="bytes"),
    pytest.param(TextPart("hi"), "put content parts in a message", id="part"),
    pytest.param({1, 2}, "input must be .* got set", id="set"),
    pytest.param([UserMessage("a"), 42], r"input\[1\] must be a Message", id="list-item"),
    pytest.param(
        [{"role": "user", "content": "hi"}], r"input\[0\] .* not provider dicts", id="dict-item"
    ),
    pytest.param({"messages": 42}, r"input\['messages'\] must be a Message or a list", id="key"),
    pytest.param(
        {"messages": ["hi"]}, r"input\['messages'\]\[0\] .* UserMessage\(text\)", id="str"
    ),
    pytest.param({1: "x"}, "a state dict's keys must be str, got int 1", id="state-key"),
]


async def _run_by(way: str, agent: ReactAgent, value: Any, config: Any) -> None:
    if way == "invoke":
        await agent.invoke(value, config)
    elif way == "start":
        async with agent.start(value, config) as run:
            await run.result()
    else:
        async with agent.stream(value, config) as events:
            async for _ in events:
                pass


@pytest.mark.parametrize("way", ["invoke", "start", "stream"])
@pytest.mark.parametrize(("value", "says"), BAD_INPUTS)
async def test_bad_input_is_refused_before_any_model_call_or_write(
    sqlite: SqliteSaver, way: str, value: Any, says: str
) -> None:
    """Every way in refuses input that is not a str, a message, a list of messages or a
    state dict with a ``TypeError`` naming ``input`` (and the item at fault), before the
    model is called or the thread written; the thread then takes valid input."""
    model = ScriptedChatModel(["fine"])
    agent = ReactAgent("a", model, saver=sqlite)
    config = RunnableConfig(thread_id="t")
    with pytest.raises(TypeError, match=says):
        await _run_by(way, agent, value, config)
    assert model.requests == []
    assert await sqlite.get("t") is None
    assert (await agent.invoke("hi", config)).text == "fine"


def test_invoke_sync_refuses_bad_input_before_the_model() -> None:
    """``invoke_sync`` goes through the same check: the ``TypeError`` comes out of the
    event loop it made, as itself, and the model was never called."""
    model = ScriptedChatModel(["fine"])
    agent = ReactAgent("a", model)
    with pytest.raises(TypeError, match=r"input must be .* got int 42"):
        agent.invoke_sync(42)
    assert model.requests == []


async def test_accepted_inputs_still_run() -> None:
    """What the docs list still runs: a str, a message, a list of messages, a state dict
    (its messages a list or one message), and a subagent's task."""
    for value in (
        "hi",
        UserMessage("hi"),
        [UserMessage("hi")],
        (UserMessage("hi"),),
        {"messages": [UserMessage("hi")], "extra": 1},
        {"messages": UserMessage("hi")},
    ):
        model = ScriptedChatModel(["ok"])
        result = await ReactAgent("a", model).invoke(value)
        assert result.text == "ok"
        assert model.requests[0].messages == (UserMessage("hi"),)


async def test_temporal_agent_refuses_bad_input_before_reaching_temporal() -> None:
    """``TemporalAgent.start`` goes through the same check: ``TypeError`` naming ``input``
    before the client is used (here there is none to use)."""
    temporal = pytest.importorskip("reactcore.temporal")
    agent = temporal.TemporalAgent(ReactAgent("a", ScriptedChatModel(["x"])))
    with pytest.raises(TypeError, match=r"^input must be a str, a Message, .* got int 42$"):
        await agent.start(None, 42, thread_id="t")


async def test_bad_input_over_http_never_reaches_the_server(sqlite: SqliteSaver) -> None:
    """With a real HTTP model (the loopback OpenAI server), ``invoke(42)`` and
    ``invoke(b"hi")`` are ``TypeError`` naming ``input``, not the wire layer's ``not a
    message: 42`` / ``104``; no request is sent, and the durable thread stays new."""
    with serve_openai_compatible([SSEReply.of("fine")]) as server:
        model = OpenAIChatModel(
            "test-model", base_url=server.base_url, api_key="sk-test", retry_backoff=0.01
        )
        agent = ReactAgent("a", model, saver=sqlite)
        config = RunnableConfig(thread_id="t")
        for value in (42, b"hi"):
            with pytest.raises(TypeError, match=r"^input must be"):
                await agent.invoke(value, config)
        assert server.requests == []
        assert await sqlite.get("t") is None
        assert (await agent.invoke("hi", config)).text == "fine"
        assert len(server.requests) == 1


@attrs.define
class _PutConversation:
    """A hook that writes provider dicts as the whole conversation (a mistake), at
    ``before_agent`` or ``after_model``: a list holding no message at all, which a
    saver would keep as plain JSON."""

    at: str
    name: str = "put_conversation"

    async def before_agent(self, state: Any, config: RunnableConfig) -> dict[str, Any] | None:
        return self._put() if self.at == "before_agent" else None

    async def after_model(self, state: Any, config: RunnableConfig) -> dict[str, Any] | None:
        return self._put() if self.at == "after_model" else None

    def _put(self) -> dict[str, Any]:
        return {"messages": ReplaceAll([{"role": "user", "content": "hi"}])}


@pytest.mark.parametrize(("at", "model_calls"), [("before_agent", 0), ("after_model", 1)])
async def test_a_hook_cannot_store_a_conversation_no_step_could_extend(
    sqlite: SqliteSaver, at: str, model_calls: int
) -> None:
    """A conversation holding non-messages is refused before it is written, at the run's
    first checkpoint or a later one (it used to be stored, load back, and make every
    later write fail: resume failed forever and new input was refused). The thread is
    left at its last good checkpoint: a fixed agent on the same saver takes new input
    (nothing was written) or resumes the run."""
    model = ScriptedChatModel(["first", "second"])
    broken = ReactAgent("a", model, hooks=[_PutConversation(at)], saver=sqlite)
    config = RunnableConfig(thread_id="t")
    with pytest.raises(TypeError, match=r"state key 'messages' must hold only messages.*\[0\]"):
        await broken.invoke("hi", config)
    assert len(model.requests) == model_calls
    fixed = ReactAgent("a", model, saver=sqlite)
    latest = await sqlite.get("t")
    if latest is None:
        result = await fixed.invoke("hi", config)
    else:
        assert latest.next == "model"
        result = await fixed.invoke(None, config)
    assert [m.text for m in result.messages] == ["hi", "first" if model_calls == 0 else "second"]


@attrs.define(eq=False, weakref_slot=True)
class _FailingPut:
    """A saver around ``inner`` whose ``put`` number ``n`` (1, 2, …) raises ``OSError``
    (a disk that fills up once), the others written as usual."""

    inner: SqliteSaver
    failing: int
    puts: int = 0

    def claim(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.claim(*args, **kwargs)

    async def get(self, thread_id: str, **kwargs: Any) -> Any:
        return await self.inner.get(thread_id, **kwargs)

    async def list(self, thread_id: str) -> Any:
        return await self.inner.list(thread_id)

    async def delete(self, thread_id: str) -> None:
        await self.inner.delete(thread_id)

    async def put(self, thread_id: str, checkpoint: Any) -> None:
        self.puts += 1
        if self.puts == self.failing:
            raise OSError("disk full")
        await self.inner.put(thread_id, checkpoint)


@pytest.mark.parametrize("failing", [1, 2, 3, 4, 5])
async def test_after_a_failed_write_the_thread_resumes(sqlite: SqliteSaver, failing: int) -> None:
    """Whichever checkpoint write of a run fails (the first, after the model, during and
    after the tool batch, after the last answer), the run fails with the saver's error
    as itself and the thread is left at its last checkpoint: ``invoke(None, config)``
    finishes the run, or — when not even the first was written — new input starts it."""

    async def lookup(city: str) -> str:
        """Where a city is."""
        return f"{city} is in Portugal"

    model = ScriptedChatModel([asks(("c1", "lookup", {"city": "Lisbon"})), "done"] * 2)
    saver = _FailingPut(sqlite, failing)
    agent = ReactAgent("a", model, tools=[lookup], saver=saver)
    config = RunnableConfig(thread_id="t")
    with pytest.raises(OSError, match="disk full"):
        await agent.invoke("where?", config)
    if await sqlite.get("t") is None:
        result = await agent.invoke("where?", config)
    else:
        result = await agent.invoke(None, config)
    assert result.text == "done"
    assert (await sqlite.get("t")).next == "end"  # type: ignore[union-attr]


@attrs.define
class _KeepsAnObject:
    """An ``after_model`` hook that puts a value no saver can encode into the state."""

    name: str = "keeps_an_object"

    async def after_model(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {"scratch": object()}


async def test_a_value_the_saver_cannot_encode_leaves_the_thread_resumable(
    sqlite: SqliteSaver,
) -> None:
    """A step whose state the saver refuses (an object in a state key) fails the run
    without writing it: the thread stays at its last checkpoint, the model step still
    to do, and the agent without the faulty hook resumes it to the end."""
    model = ScriptedChatModel(["first", "second"])
    config = RunnableConfig(thread_id="t")
    broken = ReactAgent("a", model, hooks=[_KeepsAnObject()], saver=sqlite)
    with pytest.raises(TypeError, match="scratch"):
        await broken.invoke("hi", config)
    latest = await sqlite.get("t")
    assert latest is not None and latest.next == "model"
    result = await ReactAgent("a", model, saver=sqlite).invoke(None, config)
    assert result.text == "second"
    assert [m.text for m in result.messages] == ["hi", "second"]


# --- the config ---------------------------------------------------------------------------


async def test_a_config_may_be_a_mapping_of_its_fields() -> None:
    """``invoke(x, {"thread_id": …})`` works as ``RunnableConfig(thread_id=…)`` (it used
    to be ``AttributeError: 'dict' object has no attribute 'context'``); the caller's
    context dict is not written to."""
    model = ScriptedChatModel(["one", "two", "three"])
    agent = ReactAgent("a", model, saver=MemorySaver())
    context: dict[str, Any] = {"user": "u1"}
    await agent.invoke("first", {"thread_id": "t", "context": context})
    async with agent.start("second", {"thread_id": "t", "wait_for_thread": math.inf}) as run:
        assert (await run.result()).text == "two"
    async with agent.stream("third", {"thread_id": "t", "metadata": {"k": "v"}}) as events:
        async for _ in events:
            pass
    assert [m.text for m in model.requests[2].messages] == [
        "first",
        "one",
        "second",
        "two",
        "third",
    ]
    assert context == {"user": "u1"}


@pytest.mark.parametrize(
    ("config", "error", "says"),
    [
        ({"thread": "t"}, TypeError, "RunnableConfig has no field 'thread'.*thread_id"),
        (
            {"thread_id": 7},
            TypeError,
            r"RunnableConfig: expected a string, got int 7 @ config\.thread_id",
        ),
        ({"metadata": 3}, TypeError, r"expected an object, got int @ config\.metadata"),
        ({"wait_for_thread": "5"}, TypeError, r"@ config\.wait_for_thread"),
        ({"thread_id": ""}, ValueError, "RunnableConfig.thread_id: .*an empty string"),
        ({"wait_for_thread": -1}, ValueError, "RunnableConfig.wait_for_thread must not be"),
        ("t1", TypeError, r"config must be a RunnableConfig.*; RunnableConfig\(thread_id='t1'\)"),
        (5, TypeError, "config must be a RunnableConfig, a Mapping of its fields"),
    ],
)
async def test_a_bad_config_is_refused_naming_runnable_config(
    config: Any, error: type[Exception], says: str
) -> None:
    """A mapping with a key that is not a field, or a value of the wrong type, and
    anything that is not a mapping, are refused naming ``RunnableConfig``, before the
    model is called."""
    model = ScriptedChatModel(["fine"])
    with pytest.raises(error, match=says):
        await ReactAgent("a", model).invoke("hi", config)
    assert model.requests == []


# --- thread_id without a saver --------------------------------------------------------


async def test_thread_id_without_a_saver_is_said_once_per_agent() -> None:
    """A ``thread_id`` given to an agent without a saver is not silently ignored: a
    ``thread_id_without_saver`` warning says so, once per agent; an agent with a saver,
    or a run without a thread id, says nothing."""
    config = RunnableConfig(thread_id="t")
    first = ReactAgent("first", ScriptedChatModel(["1", "2"]))
    second = ReactAgent("second", ScriptedChatModel(["3"]))
    saving = ReactAgent("saving", ScriptedChatModel(["4"]), saver=MemorySaver())
    plain = ReactAgent("plain", ScriptedChatModel(["5"]))
    with capture_logs() as logs:
        await first.invoke("one", config)
        await first.invoke("two", {"thread_id": "t"})
        await second.invoke("three", config)
        await saving.invoke("four", config)
        await plain.invoke("five")
    warned = [e for e in logs if e["event"] == "thread_id_without_saver"]
    assert [(e["agent"], e["thread_id"], e["log_level"]) for e in warned] == [
        ("first", "t", "warning"),
        ("second", "t", "warning"),
    ]
    assert "saver=MemorySaver()" in warned[0]["reason"]


async def test_resuming_without_a_saver_still_says_why() -> None:
    """``invoke(None, config)`` on an agent without a saver keeps its ``ValueError``
    (the warning comes first, the error says what to do)."""
    agent = ReactAgent("a", ScriptedChatModel(["x"]))
    with capture_logs(), pytest.raises(ValueError, match="without a saver keeps no checkpoints"):
        await agent.invoke(None, RunnableConfig(thread_id="t"))
    with pytest.raises(ValueError, match="without a saver"):
        await agent.invoke(Resume({}), RunnableConfig(thread_id="t"))

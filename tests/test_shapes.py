"""The documented JSON form of events and results (``to_json`` / ``event_from_json``):
every event type round-trips exactly through JSON text, a real run's events (on asyncio
and trio) are plain JSON with nothing of Python leaking (no mappingproxy, no tuples),
malformed input is a ValueError saying where, and the README's reference names every
event, every ``ReactAgent`` option, every ``AgentResult`` field and every exception."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, get_args

import anyio
import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import reactcore
from reactcore import (
    AgentResult,
    AssistantMessage,
    Event,
    HumanInTheLoopHook,
    Interrupt,
    MemorySaver,
    ModelCallFinished,
    ModelCallRetried,
    ModelCallStarted,
    ModelDelta,
    ReactAgent,
    ReactcoreError,
    ReportedError,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunInterrupted,
    RunnableConfig,
    StateUpdated,
    SubagentCall,
    SubagentEvent,
    ToolCallCancelled,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallTimedOut,
    UserMessage,
    event_from_json,
    to_json,
    tool,
)
from reactcore._shapes import EVENT_TYPES, event_tag
from reactcore.testing import ScriptedChatModel
from tests.helpers import asks
from tests.test_checkpoint import (
    identifiers,
    json_values,
    relaxed,
    states,
    texts,
    tool_calls,
    usages,
)

pytestmark = pytest.mark.anyio

README = Path(__file__).resolve().parent.parent / "README.md"

# --- strategies -------------------------------------------------------------------------

finite = st.floats(allow_nan=False, allow_infinity=False)
metadata = st.dictionaries(texts, json_values, max_size=3)
assistants = st.builds(AssistantMessage, texts, st.lists(tool_calls, max_size=3), metadata)
interrupts = st.none() | st.builds(Interrupt, st.lists(tool_calls, max_size=3).map(tuple))
results = st.builds(
    AgentResult,
    states,
    texts,
    json_values,
    st.integers(0),
    st.sampled_from(["finished", "interrupted"]),
    interrupts,
)
purposes = st.sampled_from(["agent", "summary"])
errors = st.builds(
    lambda cls, text: cls(text),
    st.sampled_from([ValueError, RuntimeError, RunCancelled, ReactcoreError]),
    texts,
)
EVENTS: dict[type[Any], st.SearchStrategy[Any]] = {
    ModelCallStarted: st.builds(ModelCallStarted, st.integers(0), purposes),
    ModelDelta: st.builds(
        ModelDelta,
        texts,
        st.none()
        | st.builds(
            ToolCallDelta,
            st.integers(0),
            st.none() | identifiers,
            st.none() | identifiers,
            texts,
        ),
        texts,
    ),
    ModelCallRetried: st.builds(
        ModelCallRetried,
        st.integers(1),
        st.floats(0, 60, allow_nan=False),
        texts,
        st.none() | identifiers,
    ),
    ModelCallFinished: st.builds(ModelCallFinished, assistants, st.none() | usages, purposes),
    ToolCallStarted: st.builds(ToolCallStarted, identifiers, identifiers, texts),
    ToolCallFinished: st.builds(ToolCallFinished, identifiers, identifiers, st.booleans(), finite),
    ToolCallTimedOut: st.builds(ToolCallTimedOut, identifiers, identifiers, finite),
    ToolCallCancelled: st.builds(ToolCallCancelled, identifiers, identifiers, st.none() | texts),
    StateUpdated: st.builds(StateUpdated, texts, st.lists(texts, max_size=4).map(tuple)),
    RunFinished: st.builds(RunFinished, results),
    RunFailed: st.builds(RunFailed, errors),
    RunInterrupted: st.builds(
        RunInterrupted, st.lists(tool_calls, max_size=3).map(tuple), st.none() | results
    ),
}
EVENTS[SubagentEvent] = st.builds(
    SubagentEvent,
    st.lists(
        st.builds(SubagentCall, identifiers, identifiers, identifiers), min_size=1, max_size=3
    ).map(tuple),
    st.one_of(*EVENTS.values()),
)


def through_text(value: Any) -> Any:
    """``value``'s JSON form, written as text and read back, as a client would get it."""
    return json.loads(json.dumps(to_json(value), allow_nan=False))


def only_json(value: Any, path: str = "$") -> None:
    """Fail unless ``value`` is made of dict (str keys), list, str, int, float, bool, None."""
    if isinstance(value, dict):
        for key, item in value.items():
            assert type(key) is str, f"a {type(key).__name__} key at {path}"
            only_json(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            only_json(item, f"{path}[{index}]")
    else:
        assert type(value) in (str, int, float, bool, type(None)), f"{type(value)} at {path}"


# --- round trips ------------------------------------------------------------------------


def test_every_event_type_has_a_json_form_and_a_strategy_here() -> None:
    """The registered event types are exactly the members of ``reactcore.Event``: an
    event added to the union without being added to ``EVENT_TYPES`` (and to EVENTS
    here) fails this test."""
    assert set(EVENT_TYPES) == set(get_args(Event)) == set(EVENTS)
    tags = [event_tag(cls) for cls in EVENT_TYPES]
    assert len(set(tags)) == len(tags)
    assert event_tag(ToolCallTimedOut) == "tool_call_timed_out"


@relaxed
@given(st.one_of(*EVENTS.values()))
def test_any_event_round_trips_exactly_through_json_text(event: Any) -> None:
    """Every field of every event type comes back through JSON text: messages with tool
    calls and metadata, usage, deltas, results with their whole state and interrupt.
    The JSON written again is the same (fields left out of equality included: a run's
    error, an interrupted run's result)."""
    data = through_text(event)
    only_json(data)
    assert data["type"] == event_tag(type(event))
    back = event_from_json(data)
    assert type(back) is type(event)
    assert back == event
    assert to_json(back) == data


@relaxed
@given(errors)
def test_a_run_failed_error_travels_as_its_class_name_and_message(error: Exception) -> None:
    """RunFailed's error is {"type": <class name>, "message": str(error)}; read back it
    is a ReportedError with that type_name and message."""
    data = to_json(RunFailed(error))
    assert data == {
        "type": "run_failed",
        "error": {"type": type(error).__name__, "message": str(error)},
    }
    back = event_from_json(data)
    assert isinstance(back, RunFailed) and isinstance(back.error, ReportedError)
    assert (back.error.type_name, str(back.error)) == (type(error).__name__, str(error))


@relaxed
@given(results)
def test_a_result_round_trips_with_its_messages_and_usage_at_the_top(
    result: AgentResult,
) -> None:
    """An AgentResult's JSON has every documented field; messages and usage are at the
    top (not repeated in the state), and the result comes back equal."""
    data = through_text(result)
    assert set(data) == {
        "text",
        "output",
        "status",
        "interrupt",
        "model_calls",
        "usage",
        "messages",
        "state",
        "finish_reason",
    }
    assert "messages" not in data["state"]["values"]
    assert data["usage"] == {
        k: v
        for k, v in attrs.asdict(result.usage).items()
        if v or k in ("prompt_tokens", "completion_tokens", "total_tokens")
    }
    assert len(data["messages"]) == len(result.messages)
    back = event_from_json({"type": "run_finished", "result": data})
    assert isinstance(back, RunFinished) and back.result == result


# --- a real run -------------------------------------------------------------------------


@tool
async def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: found"


@tool
async def send(to: str) -> str:
    """Send a mail."""
    return f"sent to {to}"


async def test_a_real_runs_events_are_plain_json_and_come_back_equal() -> None:
    """Every event of a run with a tool call (streamed deltas, the finished result with
    its state, a mappingproxy inside) is plain JSON and reads back equal; the result's
    JSON has the conversation as the model saw it."""
    model = ScriptedChatModel([asks(("c1", "lookup", {"city": "Oslo"})), "Oslo is found."])
    agent = ReactAgent("a", model, tools=[lookup])
    async with agent.stream("find Oslo") as stream:
        events = [event async for event in stream]
    types = [through_text(e)["type"] for e in events]
    assert types[0] == "model_call_started" and types[-1] == "run_finished"
    assert {"model_delta", "tool_call_started", "tool_call_finished", "state_updated"} <= {*types}
    for event in events:
        data = through_text(event)
        only_json(data)
        assert event_from_json(data) == event
    finished = through_text(events[-1])["result"]
    assert finished["text"] == "Oslo is found."
    assert finished["status"] == "finished" and finished["model_calls"] == 2
    assert [m["type"] for m in finished["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert finished["messages"][2]["responses"] == [
        {"id": "c1", "name": "lookup", "response_data": "Oslo: found", "is_error": False}
    ]


async def test_an_interrupted_run_sends_its_calls_and_result() -> None:
    """A run paused for approval ends with run_interrupted: the calls waiting, and the
    result (status "interrupted", its interrupt) in JSON; both read back equal."""
    model = ScriptedChatModel([asks(("m1", "send", {"to": "ada"}))])
    agent = ReactAgent(
        "a", model, tools=[send], hooks=[HumanInTheLoopHook(["send"])], saver=MemorySaver()
    )
    async with agent.stream("mail ada", RunnableConfig(thread_id="t")) as stream:
        last = [event async for event in stream][-1]
    data = through_text(last)
    call = {"id": "m1", "name": "send", "arguments": '{"to": "ada"}'}
    assert data["type"] == "run_interrupted"
    assert data["calls"] == [call]
    assert data["result"]["status"] == "interrupted"
    assert data["result"]["interrupt"] == {"calls": [call]}
    back = event_from_json(json.dumps(data))
    assert isinstance(back, RunInterrupted) and back == last
    assert back.result == last.result


async def test_a_cancelled_run_fails_with_run_cancelled_in_json() -> None:
    """A run cancelled by its caller ends with run_failed whose error is RunCancelled."""
    started = anyio.Event()

    @tool
    async def hang() -> str:
        """Never answers."""
        started.set()
        await anyio.sleep_forever()
        return ""

    agent = ReactAgent("a", ScriptedChatModel([asks(("h", "hang", {}))]), tools=[hang])
    async with agent.start("go") as run, run.events() as stream:
        await started.wait()
        await run.cancel()
        last = [event async for event in stream][-1]
    data = through_text(last)
    assert data["type"] == "run_failed"
    assert data["error"]["type"] == "RunCancelled"


async def test_values_json_cannot_hold_are_a_type_error_naming_where() -> None:
    """A result whose output or state holds a non-JSON value (a set) is refused with a
    TypeError saying where; anything that is no event is refused too."""
    bad_output = AgentResult(reactcore.OverAllState({"messages": []}), "x", {"tags": {1}})
    with pytest.raises(TypeError, match=r"\['output'\]\['tags'\]"):
        to_json(bad_output)
    bad_state = AgentResult(reactcore.OverAllState({"messages": [], "seen": {1, 2}}), "x")
    with pytest.raises(TypeError, match="state key 'seen'"):
        to_json(bad_state)
    with pytest.raises(TypeError, match="not an event"):
        to_json(UserMessage("hi"))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"type": "tool_call_begun"}, "expected 'type' to be one of"),
        ({"type": "tool_call_started", "call_id": "c", "name": "x"}, "arguments"),
        ({"type": "model_call_started", "iteration": "1"}, "expected an integer"),
        (
            {"type": "model_call_finished", "message": {"type": "user", "text": "x"}},
            "expected an assistant message",
        ),
        ("[1, 2", "Expecting"),
    ],
)
async def test_malformed_json_is_a_value_error_saying_what_is_wrong(data: Any, says: str) -> None:
    """An unknown type, a missing or mistyped field, the wrong kind of message, or text
    that is not JSON: ValueError, naming the problem."""
    with pytest.raises(ValueError, match=re.escape(says)):
        event_from_json(data)


# --- the docs' reference ----------------------------------------------------------------

DOCS = README.parent / "docs"


def docs_section(page: str, title: str) -> str:
    text = (DOCS / page).read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_the_docs_list_every_event_with_its_json_type() -> None:
    """The runs page's event reference names every event type exported, each with its JSON
    "type" tag, so the docs cannot drift from the code."""
    section = docs_section("runs.md", "Events")
    exported = [getattr(reactcore, name) for name in reactcore.__all__]
    events = [cls for cls in exported if cls in get_args(Event)]
    assert set(events) == set(get_args(Event))
    missing = [
        cls.__name__
        for cls in events
        if f"`{cls.__name__}`" not in section or f"`{event_tag(cls)}`" not in section
    ]
    assert missing == []


def test_the_docs_name_every_option_field_and_exception() -> None:
    """Every ReactAgent option is named in the guide pages, every AgentResult field and
    property on the runs page's Results section, and every exported exception on the
    exceptions reference page."""
    guide = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md"))
    options = [f.name for f in attrs.fields(ReactAgent) if f.init]
    assert [o for o in options if f"`{o}" not in guide and f"{o}=" not in guide] == []
    results = docs_section("runs.md", "Results")
    result_fields = ["messages", "text", "output", "usage", "status", "interrupt", "model_calls"]
    assert [f for f in result_fields if f"`{f}`" not in results] == []
    reference = (DOCS / "reference" / "exceptions.md").read_text(encoding="utf-8")
    exceptions = [
        name
        for name in reactcore.__all__
        if isinstance(getattr(reactcore, name), type)
        and issubclass(getattr(reactcore, name), Exception)
    ]
    assert [name for name in exceptions if f"::: reactcore.{name}" not in reference] == []

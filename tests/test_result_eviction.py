"""LargeResultEviction: large tool results stored in the state and read back through
``read_result``, in sequential and parallel batches, with bad reads answered as errors;
each stored result written once by a saver, whatever the checkpoints after it.

Every async test runs on asyncio and trio. The crash-and-resume test (a real process
killed with SIGKILL) is in ``test_eviction_crash.py``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from reactcore import (
    AssistantMessage,
    LargeResultEviction,
    MemorySaver,
    ModelRequest,
    ReactAgent,
    RunnableConfig,
    SqliteSaver,
    SummarizationHook,
    ToolCall,
    ToolCallResponse,
    ToolResponse,
    ToolResponseMessage,
    tool,
)
from reactcore.hooks._summarization import is_summary
from reactcore.testing import ScriptedChatModel

pytestmark = pytest.mark.anyio

EVICTED = "_evicted_results_"
BIG = "".join(f"row {i:04d}: {'abcdefghij' * 3}\n" for i in range(400))  # 16 400 characters
HEADER = re.compile(r"\[(?P<handle>[^:]+): characters (\d+) to (\d+) of (\d+); (?P<after>.*)\]")


def result_tool(texts: dict[str, str]) -> Any:
    @tool
    async def fetch(key: str) -> str:
        """Fetch a document."""
        return texts[key]

    return fetch


def fetch(call_id: str, key: str) -> ToolCall:
    return ToolCall(call_id, "fetch", json.dumps({"key": key}))


def read(call_id: str, handle: str, **more: Any) -> AssistantMessage:
    arguments = {"handle": handle, **more}
    return AssistantMessage("", [ToolCall(call_id, "read_result", json.dumps(arguments))])


def last_response(request: ModelRequest) -> ToolResponse:
    message = request.messages[-1]
    assert isinstance(message, ToolResponseMessage)
    return message.responses[-1]


def pager(handle: str) -> Any:
    """A model reply that reads ``handle`` page after page, as a model would: from 0,
    then from the "next offset" each page names, until "the end"."""

    def reply(request: ModelRequest) -> AssistantMessage:
        last = last_response(request)
        if last.name != "read_result":
            return read(f"read-{len(request.messages)}", handle, offset=0)
        found = HEADER.match(last.response_data)
        assert found is not None, last.response_data
        if found["after"] == "the end":
            return AssistantMessage("read it all")
        offset = int(found["after"].removeprefix("next offset: "))
        return read(f"read-{len(request.messages)}", handle, offset=offset)

    return reply


def pages(messages: Any) -> str:
    """The text of every read_result answer of the conversation, headers taken off."""
    out = []
    for m in messages:
        if isinstance(m, ToolResponseMessage):
            for r in m.responses:
                if r.name == "read_result" and not r.is_error:
                    out.append(r.response_data.split("\n", 1)[1])
    return "".join(out)


async def test_a_large_result_is_stored_and_read_back_whole_in_pages() -> None:
    """A result over ``max_chars`` reaches the model as its head, size and handle; the
    whole text is in the state; read back page by page through ``read_result`` (each page
    at most ``max_chars``), following the "next offset" each page names, it equals the
    original."""
    eviction = LargeResultEviction(max_chars=3000, head_chars=500)
    turns = 1 + -(-len(BIG) // 3000) + 1
    model = ScriptedChatModel(
        [AssistantMessage("", [fetch("c1", "big")]), *[pager("c1#0")] * turns]
    )
    agent = ReactAgent("a", model, tools=[result_tool({"big": BIG})], hooks=[eviction])
    result = await agent.invoke("read the document")
    assert result.text == "read it all"
    shown = result.messages[2].responses[0].response_data  # type: ignore[union-attr]
    note, head = shown.split("\n", 1)
    assert head == BIG[:500]
    assert str(len(BIG)) in note and 'read_result(handle="c1#0", offset=500)' in note
    assert last_response(model.requests[1]).response_data == shown  # the model got the head
    assert result.messages[2].metadata["evicted_results"] == {"c1": "c1#0"}  # type: ignore[union-attr]
    assert LargeResultEviction.stored_results(result.state) == {"c1#0": BIG}
    assert pages(result.messages) == BIG
    answers = [
        r for m in result.messages if isinstance(m, ToolResponseMessage) for r in m.responses
    ]
    assert all(len(r.response_data) <= 3000 + 80 for r in answers)
    assert "read_result" in model.requests[0].tools


async def test_a_result_within_the_limit_is_left_alone() -> None:
    """A result of exactly ``max_chars`` characters reaches the model whole, nothing stored."""
    text = "y" * 100
    model = ScriptedChatModel([AssistantMessage("", [fetch("c1", "k")]), "ok"])
    agent = ReactAgent(
        "a", model, tools=[result_tool({"k": text})], hooks=[LargeResultEviction(max_chars=100)]
    )
    result = await agent.invoke("go")
    assert result.messages[2].responses[0].response_data == text  # type: ignore[union-attr]
    assert EVICTED not in result.state


async def test_parallel_large_results_each_get_their_handle() -> None:
    """Several large results of one parallel batch are each stored under their own
    handle (merged, none lost), each readable; a small one beside them is untouched."""
    texts = {k: f"{k}:" + k * 5000 for k in ("a", "b", "c")} | {"small": "tiny"}
    calls = [fetch(f"c{k}", k) for k in ("a", "b", "small", "c")]
    reads = [
        ToolCall(f"r{k}", "read_result", json.dumps({"handle": f"c{k}#0", "offset": 4990}))
        for k in ("a", "b", "c")
    ]
    model = ScriptedChatModel([AssistantMessage("", calls), AssistantMessage("", reads), "done"])
    agent = ReactAgent(
        "a",
        model,
        tools=[result_tool(texts)],
        hooks=[LargeResultEviction(max_chars=1000, head_chars=10)],
        parallel_tool_execution=True,
    )
    result = await agent.invoke("go")
    assert LargeResultEviction.stored_results(result.state) == {
        "ca#0": texts["a"],
        "cb#0": texts["b"],
        "cc#0": texts["c"],
    }
    answers = result.messages[2].responses  # type: ignore[union-attr]
    assert [r.response_data.split("\n", 1)[1] for r in answers if r.id != "csmall"] == [
        "a:aaaaaaaa",
        "b:bbbbbbbb",
        "c:cccccccc",
    ]
    assert answers[2].response_data == "tiny"
    read_back = [r.response_data for r in result.messages[4].responses]  # type: ignore[union-attr]
    assert read_back == [
        f"[c{k}#0: characters 4990 to 5002 of 5002; the end]\n{k * 12}" for k in ("a", "b", "c")
    ]


async def test_handles_stay_unique_when_call_ids_repeat() -> None:
    """Two turns whose calls share an id store two results: ``c1#0`` then ``c1#1``."""
    texts = {"one": "1" * 50, "two": "2" * 50}
    model = ScriptedChatModel(
        [
            AssistantMessage("", [fetch("c1", "one")]),
            AssistantMessage("", [fetch("c1", "two")]),
            "done",
        ]
    )
    agent = ReactAgent(
        "a", model, tools=[result_tool(texts)], hooks=[LargeResultEviction(max_chars=10)]
    )
    result = await agent.invoke("go")
    assert LargeResultEviction.stored_results(result.state) == {
        "c1#0": texts["one"],
        "c1#1": texts["two"],
    }


async def test_stored_results_stay_for_later_runs_of_the_thread() -> None:
    """A result stored in one run is read in the next run of the conversation."""
    saver = MemorySaver()
    config = RunnableConfig(thread_id="t")
    hooks = [LargeResultEviction(max_chars=100, head_chars=0)]
    first = ScriptedChatModel([AssistantMessage("", [fetch("c1", "big")]), "stored"])
    tools = [result_tool({"big": BIG})]
    await ReactAgent("a", first, tools=tools, hooks=hooks, saver=saver).invoke("go", config)
    second = ScriptedChatModel([read("r1", "c1#0", offset=20, length=30), "read"])
    agent = ReactAgent("a", second, tools=tools, hooks=hooks, saver=saver)
    result = await agent.invoke("read more", config)
    answer = result.messages[-2]
    assert isinstance(answer, ToolResponseMessage)
    assert answer.responses[0].response_data == (
        f"[c1#0: characters 20 to 50 of {len(BIG)}; next offset: 50]\n{BIG[20:50]}"
    )


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"handle": "nope#0"}, 'no stored result has the handle "nope#0" (stored: "c1#0")'),
        ({"handle": "c1#0", "offset": -1}, "offset -1 is outside the result"),
        ({"handle": "c1#0", "offset": 200}, "offset 200 is outside the result: it has 200"),
        ({"handle": "c1#0", "length": 0}, "length must be at least 1, got 0"),
        ({"handle": "c1#0", "offset": "ten"}, "invalid arguments for tool 'read_result'"),
        ({}, "invalid arguments for tool 'read_result'"),
    ],
)
async def test_bad_reads_are_error_results_and_the_run_goes_on(
    arguments: dict[str, Any], error: str
) -> None:
    """An unknown handle, an offset outside the text, a length below 1 or arguments of the
    wrong type answer the model with an error saying what is wrong; the run goes on."""
    bad = AssistantMessage("", [ToolCall("r1", "read_result", json.dumps(arguments))])
    model = ScriptedChatModel([AssistantMessage("", [fetch("c1", "k")]), bad, "ok"])
    agent = ReactAgent(
        "a",
        model,
        tools=[result_tool({"k": "z" * 200})],
        hooks=[LargeResultEviction(max_chars=100)],
    )
    result = await agent.invoke("go")
    answer = result.messages[4].responses[0]  # type: ignore[union-attr]
    assert answer.is_error
    assert error in answer.response_data
    assert result.text == "ok"


async def test_a_read_longer_than_the_limit_is_cut_to_it() -> None:
    """``length`` above ``max_chars`` reads ``max_chars``; the header says what was read
    and where to go on; a read of the last characters says it reached the end."""
    model = ScriptedChatModel(
        [
            AssistantMessage("", [fetch("c1", "k")]),
            read("r1", "c1#0", offset=10, length=10_000),
            read("r2", "c1#0", offset=195, length=50),
            "ok",
        ]
    )
    text = "".join(chr(97 + i % 26) for i in range(200))
    agent = ReactAgent(
        "a", model, tools=[result_tool({"k": text})], hooks=[LargeResultEviction(max_chars=100)]
    )
    result = await agent.invoke("go")
    first = result.messages[4].responses[0].response_data  # type: ignore[union-attr]
    last = result.messages[6].responses[0].response_data  # type: ignore[union-attr]
    assert first == f"[c1#0: characters 10 to 110 of 200; next offset: 110]\n{text[10:110]}"
    assert last == f"[c1#0: characters 195 to 200 of 200; the end]\n{text[195:]}"


async def test_a_large_error_result_is_cut_not_stored() -> None:
    """An error result over the limit is cut to its head at once (the model is to
    correct the call, not to page through its error), and nothing is stored."""

    @tool
    async def explode() -> ToolCallResponse:
        """Fail loudly."""
        return ToolCallResponse("E" * 500, is_error=True)

    model = ScriptedChatModel([AssistantMessage("", [ToolCall("c1", "explode")]), "ok"])
    agent = ReactAgent(
        "a", model, tools=[explode], hooks=[LargeResultEviction(max_chars=100, head_chars=20)]
    )
    result = await agent.invoke("go")
    answer = result.messages[2].responses[0]  # type: ignore[union-attr]
    assert answer.is_error
    assert answer.response_data == "[error cut: 500 characters, the first 20 shown]\n" + "E" * 20
    assert EVICTED not in result.state


async def test_the_tool_name_can_be_changed() -> None:
    """``tool_name`` renames the reading tool; the note names it."""
    model = ScriptedChatModel([AssistantMessage("", [fetch("c1", "k")]), "ok"])
    hook = LargeResultEviction(max_chars=10, head_chars=0, tool_name="page_result")
    agent = ReactAgent("a", model, tools=[result_tool({"k": "q" * 50})], hooks=[hook])
    result = await agent.invoke("go")
    assert "page_result" in model.requests[0].tools and "read_result" not in model.requests[0].tools
    note = result.messages[2].responses[0].response_data  # type: ignore[union-attr]
    assert note.endswith('Read it with page_result(handle="c1#0", offset=0).]')


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"max_chars": 0}, ValueError, "LargeResultEviction.max_chars must be at least 1"),
        ({"max_chars": "10"}, TypeError, "LargeResultEviction.max_chars must be an int"),
        ({"head_chars": -1}, ValueError, "LargeResultEviction.head_chars must not be negative"),
        (
            {"max_chars": 10, "head_chars": 20},
            ValueError,
            r"LargeResultEviction.head_chars must be at most max_chars \(10\), got 20",
        ),
        ({"tool_name": "read result"}, ValueError, "LargeResultEviction.tool_name must be 1 to"),
        ({"tool_name": 5}, TypeError, "LargeResultEviction.tool_name must be a tool name"),
        ({"order": "1"}, TypeError, "LargeResultEviction.order must be an int"),
    ],
)
def test_bad_options_fail_at_construction(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    """Each bad option is refused when the hook is made, naming the parameter."""
    with pytest.raises(error, match=message):
        LargeResultEviction(**options)


def numbered(turn: int, size: int) -> str:
    """A result of ``size`` characters, different for each turn."""
    line = f"turn {turn:04d}: " + "abcdefghij" * 6 + "\n"
    return (line * (size // len(line) + 1))[:size]


async def stored_bytes(path: Any, sizes: list[int]) -> int:
    """The bytes a ``SqliteSaver`` holds after a run of ``len(sizes)`` turns, turn ``i``
    calling a tool whose result has ``sizes[i]`` characters (all over the limit)."""

    texts = {f"d{i}": numbered(i, size) for i, size in enumerate(sizes)}
    calls = [AssistantMessage("", [fetch(f"c{i}", f"d{i}")]) for i in range(len(sizes))]
    async with SqliteSaver(path) as saver:
        agent = ReactAgent(
            "a",
            ScriptedChatModel([*calls, "done"]),
            tools=[result_tool(texts)],
            hooks=[LargeResultEviction(max_chars=1000, head_chars=100)],
            saver=saver,
            max_iterations=len(sizes) + 1,
        )
        await agent.invoke("go", RunnableConfig(thread_id="t"))
        stats = await saver.statistics("t")
    return stats.stored_bytes


async def test_stored_bytes_grow_linearly_with_the_turns(tmp_path: Any) -> None:
    """A run evicting a 10 KB result every turn stores bytes in proportion to its turns:
    8 times the turns take less than 1.5 × 8 times the bytes (each result is written
    once, not again with every later checkpoint and snapshot)."""
    few = await stored_bytes(tmp_path / "few.db", [10_000] * 5)
    many = await stored_bytes(tmp_path / "many.db", [10_000] * 40)
    assert few > 5 * 10_000
    assert many / few < 1.5 * 40 / 5, (few, many)


async def test_a_large_result_is_stored_once(tmp_path: Any) -> None:
    """A 200 KB result evicted at the first of 40 turns adds about its own size to what
    the saver holds (the same run with a 2 KB result there as the baseline), however
    many checkpoints and snapshots follow it; and it reads back whole."""
    small = await stored_bytes(tmp_path / "small.db", [2_000] + [1_500] * 39)
    big = await stored_bytes(tmp_path / "big.db", [200_000] + [1_500] * 39)
    assert 200_000 <= big - small < 1.1 * 200_000, big - small
    async with SqliteSaver(tmp_path / "big.db") as saver:
        latest = await saver.get("t")
    assert latest is not None
    assert LargeResultEviction.stored_results(latest.state)["c0#0"] == numbered(0, 200_000)


async def test_a_summary_leaves_the_stored_results() -> None:
    """A ``SummarizationHook`` that folds the large result's turn into a summary leaves
    the stored result: the model reads it after the summary; and the summariser, counting
    after this hook (``order=-200``), counted the conversation with the result cut."""
    model = ScriptedChatModel(
        [
            AssistantMessage("", [fetch("c1", "big")]),
            AssistantMessage("", [fetch("c2", "small")]),
            read("r1", "c1#0", offset=100, length=50),
            "done",
        ]
    )
    summariser = ScriptedChatModel(["the user fetched documents"] * 3)
    hooks = [
        SummarizationHook(trigger_tokens=400, keep_last=2, model=summariser),
        LargeResultEviction(max_chars=1000, head_chars=100),
    ]
    tools = [result_tool({"big": BIG, "small": "s" * 900})]
    result = await ReactAgent("a", model, tools=tools, hooks=hooks).invoke("go")
    assert is_summary(result.messages[0])
    assert (
        result.messages[-2].responses[0].response_data
        == (  # type: ignore[union-attr]
            f"[c1#0: characters 100 to 150 of {len(BIG)}; next offset: 150]\n{BIG[100:150]}"
        )
    )
    transcripts = [r.messages[0].text for r in summariser.requests]
    assert transcripts and all(BIG[100:1000] not in t for t in transcripts)

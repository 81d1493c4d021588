"""The agents the Temporal tests run, importable by the test process and by the worker
processes alike.

Their model answers from the request alone (the turn is the number of assistant messages
so far), so every worker gives the same answer to the same request, in any order. The
tools append a line per execution (with the worker's pid) to the file named by
``REACTCORE_TEMPORAL_LOG``, so tests count executions across processes.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from reactcore import (
    AssistantMessage,
    MemorySaver,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ReactAgent,
    ToolCall,
    ToolResponseMessage,
    check_cancelled,
    tool,
)
from reactcore.hooks import HumanInTheLoopHook
from reactcore.temporal import FileStore, TemporalAgent
from reactcore.testing import character_usage, message_chunks

LOG_ENV = "REACTCORE_TEMPORAL_LOG"
GATE_ENV = "REACTCORE_TEMPORAL_GATE"
STORE_ENV = "REACTCORE_TEMPORAL_STORE"
RESULT_BYTES = 10_240  # what ``blob`` returns: a result that goes by reference

Plan = Callable[[str, int, list[str]], AssistantMessage]


def record(line: str) -> None:
    """Append ``line`` (and this process's pid) to the executions log, if there is one."""
    path = os.environ.get(LOG_ENV)
    if path:
        with open(path, "a") as log:
            log.write(f"{line} pid={os.getpid()}\n")


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    record(f"add {a} {b}")
    return a + b


@tool
def hold(key: str) -> str:
    """Run until the gate file ``key`` exists (at most 30 s), checking for cancellation."""
    record(f"hold-start {key}")
    gate = os.path.join(os.environ[GATE_ENV], key)
    deadline = time.monotonic() + 30
    while not os.path.exists(gate):
        check_cancelled()
        if time.monotonic() > deadline:
            raise TimeoutError(f"gate {key} never opened")
        time.sleep(0.01)
    record(f"hold-end {key}")
    return f"released {key}"


def blob_text(turn: int) -> str:
    """The 10 KB result of ``blob(turn)``: different for every turn."""
    return (f"<{turn}>" + "".join(chr(97 + (turn + i) % 26) for i in range(64)) * 200)[
        :RESULT_BYTES
    ]


@tool
def blob(turn: int) -> str:
    """Give 10 KB of text for ``turn``."""
    return blob_text(turn)


class PlanModel:
    """A chat model answering ``plan(question, turn, tool_texts)``: deterministic from
    the request, whichever process asks."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def _answer(self, request: ModelRequest) -> AssistantMessage:
        question = request.messages[0].text  # type: ignore[union-attr]
        turn = sum(isinstance(m, AssistantMessage) for m in request.messages)
        texts = [
            r.response_data
            for m in request.messages
            if isinstance(m, ToolResponseMessage)
            for r in m.responses
        ]
        return self.plan(question, turn, texts)

    async def call(self, request: ModelRequest) -> ModelResponse:
        message = self._answer(request)
        return ModelResponse(message, character_usage(request, message))

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelChunk]]:
        message = self._answer(request)
        chunks = message_chunks(message, usage=character_usage(request, message))

        async def produce() -> AsyncIterator[ModelChunk]:
            for chunk in chunks:
                yield chunk

        yield produce()


def _calls(turn: int, *calls: tuple[str, str]) -> AssistantMessage:
    return AssistantMessage(
        "", [ToolCall(f"t{turn}-{i}", name, args) for i, (name, args) in enumerate(calls)]
    )


def batch_plan(question: str, turn: int, texts: list[str]) -> AssistantMessage:
    """Two parallel batches (5 calls, then 2), then the sum of every result."""
    n = int(question.removeprefix("q"))
    if turn == 0:
        return _calls(0, *[("add", f'{{"a": {n}, "b": {i}}}') for i in range(5)])
    if turn == 1:
        return _calls(1, ("add", f'{{"a": {n}, "b": 10}}'), ("add", f'{{"a": {n}, "b": 20}}'))
    return AssistantMessage(f"total={sum(int(t) for t in texts)}")


def hold_plan(question: str, turn: int, texts: list[str]) -> AssistantMessage:
    """One batch: a call that waits for the gate ``question``, and a quick one; then the
    answers as the model saw them."""
    if turn == 0:
        return _calls(0, ("add", '{"a": 1, "b": 1}'), ("hold", f'{{"key": "{question}"}}'))
    return AssistantMessage(" | ".join(texts))


def approval_plan(question: str, turn: int, texts: list[str]) -> AssistantMessage:
    """Two calls needing approval, then the answers as the model saw them."""
    if turn == 0:
        return _calls(0, ("add", '{"a": 2, "b": 3}'), ("add", '{"a": 4, "b": 5}'))
    return AssistantMessage(" | ".join(texts))


def long_plan(question: str, turn: int, texts: list[str]) -> AssistantMessage:
    """``long N``: one ``blob`` call a turn for N turns, then whether every result came
    back whole and in order; ``long N KEY`` then waits for the gate ``KEY`` and
    asks for an ``add`` (to approve), and answers with the last two results."""
    words = question.split()
    turns = int(words[1])
    if turn < turns:
        return _calls(turn, ("blob", f'{{"turn": {turn}}}'))
    whole = texts[:turns] == [blob_text(i) for i in range(turns)]
    if len(words) == 2:
        return AssistantMessage(f"turns={turns} whole={whole}")
    if turn == turns:
        return _calls(turn, ("hold", f'{{"key": "{words[2]}"}}'))
    if turn == turns + 1:
        return _calls(turn, ("add", '{"a": 20, "b": 22}'))
    return AssistantMessage(f"whole={whole} | " + " | ".join(texts[turns:]))


def long_agents() -> list[ReactAgent]:
    """The agents of long runs (their Temporal side needs a payload store)."""
    return [
        ReactAgent("long", PlanModel(long_plan), tools=[blob], max_iterations=None),
        ReactAgent(
            "long-hold",
            PlanModel(long_plan),
            tools=[blob, hold, add],
            max_iterations=None,
            hooks=[HumanInTheLoopHook({"add": True})],
            saver=MemorySaver(),
        ),
    ]


def agents() -> list[ReactAgent]:
    """The agents, defined as any in-process agent is."""
    return [
        ReactAgent(
            "batch",
            PlanModel(batch_plan),
            tools=[add],
            parallel_tool_execution=True,
            max_parallel_tools=3,
        ),
        ReactAgent("hold", PlanModel(hold_plan), tools=[add, hold], parallel_tool_execution=True),
        ReactAgent(
            "approval",
            PlanModel(approval_plan),
            tools=[add],
            hooks=[HumanInTheLoopHook({"add": True})],
            saver=MemorySaver(),
        ),
    ]


def temporal_agents(task_queue: str, store: str | None = None) -> dict[str, TemporalAgent]:
    """The agents as Temporal runs them, by name; lost calls are noticed within 5 s (a
    shorter heartbeat timeout made activities of a live worker time out on a loaded
    2-core machine, and their retries back off for minutes).
    With a ``store`` directory (default: ``REACTCORE_TEMPORAL_STORE``), the long-run
    agents too: results over 4 KB by reference, a new run every 150 history events."""
    found = {
        a.name: TemporalAgent(a, task_queue=task_queue, heartbeat_timeout=5.0) for a in agents()
    }
    store = store or os.environ.get(STORE_ENV)
    if store:
        for a in long_agents():
            found[a.name] = TemporalAgent(
                a,
                task_queue=task_queue,
                heartbeat_timeout=5.0,
                store=FileStore(store),
                inline_limit=4096,
                continue_after_events=150,
            )
    return found

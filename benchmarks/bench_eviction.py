"""Benchmark: what ``LargeResultEviction`` costs a saver over a long run, against the
design it replaced, side by side in one run.

Each run has T turns (25 and 300; 25 and 100 with ``--quick``), each a model answer
calling a tool whose result is 10 KB of text (different every turn), then a final answer;
the model is scripted, the saver a ``SqliteSaver`` on a fresh file. Three settings:

- ``whole``: no eviction, every result in the conversation (the conversation's own cost,
  stored once by the message log: the linear reference);
- ``state map (before)``: the former design, reproduced here: each result over the limit
  stored in one handle → text map in the state (merged key by key), re-stored whole by
  every checkpoint that changes it and by every snapshot;
- ``eviction (now)``: ``LargeResultEviction``: each result filed once into a list of
  messages that the saver keeps as a log, its text once by content hash.

Both evicting settings use ``max_chars=4000, head_chars=400``. Columns: the bytes the
saver holds (``statistics(thread).stored_bytes``, the text of every row), the SQLite
file's size, and the median wall time of a run over the repeats (``--repeat``,
interleaved). Then the bytes at 300 turns over those at 25 (12× the turns: 12× is
linear). Last, one large result: a 1 MB result at the first of 100 turns (40 with
``--quick``) against a 10 KB one there, and the bytes that adds.

    python benchmarks/bench_eviction.py [--quick] [--repeat R] [--json PATH]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs
from _common import parse

from reactcore import (
    AssistantMessage,
    KeyStrategy,
    LargeResultEviction,
    ReactAgent,
    RunnableConfig,
    SqliteSaver,
    ToolCall,
    ToolCallRequest,
    ToolCallResponse,
    ToolHandler,
    tool,
)
from reactcore.testing import ScriptedChatModel


@attrs.frozen
class Plan:
    repeat: int
    turns: tuple[int, int]
    big_turns: int


QUICK = Plan(repeat=1, turns=(25, 100), big_turns=40)
FULL = Plan(repeat=3, turns=(25, 300), big_turns=100)
RESULT = 10_000
BIG = 1_000_000
LIMIT, HEAD = 4000, 400


def document(turn: int, size: int) -> str:
    """A result of ``size`` characters, different for each turn."""
    line = f"turn {turn:04d}: " + "abcdefghij" * 6 + "\n"
    return (line * (size // len(line) + 1))[:size]


@attrs.frozen
class FormerEviction:
    """The design ``LargeResultEviction`` had before: a result over the limit put, by
    the tool call's own state update, into one handle → text map in the state."""

    name: str = "former_eviction"
    order: int = -200
    key: str = "_evicted_results_before_"

    @property
    def interceptors(self) -> tuple[Any, ...]:
        return (self,)

    @property
    def key_strategies(self) -> Mapping[str, KeyStrategy]:
        return {self.key: KeyStrategy.MERGE}

    async def wrap_tool_call(
        self, request: ToolCallRequest, handler: ToolHandler
    ) -> ToolCallResponse:
        response = await handler(request)
        if len(response.text) <= LIMIT:
            return response
        handle = f"{request.call.id}#{len(request.state.get(self.key) or {})}"
        shown = f"[stored as {handle!r}]\n{response.text[:HEAD]}"
        update = {**response.update, self.key: {handle: response.text}}
        return attrs.evolve(response, text=shown, update=update)


Hooks = Callable[[], list[Any]]
SETTINGS: dict[str, Hooks] = {
    "whole": lambda: [],
    "state map (before)": lambda: [FormerEviction()],
    "eviction (now)": lambda: [LargeResultEviction(max_chars=LIMIT, head_chars=HEAD)],
}


async def run(path: Path, hooks: Hooks, sizes: Sequence[int]) -> tuple[int, int, float]:
    """One run of ``len(sizes)`` turns (turn ``i``'s result ``sizes[i]`` characters):
    the bytes the saver holds, the file's size and the run's wall time."""

    @tool
    def fetch(turn: int) -> str:
        """Fetch a document."""
        return document(turn, sizes[turn])

    calls = [
        AssistantMessage("", [ToolCall(f"c{i}", "fetch", json.dumps({"turn": i}))])
        for i in range(len(sizes))
    ]
    async with SqliteSaver(path) as saver:
        agent = ReactAgent(
            "reader",
            ScriptedChatModel([*calls, "done"]),
            tools=[fetch],
            hooks=hooks(),
            saver=saver,
            max_iterations=None,
        )
        start = time.perf_counter()
        await agent.invoke("read them all", RunnableConfig(thread_id="t"))
        elapsed = time.perf_counter() - start
        stats = await saver.statistics("t")
    size = sum(p.stat().st_size for p in path.parent.glob(f"{path.name}*"))
    return stats.stored_bytes, size, elapsed


def measure(plan: Plan, sizes: Sequence[int], hooks: Hooks) -> dict[str, Any]:
    """``run`` ``plan.repeat`` times on fresh files: the bytes (the same every time) and
    the median wall time."""
    times, stored, size = [], 0, 0
    for _ in range(plan.repeat):
        with tempfile.TemporaryDirectory() as directory:
            stored, size, elapsed = anyio.run(run, Path(directory) / "runs.db", hooks, sizes)
        times.append(elapsed)
    return {"stored_bytes": stored, "file_bytes": size, "run_s": statistics.median(times)}


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    rows = []
    print(f"{'setting':20} {'turns':>5} {'stored MB':>10} {'file MB':>8} {'run s':>7}")
    for setting, hooks in SETTINGS.items():
        for turns in plan.turns:
            row = {"setting": setting, "turns": turns, **measure(plan, [RESULT] * turns, hooks)}
            rows.append(row)
            print(
                f"{setting:20} {turns:5d} {row['stored_bytes'] / 1e6:10.2f} "
                f"{row['file_bytes'] / 1e6:8.2f} {row['run_s']:7.2f}"
            )
    few, many = plan.turns
    print(f"\nbytes at {many} turns / at {few} ({many / few:.0f}× the turns; linear is that):")
    ratios = {}
    for setting in SETTINGS:
        first, last = (r["stored_bytes"] for r in rows if r["setting"] == setting)
        ratios[setting] = last / first
        print(f"  {setting:20} {ratios[setting]:6.1f}×")
    print(f"\none {BIG // 1000} KB result at the first of {plan.big_turns} turns, vs 10 KB:")
    added = {}
    rest = [RESULT] * (plan.big_turns - 1)
    for setting, hooks in list(SETTINGS.items())[1:]:
        base = measure(attrs.evolve(plan, repeat=1), [RESULT, *rest], hooks)
        big = measure(attrs.evolve(plan, repeat=1), [BIG, *rest], hooks)
        added[setting] = big["stored_bytes"] - base["stored_bytes"]
        print(f"  {setting:20} adds {added[setting] / 1e6:8.2f} MB ({added[setting] / BIG:.2f}×)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"rows": rows, "ratios": ratios, "big_added": added}, out, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])

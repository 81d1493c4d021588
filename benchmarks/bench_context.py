"""Benchmark: the tokens sent to the model per call over a long tool-using conversation,
with no context management, with ``SummarizationHook`` and with
``ContextEditingInterceptor``, side by side in one run.

The conversation: 200 turns (50 with ``--quick``), each a model answer calling ``search``
whose result is a realistic search-API JSON document (10 hits with titles, URLs and
snippets: 3.7 KB, about 1,020 tokens), then a final answer. The model is scripted; the
summariser is a scripted model answering a 1,200-character summary. Every request the
model got is counted with ``TiktokenCounter`` (cl100k_base) when tiktoken is installed,
else with ``ApproximateTokenCounter``, and the scripted model reports that count as its
usage, as a provider would: the hook and the interceptor decide with the default
approximate counter, corrected by that reported usage (``count_tokens``). The
summariser's requests are counted too, and added to the totals of the summarisation row.

Settings: summarisation at 30,000 tokens keeping the last 20 messages; editing at 30,000
tokens keeping the last 3 results. Columns: agent calls, mean and max tokens per agent
call, summary calls and their tokens, the total sent (agent + summaries), that total as a
ratio of the unmanaged one, and the median wall time of a whole run over the repeats
(``--repeat``, interleaved).

    python benchmarks/bench_context.py [--quick] [--repeat R] [--json PATH]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import attrs
from _common import parse

from reactcore import (
    ApproximateTokenCounter,
    AssistantMessage,
    ContextEditingInterceptor,
    ModelRequest,
    ReactAgent,
    SummarizationHook,
    TiktokenCounter,
    TokenCounter,
    ToolCall,
    Usage,
    tool,
)
from reactcore.testing import ScriptedChatModel


@attrs.frozen
class Plan:
    repeat: int
    turns: int


QUICK = Plan(repeat=1, turns=50)
FULL = Plan(repeat=3, turns=200)
TRIGGER = 30_000
SUMMARY = "The user is researching topics; " + "found figures and sources, " * 44


def hits(query: str) -> str:
    """A search API's answer for ``query``: 10 hits, about 3.3 KB of JSON."""
    results = [
        {
            "rank": rank,
            "title": f"{query.title()} — analysis {rank} of recent findings and data",
            "url": f"https://example.org/{query.replace(' ', '-')}/articles/{1000 + rank}",
            "snippet": (
                f"A detailed look at {query}: figures for 2023 and 2024, the methods used, "
                f"and what changed since the previous report (source {rank}). "
                "Measurements were taken across several regions and compared."
            ),
            "published": f"2024-0{1 + rank % 9}-1{rank % 10}",
        }
        for rank in range(1, 11)
    ]
    return json.dumps({"query": query, "total": 10, "results": results})


@tool
def search(query: str) -> str:
    """Search the web for ``query``."""
    return hits(query)


def script(turns: int) -> list[Any]:
    calls = [
        AssistantMessage("", [ToolCall(f"c{t}", "search", json.dumps({"query": f"topic {t}"}))])
        for t in range(turns)
    ]
    return [*calls, "Here is what I found."]


def counter() -> tuple[TokenCounter, str]:
    try:
        return TiktokenCounter.for_encoding("cl100k_base"), "tiktoken cl100k_base"
    except (ImportError, RuntimeError):
        return ApproximateTokenCounter(), "ApproximateTokenCounter"


def tokens(measure: TokenCounter, request: ModelRequest) -> int:
    messages = [m for m in (request.system_message, *request.messages) if m is not None]
    return measure.count(messages, request.visible_tool_specs())


Setup = Callable[[ScriptedChatModel], dict[str, Any]]


def setups() -> dict[str, Setup]:
    return {
        "none": lambda summariser: {},
        "summarisation": lambda summariser: {
            "hooks": [SummarizationHook(trigger_tokens=TRIGGER, keep_last=20, model=summariser)]
        },
        "editing": lambda summariser: {
            "interceptors": [ContextEditingInterceptor(trigger_tokens=TRIGGER)]
        },
    }


async def run(
    plan: Plan, setup: Setup, measure: TokenCounter
) -> tuple[ScriptedChatModel, ScriptedChatModel, float]:
    def usage(request: ModelRequest, message: AssistantMessage) -> Usage:
        return Usage(tokens(measure, request), 10, tokens(measure, request) + 10)

    model = ScriptedChatModel(script(plan.turns), usage=usage)
    summariser = ScriptedChatModel([SUMMARY] * plan.turns)
    agent = ReactAgent(
        "researcher",
        model,
        tools=[search],
        system_prompt="You research topics with the search tool.",
        max_iterations=None,
        **setup(summariser),
    )
    start = time.perf_counter()
    result = await agent.invoke("Research 200 topics, one search each.")
    elapsed = time.perf_counter() - start
    assert result.text == "Here is what I found."
    return model, summariser, elapsed


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    measure, name = counter()
    cases = setups()
    times: dict[str, list[float]] = {case: [] for case in cases}
    runs: dict[str, tuple[ScriptedChatModel, ScriptedChatModel]] = {}
    for _ in range(plan.repeat):  # interleaved, so load on the machine hits each alike
        for case, setup in cases.items():
            model, summariser, elapsed = anyio.run(run, plan, setup, measure)
            times[case].append(elapsed)
            runs[case] = (model, summariser)
    print(f"{plan.turns} turns, tokens counted with {name}")
    print(
        f"{'setting':14} {'calls':>5} {'mean/call':>10} {'max/call':>9} {'summaries':>9} "
        f"{'summary tok':>11} {'total':>11} {'vs none':>7} {'run s':>6}"
    )
    rows = []
    for case, (model, summariser) in runs.items():
        sent = [tokens(measure, r) for r in model.requests]
        summarised = [tokens(measure, r) for r in summariser.requests]
        row = {
            "setting": case,
            "calls": len(sent),
            "mean": statistics.fmean(sent),
            "max": max(sent),
            "summaries": len(summarised),
            "summary_tokens": sum(summarised),
            "total": sum(sent) + sum(summarised),
            "run_s": statistics.median(times[case]),
        }
        rows.append(row)
    baseline = rows[0]["total"]
    for row in rows:
        row["ratio"] = row["total"] / baseline
        print(
            f"{row['setting']:14} {row['calls']:5d} {row['mean']:10,.0f} {row['max']:9,d} "
            f"{row['summaries']:9d} {row['summary_tokens']:11,d} {row['total']:11,d} "
            f"{row['ratio']:6.3f}× {row['run_s']:6.2f}"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"counter": name, "turns": plan.turns, "rows": rows}, out, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])

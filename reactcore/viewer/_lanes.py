"""Where each span is drawn: the rows (``Lane``s) of a timeline.

Each run (the top one, and each subagent's) gets a model row when it has model calls or
pauses, then its tool calls packed into as few rows as never overlap: a call takes the
lowest row free since before its bar starts (bars touching end to start count as
overlapping), so calls that run at once are always in separate rows and a long sequence of
short calls reuses a few. A call that ran a subagent gets a row of its own, followed by its
subagent's rows, one level deeper (the builder makes sure every subagent's calling span
is there). Packing is ``O(n log n)`` in the number of calls.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Sequence

import attrs

from ._model import ApprovalWait, Lane, ModelSpan, ToolSpan


def _pack(spans: Sequence[ToolSpan]) -> list[list[ToolSpan]]:
    """``spans`` in rows where none overlap, each in the lowest row free at its start."""
    rows: list[list[ToolSpan]] = []
    busy: list[tuple[float, int]] = []  # (end, row) of the last bar of each busy row
    free: list[int] = []
    for span in sorted(spans, key=lambda s: (s.start, s.key)):
        while busy and busy[0][0] < span.start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            row = heapq.heappop(free)
        else:
            row = len(rows)
            rows.append([])
        rows[row].append(span)
        heapq.heappush(busy, (span.end, row))
    return rows


def _row_label(spans: Sequence[ToolSpan]) -> str:
    names = list(dict.fromkeys(s.name for s in spans))
    if len(spans) == 1:
        return names[0]
    head = names[0] if len(names) == 1 else f"{names[0]}, …"
    return f"{head} ({len(spans)} calls)"


@attrs.frozen
class Layout:
    """The rows, and the spans with their ``lane`` set."""

    lanes: tuple[Lane, ...]
    tools: tuple[ToolSpan, ...]
    models: tuple[ModelSpan, ...]
    waits: tuple[ApprovalWait, ...]


def layout(
    tools: Sequence[ToolSpan],
    models: Sequence[ModelSpan],
    waits: Sequence[ApprovalWait],
    agents: dict[str, str],
) -> Layout:
    """Lay the spans out in rows (see the module docstring); ``agents`` names the agent
    of each subagent run, by the key of the call that ran it."""
    by_run: dict[str | None, list[ToolSpan]] = defaultdict(list)
    for span in tools:
        by_run[span.parent].append(span)
    talking: set[str | None] = {m.parent for m in models} | {w.parent for w in waits}
    runs = set(by_run) | talking
    lanes: list[Lane] = []
    lane_of_tool: dict[str, int] = {}
    lane_of_run: dict[str | None, int] = {}

    def place(run: str | None, depth: int) -> None:
        if run in talking:
            lane_of_run[run] = len(lanes)
            label = "model" if run is None else f"{agents.get(run, 'subagent')}: model"
            lanes.append(Lane("model", label, depth, run))
        spans = by_run.get(run, [])
        nesting = [s for s in spans if s.key in runs]
        for row in _pack([s for s in spans if s.key not in runs]):
            for span in row:
                lane_of_tool[span.key] = len(lanes)
            lanes.append(Lane("tools", _row_label(row), depth, run))
        for span in sorted(nesting, key=lambda s: (s.start, s.key)):
            lane_of_tool[span.key] = len(lanes)
            lanes.append(Lane("tools", span.name, depth, run))
            place(span.key, depth + 1)

    place(None, 0)
    return Layout(
        tuple(lanes),
        tuple(attrs.evolve(s, lane=lane_of_tool[s.key]) for s in tools),
        tuple(attrs.evolve(m, lane=lane_of_run[m.parent]) for m in models),
        tuple(attrs.evolve(w, lane=lane_of_run[w.parent]) for w in waits),
    )

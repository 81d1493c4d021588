"""The bench's measurements as JSON lines: one object per measurement, self-contained."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from .measure import Plan
from .results import Row


def record(row: Row, plan: Plan, machine: dict[str, Any], command: str) -> dict[str, Any]:
    """One measurement with its derived figures, the plan's settings and the machine."""
    return {
        **attrs.asdict(row.m),
        "median_s": row.m.median_s,
        "us_per_call": row.us_per_call,
        "speedup_vs_sequential": row.speedup,
        "ratio_to_ideal": row.vs_ideal,
        "repeat": plan.repeat,
        "max_parallel": plan.max_parallel,
        "budget_s": plan.budget,
        "machine": machine,
        "command": command,
    }


def write_jsonl(
    path: Path, rows: Sequence[Row], plan: Plan, machine: dict[str, Any], command: str
) -> None:
    """Write one JSON line per row to ``path`` (replacing it)."""
    lines = [json.dumps(record(r, plan, machine, command), ensure_ascii=False) for r in rows]
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")

"""The bench's tables, with ``rich``: makespans, then cancellations."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from .measure import Plan
from .results import Row
from .workloads import WORKLOADS


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} µs"


def _number(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def _per_call(us: float | None) -> str:
    return _number(us, ".0f" if us is not None and us >= 100 else ".1f")


def _answers(row: Row) -> str:
    m = row.m
    if m.skipped is not None:
        return f"[dim]skipped: {m.skipped}[/dim]"
    order = ["ok", "timeout", "cancelled", "error"]
    counts = " · ".join(f"{m.answers[kind]} {kind}" for kind in order if kind in m.answers)
    if not m.complete:
        return f"[bold red]MISSING ANSWERS[/bold red] {counts}"
    return counts


def _section_ends(rows: Sequence[Row]) -> list[bool]:
    keys = [(r.m.workload, r.m.n, r.m.backend) for r in rows]
    return [i + 1 == len(keys) or keys[i + 1] != key for i, key in enumerate(keys)]


def makespan_table(rows: Sequence[Row], plan: Plan) -> Table:
    """One line per workload × executor × backend × N (cancel rows excluded)."""
    turn = "an agent turn" if plan.agent else "the tool node alone"
    table = Table(
        title=f"makespan of a batch of N tool calls ({turn}), median of {plan.repeat}",
        caption=(
            f"L = {plan.latency * 1e3:g} ms; seed = {plan.pool_size} pool threads + "
            "Semaphore(k); ×seq = sequential median / this; ×ideal = this / the makespan "
            "of the calls started in order on k slots at nominal times"
        ),
    )
    for name in ("workload", "executor", "backend"):
        table.add_column(name)
    for name in ("N", "k", "median", "µs/call", "×seq", "×ideal"):
        table.add_column(name, justify="right")
    table.add_column("answers")
    for row, end in zip(rows, _section_ends(rows), strict=True):
        m = row.m
        table.add_row(
            m.workload,
            m.executor,
            m.backend,
            str(m.n),
            str(m.k),
            _seconds(m.median_s),
            _per_call(row.us_per_call),
            _number(row.speedup, ".1f", "×"),
            _number(row.vs_ideal, ".2f"),
            _answers(row),
            end_section=end,
        )
    return table


def _cleanups(row: Row) -> str:
    m = row.m
    cleaned, running = m.cleaned_at_return, m.running_at_cancel
    text = f"{cleaned}/{running}"
    return f"[green]{text}[/green]" if cleaned == running else f"[bold red]{text}[/bold red]"


def cancel_table(rows: Sequence[Row], plan: Plan) -> Table:
    """One line per executor × backend × N of the cancel workload."""
    table = Table(
        title=f"cancelling a running batch, median of {plan.repeat}",
        caption=(
            "the caller cancels once as many calls run as the executor allows; finally ran ="
            " started calls whose finally had run when the batch returned"
        ),
    )
    for name in ("executor", "backend"):
        table.add_column(name)
    for name in ("N", "k", "running", "cancel → return"):
        table.add_column(name, justify="right")
    table.add_column("finally ran", justify="right")
    for row, end in zip(rows, _section_ends(rows), strict=True):
        m = row.m
        table.add_row(
            m.executor,
            m.backend,
            str(m.n),
            str(m.k),
            str(m.running_at_cancel),
            _seconds(m.median_s),
            _cleanups(row),
            end_section=end,
        )
    return table


def print_tables(console: Console, rows: Sequence[Row], plan: Plan) -> None:
    """The makespan table, then the cancel table (each only if it has rows)."""
    makespans = [r for r in rows if not WORKLOADS[r.m.workload].cancel]
    cancels = [r for r in rows if WORKLOADS[r.m.workload].cancel]
    if makespans:
        console.print(makespan_table(makespans, plan))
    if cancels:
        console.print(cancel_table(cancels, plan))

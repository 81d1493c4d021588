"""The bench's plot, with matplotlib: makespan against N, log-log, one panel per workload
and backend, each executor with its ideal makespan (calls started in order on k slots:
``ceil(N/k)·L`` for equal calls) as a dashed line of the same colour."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from .executors import EXECUTORS
from .measure import Plan
from .results import Row
from .workloads import Workload

_COLOURS = ("tab:gray", "tab:blue", "tab:green", "tab:red", "tab:purple", "tab:orange")


def _panel(ax: Axes, workload: Workload, backend: str, rows: Sequence[Row], plan: Plan) -> None:
    timing = workload.timing(plan.latency)
    sizes = sorted(plan.sizes_for(workload))
    drawn: list[list[float]] = []
    for colour, ex in zip(_COLOURS, EXECUTORS, strict=False):
        points = [
            (r.m.n, r.m.median_s)
            for r in rows
            if r.m.executor == ex.name and r.m.median_s is not None
        ]
        if points:
            ax.plot(*zip(*points, strict=True), "o-", color=colour, label=ex.name)
        _mark_extra_timeouts(ax, workload, [r for r in rows if r.m.executor == ex.name], colour)
        ideal = [workload.ideal(n, ex.k(n, plan.max_parallel), timing) for n in sizes]
        if all(ideal) and ideal not in drawn:
            drawn.append(ideal)
            label = f"ideal, k = {_k_label(ex.k(sizes[-1], plan.max_parallel), sizes[-1])}"
            ax.plot(sizes, ideal, "x--", color=colour, alpha=0.6, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sizes, labels=[str(n) for n in sizes])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(_duration))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_title(f"{workload.name} · {backend}", fontsize=10)
    ax.set_xlabel("N (tool calls in the batch)")
    ax.set_ylabel("makespan")
    ax.grid(True, which="both", alpha=0.25)


def _mark_extra_timeouts(ax: Axes, workload: Workload, rows: Sequence[Row], colour: str) -> None:
    """Label a point whose batch timed out more calls than run past the timeout by design:
    a short makespan bought with unanswered calls."""
    for row in rows:
        timeouts = row.m.answers.get("timeout", 0)
        if row.m.median_s is not None and timeouts > workload.timeouts(row.m.n):
            ax.annotate(
                f"{timeouts}/{row.m.n} timed out",
                (row.m.n, row.m.median_s),
                xytext=(-8, 8),
                textcoords="offset points",
                ha="right",
                fontsize=8,
                color=colour,
            )


def _duration(seconds: float, _: object = None) -> str:
    if seconds >= 1:
        return f"{seconds:g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:g} ms"
    return f"{seconds * 1e6:g} µs"


def _k_label(k: int, n: int) -> str:
    return "N" if k == n and n > 1 else str(k)


def write_plot(path: Path, rows: Sequence[Row], plan: Plan, machine_line: str) -> None:
    """Write the PNG to ``path``; workloads measured as a cancel latency are left out."""
    workloads = [w for w in plan.workloads if not w.cancel]
    backends = plan.backends
    cols, lines = max(1, len(workloads)), max(1, len(backends))
    width = max(4.6 * cols, 10.0)  # room for the title and the legend
    figure = Figure(figsize=(width, 3.9 * lines + 1.2), layout="constrained")
    axes: Any = figure.subplots(lines, cols, squeeze=False)
    for i, backend in enumerate(backends):
        for j, workload in enumerate(workloads):
            mine = [r for r in rows if r.m.workload == workload.name and r.m.backend == backend]
            _panel(axes[i][j], workload, backend, mine, plan)
    handles: dict[str, Any] = {}
    for ax in figure.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    figure.legend(list(handles.values()), list(handles.keys()), loc="outside lower center", ncol=4)
    turn = "in an agent turn" if plan.agent else "through AgentToolNode"
    figure.suptitle(
        f"reactcore bench: makespan of N tool calls {turn}, median of {plan.repeat} "
        f"(L = {plan.latency * 1e3:g} ms, k = {plan.max_parallel})\n{machine_line}",
        fontsize=10,
    )
    figure.savefig(path, format="png", dpi=110)

"""``reactcore bench``: run a plan with a progress bar, then the tables, JSON lines, plot.

Imported only once the CLI has checked that the bench extra (rich, matplotlib) is there.
"""

from __future__ import annotations

from pathlib import Path

import attrs
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from .machine import machine_info, summary
from .measure import Plan, run_plan
from .results import rows
from .table import print_tables


@attrs.define(eq=False)
class _Bar:
    """The measurement loop's progress, on a rich progress bar."""

    progress: Progress
    task: TaskID = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.task = self.progress.add_task("starting", total=None)

    def start(self, total: int) -> None:
        self.progress.update(self.task, total=total)

    def step(self, label: str, count: int = 1) -> None:
        self.progress.update(self.task, advance=count, description=label)


def run(plan: Plan, json_path: Path | None, plot_path: Path | None, command: str) -> int:
    """Measure, print, write; 1 if some executor left calls unanswered, else 0."""
    console = Console()
    if not console.is_terminal:
        console.width = max(console.width, 150)  # a table, not wrapped columns, in a file
    columns = (
        TextColumn("{task.description:<48}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        bar = _Bar(progress)
        bar.start(plan.steps())
        measurements = run_plan(plan, bar)
    found = rows(measurements, plan)
    print_tables(console, found, plan)
    machine = machine_info(plan.pool_size)
    if json_path is not None:
        from .jsonl import write_jsonl

        write_jsonl(json_path, found, plan, machine, command)
        console.print(f"wrote {len(found)} JSON lines to {json_path}")
    if plot_path is not None:
        from .plot import write_plot

        write_plot(plot_path, found, plan, summary(machine))
        console.print(f"wrote the plot to {plot_path}")
    return 0 if all(r.m.complete is not False for r in found) else 1

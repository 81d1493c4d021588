"""The figures derived from measurements: µs per call, speedup, ratio to the ideal."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from .executors import EXECUTORS, SEQUENTIAL
from .measure import Measurement, Plan


@attrs.frozen
class Row:
    """A measurement and what it means next to the others of its case."""

    m: Measurement
    speedup: float | None  # the sequential executor's median over this one's
    vs_ideal: float | None  # this median over the ideal makespan at k

    @property
    def us_per_call(self) -> float | None:
        median = self.m.median_s
        return None if median is None else median / self.m.n * 1e6


def _ratio(top: float | None, bottom: float | None) -> float | None:
    return None if top is None or not bottom else top / bottom


def rows(measurements: Sequence[Measurement], plan: Plan) -> list[Row]:
    """Rows by workload (in plan order), N, backend, then executor."""
    sequential = {
        (m.workload, m.backend, m.n, m.agent): m.median_s
        for m in measurements
        if m.executor == SEQUENTIAL
    }
    workloads = [w.name for w in plan.workloads]
    executors = [e.name for e in EXECUTORS]
    found = [
        Row(
            m,
            None
            if m.ideal_s is None
            else _ratio(sequential.get((m.workload, m.backend, m.n, m.agent)), m.median_s),
            _ratio(m.median_s, m.ideal_s),
        )
        for m in measurements
    ]
    return sorted(
        found,
        key=lambda r: (
            workloads.index(r.m.workload),
            r.m.n,
            r.m.backend,
            executors.index(r.m.executor),
        ),
    )

"""The native trio backend: trio's own nursery, cancel scopes and clock.

The semantics are anyio's on trio (anyio's are trio's), without anyio's wrapper
around each scope, task group and clock read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import trio  # the seam: trio directly, for what anyio's layer costs per call

from ._base import Runner
from ._portable import grouped_batch


@attrs.frozen
class TrioBackend:
    """``Backend`` on trio (see the module docstring)."""

    name: str = "trio"

    def clock(self) -> float:
        return trio.current_time()

    def call_scope(self, deadline: float) -> trio.CancelScope:
        return trio.CancelScope(deadline=deadline)

    async def run_batch(self, jobs: Sequence[Any], workers: int, run: Runner) -> None:
        await grouped_batch(trio.open_nursery, trio.Cancelled, jobs, workers, run)


TRIO = TrioBackend()

"""The native trio backend: trio's own nursery, cancel scopes and clock.

The semantics are anyio's on trio (anyio's are trio's), without anyio's wrapper
around each scope, task group and clock read.
"""

from __future__ import annotations

import trio  # the seam: trio directly, for what anyio's layer costs per call

from ._portable import GroupBackend


def _scope(deadline: float) -> trio.CancelScope:
    return trio.CancelScope(deadline=deadline)


def _cancelled() -> type[BaseException]:
    return trio.Cancelled


TRIO = GroupBackend(
    "trio", trio.current_time, _scope, trio.open_nursery, _cancelled, trio.lowlevel.checkpoint
)

"""What the two limit hooks share: counting per thread (in the state, so it is kept with
checkpoints) and per run (in the run's context, among its ``RUN_COUNTS``, which a run
continued elsewhere takes along), and reporting an exceeded limit."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from .. import _validate as valid
from .._config import RunnableConfig
from .._hooks import JUMP_TARGETS
from .._run_context import run_count, set_run_count
from .._state import OverAllState

ExitBehavior = Literal["end", "error", "continue"]


def limit_field() -> Any:
    """An optional, non-negative limit (``None``: no limit)."""
    return attrs.field(default=None, validator=valid.integer(minimum=0, optional=True))


def exit_field(default: str, *choices: str) -> Any:
    """An ``exit_behavior`` that must be one of ``choices`` (``ValueError`` otherwise)."""
    return attrs.field(default=default, validator=valid.one_of(*choices))


def name_field(default: Any) -> Any:
    """A hook's ``name``: a non-empty ``str``."""
    return attrs.field(default=default, validator=valid.text(non_empty=True))


def jumps_field(*targets: str) -> Any:
    """A hook's ``can_jump_to``: where it may jump (``"model"``, ``"tools"``, ``"end"``)."""
    return attrs.field(default=targets, validator=JUMPS)


JUMPS = valid.each(valid.one_of(*sorted(JUMP_TARGETS)))


@attrs.frozen
class Counter:
    """A count kept under ``key`` in the state (thread) and in the run context (run)."""

    key: str

    def thread(self, state: OverAllState) -> int:
        return int(state.get(self.key, 0))

    def run(self, config: RunnableConfig) -> int:
        return run_count(config.context, self.key)

    def start_run(self, config: RunnableConfig) -> None:
        """Start the run count from 0, even when the caller reuses a config's context."""
        set_run_count(config.context, self.key, None)

    def add(self, state: OverAllState, config: RunnableConfig, n: int) -> dict[str, int]:
        """Count ``n`` more; the returned update records the thread count in the state."""
        set_run_count(config.context, self.key, self.run(config) + n)
        return {self.key: self.thread(state) + n}


def exceeded(
    thread: int, thread_limit: int | None, run: int, run_limit: int | None, adding: int
) -> list[str]:
    """Descriptions of the limits that ``adding`` more would exceed."""
    out = []
    if thread_limit is not None and thread + adding > thread_limit:
        out.append(f"thread limit ({thread}/{thread_limit})")
    if run_limit is not None and run + adding > run_limit:
        out.append(f"run limit ({run}/{run_limit})")
    return out

"""Run ``ReactAgent``\\ s as Temporal workflows (the ``temporal`` extra; asyncio only).

The loop, hooks and state merging run in the workflow; every model call and every tool
call is an activity, on any number of worker machines; long runs keep their history
bounded through a payload store and continue-as-new. See ``docs/temporal.md``.
"""

from __future__ import annotations

from .._exceptions import PayloadMissing as PayloadMissing
from ._agent import TemporalAgent as TemporalAgent
from ._agent import TemporalRun as TemporalRun
from ._store import FileStore as FileStore
from ._store import MemoryStore as MemoryStore
from ._store import PayloadStore as PayloadStore
from ._worker import replayer as replayer
from ._worker import run_worker as run_worker
from ._worker import sandbox_runner as sandbox_runner
from ._worker import worker as worker
from ._workflow import ReactAgentWorkflow as ReactAgentWorkflow

__all__ = [
    "FileStore",
    "MemoryStore",
    "PayloadMissing",
    "PayloadStore",
    "ReactAgentWorkflow",
    "TemporalAgent",
    "TemporalRun",
    "replayer",
    "run_worker",
    "sandbox_runner",
    "worker",
]

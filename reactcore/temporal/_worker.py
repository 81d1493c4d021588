"""The worker helper: one Temporal worker running the agent workflow and the model and
tool activities of a set of agents, with the workflow sandbox set up for reactcore."""

from __future__ import annotations

import gc
import signal
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import anyio
from temporalio.client import Client
from temporalio.worker import Replayer, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from ._activities import Activities
from ._agent import TemporalAgent
from ._workflow import ReactAgentWorkflow, register

PASSTHROUGH = (
    "reactcore",
    "anyio",
    "sniffio",
    "attrs",
    "attr",
    "cattrs",
    "cattr",
    "structlog",
    "httpx",
    "httpcore",
    "h11",
    "idna",
    "certifi",
    "trio",
    "outcome",
    "sortedcontainers",
)
"""Modules the workflow sandbox shares with the worker instead of re-importing them: the
agent objects live outside the sandbox, and anyio must be the same module on both sides."""


def sandbox_runner(passthrough: Iterable[str] = ()) -> SandboxedWorkflowRunner:
    """Temporal's sandbox, letting reactcore and its dependencies (and ``passthrough``:
    the modules defining your hooks and interceptors, if they import more) through."""
    # anyio loads its backend lazily, on first use; inside the sandbox that import is
    # refused, so it is loaded here, before any workflow runs.
    import anyio._backends._asyncio  # noqa: F401

    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH, *passthrough)
    return SandboxedWorkflowRunner(restrictions=restrictions)


def _task_queue(agents: Sequence[TemporalAgent], task_queue: str | None) -> str:
    if not agents:
        raise ValueError("a worker needs at least one agent")
    names = [a.name for a in agents]
    if len(set(names)) != len(names):
        raise ValueError(f"two agents share a name: {names}")
    if task_queue is not None:
        return task_queue
    queues = {a.task_queue for a in agents}
    if len(queues) > 1:
        raise ValueError(f"the agents use several task queues ({sorted(queues)}): name one")
    return queues.pop()


@asynccontextmanager
async def worker(
    client: Client,
    agents: Sequence[TemporalAgent],
    *,
    task_queue: str | None = None,
    passthrough: Iterable[str] = (),
    **options: Any,
) -> AsyncIterator[Worker]:
    """A running ``temporalio.worker.Worker`` for ``agents``, for the block:
    ``async with worker(client, [a]):``; leaving the block shuts it down.

    ``task_queue`` defaults to the agents' (they must agree); ``options`` go to
    ``Worker`` as they are (``max_concurrent_activities``, ``identity`` …).
    ``max_heartbeat_throttle_interval`` defaults to the agents' smallest ``cancel_within``,
    so a cancelled tool call learns of it that soon.

    When the block is left the worker has stopped and everything it held is released, in
    the event loop: runs still in flight in its workflow cache (temporalio does not evict
    them at shutdown) are closed, and the worker is freed there rather than at interpreter
    exit, where Temporal's native threads can abort the process (``Fatal Python error:
    PyGILState_Release``, temporalio issue #300). Runs left unfinished go on on another
    worker, from their history.
    """
    task_queue = _task_queue(agents, task_queue)
    for agent in agents:
        register(agent, task_queue)
    activities = Activities({a.name: a for a in agents})
    options.setdefault("workflow_runner", sandbox_runner(passthrough))
    within = min(a.cancel_within for a in agents)
    options.setdefault("max_heartbeat_throttle_interval", timedelta(seconds=within))
    running = Worker(
        client,
        task_queue=task_queue,
        workflows=[ReactAgentWorkflow],
        activities=[activities.model, activities.tool, activities.save, activities.load],
        **options,
    )
    try:
        async with running:
            yield running
    finally:
        del running
        # The worker and its cached workflows sit in reference cycles: collected now,
        # while the loop and the interpreter are alive, not during interpreter shutdown.
        gc.collect()


async def run_worker(
    client: Client,
    agents: Sequence[TemporalAgent],
    *,
    task_queue: str | None = None,
    passthrough: Iterable[str] = (),
    signals: Sequence[signal.Signals] = (signal.SIGTERM, signal.SIGINT),
    ready: Callable[[], object] | None = None,
    **options: Any,
) -> None:
    """Run a worker for ``agents`` (as ``worker`` makes it) until the process gets one of
    ``signals`` (SIGTERM, SIGINT), then shut it down and return: a worker process whose
    main is ``asyncio.run(run_worker(client, agents))`` exits with status 0 when told to
    stop. ``ready()`` is called once the worker polls. Main thread only (signal handlers)."""
    async with worker(client, agents, task_queue=task_queue, passthrough=passthrough, **options):
        with anyio.open_signal_receiver(*signals) as received:
            if ready is not None:
                ready()
            async for _ in received:
                break


def replayer(
    agents: Sequence[TemporalAgent],
    *,
    task_queue: str | None = None,
    passthrough: Iterable[str] = (),
    **options: Any,
) -> Replayer:
    """A ``temporalio.worker.Replayer`` for the runs of ``agents``:
    ``await replayer(agents).replay_workflow(await handle.fetch_history())`` raises if
    today's code would not make the same decisions as the recorded run (check it before
    deploying a change to an agent's hooks or interceptors)."""
    task_queue = _task_queue(agents, task_queue)
    for agent in agents:
        register(agent, task_queue)
    options.setdefault("workflow_runner", sandbox_runner(passthrough))
    return Replayer(workflows=[ReactAgentWorkflow], **options)

"""The worker helper: one Temporal worker running the agent workflow and the model and
tool activities of a set of agents, with the workflow sandbox set up for reactcore."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

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


def worker(
    client: Client,
    agents: Sequence[TemporalAgent],
    *,
    task_queue: str | None = None,
    passthrough: Iterable[str] = (),
    **options: Any,
) -> Worker:
    """A ``temporalio.worker.Worker`` for ``agents``: ``async with worker(client, [a]):``.

    ``task_queue`` defaults to the agents' (they must agree); ``options`` go to
    ``Worker`` as they are (``max_concurrent_activities``, ``identity`` …).
    """
    task_queue = _task_queue(agents, task_queue)
    for agent in agents:
        register(agent, task_queue)
    activities = Activities({a.name: a for a in agents})
    options.setdefault("workflow_runner", sandbox_runner(passthrough))
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[ReactAgentWorkflow],
        activities=[activities.model, activities.tool],
        **options,
    )


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

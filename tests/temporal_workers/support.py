"""What the Temporal test modules share: worker processes, the dev server and worker
fixtures (one server and two workers per module), and waits bounded by ``WAIT``.

The tools log each execution (with the worker's pid) to a file, so the tests count
executions across processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from reactcore import ToolCallStarted
from reactcore.temporal import TemporalAgent, TemporalRun
from reactcore.temporal.testing import DevServer

from .agents import GATE_ENV, LOG_ENV, STORE_ENV, temporal_agents

WORKER = Path(__file__).parent / "worker.py"
WAIT = 60  # seconds: the bound of every wait in these tests (a loaded 2-core machine)


class Workers:
    """Worker processes for one task queue, logging tool executions to ``log``."""

    def __init__(self, address: str, task_queue: str, log: Path, gates: Path) -> None:
        self.address, self.task_queue, self.log, self.gates = address, task_queue, log, gates
        self.store = log.parent / "store"  # the long runs' payload store, on disk
        self.processes: list[subprocess.Popen[str]] = []

    def start(self) -> subprocess.Popen[str]:
        env = {**os.environ, LOG_ENV: str(self.log), GATE_ENV: str(self.gates)}
        env[STORE_ENV] = str(self.store)
        process = subprocess.Popen(
            [sys.executable, str(WORKER), self.address, self.task_queue],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.processes.append(process)
        assert process.stdout is not None
        line = process.stdout.readline()  # bounded: the process prints or dies
        if line.strip() != "ready":
            self.kill(process)
            raise RuntimeError(f"worker did not start: {line!r}")
        return process

    def kill(self, process: subprocess.Popen[str]) -> None:
        process.kill()
        process.wait(timeout=WAIT)
        if process in self.processes:
            self.processes.remove(process)

    def by_pid(self, pid: int) -> subprocess.Popen[str]:
        return next(p for p in self.processes if p.pid == pid)

    def close(self) -> None:
        for process in list(self.processes):
            self.kill(process)


@pytest.fixture(scope="module", name="anyio_backend")
def _anyio_backend() -> str:
    """Temporal's SDK runs on asyncio only: these tests do too."""
    return "asyncio"


@pytest.fixture(scope="module", name="server")
def _server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """The module's dev server, killed at the end."""
    dev = DevServer(str(tmp_path_factory.mktemp("temporal") / "db.sqlite"))
    dev.start()
    try:
        yield dev
    finally:
        dev.kill()


@pytest.fixture(scope="module", name="workers")
def _workers(server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    """The module's two worker processes, killed at the end."""
    base = tmp_path_factory.mktemp("workers")
    (base / "gates").mkdir()
    group = Workers(server.address, f"tq-{uuid.uuid4().hex[:8]}", base / "log", base / "gates")
    try:
        group.start()
        group.start()
        yield group
    finally:
        group.close()


@pytest.fixture(name="agents_of")
def _agents_of(workers: Workers) -> dict[str, TemporalAgent]:
    """The test agents on the workers' task queue, by name."""
    return temporal_agents(workers.task_queue, str(workers.store))


def install_fixtures(namespace: dict[str, Any]) -> None:
    """Give a test module (``install_fixtures(globals())``) the fixtures ``anyio_backend``
    (asyncio), ``server``, ``workers`` (two worker processes) and ``agents_of``."""
    namespace.update(
        _anyio_backend=_anyio_backend, _server=_server, _workers=_workers, _agents_of=_agents_of
    )


async def connect(server: DevServer) -> Any:
    return await server.connect()


def executions(log: Path, prefix: str) -> list[int]:
    """The pids of the logged executions starting with ``prefix``."""
    if not log.exists():
        return []
    lines = log.read_text().splitlines()
    return [int(line.rsplit("pid=", 1)[1]) for line in lines if line.startswith(prefix + " ")]


async def logged(log: Path, prefix: str, count: int = 1) -> list[int]:
    """Wait until ``prefix`` was logged ``count`` times; the pids."""
    with anyio.fail_after(WAIT):
        while True:  # another process writes the file: polled, within the bound
            found = executions(log, prefix)
            if len(found) >= count:
                return found
            await anyio.sleep(0.02)


async def started(run: TemporalRun, name: str) -> ToolCallStarted:
    """Read the run's events (while it runs) until a call of ``name`` has started."""
    with anyio.fail_after(WAIT):
        async for event in run.events():
            if isinstance(event, ToolCallStarted) and event.name == name:
                return event
    raise AssertionError(f"the run ended before {name} started")


async def recorded(run: TemporalRun, name: str) -> None:
    """Wait until the workflow has recorded that a call of ``name`` finished (so its
    completion is in the run's history)."""
    with anyio.fail_after(WAIT):
        while True:
            page = await run.handle.query("events", 0, result_type=dict)
            if any(e["type"] == "ToolCallFinished" and e["name"] == name for e in page["events"]):
                return
            await anyio.sleep(0.02)


def thread() -> str:
    return f"thread-{uuid.uuid4().hex[:10]}"

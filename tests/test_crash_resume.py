"""A process killed with SIGKILL mid-batch loses nothing that finished: another process
resumes from the SQLite checkpoints, runs only the missing calls, and finishes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from reactcore import SqliteSaver, ToolResponseMessage

SCRIPT = Path(__file__).parent / "scripts" / "crash_agent.py"
ROOT = Path(__file__).parent.parent


def run_script(
    backend: str, db: Path, marks: Path, mode: str, script: Path = SCRIPT
) -> subprocess.Popen[str]:
    """``script`` (a crash script of tests/scripts) in a process of its own."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, str(script), backend, str(db), str(marks), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def kill_when(
    process: subprocess.Popen[str], ready: Callable[[], bool], what: str, timeout: float = 60
) -> None:
    """SIGKILL ``process`` as soon as ``ready()`` (polled: another process's progress
    cannot be awaited here); fail if it ended first, or never ``what`` in time."""
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, f"the first run never {what}"
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait(10)
    assert process.returncode == -signal.SIGKILL


async def finished_calls(db: Path) -> list[str]:
    """The ids the latest checkpoint records as answered (read by this process)."""
    async with SqliteSaver(db) as saver:
        latest = await saver.get("t")
    if latest is None:
        return []
    last = latest.state["messages"][-1]
    return [r.id for r in last.responses] if isinstance(last, ToolResponseMessage) else []


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sigkill_mid_batch_then_resume_in_another_process(tmp_path: Path, backend: str) -> None:
    """Kill the first process once three calls are checkpointed; a second process
    resumes: the three are not run again, the two missing ones run once, the run ends."""
    db, marks = tmp_path / "runs.db", tmp_path / "marks.txt"
    first = run_script(backend, db, marks, "first")
    kill_when(
        first,
        lambda: db.exists() and sorted(anyio.run(finished_calls, db)) == ["w0", "w1", "w2"],
        "checkpointed 3 calls",
    )
    assert sorted(marks.read_text().split()) == ["0", "1", "2"]

    second = run_script(backend, db, marks, "resume")
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    # The resumed run counts the model call made before the crash, and the one after.
    assert json.loads(out) == {"text": "all five done", "model_calls": 2}
    assert sorted(marks.read_text().split()) == ["0", "1", "2", "3", "4"]

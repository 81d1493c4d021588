"""A process killed with SIGKILL mid-batch loses nothing that finished: another process
resumes from the SQLite checkpoints, runs only the missing calls, and finishes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest

from reactcore import SqliteSaver, ToolResponseMessage
from tests.helpers import kill_when, start_script

SCRIPT = Path(__file__).parent / "scripts" / "crash_agent.py"


def run_script(backend: str, db: Path, marks: Path, mode: str) -> subprocess.Popen[str]:
    return start_script(SCRIPT, backend, str(db), str(marks), mode)


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

    def three_done() -> bool:
        return db.exists() and sorted(anyio.run(finished_calls, db)) == ["w0", "w1", "w2"]

    kill_when(first, three_done, "checkpointed 3 calls")
    assert sorted(marks.read_text().split()) == ["0", "1", "2"]

    second = run_script(backend, db, marks, "resume")
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    # The resumed run counts the model call made before the crash, and the one after.
    assert json.loads(out) == {"text": "all five done", "model_calls": 2}
    assert sorted(marks.read_text().split()) == ["0", "1", "2", "3", "4"]

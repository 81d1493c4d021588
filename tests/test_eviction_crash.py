"""A process killed with SIGKILL after a large tool result was stored loses nothing:
another process resumes from the SQLite checkpoints and ``read_result`` reads the whole
result back, whether the kill came mid-batch or after it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest

from reactcore import SqliteSaver, ToolResponseMessage
from tests.helpers import kill_when, start_script

SCRIPT = Path(__file__).parent / "scripts" / "evict_agent.py"
BIG = "".join(f"row {i:04d}: {'abcdefghij' * 3}\n" for i in range(300))  # as the script's


def run_script(backend: str, db: Path, marks: Path, mode: str, where: str) -> subprocess.Popen[str]:
    return start_script(SCRIPT, backend, str(db), str(marks), mode, where)


async def stored(db: Path, where: str) -> bool:
    """Whether the latest checkpoint holds the large result whole, in the answer of the
    batch: its partial answer (``batch``), or its whole answer with the model to be asked
    next (``model``; the hook files the result into the state before that call)."""
    async with SqliteSaver(db) as saver:
        latest = await saver.get("t")
    if latest is None:
        return False
    last = latest.state["messages"][-1]
    answered = isinstance(last, ToolResponseMessage) and [r.id for r in last.responses] == ["b1"]
    return answered and (where == "batch" or latest.next == "model")


@pytest.mark.parametrize("where", ["batch", "model"])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sigkill_after_eviction_then_read_result_in_another_process(
    tmp_path: Path, backend: str, where: str
) -> None:
    """Kill the first process once the large result is checkpointed; a second process
    resumes: the large tool does not run again, and ``read_result`` pages read back
    exactly the original text."""
    db, marks = tmp_path / "runs.db", tmp_path / "marks.txt"
    first = run_script(backend, db, marks, "first", where)
    kill_when(first, lambda: db.exists() and anyio.run(stored, db, where), "stored the result")

    second = run_script(backend, db, marks, "resume", where)
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    result = json.loads(out)
    assert result["text"] == "read it all"
    assert len(result["pages"]) == -(-len(BIG) // 4000)
    assert "".join(page.split("\n", 1)[1] for page in result["pages"]) == BIG
    assert marks.read_text().split() == ["big"]

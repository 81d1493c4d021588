"""``SqliteSaver`` when the disk fails it: a full disk or an I/O error surfaces as
``SaverUnavailable`` with SQLite's own reason (never "cannot rollback - no transaction is
active", the error of the cleanup), the thread keeps its last good checkpoint and the
saver works again once there is room; and what a new file takes on disk. Lock files that
cannot be made are ``SaverUnavailable`` too."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reactcore import Checkpoint, OverAllState, SaverUnavailable, SqliteSaver, UserMessage

pytestmark = pytest.mark.anyio

REPO = Path(__file__).parents[1]


def checkpoint(step: int, text: str) -> Checkpoint:
    return Checkpoint("t", OverAllState({"messages": [UserMessage(text)]}), "model", step, "r")


async def test_a_full_database_is_saver_unavailable_saying_so(tmp_path: Path) -> None:
    """The file may not grow (SQLite's ``max_page_count`` on the saver's connection:
    the driver answers SQLITE_FULL, as on a full disk). ``put`` raises
    ``SaverUnavailable`` naming the file and SQLite's reason, the driver's error chained;
    nothing of the checkpoint is stored, the thread's latest is still the one before, and
    once the file may grow again the next ``put`` stores its checkpoint."""
    path = tmp_path / "cp.db"
    async with SqliteSaver(path) as saver:
        first = checkpoint(1, "small")
        await saver.put("t", first)
        pages = await saver._run(lambda conn: conn.execute("PRAGMA page_count").fetchone()[0])
        await saver._run(lambda conn: conn.execute(f"PRAGMA max_page_count = {pages}"))
        big = checkpoint(2, "x" * 50_000)
        for _ in range(2):  # the connection is usable after the failure: it fails alike
            with pytest.raises(SaverUnavailable) as failed:
                await saver.put("t", big)
            assert "database or disk is full" in str(failed.value)
            assert "cannot rollback" not in str(failed.value)
            assert str(path) in str(failed.value)
            assert failed.value.target == str(path)
            cause = failed.value.__cause__
            assert isinstance(cause, sqlite3.OperationalError)
            assert cause.sqlite_errorname == "SQLITE_FULL"
            assert await saver.get("t") == first
        await saver._run(lambda conn: conn.execute("PRAGMA max_page_count = 1073741823"))
        await saver.put("t", big)
        assert [c.step for c in await saver.list("t")] == [1, 2]
        assert await saver.get("t") == big


OPEN_UNDER_A_LIMIT = textwrap.dedent(
    """
    import json, os, resource, signal, sys
    import anyio
    from reactcore import SaverUnavailable, SqliteSaver

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail (EFBIG)
    limit = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    async def main():
        try:
            async with SqliteSaver(sys.argv[1]):
                folder = os.path.dirname(sys.argv[1])
                files = os.listdir(folder)
                print(json.dumps({f: os.path.getsize(os.path.join(folder, f)) for f in files}))
        except SaverUnavailable as exc:
            print(type(exc.__cause__).__name__, exc.__cause__.sqlite_errorname, "|", exc)

    anyio.run(main)
    """
)


def test_opening_a_file_on_a_full_disk_says_why(tmp_path: Path) -> None:
    """A new file on a disk with less room than a new file needs (a process whose files
    may not grow past 40 KB: writes fail with EFBIG, through the real driver): opening
    raises ``SaverUnavailable`` with SQLite's reason (an I/O error writing the journal),
    not the error of the rollback after it. With the room a new file takes (the
    figures of the guide's page), it opens."""
    path = tmp_path / "cp.db"

    def open_with(limit: int) -> str:
        done = subprocess.run(
            [sys.executable, "-c", OPEN_UNDER_A_LIMIT, str(path), str(limit)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    failed = open_with(40_000)
    assert failed.startswith("OperationalError SQLITE_IOERR"), failed
    assert "disk I/O error" in failed and "cannot rollback" not in failed
    assert f"SQLite file {path}" in failed
    path.unlink()
    sizes = json.loads(open_with(128 * 1024))  # while open
    assert sizes.keys() == {"cp.db", "cp.db-wal", "cp.db-shm"}
    assert sizes["cp.db"] <= 4096 < sizes["cp.db-wal"] <= 70 * 1024, sizes
    assert sizes["cp.db-shm"] <= 32 * 1024, sizes


async def test_lock_files_that_cannot_be_made_are_saver_unavailable(tmp_path: Path) -> None:
    """Where the folder of lock files (``<path>.leases``) cannot be made (here a file
    stands in its place), a claim and a ``put`` raise ``SaverUnavailable`` naming the
    folder and the system's reason, the ``OSError`` chained; nothing is stored."""
    path = tmp_path / "cp.db"
    (tmp_path / "cp.db.leases").write_text("not a folder")
    async with SqliteSaver(path) as saver:
        with pytest.raises(SaverUnavailable) as failed:
            async with saver.claim("t", owner="r"):
                pytest.fail("claimed without a lock file")  # pragma: no cover
        assert f"its lock files in {path}.leases cannot be made" in str(failed.value)
        assert isinstance(failed.value.__cause__, FileExistsError)
        with pytest.raises(SaverUnavailable, match="File exists"):
            await saver.put("t", checkpoint(1, "hi"))
        assert await saver.get("t") is None

"""The repository carries the project's own sources, not build products or third-party
binaries: no tracked file over 1 MB (a wheel, a database, node_modules) outside the test
fixtures."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_no_large_or_binary_package_is_tracked() -> None:
    """Every tracked file is under 1 MB (test fixtures aside) and none is a wheel or lies
    under node_modules: those are installed from a registry, never committed."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    tracked = [name for name in listed.split("\0") if name]
    assert tracked
    large = [
        name
        for name in tracked
        if not name.startswith("tests/fixtures/")
        and (ROOT / name).is_file()
        and (ROOT / name).stat().st_size > 1_000_000
    ]
    packaged = [n for n in tracked if n.endswith(".whl") or "/node_modules/" in f"/{n}"]
    assert large == [] and packaged == []

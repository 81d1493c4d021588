"""The protocols' official JavaScript clients, run under the machine's Node.js.

``node_clients`` (a session fixture) installs ``tests/js``'s packages with ``npm ci`` from
the committed lockfile — once per lockfile: a stamp holding the lockfile's hash skips the
install when ``node_modules`` already matches it. Without Node.js or npm the tests that use
it skip, except under CI (``CI=true``), where they fail.

``await run_node(script, *args)`` runs a script of ``tests/js`` and gives its stdout
parsed as JSON lines (one object per line), failing with its stderr when it exits non-zero.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

JS = Path(__file__).parent / "js"
_STAMP = JS / "node_modules" / ".reactcore-lock-sha256"


def _lock_hash() -> str:
    return hashlib.sha256((JS / "package-lock.json").read_bytes()).hexdigest()


def install() -> None:
    """``npm ci`` in ``tests/js`` unless its ``node_modules`` matches the lockfile."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        message = "Node.js and npm are needed for the protocol clients' tests"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    wanted = _lock_hash()
    if _STAMP.exists() and _STAMP.read_text() == wanted:
        return
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        pytest.fail(f"npm ci failed in {JS}:\n{done.stderr[-4000:]}")
    _STAMP.write_text(wanted)


@pytest.fixture(scope="session")
def node_clients() -> Path:
    """``tests/js`` with its packages installed (see the module docstring)."""
    install()
    return JS


async def run_node(script: str, *args: str, within: float = 60) -> list[Any]:
    """Run ``tests/js/<script>`` with ``args``; its stdout's JSON lines."""
    with anyio.fail_after(within):
        done = await anyio.run_process(["node", str(JS / script), *args], cwd=JS, check=False)
    out = done.stdout.decode()
    if done.returncode != 0:
        raise AssertionError(
            f"node {script} exited {done.returncode}\nstdout:\n{out[-4000:]}\n"
            f"stderr:\n{done.stderr.decode()[-4000:]}"
        )
    return [json.loads(line) for line in out.splitlines() if line.strip()]

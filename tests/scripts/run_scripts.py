"""Runs several Python scripts one after the other in this one process, each as
``__main__`` (as ``python SCRIPT ARGS`` would), so a test pays the interpreter's start
and reactcore's import once; ``tests/test_resources.py`` runs it under ``python -X dev``.

    python run_scripts.py JOBS.json

``JOBS.json`` is a list of ``{"name", "path", "argv", "cwd", "env"}`` (``env``: variables
set for that script only). Before and after each script a line ``=== <name> start`` /
``=== <name> end`` goes to stderr, so what a script left behind (a ``ResourceWarning``
printed when its objects are collected) is found between its two lines. The exit status
of each script (0, or what ``sys.exit`` was given) is printed to stdout as JSON.
"""

from __future__ import annotations

import gc
import json
import os
import runpy
import sys
import time
from pathlib import Path
from typing import Any


def run(job: dict[str, Any]) -> Any:
    path = Path(str(job["path"]))
    env = dict(os.environ)
    os.environ.update(job.get("env") or {})
    argv, sys_path, cwd = sys.argv, list(sys.path), os.getcwd()
    sys.argv = [str(path), *job.get("argv", [])]
    sys.path.insert(0, str(path.parent))
    os.chdir(job.get("cwd") or cwd)
    try:
        runpy.run_path(str(path), run_name="__main__")
        status: Any = 0
    except SystemExit as exc:
        status = exc.code or 0
    finally:
        sys.argv, sys.path[:] = argv, sys_path
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
    gc.collect()  # what the script left unclosed warns now, before its end line
    return status


def main() -> None:
    jobs = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    statuses = {}
    for job in jobs:
        print(f"=== {job['name']} start", file=sys.stderr, flush=True)
        began = time.monotonic()
        statuses[job["name"]] = run(job)
        took = time.monotonic() - began
        print(f"=== {job['name']} end ({took:.2f} s)", file=sys.stderr, flush=True)
    print(json.dumps(statuses))


if __name__ == "__main__":
    main()

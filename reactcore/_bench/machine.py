"""What the bench ran on: Python, platform, CPUs, and the versions that matter."""

from __future__ import annotations

import os
import platform
from importlib.metadata import PackageNotFoundError, version
from typing import Any


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def machine_info(seed_pool_size: int) -> dict[str, Any]:
    """A JSON-ready description of this machine and run environment."""
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "reactcore": _version("reactcore"),
        "anyio": _version("anyio"),
        "trio": _version("trio"),
        "seed_pool_size": seed_pool_size,
    }


def summary(info: dict[str, Any]) -> str:
    """One line: ``Python 3.11.7, Linux-…, 2 CPUs, reactcore 0.1.0, anyio …, trio …``."""
    return (
        f"Python {info['python']}, {info['platform']}, {info['cpu_count']} CPUs, "
        f"reactcore {info['reactcore']}, anyio {info['anyio']}, trio {info['trio']}"
    )

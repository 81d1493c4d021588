"""Every async test runs on both backends: asyncio and trio."""

from __future__ import annotations

from typing import Any

import pytest

# The `cassette` fixture: loaded by reactcore's pytest11 entry point where reactcore is
# installed with it (then this names it again: a no-op), else here.
pytest_plugins = ["reactcore.pytest_plugin"]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["native", "portable"])
def scheduler_backend(request: pytest.FixtureRequest) -> Any:
    """Runs the test once on the loop's native scheduler backend and once on the portable
    (anyio) one, the reference every release before the backend seam ran."""
    from reactcore import _backends

    with _backends.using(_backends.PORTABLE if request.param == "portable" else None):
        yield request.param

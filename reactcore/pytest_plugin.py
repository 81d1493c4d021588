"""The ``cassette`` pytest fixture and marker: record a test's model traffic and tool I/O
once, replay it offline after (``reactcore.testing.Cassette``), as vcrpy users know.

Installed with reactcore (the ``pytest11`` entry point ``reactcore.pytest_plugin``,
named as the module, so naming it again in ``pytest_plugins`` or ``-p`` is a no-op, as a
checkout that is not installed needs); ``-p no:reactcore.pytest_plugin`` turns it off.

A test that asks for ``cassette`` gets a ``Cassette`` on
``<the test's folder>/cassettes/<module>/<test name>.json``, begun before the test and
saved after it when it passed (a failed recording leaves no file behind). The mode is
``--cassette-mode`` when given (``replay`` in CI: no test touches the network), else the
marker's, else ``"once"``::

    @pytest.mark.cassette("weather.json", mode="replay", secrets=["my-token"])
    async def test_weather(cassette):
        model = OpenAIChatModel("gpt-4.1", http_client=cassette.http_client)
        agent = ReactAgent("w", model, tools=[weather], interceptors=[cassette])
        ...

A marker's path is relative to the test's folder.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, get_args

import pytest

from ._cassettes import Cassette, CassetteMode

_PASSED = pytest.StashKey[bool]()
_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f]')


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("reactcore").addoption(
        "--cassette-mode",
        choices=get_args(CassetteMode),
        default=None,
        help="how every `cassette` fixture works: record (always send, overwrite), "
        "replay (never send), once (replay if recorded, else record); default: the "
        "marker's mode, else once",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cassette(path=None, *, mode=None, secrets=()): the cassette file of the `cassette` "
        "fixture (relative to the test's folder), its mode and the secrets kept out of it",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[_PASSED] = report.passed
    return report


def default_path(node: pytest.Item) -> Path:
    """``<the test's folder>/cassettes/<module>/<test name>.json``."""
    folder = node.path.parent / "cassettes" / node.path.stem
    return folder / f"{_UNSAFE.sub('_', node.name)}.json"


@pytest.fixture
def cassette(request: pytest.FixtureRequest) -> Iterator[Cassette]:
    """The test's ``Cassette`` (see the module): begun before the test, saved after it
    when it passed."""
    node = request.node
    assert isinstance(node, pytest.Item)
    marker = node.get_closest_marker("cassette")
    args: tuple[Any, ...] = marker.args if marker else ()
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker else {}
    path = node.path.parent / args[0] if args else default_path(node)
    marked = kwargs.pop("mode", None)
    mode: CassetteMode = request.config.getoption("cassette_mode") or marked or "once"
    found = Cassette(path, mode=mode, **kwargs)
    found.begin()
    yield found
    if node.stash.get(_PASSED, False):
        found.save()

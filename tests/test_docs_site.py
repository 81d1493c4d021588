"""The documentation site builds strictly and renders in a real browser: headless Chromium
(Debian's ``chromium`` and ``chromium-driver``) opens the home page and an API page, served
over HTTP on 127.0.0.1, and finds the title, the navigation and highlighted code blocks with
the copy buttons the site's JavaScript adds.

The site is the one ``.ci/run`` built (``REACTCORE_DOCS_SITE``), else built here with
``mkdocs build --strict``. Without Chromium (or the ``docs`` extra) the tests skip, saying
why; under CI they fail instead.
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser_support import chromium, missing

ROOT = Path(__file__).resolve().parent.parent
WAIT = 30.0


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site: .ci/run's, or a strict build made now."""
    given = os.environ.get("REACTCORE_DOCS_SITE")
    if given and (Path(given) / "index.html").exists():
        return Path(given)
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        missing("mkdocs is not installed: pip install -e '.[docs]'")
    folder = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(ROOT)),
        timeout=300,
    )
    assert built.returncode == 0, f"mkdocs build --strict failed:\n{built.stderr}"
    return folder


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    """The site served by http.server on 127.0.0.1 (an ephemeral port), in a thread."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="docs-site", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium driven through chromedriver (selenium), with Debian's binaries."""
    with chromium() as driver:
        yield driver


def _open(browser: Any, url: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(url)
    # Material's JavaScript adds a copy button to each code block once the page runs.
    WebDriverWait(browser, WAIT).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, ".highlight button[data-clipboard-target]")
    )


def test_home_page_renders(browser: Any, base_url: str) -> None:
    """The home page has its title, the site navigation with every section, and a code
    block highlighted at build time with a copy button added by the page's script."""
    from selenium.webdriver.common.by import By

    _open(browser, f"{base_url}/")
    assert "reactcore" in browser.title
    nav = browser.find_element(By.CSS_SELECTOR, "nav.md-nav--primary")
    labels = {a.get_attribute("textContent").strip() for a in nav.find_elements(By.TAG_NAME, "a")}
    assert {"Getting started", "The tool node", "Reliability", "Agent and runs"} <= labels
    code = browser.find_element(By.CSS_SELECTOR, ".highlight code")
    assert code.is_displayed()
    assert code.find_elements(By.CSS_SELECTOR, "span.kn, span.k")  # keywords highlighted
    assert "import" in code.text


def test_api_page_renders(browser: Any, base_url: str) -> None:
    """The API page of the agent shows ReactAgent's heading, its generated signature and
    parameter table, and the navigation, rendered by the browser."""
    from selenium.webdriver.common.by import By

    _open(browser, f"{base_url}/reference/agent/")
    assert "Agent and runs" in browser.title
    heading = browser.find_element(By.ID, "reactcore.ReactAgent")
    assert heading.is_displayed()
    assert "ReactAgent" in heading.text
    signature = browser.find_element(By.CSS_SELECTOR, ".doc-signature")
    assert "max_parallel_tools" in signature.get_attribute("textContent")
    table = browser.find_element(By.CSS_SELECTOR, ".doc-section-item, table")
    assert table.is_displayed()
    assert browser.find_elements(By.CSS_SELECTOR, "nav.md-nav--primary a.md-nav__link")


def _section(page: str, heading_id: str) -> str:
    """The HTML of one object's block on an API page: from its heading to the next one."""
    import re

    start = page.index(f'id="{heading_id}"')
    following = re.search(r'id="reactcore\.[A-Za-z]+"', page[start + len(heading_id) + 5 :])
    return (
        page[start : start + len(heading_id) + 5 + following.start()] if following else page[start:]
    )


def test_every_agent_option_is_described_and_no_run_internal_is_listed(site: Path) -> None:
    """The reference describes each of ``ReactAgent``'s parameters (a row with a non-empty
    description for every ``__init__`` field), and ``AgentRun``'s entry lists what callers
    use, none of the loop's internals."""
    import html
    import re

    import attrs

    from reactcore import ReactAgent

    page = (site / "reference" / "agent" / "index.html").read_text(encoding="utf-8")
    rows = re.findall(
        r'<tr class="doc-section-item">(.*?)</tr>', _section(page, "reactcore.ReactAgent"), re.S
    )
    described = {}
    for row in rows:
        cells = re.findall(r"<td>(.*?)</td>", row, re.S)
        name = re.sub(r"<[^>]+>", "", cells[0]).strip()
        described[name] = html.unescape(re.sub(r"<[^>]+>", "", cells[2])).strip()
    fields = [f.alias or f.name for f in attrs.fields(ReactAgent) if f.init]
    assert set(fields) <= set(described), set(fields) - set(described)
    assert [n for n in fields if len(described[n]) < 15] == []
    run = _section(page, "reactcore.AgentRun")
    for internal in (
        "emit",
        "track",
        "finish_nowait",
        "next_leg",
        "state_later",
        "no_reader",
        "unraised_fatal_error",
        "scope",
    ):
        assert f'id="reactcore.AgentRun.{internal}"' not in run, internal
    for public in ("events", "cancel_tool", "resume", "result", "status"):
        assert f'id="reactcore.AgentRun.{public}"' in run, public

"""Headless Chromium for the browser tests (the docs site, the timeline page), driven
through chromedriver by selenium, with Debian's binaries (``chromium``,
``chromium-driver``; ``.ci/run`` installs them). Without them the tests skip, saying why;
under CI they fail instead.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest


def missing(reason: str) -> None:
    """Skip the test for ``reason``, or fail it under CI (where nothing may be missing)."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (required under CI)")
    pytest.skip(reason)


@contextmanager
def chromium(*, size: tuple[int, int] = (1280, 1000), log_network: bool = False) -> Iterator[Any]:
    """A headless Chromium WebDriver of ``size`` pixels, quit on leaving; with
    ``log_network`` its performance log holds the DevTools network events (what the
    page asked for), read with ``driver.get_log("performance")``."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        missing("Chromium is not installed: apt-get install -y chromium chromium-driver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing("selenium is not installed: pip install -e '.[test]'")
    options = webdriver.ChromeOptions()
    options.binary_location = str(binary)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={size[0]},{size[1]}",
    ):
        options.add_argument(argument)
    if log_network:
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    try:
        yield driver
    finally:
        driver.quit()

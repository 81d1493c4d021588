"""The live run viewer (``reactcore.viewer.viewer_app``) in a real browser: a served app
(``events_app``) and its viewer mounted side by side in one ASGI app, served on loopback
in the test's own loop (``serve_app``: uvicorn on asyncio, hypercorn on trio); a client
streams a run while an operator, in headless Chromium, watches it drawn live and steers
it from the page (cancels a running call; approves a paused one). And the viewer's own
``authorize``, and that an app without a viewer records nothing. And ``reactcore view``,
the event logs of a folder served on loopback.

Selenium is synchronous: each browser step runs in a worker thread
(``anyio.to_thread.run_sync``) while the servers and the client go on in the test's loop.
One browser serves every test of the file. Screenshots of the page (the run with its
running call, then cancelled; the approvals panel) are written under the test's tmp dir, and to
``$REACTCORE_ARTIFACTS`` when set.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Mount

from reactcore import AssistantMessage, MemorySaver, ReactAgent, ToolResponseMessage, tool
from reactcore.hooks import HumanInTheLoopHook
from reactcore.models.base import ModelRequest
from reactcore.serving import events_app
from reactcore.testing import ScriptedChatModel
from reactcore.viewer import open_event_log, viewer_app
from reactcore.viewer._live import KEEP_FINISHED
from tests.browser_support import chromium
from tests.helpers import asks
from tests.serving_support import serve_app, sse_events

pytestmark = pytest.mark.anyio

WAIT = 30.0
TOKEN = "operator-secret"


def by_header(request: Request) -> str | None:
    """The served app's principal: the ``x-user`` header (a stand-in for a verified token)."""
    return request.headers.get("x-user")


def operator(request: Request) -> str | None:
    """The viewer's principal: an operator's cookie (what a browser sends by itself)."""
    return "ops" if request.cookies.get("operator") == TOKEN else None


def answer_after_tools(request: ModelRequest) -> AssistantMessage:
    """The final answer: the tool results the model was given, in call order."""
    last = request.messages[-1]
    assert isinstance(last, ToolResponseMessage)
    return AssistantMessage("; ".join(r.response_data for r in last.responses))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for every test of the file."""
    with chromium(size=(1400, 900)) as driver:
        yield driver


@asynccontextmanager
async def served_with_viewer(agent: ReactAgent) -> AsyncIterator[tuple[str, str]]:
    """``agent`` served by ``events_app`` at ``/agent/`` and its viewer at ``/viewer/``
    (one ASGI app, so the page also finds its API under a mount); gives both URLs."""
    app = events_app(agent, authorize=by_header)
    both = Starlette(
        routes=[Mount("/viewer", viewer_app(app, authorize=operator)), Mount("/agent", app)]
    )
    async with serve_app(both) as url:
        yield f"{url}/agent/", f"{url}/viewer/"


async def in_browser(step: Callable[[], Any]) -> Any:
    """Run a synchronous selenium ``step`` in a worker thread (the servers keep serving)."""
    return await anyio.to_thread.run_sync(step)


def open_run(browser: Any, viewer: str, run_id: str) -> None:
    """Log the operator in (the cookie ``operator`` checks), open the page and select the
    run ``run_id`` in the run list."""
    browser.get(viewer + "api/runs")  # the cookie's origin; the body is the 401
    browser.delete_all_cookies()  # left by an earlier test (cookies ignore the port)
    browser.refresh()
    assert "unauthorized" in browser.page_source
    browser.add_cookie({"name": "operator", "value": TOKEN, "path": "/"})
    browser.get(viewer)
    click(browser, f'tr[data-run-id="{run_id}"]')


def click(browser: Any, css: str) -> None:
    """Click the element ``css`` names once it is there (the run list is redrawn every
    second: an element replaced under the click is found again)."""
    from selenium.common.exceptions import (
        NoSuchElementException,
        StaleElementReferenceException,
    )
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def attempt(driver: Any) -> bool:
        driver.find_element(By.CSS_SELECTOR, css).click()
        return True

    ignored = (NoSuchElementException, StaleElementReferenceException)
    WebDriverWait(browser, WAIT, ignored_exceptions=ignored).until(attempt)


def until(browser: Any, script: str) -> Any:
    """Wait for ``script`` (the body of a JS function) to return something truthy."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, WAIT).until(lambda d: d.execute_script(script))


_SEEN = """
const root = document.getElementById('viewer');
const bars = Object.fromEntries([...root.querySelectorAll('.tl-bar[data-call]')].map(
  (e) => [e.dataset.call, e.dataset.state]));
return {status: root.dataset.status, ended: root.dataset.ended || null,
        snapshots: +root.dataset.snapshots, bars: bars, text: root.innerText,
        selected: root.dataset.selected,
        pending: [...root.querySelectorAll('.vw-pending')].map((e) => e.dataset.call),
        running: [...root.querySelectorAll('.vw-calls [data-call]')].map((e) => e.dataset.call)};
"""


async def save(tmp_path: Path, name: str, shot: bytes) -> None:
    """Write a screenshot under ``tmp_path``, and to ``$REACTCORE_ARTIFACTS`` when set."""
    assert shot.startswith(b"\x89PNG")
    folders = [anyio.Path(tmp_path)]
    if os.environ.get("REACTCORE_ARTIFACTS"):
        folders.append(anyio.Path(os.environ["REACTCORE_ARTIFACTS"]))
    for folder in folders:
        await folder.mkdir(parents=True, exist_ok=True)
        await (folder / name).write_bytes(shot)


def finished_page(browser: Any) -> Any:
    """What the page shows once its run ended finished (waited for)."""
    until(
        browser,
        "const r = document.getElementById('viewer');"
        "return r.dataset.ended && r.dataset.status === 'finished';",
    )
    return browser.execute_script(_SEEN)


async def test_an_operator_cancels_one_of_two_parallel_calls_from_the_page(
    browser: Any, tmp_path: Path, anyio_backend: str
) -> None:
    """A client streams a run of two parallel calls; ``slow`` waits on an event the test
    never sets. The operator selects the run in the viewer, sees ``slow`` drawn running,
    and clicks its cancel button: the client's stream ends ``slow`` with the cancellation
    text, ``fast`` finished, the run answers with both; the page, updated live (several
    snapshots), draws ``slow`` cancelled and ``fast`` finished, and the run finished."""
    started, never = anyio.Event(), anyio.Event()

    @tool
    async def fast() -> str:
        """Answer at once."""
        return "fast done"

    @tool
    async def slow() -> str:
        """Wait for an event that never comes."""
        started.set()
        await never.wait()
        return "never"

    model = ScriptedChatModel([asks(("f", "fast", {}), ("s", "slow", {})), answer_after_tools])
    agent = ReactAgent("served", model, tools=[fast, slow], parallel_tool_execution=True)
    seen: list[tuple[str, Any]] = []
    run_started = anyio.Event()

    async with served_with_viewer(agent) as (api, viewer):
        async with httpx.AsyncClient(timeout=WAIT) as http, anyio.create_task_group() as tg:

            async def client() -> None:
                body = {"input": "go", "threadId": "t1"}
                async with http.stream("POST", api, json=body, headers={"x-user": "ann"}) as r:
                    async for event, data in sse_events(r):
                        seen.append((event, data))
                        if event == "run_started":
                            run_started.set()

            tg.start_soon(client)
            with anyio.fail_after(WAIT):
                await run_started.wait()
                await started.wait()
            run_id = seen[0][1]["runId"]
            await in_browser(lambda: open_run(browser, viewer, run_id))
            await in_browser(
                lambda: until(browser, "return document.querySelector('.tl-bar[data-call=s]')")
            )
            running = await in_browser(lambda: browser.get_screenshot_as_png())
            await in_browser(lambda: click(browser, '.vw-calls button[data-cancel="s"]'))
        # the client's stream has ended
        page = await in_browser(lambda: finished_page(browser))
        shot = await in_browser(lambda: browser.get_screenshot_as_png())

    ends = {
        d["call_id"]: (e, d) for e, d in seen if e in ("tool_call_cancelled", "tool_call_finished")
    }
    cancelled_text = (
        "Error: Tool execution was cancelled by the caller: "
        "an operator cancelled it in the run viewer"
    )
    assert ends["s"][0] == "tool_call_cancelled"
    assert ends["s"][1]["response"]["response_data"] == cancelled_text
    assert ends["f"][0] == "tool_call_finished"
    assert ends["f"][1]["response"]["response_data"] == "fast done"
    [finished] = [d for e, d in seen if e == "run_finished"]
    assert finished["result"]["text"] == f"fast done; {cancelled_text}"

    assert page["bars"] == {"s": "cancelled", "f": "finished"}
    assert page["snapshots"] >= 2  # drawn while it ran, then again
    assert page["running"] == []
    assert "run finished" in page["text"] and "ann" in page["text"]

    await save(tmp_path, f"viewer-running-{anyio_backend}.png", running)
    await save(tmp_path, f"viewer-{anyio_backend}.png", shot)


async def test_an_operator_approves_a_paused_call_from_the_page(browser: Any) -> None:
    """A run paused for approval (``HumanInTheLoopHook``, ``MemorySaver``) keeps its
    client's stream open; the viewer lists the pending call with its arguments; clicking
    approve resumes the run, and the same stream carries it to its answer; the page then
    shows the run finished and nothing pending."""

    @tool
    async def send(to: str) -> str:
        """Send a message."""
        return f"sent to {to}"

    model = ScriptedChatModel([asks(("c1", "send", {"to": "bo"})), answer_after_tools])
    hook = HumanInTheLoopHook({"send": True})
    agent = ReactAgent("mailer", model, tools=[send], hooks=[hook], saver=MemorySaver())
    seen: list[tuple[str, Any]] = []
    paused = anyio.Event()

    async with served_with_viewer(agent) as (api, viewer):
        async with httpx.AsyncClient(timeout=WAIT) as http, anyio.create_task_group() as tg:

            async def client() -> None:
                body = {"input": "mail bo", "threadId": "t2"}
                async with http.stream("POST", api, json=body, headers={"x-user": "bea"}) as r:
                    async for event, data in sse_events(r):
                        seen.append((event, data))
                        if event == "run_interrupted":
                            paused.set()

            tg.start_soon(client)
            with anyio.fail_after(WAIT):
                await paused.wait()
            run_id = seen[0][1]["runId"]
            await in_browser(lambda: open_run(browser, viewer, run_id))
            waiting = await in_browser(
                lambda: until(
                    browser,
                    "const p = document.querySelector('.vw-pending[data-call=c1]');"
                    "return p && document.getElementById('viewer').dataset.status"
                    " === 'interrupted' && p.innerText;",
                )
            )
            assert "send" in waiting
            assert '"to": "bo"' in await in_browser(
                lambda: browser.execute_script(
                    "return document.querySelector('textarea[data-arguments=c1]').value"
                )
            )
            await in_browser(lambda: click(browser, 'button[data-decide="approve"][data-for="c1"]'))
        page = await in_browser(lambda: finished_page(browser))

    events = [e for e, _ in seen]
    assert events.count("run_interrupted") == 1
    assert events[-2:] == ["run_finished", "end"]
    assert seen[-2][1]["result"]["text"] == "sent to bo"
    assert page["pending"] == []
    assert page["bars"] == {"c1": "finished"}
    assert "decisions sent" in page["text"]


async def test_an_operator_approves_edits_and_rejects_three_paused_calls(
    browser: Any, tmp_path: Path, anyio_backend: str
) -> None:
    """Three calls paused at once: the operator approves one, edits another's arguments
    (the JSON in its field) and rejects the third with a reason; the decisions go out
    together once each call has one, and the run answers with what each decision gave."""

    @tool
    async def send(to: str) -> str:
        """Send a message."""
        return f"sent to {to}"

    calls = asks(("c1", "send", {"to": "bo"}), ("c2", "send", {"to": "cy"}), ("c3", "send", {}))
    model = ScriptedChatModel([calls, answer_after_tools])
    hook = HumanInTheLoopHook({"send": True})
    agent = ReactAgent("mailer", model, tools=[send], hooks=[hook], saver=MemorySaver())
    seen: list[tuple[str, Any]] = []
    paused = anyio.Event()
    shots: dict[str, bytes] = {}

    def decide() -> str:
        from selenium.webdriver.common.by import By

        until(browser, "return document.querySelectorAll('.vw-pending').length === 3")
        shots["approvals"] = browser.get_screenshot_as_png()
        click(browser, 'button[data-decide="approve"][data-for="c1"]')
        told = until(browser, "return document.querySelector('.vw-message').innerText")
        field = browser.find_element(By.CSS_SELECTOR, 'textarea[data-arguments="c2"]')
        field.clear()
        field.send_keys('{"to": "di"}')
        click(browser, 'button[data-decide="edit"][data-for="c2"]')
        browser.find_element(By.CSS_SELECTOR, 'input[data-reason="c3"]').send_keys("not now")
        click(browser, 'button[data-decide="reject"][data-for="c3"]')
        return str(told)

    async with served_with_viewer(agent) as (api, viewer):
        async with httpx.AsyncClient(timeout=WAIT) as http, anyio.create_task_group() as tg:

            async def client() -> None:
                body = {"input": "mail three", "threadId": "t4"}
                async with http.stream("POST", api, json=body, headers={"x-user": "bea"}) as r:
                    async for event, data in sse_events(r):
                        seen.append((event, data))
                        if event == "run_interrupted":
                            paused.set()

            tg.start_soon(client)
            with anyio.fail_after(WAIT):
                await paused.wait()
            await in_browser(lambda: open_run(browser, viewer, seen[0][1]["runId"]))
            told = await in_browser(decide)
        page = await in_browser(lambda: finished_page(browser))

    await save(tmp_path, f"viewer-approvals-{anyio_backend}.png", shots["approvals"])
    assert "2 more to decide" in told
    assert seen[-2][1]["result"]["text"] == "sent to bo; sent to di; not now"
    assert page["pending"] == []
    assert page["bars"] == {"c1": "finished", "c2": "finished"}  # c3 never ran


async def test_the_viewer_refuses_who_its_authorize_refuses_and_records_nothing_uninvited() -> None:
    """Every viewer endpoint answers 401 to a request its ``authorize`` refuses. An app
    without a viewer records nothing (no watcher, its live runs have no tap), and a viewer
    sees only the app it was made for. Steering takes JSON only (415), an unknown run is
    404, a run that ended is 409; a second viewer for one app, or a viewer of something
    that is not a served app, is refused at construction."""
    watched = events_app(ReactAgent("a", ScriptedChatModel(["hi"])), authorize=by_header)
    model = ScriptedChatModel([asks(("c1", "send", {"to": "bo"})), answer_after_tools])

    @tool
    async def send(to: str) -> str:
        """Send a message."""
        return f"sent to {to}"

    hook = HumanInTheLoopHook({"send": True})
    agent = ReactAgent("mailer", model, tools=[send], hooks=[hook], saver=MemorySaver())
    unwatched = events_app(agent, authorize=by_header)
    viewer = viewer_app(watched, authorize=operator)
    with pytest.raises(ValueError, match="viewer already"):
        viewer_app(watched, authorize=operator)
    with pytest.raises(TypeError, match="app must be"):
        viewer_app(Starlette(), authorize=operator)
    with pytest.raises(TypeError, match="authorize"):
        viewer_app(unwatched, authorize="ops")

    both = Starlette(routes=[Mount("/viewer", viewer), Mount("/b", unwatched)])
    cookie = {"cookie": f"operator={TOKEN}"}
    async with serve_app(both) as url, httpx.AsyncClient(base_url=url, timeout=WAIT) as http:
        for method, path in [
            ("GET", "/viewer/"),
            ("GET", "/viewer/api/runs"),
            ("GET", "/viewer/api/runs/x/timeline"),
            ("POST", "/viewer/api/runs/x/cancel"),
            ("POST", "/viewer/api/runs/x/calls/c1/cancel"),
            ("POST", "/viewer/api/runs/x/decisions"),
        ]:
            refused = await http.request(
                method, path, json={}, headers={"cookie": "operator=wrong"}
            )
            assert refused.status_code == 401, path
            assert refused.json() == {"error": {"code": "unauthorized", "message": "unauthorized"}}

        body = {"input": "mail bo", "threadId": "t3"}
        async with http.stream("POST", "/b/", json=body, headers={"x-user": "cy"}) as r:
            async for event, data in sse_events(r):
                if event == "run_started":
                    run_id = data["runId"]
                if event == "run_interrupted":
                    runs = unwatched.state.served.runs
                    assert runs.watcher is None
                    assert runs.find("cy", run_id).tap is None
                    listed = await http.get("/viewer/api/runs", headers=cookie)
                    assert listed.json() == {"runs": []}
                    decided = await http.post(
                        f"/b/runs/{run_id}/decisions",
                        json={"decisions": {"c1": {"type": "approve"}}},
                        headers={"x-user": "cy"},
                    )
                    assert decided.json() == {"resumed": True}

        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=watched), base_url="http://app"
        ) as app_client:
            answer = await app_client.post("/", json={"input": "hi"}, headers={"x-user": "dee"})
            assert "run_finished" in answer.text
        [run] = (await http.get("/viewer/api/runs", headers=cookie)).json()["runs"]
        assert (run["principal"], run["threadId"], run["status"]) == ("dee", None, "finished")
        key = run["key"]
        form = await http.post(
            f"/viewer/api/runs/{key}/cancel",
            content=b"x=1",
            headers={**cookie, "content-type": "application/x-www-form-urlencoded"},
        )
        assert form.status_code == 415
        ended = await http.post(f"/viewer/api/runs/{key}/cancel", json={}, headers=cookie)
        assert (ended.status_code, ended.json()["error"]["code"]) == (409, "run_ended")
        unknown = await http.post("/viewer/api/runs/nope/cancel", json={}, headers=cookie)
        assert unknown.status_code == 404


def test_the_view_command_serves_a_folders_event_logs_on_loopback(
    browser: Any, tmp_path: Path
) -> None:
    """``reactcore view --events DIR --port 0`` (a real process) serves on 127.0.0.1 a
    page listing the folder's event logs; a click opens one drawn as its run's timeline.
    A file outside the listing (a path, another suffix) is 404, a bad log is 422 naming its
    line, and a request naming another host is 400 (no DNS rebinding to the logs)."""
    from selenium.webdriver.common.by import By

    async def record() -> None:
        agent = ReactAgent("helper", ScriptedChatModel(["Hello!"]))
        async with open_event_log(tmp_path / "hello.jsonl") as log, agent.start("hi") as run:
            await log.record(run)

    anyio.run(record)
    first = (tmp_path / "hello.jsonl").read_text().splitlines()[0]
    (tmp_path / "broken.jsonl").write_text(f"{first}\nnope\n")
    (tmp_path / "notes.txt").write_text("not a log")
    command = [sys.executable, "-m", "reactcore", "view", "--events", str(tmp_path), "--port", "0"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            url = line.split(" at ")[1].split()[0]
            assert url.startswith("http://127.0.0.1:")
            with httpx.Client(base_url=url, timeout=WAIT) as http:
                listing = http.get("/")
                assert "hello.jsonl" in listing.text and "broken.jsonl" in listing.text
                assert "notes.txt" not in listing.text
                assert "default-src 'none'" in listing.headers["content-security-policy"]
                assert http.get("/runs/notes.txt").status_code == 404
                assert http.get("/runs/..%2Fnotes.txt").status_code == 404
                broken = http.get("/runs/broken.jsonl")
                assert broken.status_code == 422 and "line 2" in broken.text
                rebound = http.get("/", headers={"host": "attacker.example"})
                assert rebound.status_code == 400

            browser.get(url)
            browser.find_element(By.LINK_TEXT, "hello.jsonl").click()
            until(browser, "return document.getElementById('timeline').dataset.rendered")
            assert "run finished" in browser.find_element(By.ID, "timeline").text
        finally:
            process.terminate()
            process.wait(WAIT)


async def test_the_viewer_keeps_the_last_finished_runs_only() -> None:
    """Finished runs' timelines are kept for the last ``KEEP_FINISHED`` runs, newest
    first; an older one is dropped (its key is 404), so memory stays bounded."""
    count = KEEP_FINISHED + 2
    agent = ReactAgent("a", ScriptedChatModel([f"answer {i}" for i in range(count)]))
    app = events_app(agent, authorize=by_header)
    viewer = viewer_app(app, authorize=operator)
    cookie = {"cookie": f"operator={TOKEN}"}
    keys: list[str] = []
    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://a") as a,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=viewer), base_url="http://v") as v,
    ):
        for i in range(count):
            body = {"input": "hi", "threadId": f"t{i}"}
            assert "run_finished" in (await a.post("/", json=body, headers={"x-user": "u"})).text
            keys.append((await v.get("/api/runs", headers=cookie)).json()["runs"][0]["key"])
        runs = (await v.get("/api/runs", headers=cookie)).json()["runs"]
        assert [r["threadId"] for r in runs] == [f"t{i}" for i in reversed(range(2, count))]
        assert (await v.get(f"/api/runs/{keys[0]}/timeline", headers=cookie)).status_code == 404
        kept = await v.get(f"/api/runs/{keys[-1]}/timeline", headers=cookie)
        assert "event: end" in kept.text and '"status":"finished"' in kept.text

"""The run timeline (``reactcore.viewer``, ``reactcore timeline``): event logs written from
real runs and read back line by line with clear errors; the picture built from them
(lanes, queueing, timeouts, cancellations, errors, retries, approval pauses, subagents);
and the self-contained page, opened from ``file://`` in headless Chromium with the network
off, whose bars are measured in the DOM against the durations the tools measured
themselves.

One browser serves every browser check of the file. A screenshot of the six-call scenario
is written under the test's tmp dir, and to ``$REACTCORE_ARTIFACTS`` when set (the docs'
``docs/timeline.png`` is made from it).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import structlog

from reactcore import (
    Approve,
    AssistantMessage,
    HumanInTheLoopHook,
    MemorySaver,
    ModelCallFinished,
    ModelHTTPError,
    ReactAgent,
    Reject,
    Resume,
    SubagentEvent,
    ToolCall,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallTimedOut,
    event_from_json,
    to_json,
    tool,
)
from reactcore._cli import main
from reactcore.interceptors import ModelRetryInterceptor
from reactcore.testing import ScriptedChatModel
from reactcore.viewer import (
    EventLogError,
    Timeline,
    TimelineBuilder,
    ToolSpan,
    open_event_log,
    read_event_log,
    timeline_html,
    timeline_of,
    timeline_of_file,
)
from reactcore.viewer import _log as log_module
from tests.browser_support import chromium
from tests.helpers import asks

WAIT = 30.0


def _by_call(timeline: Timeline) -> dict[str, ToolSpan]:
    return {span.key: span for span in timeline.tools}


# --- the six-call scenario --------------------------------------------------------------


@contextmanager
def _measured(into: dict[str, tuple[float, float]], name: str) -> Iterator[None]:
    """Times a tool body by itself (monotonic clock), whatever way it ends."""
    start = time.monotonic()
    try:
        yield
    finally:
        into[name] = (start, time.monotonic())


async def _six_calls(path: Path) -> dict[str, tuple[float, float]]:
    """A real run of six parallel calls, recorded to ``path``: ``slow`` times out,
    ``fetch`` is cancelled by the caller when ``parse`` fails, ``index_a`` / ``index_b``
    share a one-slot limiter (one queues behind the other), ``summarize`` finishes.
    Returns each body's own (start, end), and for each index call ``<id>_queued``: the
    times the run sent the answer naming it and its ``ToolCallStarted``."""
    measured: dict[str, tuple[float, float]] = {}
    answered = 0.0
    slot = anyio.CapacityLimiter(1)

    @tool(timeout=0.7)
    async def lookup() -> str:
        """Look it up (never answers)."""
        with _measured(measured, "slow"):
            await anyio.sleep(30)
        return "never"

    @tool
    async def fetch() -> str:
        """Fetch the page (cancelled by the caller)."""
        with _measured(measured, "fetch"):
            await anyio.sleep(30)
        return "never"

    @tool
    async def parse() -> str:
        """Parse the page (fails)."""
        with _measured(measured, "parse"):
            await anyio.sleep(0.4)
            raise ValueError("unexpected end of input")

    @tool(limiter=slot)
    async def index(doc: str) -> str:
        """Index a document (one at a time)."""
        with _measured(measured, f"index_{doc}"):
            await anyio.sleep(0.8)
        return "indexed"

    @tool
    async def summarize() -> str:
        """Summarise."""
        with _measured(measured, "summarize"):
            await anyio.sleep(1.2)
        return "a summary"

    answer = asks(
        ("slow", "lookup", {}),
        ("fetch", "fetch", {}),
        ("parse", "parse", {}),
        ("index_a", "index", {"doc": "a"}),
        ("index_b", "index", {"doc": "b"}),
        ("summarize", "summarize", {}),
    )
    model = ScriptedChatModel([answer, "Done: one summary, two documents indexed."])
    tools = [lookup, fetch, parse, index, summarize]
    agent = ReactAgent("researcher", model, tools=tools, parallel_tool_execution=True)
    async with open_event_log(path) as log, agent.start("research") as run:
        async with run.events() as events:
            async for event in events:
                await log.write(event, at=events.sent_at)
                assert events.sent_at is not None
                if isinstance(event, ModelCallFinished):
                    answered = events.sent_at
                if isinstance(event, ToolCallStarted) and event.name == "index":
                    measured[f"{event.call_id}_queued"] = (answered, events.sent_at)
                if isinstance(event, ToolCallFinished) and event.call_id == "parse":
                    assert await run.cancel_tool("fetch", "the user closed the tab")
        assert (await run.result()).status == "finished"
    return measured


@pytest.fixture
def restore_structlog() -> Iterator[None]:
    """``main`` configures structlog (as a command may); put the tests' config back."""
    saved = structlog.get_config()
    yield
    structlog.reset_defaults()
    structlog.configure(**saved)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for every browser check, logging the network events."""
    with chromium(size=(1200, 800), log_network=True) as driver:
        yield driver


def _open_offline(browser: Any, page: Path) -> None:
    """Open ``page`` from file:// with the browser's network emulated offline, and wait for
    the timeline to be drawn."""
    from selenium.webdriver.support.ui import WebDriverWait

    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
    )
    browser.get_log("performance")  # drop what came before
    browser.get(page.as_uri())
    WebDriverWait(browser, WAIT).until(
        lambda d: d.execute_script("return document.getElementById('timeline').dataset.rendered")
    )


def _requests(browser: Any) -> list[str]:
    """The URLs the page asked for since it was opened (DevTools network events)."""
    urls = []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


_GEOMETRY = """
const px = (e) => {
  const r = e.getBoundingClientRect();
  return {left: r.left, width: r.width, top: r.top};
};
const root = document.getElementById('timeline');
return {
  bars: [...root.querySelectorAll('[data-kind]')].map((e) => ({
    kind: e.dataset.kind, call: e.dataset.call || null, state: e.dataset.state || null,
    lane: e.dataset.lane || null, colour: getComputedStyle(e).backgroundColor,
    image: getComputedStyle(e).backgroundImage, ...px(e)})),
  ticks: [...root.querySelectorAll('.tl-tick')].map((e) => ({t: +e.dataset.t, ...px(e)})),
  legend: Object.fromEntries([...root.querySelectorAll('.tl-legend i')].map(
    (e) => [e.className, getComputedStyle(e).backgroundColor])),
  text: root.innerText,
  resources: performance.getEntriesByType('resource').length,
};
"""


@pytest.mark.anyio
async def test_six_parallel_calls_are_drawn_to_scale_in_the_browser(
    browser: Any, tmp_path: Path, restore_structlog: None, anyio_backend: str
) -> None:
    """A recorded run of six parallel calls, drawn by ``reactcore timeline`` and opened
    from file:// offline: the page asks for nothing beyond itself; six tool lanes; each
    running bar's width (and the queued call's waiting segment) matches what the tools
    measured within 5 %, at the scale of the time axis; each bar has its state's colour
    (the legend's): timed out, cancelled by the caller (with the reason), error, finished."""
    events, page = tmp_path / "events.jsonl", tmp_path / "run.html"
    measured = await _six_calls(events)
    title = "researcher: six parallel calls"
    assert main(["timeline", str(events), "-o", str(page), "--title", title]) == 0

    _open_offline(browser, page)
    assert _requests(browser) == [page.as_uri()]
    seen = browser.execute_script(_GEOMETRY)
    assert seen["resources"] == 0

    ticks = sorted(seen["ticks"], key=lambda tick: tick["t"])
    assert len(ticks) >= 4
    scale = (ticks[-1]["left"] - ticks[0]["left"]) / (ticks[-1]["t"] - ticks[0]["t"])
    running = {b["call"]: b for b in seen["bars"] if b["kind"] == "tool"}
    assert set(running) == {"slow", "fetch", "parse", "index_a", "index_b", "summarize"}
    assert len({b["lane"] for b in running.values()}) == 6
    assert len({round(b["top"]) for b in running.values()}) == 6
    for call, bar in running.items():
        start, end = measured[call]
        assert bar["width"] / scale == pytest.approx(end - start, rel=0.05), call
        assert bar["left"] >= ticks[0]["left"]

    queued_call = max(("index_a", "index_b"), key=lambda c: measured[c][0])
    holder = "index_b" if queued_call == "index_a" else "index_a"
    queued = [b for b in seen["bars"] if b["kind"] == "queued" and b["call"] == queued_call]
    assert len(queued) == 1
    start, end = measured[f"{queued_call}_queued"]
    assert queued[0]["width"] / scale == pytest.approx(end - start, rel=0.05)
    holder_start, holder_end = measured[holder]
    assert end - start == pytest.approx(holder_end - holder_start, rel=0.1)
    assert "repeating-linear-gradient" in queued[0]["image"]
    assert queued[0]["left"] + queued[0]["width"] == pytest.approx(
        running[queued_call]["left"], abs=1.5
    )

    states = {call: bar["state"] for call, bar in running.items()}
    assert states == {
        "slow": "timed_out",
        "fetch": "cancelled",
        "parse": "error",
        "index_a": "finished",
        "index_b": "finished",
        "summarize": "finished",
    }
    legend = seen["legend"]
    for bar in running.values():
        assert bar["colour"] == legend[f"tl-bar tl-state-{bar['state']}"], bar
    colours = {bar["colour"] for bar in running.values()}
    assert len(colours) == 4  # timed out, cancelled, error, finished: four colours
    for words in ("timed out", "cancelled", "error", "queued for a slot", "run finished"):
        assert words in seen["text"]

    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    shot = browser.find_element(By.ID, "timeline").screenshot_as_png
    await anyio.Path(tmp_path / "timeline.png").write_bytes(shot)
    artifacts = os.environ.get("REACTCORE_ARTIFACTS")
    if artifacts:
        folder = anyio.Path(artifacts)
        await folder.mkdir(parents=True, exist_ok=True)
        name = f"timeline-{anyio_backend}.png"
        await (folder / name).write_bytes(shot)
    assert shot.startswith(b"\x89PNG")

    # Hovering a bar shows its details: who cancelled it and why.
    fetch = browser.find_element(By.CSS_SELECTOR, '.tl-bar[data-call="fetch"]')
    ActionChains(browser).move_to_element(fetch).perform()
    tip = browser.find_element(By.CSS_SELECTOR, ".tl-tip")
    assert "cancelled by the caller: the user closed the tab" in tip.text


# --- a thousand calls -------------------------------------------------------------------


@pytest.fixture(scope="module")
def thousand_calls(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The event log of a real run of 1,000 calls: ten answers of 100 parallel calls each,
    run 20 at a time (asyncio: the subject is the picture, which the six-call test draws
    from both backends)."""
    path = tmp_path_factory.mktemp("thousand") / "events.jsonl"

    @tool
    async def work(n: int) -> str:
        """Some work."""
        await anyio.sleep(0.004 + (n % 5) * 0.003)
        if n % 97 == 0:
            raise RuntimeError("no luck")
        return "ok"

    answers: list[AssistantMessage | str] = [
        AssistantMessage(
            "", [ToolCall(f"c{n}", "work", json.dumps({"n": n})) for n in range(b, b + 100)]
        )
        for b in range(0, 1000, 100)
    ]
    model = ScriptedChatModel([*answers, "done"], chunk_size=64)
    agent = ReactAgent(
        "many", model, tools=[work], parallel_tool_execution=True, max_parallel_tools=20
    )

    async def run() -> None:
        async with open_event_log(path) as log, agent.start("go") as handle:
            await log.record(handle)

    anyio.run(run, backend="asyncio")
    return path


def test_a_thousand_calls_render_in_the_browser(
    browser: Any, thousand_calls: Path, tmp_path: Path
) -> None:
    """The timeline of 1,000 calls in ten batches of 100 packs them into 100 lanes, one per
    call of a batch (a call's bar starts when the model named it: the calls of one answer
    all overlap), reused by the next batches, none shared by two calls that overlap; the
    page draws every bar, quickly."""
    timeline = timeline_of_file(thousand_calls)
    assert len(timeline.tools) == 1000
    assert len(timeline.models) == 11
    tool_lanes = [lane for lane in timeline.lanes if lane.kind == "tools"]
    assert len(tool_lanes) == 100
    assert {lane.label for lane in tool_lanes} == {"work (10 calls)"}
    by_lane: dict[int, list[ToolSpan]] = {}
    for span in timeline.tools:
        by_lane.setdefault(span.lane, []).append(span)
    for spans in by_lane.values():
        spans.sort(key=lambda s: s.start)
        assert all(a.end < b.start for a, b in itertools.pairwise(spans))

    page = tmp_path / "thousand.html"
    page.write_text(timeline_html(timeline), encoding="utf-8")
    started = time.monotonic()
    _open_offline(browser, page)
    loaded = time.monotonic() - started
    counts = browser.execute_script(
        "const r = document.getElementById('timeline');"
        "return [r.querySelectorAll('.tl-scroll .tl-bar').length,"
        " r.querySelectorAll('.tl-labels > div').length, r.renderMs];"
    )
    assert counts[:2] == [1000, len(timeline.lanes)]
    print(f"1,000 calls: drawn in {counts[2]:.0f} ms, page open in {loaded:.2f} s")
    assert loaded < 20


# --- the event log and the picture, without a browser -----------------------------------


@pytest.mark.anyio
async def test_the_event_log_reads_back_as_the_run_sent_it(tmp_path: Path) -> None:
    """Every event a run sends is in the log, in order, in its JSON form, with times
    from 0 that never go back; the run's events read back with ``event_from_json``."""
    path = tmp_path / "events.jsonl"
    model = ScriptedChatModel([asks(("a", "echo", {"x": 1}), ("b", "echo", {"x": 2})), "ok"])

    @tool
    async def echo(x: int) -> int:
        """Echo."""
        return x

    agent = ReactAgent("a", model, tools=[echo], parallel_tool_execution=True)
    seen = []
    async with open_event_log(path) as log, agent.start("go") as run:
        async with run.events() as events:
            async for event in events:
                seen.append(event)
                await log.write(event)
        assert log.written == len(seen)
    read = read_event_log(path)
    assert [item.event for item in read] == [to_json(e) for e in seen]
    assert [item.line for item in read] == list(range(1, len(seen) + 1))
    times = [item.t for item in read]
    assert times == sorted(times) and times[0] >= 0
    assert [type(event_from_json(item.event)) for item in read] == [type(e) for e in seen]


@pytest.mark.anyio
async def test_events_are_timed_when_the_run_sent_them_not_when_read(tmp_path: Path) -> None:
    """``EventStream.sent_at`` is when the run sent each event: a log recorded only after
    the run has ended (its events waiting in the buffer) still has the call's real
    duration, not the reading's."""
    path = tmp_path / "events.jsonl"

    @tool
    async def nap() -> str:
        """Nap."""
        await anyio.sleep(0.3)
        return "rested"

    agent = ReactAgent("a", ScriptedChatModel([asks(("n", "nap", {})), "ok"]), tools=[nap])
    async with open_event_log(path) as log, agent.start("go") as run:
        events = run.events()
        await run.wait()
        read_from = anyio.current_time()
        async with events:
            async for event in events:
                assert events.sent_at is not None and events.sent_at < read_from
                await log.write(event, at=events.sent_at)
    [span] = timeline_of_file(path).tools
    assert span.running is not None
    assert span.running.end - span.running.start == pytest.approx(0.3, abs=0.05)


@pytest.mark.anyio
async def test_approval_pause_retries_and_rejected_calls(tmp_path: Path) -> None:
    """A run recorded over two legs (paused for approval, then resumed): the pause is an
    approval wait until the next leg; the approved call waits for approval, then runs; the
    rejected one is never run. A model call retried after an HTTP error carries the
    retry, and its streamed progress restarts."""
    path = tmp_path / "events.jsonl"

    @tool
    async def send(to: str) -> str:
        """Send."""
        return f"sent to {to}"

    calls = asks(("c1", "send", {"to": "ana"}), ("c2", "send", {"to": "bo"}))
    failure = ModelHTTPError("overloaded", status_code=503)
    model = ScriptedChatModel([failure, calls, "one sent"])
    agent = ReactAgent(
        "mailer",
        model,
        tools=[send],
        saver=MemorySaver(),
        hooks=[HumanInTheLoopHook(["send"])],
        interceptors=[ModelRetryInterceptor(initial_delay=0.01, jitter=0)],
    )
    async with open_event_log(path) as log, agent.start("mail", {"thread_id": "t1"}) as run:
        await log.record(run)
        assert (await run.result()).status == "interrupted"
        await run.resume(Resume({"c1": Approve(), "c2": Reject("not bo")}))
        await log.record(run)
        assert (await run.result()).status == "finished"
    timeline = timeline_of_file(path)
    assert timeline.outcome.status == "finished"
    [wait] = timeline.waits
    assert wait.answered and wait.calls == ("send", "send") and wait.end > wait.start
    spans = _by_call(timeline)
    assert [s.kind for s in spans["c1"].segments][:1] == ["approval"]
    assert spans["c1"].state == "finished" and spans["c1"].segments[-1].kind == "running"
    assert spans["c2"].state == "not_run"
    assert [s.kind for s in spans["c2"].segments] == ["approval", "queued"]
    first = timeline.models[0]
    assert [r.attempt for r in first.retries] == [1]
    assert "overloaded" in first.retries[0].reason
    assert first.progress[0][1] == 0 and first.calls == 2


@pytest.mark.anyio
async def test_subagents_nest_under_the_call_that_ran_them_and_a_cancelled_run(
    tmp_path: Path,
) -> None:
    """A subagent's model and tool calls are drawn in rows one level deeper, right under
    the call that ran it; cancelling the whole run ends the calls still running as
    cancelled with the run, and the outcome says the run was cancelled."""
    path = tmp_path / "events.jsonl"

    @tool
    async def wait() -> str:
        """Wait."""
        await anyio.sleep(30)
        return "never"

    inner = ReactAgent("helper", ScriptedChatModel([asks(("i1", "wait", {})), "x"]), tools=[wait])
    helper = inner.as_tool()
    outer = ReactAgent(
        "boss",
        ScriptedChatModel([asks(("o1", helper.name, {"input": "go"}))]),
        tools=[helper],
    )
    async with open_event_log(path) as log, outer.start("go") as run, run.events() as events:
        async for event in events:
            await log.write(event)
            if isinstance(event, SubagentEvent) and isinstance(event.event, ToolCallStarted):
                await run.cancel()
    timeline = timeline_of_file(path)
    assert timeline.outcome.status == "cancelled"
    lanes = timeline.lanes
    spans = _by_call(timeline)
    outer_call, inner_call = spans["o1"], spans["o1/i1"]
    assert inner_call.parent == "o1" and inner_call.agent == "helper"
    assert lanes[inner_call.lane].depth == 1
    assert [lane.kind for lane in lanes[outer_call.lane + 1 : inner_call.lane + 1]] == [
        "model",
        "tools",
    ]
    assert outer_call.state == inner_call.state == "cancelled"
    assert inner_call.reason == "cancelled with the run"


def test_bare_events_are_spaced_evenly_with_a_warning(tmp_path: Path) -> None:
    """A file of bare ``to_json(event)`` lines is drawn with one unit per event, untimed,
    and says so."""
    path = tmp_path / "bare.jsonl"
    events = [
        to_json(ToolCallStarted("a", "f", "{}")),
        to_json(ToolCallTimedOut("a", "f", 1.0)),
        to_json(ToolCallStarted("b", "f", "{}")),
        to_json(ToolCallCancelled("b", "f", "why")),
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    timeline = timeline_of_file(path)
    assert not timeline.timed
    assert "no times" in timeline.warnings[0]
    spans = _by_call(timeline)
    assert (spans["a"].start, spans["a"].end, spans["a"].state) == (1.0, 2.0, "timed_out")
    assert spans["b"].reason == "cancelled by the caller: why"
    assert spans["a"].lane == spans["b"].lane  # one after the other: one lane


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (
            '{"t": 0, "event": {"type": "state_updated", "node": "m", "keys": []}}\n{"t": 1,',
            2,
            "not JSON",
        ),
        ("[1, 2]\n", 1, "not a JSON object"),
        ('{"t": 0, "event": {"name": "x"}}\n', 1, "no event"),
        ('{"t": "soon", "event": {"type": "state_updated"}}\n', 1, '"t" must be a number'),
        ('{"t": 2, "event": {"type": "x"}}\n{"t": 1, "event": {"type": "x"}}\n', 2, "backwards"),
        ('{"t": 0, "event": {"type": "x"}}\n{"type": "x"}\n', 2, "the first line was timed"),
        ('\n\n{"t": 0, "event": {"type": "tool_call_started", "call_id": 3}}\n', 3, "'call_id'"),
        ('{"t": 0, "event": {"type": "run_failed", "error": "boom"}}\n', 1, "'error'"),
        ('{"t": 0, "event": {"type": "model_delta", "text": [1,,2]}}\n', 1, "not JSON"),
        ('{"t": 1e999, "event": {"type": "x"}}\n', 1, '"t" must be a number'),
        (
            '{"t": 0, "event": {"type": "tool_call_timed_out", "call_id": "a", "name": "f",'
            ' "timeout": NaN}}\n',
            1,
            "'timeout' should be an integer or a number",
        ),
        ('{"t": 0, "event": ' + "[" * 200 + "]" * 200 + "}\n", 1, "deeper"),
    ],
)
def test_a_bad_line_is_an_error_naming_it(tmp_path: Path, text: str, line: int, words: str) -> None:
    """Malformed JSON, a line that is no event, a bad or backward time, a mix of timed and
    bare lines, a field of the wrong type, or JSON past the parser's limits: an
    ``EventLogError`` (a ``ValueError``) naming the line."""
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(EventLogError, match=f"^line {line}: .*{words}") as caught:
        timeline_of_file(path)
    assert caught.value.line == line


def test_an_overlong_line_is_refused_before_it_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line longer than ``MAX_LINE_BYTES`` is an error naming it; reading stops there
    (the reader never holds more than one line)."""
    monkeypatch.setattr(log_module, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "long.jsonl"
    good = json.dumps({"t": 0, "event": to_json(ToolCallStarted("a", "f", "{}"))})
    path.write_text(good + "\n" + "x" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(EventLogError, match=r"^line 2: longer than 1000 bytes"):
        timeline_of_file(path)


def test_a_live_builder_draws_open_spans_up_to_now() -> None:
    """Built from events as they come, the picture shows a call still running and a model
    call still streaming up to ``now``; unknown event types are skipped with a warning."""
    builder = TimelineBuilder()
    builder.add(0.0, to_json(ToolCallStarted("a", "f", "{}")))
    builder.add(0.5, {"type": "something_new"})
    picture = builder.timeline(now=2.0)
    [span] = picture.tools
    assert (span.state, span.end, picture.duration) == ("running", 2.0, 2.0)
    assert "something_new (1)" in picture.warnings[0]
    assert picture.outcome.status == "running"
    with pytest.raises(ValueError, match=r"tool_call_finished: field '.*' should be"):
        builder.add(1.0, {"type": "tool_call_finished", "name": "f"})


def test_timeline_of_names_the_line_of_a_bad_event() -> None:
    """``timeline_of`` over timed events raises ``EventLogError`` naming the event's line."""
    from reactcore.viewer import TimedEvent

    good = TimedEvent(0.0, to_json(ToolCallStarted("a", "f", "{}")), 1)
    bad = TimedEvent(1.0, {"type": "tool_call_timed_out", "call_id": "a", "name": "f"}, 2)
    with pytest.raises(EventLogError, match=r"^line 2: .*'timeout'"):
        timeline_of([good, bad])


def test_the_page_is_self_contained_and_escapes_what_it_shows() -> None:
    """The page loads nothing (a CSP of ``default-src 'none'``, no src/href to fetch), and
    a tool's text holding ``</script>`` cannot end the data script early."""
    builder = TimelineBuilder()
    builder.add(0.0, to_json(ToolCallStarted("a", "</script><script>alert(1)", "{}")))
    page = timeline_html(builder.timeline(), title="<b>run</b>")
    assert "default-src 'none'" in page
    assert page.count("</script>") == 2
    assert "src=" not in page and "href=" not in page and "@import" not in page
    assert "<title>&lt;b&gt;run&lt;/b&gt;</title>" in page
    with pytest.raises(TypeError, match="timeline"):
        timeline_html("nope")  # type: ignore[arg-type]


# --- the command ------------------------------------------------------------------------


def test_the_command_writes_the_page_and_names_a_bad_line(tmp_path: Path) -> None:
    """``reactcore timeline EVENTS -o PAGE`` (a subprocess, as users run it) writes the
    page and says what it drew; a malformed log exits 2 with one line naming the line;
    a missing file is an argument error."""
    events = tmp_path / "events.jsonl"
    lines = [
        {"t": 0.0, "event": to_json(ToolCallStarted("a", "search", "{}"))},
        {"t": 0.25, "event": to_json(ToolCallFinished("a", "search", False, 0.25))},
    ]
    events.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")

    def reactcore(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "reactcore", "timeline", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )

    done = reactcore(str(events))
    assert done.returncode == 0, done.stderr
    page = tmp_path / "events.html"
    assert "wrote" in done.stdout and "1 tool calls" in done.stdout
    assert '"call_id":"a"' in page.read_text(encoding="utf-8")

    with events.open("a", encoding="utf-8") as file:
        file.write('{"t": 0.5, "event": {"type": "tool_call_started", "call_id": "b"\n')
    done = reactcore(str(events), "-o", str(tmp_path / "x.html"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"reactcore timeline: {events}: line 3: not JSON: "
        + done.stderr.split("not JSON: ", 1)[1].strip()
    ]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "x.html").exists()

    done = reactcore(str(tmp_path / "missing.jsonl"))
    assert done.returncode == 2 and "no such file" in done.stderr

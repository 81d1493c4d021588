"""A thread's timeline from its checkpoints (``timeline_of_thread``, ``reactcore timeline
--sqlite``, ``reactcore view --sqlite``): real runs stored by a ``SqliteSaver``, drawn with
the model calls and tool calls their checkpoints stand for, timed by when each step was
stored; the command writes the page, and the viewer lists the saver's threads and serves
each one's timeline on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from reactcore import (
    AssistantMessage,
    HumanInTheLoopHook,
    OverAllState,
    ReactAgent,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from reactcore.savers import Checkpoint, SqliteSaver
from reactcore.testing import ScriptedChatModel
from reactcore.viewer import ThreadNotFound, timeline_of_thread
from reactcore.viewer._thread import CHECKPOINT_TIMES, timeline_of_checkpoints
from tests.helpers import asks

WAIT = 60.0


async def _two_calls_one_failing(path: Path) -> None:
    """Thread ``t1``: the model asks for ``ok`` and ``bad`` at once (``bad`` raises), then
    answers ``done``."""

    @tool
    async def ok(x: str) -> str:
        """Succeed."""
        return f"fine {x}"

    @tool
    async def bad(x: str) -> str:
        """Fail."""
        raise RuntimeError("boom")

    calls = asks(("c1", "ok", {"x": "a"}), ("c2", "bad", {"x": "b"}))
    model = ScriptedChatModel([calls, "done"])
    async with SqliteSaver(path) as saver:
        agent = ReactAgent("a", model, tools=[ok, bad], saver=saver)
        result = await agent.invoke("go", {"thread_id": "t1"})
        assert result.text == "done"


@pytest.mark.anyio
async def test_a_thread_is_drawn_from_its_checkpoints(tmp_path: Path) -> None:
    """Two parallel calls (one failing) then an answer, stored by a ``SqliteSaver``: two
    model calls, each from the checkpoint before to its own; both tool calls start when
    the answer naming them was stored and end exactly at the checkpoint that stored their
    response, ``finished`` and ``error`` (with the error text); the run finished with the
    answer; the timeline says its times come from checkpoints. An unknown thread is
    ``ThreadNotFound``."""
    path = tmp_path / "threads.db"
    await _two_calls_one_failing(path)
    async with SqliteSaver(path) as saver:
        checkpoints = await saver.list("t1")
        timeline = await timeline_of_thread(saver, "t1")
        with pytest.raises(ThreadNotFound, match="nope"):
            await timeline_of_thread(saver, "nope")
    origin = checkpoints[0].created_at
    times = [c.created_at - origin for c in checkpoints]
    first, second = timeline.models
    assert first.state == second.state == "finished"
    assert first.calls == 2 and second.text == "done"
    assert (first.start, first.end) == (times[0], times[1])
    assert (second.start, second.end) == (times[-2], times[-1])
    spans = {s.call_id: s for s in timeline.tools}
    assert spans["c1"].state == "finished" and spans["c2"].state == "error"
    assert "boom" in (spans["c2"].reason or "")
    for span in spans.values():
        [running] = span.segments
        assert running.kind == "running" and running.start == first.end
        answered = next(
            c
            for c in checkpoints
            if any(
                isinstance(m, ToolResponseMessage) and span.call_id in {r.id for r in m.responses}
                for m in c.state["messages"]
            )
        )
        assert running.end == pytest.approx(answered.created_at - origin, abs=1e-9)
    assert timeline.outcome.status == "finished" and timeline.outcome.text == "done"
    assert CHECKPOINT_TIMES in timeline.warnings


@pytest.mark.anyio
async def test_a_thread_waiting_for_approval_is_drawn_as_paused(tmp_path: Path) -> None:
    """A run paused for approval of its call: the call waits for approval from the
    checkpoint that paused it, and the thread's outcome is ``interrupted``."""

    @tool
    async def send(to: str) -> str:
        """Send."""
        return f"sent to {to}"

    model = ScriptedChatModel([asks(("c1", "send", {"to": "ana"}))])
    async with SqliteSaver(tmp_path / "threads.db") as saver:
        agent = ReactAgent(
            "m", model, tools=[send], saver=saver, hooks=[HumanInTheLoopHook(["send"])]
        )
        result = await agent.invoke("mail", {"thread_id": "t2"})
        assert result.status == "interrupted"
        timeline = await timeline_of_thread(saver, "t2")
    assert timeline.outcome.status == "interrupted"
    [wait] = timeline.waits
    assert wait.calls == ("send",) and not wait.answered
    [span] = timeline.tools
    assert span.state == "not_run" and [s.kind for s in span.segments][-1] == "approval"


def test_cancellations_and_timeouts_are_read_from_the_response_text() -> None:
    """A response with the cancellation text is a cancelled call (with the reason), one
    with the timeout text a timed-out call; a partial batch answered again in a later
    checkpoint ends each call once, at its first answer; a thread that stopped mid-run
    is said to have stopped before its end."""
    ask = AssistantMessage("", [ToolCall("a", "slow", "{}"), ToolCall("b", "stuck", "{}")])
    cancelled = ToolResponse(
        "a", "slow", "Error: Tool execution was cancelled by the caller: user left", True
    )
    timed_out = ToolResponse(
        "b", "stuck", "Error: Tool execution timed out after 0.5s (tool 'stuck')", True
    )
    conversations: list[list[object]] = [
        [UserMessage("go")],
        [UserMessage("go"), ask],
        [UserMessage("go"), ask, ToolResponseMessage((cancelled,))],
        [UserMessage("go"), ask, ToolResponseMessage((cancelled, timed_out))],
    ]
    steps = ["model", "tools", "tools", "model"]
    checkpoints = [
        Checkpoint("t", OverAllState({"messages": m}), steps[i], i + 1, "r", 1, None, 100.0 + i)  # type: ignore[arg-type]
        for i, m in enumerate(conversations)
    ]
    timeline = timeline_of_checkpoints(checkpoints)
    spans = {s.call_id: s for s in timeline.tools}
    assert spans["a"].state == "cancelled" and "user left" in (spans["a"].reason or "")
    assert spans["a"].segments[-1].end == pytest.approx(2.0)
    assert spans["b"].state == "timed_out" and spans["b"].timeout == 0.5
    assert spans["b"].segments[-1].start == pytest.approx(1.0)
    assert any("stopped before its end" in w for w in timeline.warnings)


def test_the_command_draws_a_thread_from_a_sqlite_saver(tmp_path: Path) -> None:
    """``reactcore timeline --sqlite DB --thread ID -o PAGE`` (a subprocess) writes the
    thread's page and says what it drew; an unknown thread exits 2 naming it; an event
    log and a saver at once is an argument error."""
    path = tmp_path / "threads.db"
    anyio.run(_two_calls_one_failing, path)
    page = tmp_path / "t1.html"

    def reactcore(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "reactcore", "timeline", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )

    done = reactcore("--sqlite", str(path), "--thread", "t1", "-o", str(page))
    assert done.returncode == 0, done.stderr
    assert f"wrote {page}: 2 tool calls, 2 model calls" in done.stdout
    assert "checkpoints" in done.stderr  # the warning about step granularity
    text = page.read_text(encoding="utf-8")
    assert '"call_id":"c1"' in text and '"call_id":"c2"' in text

    done = reactcore("--sqlite", str(path), "--thread", "nope", "-o", str(tmp_path / "x.html"))
    assert done.returncode == 2 and "no checkpoints of thread 'nope'" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "x.html").exists()

    done = reactcore(str(page), "--sqlite", str(path), "--thread", "t1")
    assert done.returncode == 2 and "either" in done.stderr


def test_the_view_command_lists_a_savers_threads_and_draws_them(tmp_path: Path) -> None:
    """``reactcore view --sqlite DB --port 0`` (a real process) lists the saver's threads
    on 127.0.0.1 and serves a thread's timeline from its checkpoints; an unknown thread is
    404, and a request naming another host is 400."""
    path = tmp_path / "threads.db"
    anyio.run(_two_calls_one_failing, path)
    command = [sys.executable, "-m", "reactcore", "view", "--sqlite", str(path), "--port", "0"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            url = line.split(" at ")[1].split()[0]
            assert url.startswith("http://127.0.0.1:")
            with httpx.Client(base_url=url, timeout=WAIT) as http:
                listing = http.get("/")
                assert listing.status_code == 200
                assert 'href="threads/t1"' in listing.text and "finished" in listing.text
                assert "Event logs" not in listing.text
                page = http.get("/threads/t1")
                assert page.status_code == 200
                assert '"call_id":"c2"' in page.text and "reactcore thread: t1" in page.text
                assert http.get("/threads/nope").status_code == 404
                assert http.get("/runs/x.jsonl").status_code == 404
                assert http.get("/", headers={"host": "attacker.example"}).status_code == 400
        finally:
            process.terminate()
            process.wait(WAIT)

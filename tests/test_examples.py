"""The examples work as their docstrings say: the services over real HTTP (asyncio with
uvicorn, trio with hypercorn), and the scripts run as a user would run them."""

from __future__ import annotations

import importlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import anyio
import anyio.to_thread
import attrs
import httpx
import pytest
import uvicorn
from starlette.applications import Starlette

from reactcore import AssistantMessage, ToolCall, Usage, event_from_json, to_json
from reactcore.testing import HTTPReply, SSEReply, serve_openai_compatible

pytestmark = pytest.mark.anyio

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
OPENAI_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "REACTCORE_MODEL")


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], ModuleType]:
    """Imports an example module by name, with examples/ on sys.path as for a script."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    return importlib.import_module


# Every script runs in development mode with ResourceWarnings as errors, and so do the
# processes it starts (the environment's variables): whatever it leaves to the garbage
# collector unclosed (a memory stream, a socket, a file) is printed, and its test fails.
DEV_MODE = ("-X", "dev", "-W", "error::ResourceWarning")
DEV_ENV = {"PYTHONDEVMODE": "1", "PYTHONWARNINGS": "error::ResourceWarning"}


def assert_nothing_unclosed(stderr: str) -> None:
    """No ``ResourceWarning`` (``Unclosed <MemoryObjectReceiveStream …>``, ``unclosed
    <socket …>``) on a script's stderr."""
    lines = stderr.splitlines()
    assert [line for line in lines if "ResourceWarning" in line or "nclosed" in line] == [], stderr


def run_example(
    name: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ if env is None else env, PYTHONIOENCODING="utf-8") | DEV_ENV
    done = subprocess.run(
        [sys.executable, *DEV_MODE, str(EXAMPLES / f"{name}.py"), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=60,
    )
    assert_nothing_unclosed(done.stderr)
    return done


# --- a client of the service ----------------------------------------------------------


@attrs.define
class EventReader:
    """Reads a run's server-sent events one at a time; ``seen`` names those read."""

    lines: AsyncIterator[str]
    seen: list[str] = attrs.Factory(list)

    async def next(self) -> tuple[str, Any] | None:
        """The next event's name and data; None once the stream has ended. The data is
        the event's JSON form: it reads back with event_from_json, as its ``type``."""
        name, data = None, None
        async for line in self.lines:
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = json.loads(line.removeprefix("data: "))
            elif not line and name is not None:
                assert data["type"] == name
                assert to_json(event_from_json(data)) == data
                self.seen.append(name)
                return name, data
        return None

    async def until(self, kind: str, /, **fields: Any) -> Any:
        """The data of the next ``kind`` event having ``fields``."""
        while (got := await self.next()) is not None:
            event, data = got
            if event == kind and fields.items() <= data.items():
                return data
        raise AssertionError(f"the event stream ended before {kind}, after {self.seen}")

    async def rest(self) -> list[str]:
        """The names of the events left until the stream ends."""
        before = len(self.seen)
        while await self.next() is not None:
            pass
        return self.seen[before:]


@asynccontextmanager
async def read_events(client: httpx.AsyncClient, run_id: str) -> AsyncIterator[EventReader]:
    async with (
        client.stream("GET", f"/runs/{run_id}/events") as response,
        aclosing(cast("AsyncGenerator[str, None]", response.aiter_lines())) as lines,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        yield EventReader(lines)


async def start_run(client: httpx.AsyncClient, city: str) -> str:
    response = await client.post("/runs", json={"input": city})
    assert response.status_code == 201, response.text
    run_id: str = response.json()["run_id"]
    return run_id


async def run_status(client: httpx.AsyncClient, run_id: str) -> Any:
    return (await client.get(f"/runs/{run_id}")).json()


async def exercise_service(base_url: str) -> str:
    """Drive the service as a client would; the id of the run left going at the end."""
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as client:
        # One slow call cancelled: the run goes on, and the model is told why.
        run_id = await start_run(client, "Lisbon")
        async with read_events(client, run_id) as events:
            started = await events.until("tool_call_started", name="find_hotels")
            cancel_url = f"/runs/{run_id}/tools/{started['call_id']}/cancel"
            response = await client.post(cancel_url, params={"reason": "too slow"})
            assert response.json() == {"cancelled": True}
            cancelled = await events.until("tool_call_cancelled")
            finished = await events.until("run_finished")
            assert await events.rest() == []  # the last event ends the stream
        assert cancelled.pop("duration") > 0  # how long it ran until it stopped
        assert cancelled == {
            "type": "tool_call_cancelled",
            "call_id": started["call_id"],
            "name": "find_hotels",
            "reason": "too slow",
            "response": {
                "id": started["call_id"],
                "name": "find_hotels",
                "response_data": "Error: Tool execution was cancelled by the caller: too slow",
                "is_error": True,
            },
        }
        assert "tool_call_finished" in events.seen  # the weather call, which went on
        text = finished["result"]["text"]
        assert finished["result"]["status"] == "finished"
        assert "weather: sunny, 24 °C in Lisbon" in text
        assert "find_hotels: Error: Tool execution was cancelled by the caller: too slow" in text
        assert (await client.post(cancel_url)).json() == {"cancelled": False}
        assert await run_status(client, run_id) == {
            "run_id": run_id,
            "status": "finished",
            "text": text,
            "error": None,
            "listening": False,
        }

        # The whole run cancelled: its events end with RunFailed.
        run_id = await start_run(client, "Oslo")
        async with read_events(client, run_id) as events:
            await events.until("tool_call_started", name="find_hotels")
            assert (await client.delete(f"/runs/{run_id}")).json() == {"cancelled": True}
            failed = await events.until("run_failed")
            assert await events.rest() == []
        assert failed["error"]["type"] == "RunCancelled"
        assert (await run_status(client, run_id))["status"] == "cancelled"

        # A run still going (its reader gone) when the server stops.
        run_id = await start_run(client, "Rome")
        async with read_events(client, run_id) as events:
            await events.until("tool_call_started", name="find_hotels")
            assert (await run_status(client, run_id))["listening"] is True
            second = await client.get(f"/runs/{run_id}/events")  # one reader per run
            assert second.status_code == 409
        # The client left: the server closes the run's event stream. It notices the
        # disconnect in its own thread, with nothing here to wait on: ask until it has.
        with anyio.fail_after(5):
            while (status := await run_status(client, run_id))["listening"]:  # noqa: ASYNC110
                await anyio.sleep(0.02)
        assert status["status"] == "running"
        assert (await client.get("/runs/nope")).status_code == 404
    return run_id


def assert_no_run_left(app: Starlette, left_running: str) -> None:
    runs = app.state.runs
    assert runs.closed, "the lifespan's task group has not exited"
    assert runs.live == 0, f"{runs.live} run task(s) outlived the server"
    assert runs.records[left_running].run.done


@asynccontextmanager
async def uvicorn_in_thread(app: Starlette) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 (a free port) in a thread with its own
    asyncio loop; the server has stopped, lifespan included, when the block ends."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # clients may connect at once; uvicorn accepts after its startup
    config = uvicorn.Config(
        app, loop="asyncio", http="h11", lifespan="on", log_config=None, access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await anyio.to_thread.run_sync(thread.join, 15)
        sock.close()
    assert not thread.is_alive(), "uvicorn did not stop"


# --- the services ---------------------------------------------------------------------


async def test_asyncio_service_over_http(example: Callable[[str], ModuleType]) -> None:
    """asyncio_service under uvicorn (in a thread, on asyncio: uvicorn pins it; the client
    runs on each backend): cancelling the slow tool call over HTTP lets the run finish
    with the model told of the cancellation; DELETE ends a run with RunFailed; a run
    still going when the server stops is cancelled by the lifespan, and no run task is
    left."""
    app = example("asyncio_service").create_app()
    with anyio.fail_after(20):
        async with uvicorn_in_thread(app) as url:
            left_running = await exercise_service(url)
    assert_no_run_left(app, left_running)


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_trio_service_over_http(
    example: Callable[[str], ModuleType], anyio_backend: str
) -> None:
    """trio_service: the same app served by hypercorn's trio worker (trio only), in this
    test's loop, passes the same HTTP scenario and stops as cleanly."""
    serve_app = example("trio_service").serve_app
    app = example("asyncio_service").create_app()
    stop = anyio.Event()
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            url = await tg.start(partial(serve_app, app, 0, shutdown_trigger=stop.wait))
            left_running = await exercise_service(url)
            stop.set()
    assert_no_run_left(app, left_running)


# --- the scripts ----------------------------------------------------------------------


def test_replicas_script_leaves_nothing_in_the_working_directory(tmp_path: Path) -> None:
    """replicas, run as a script: replica B resumes the three orphaned runs, skips the
    live one, and the SQLite file (with its WAL and lease files) lives in a temporary
    folder of its own, so nothing is left where the user ran it."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "replicas.py")],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=dict(os.environ, PYTHONIOENCODING="utf-8"),
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "resumed: order-1, order-2, order-3" in done.stdout
    assert "busy (alive elsewhere): order-4" in done.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sync_tools(backend: str) -> None:
    """sync_tools: the blocking checksums run at once in two worker threads (not the
    loop's), the scan times out after 1 s without the run waiting 30 s, and its
    abandoned thread then stops at its next check_cancelled()."""
    done = run_example("sync_tools", backend)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    loop_thread = re.search(r"the event loop runs in thread (\d+)", out)
    workers = re.findall(r"\.csv: [0-9a-f]{8} \(computed in thread (\d+)\)", out)
    assert loop_thread is not None and len(workers) == 2, out
    assert len({loop_thread[1], *workers}) == 3, out
    assert "timed out c3 scan_archive after 1 s" in out
    assert "c3: Error: Tool execution timed out after 1s (tool 'scan_archive')" in out
    took = re.search(r"run: ([\d.]+) s", out)
    assert took is not None and 1.0 <= float(took[1]) < 10, out
    assert out.index("timed out c3") < out.index("the abandoned scan thread has stopped")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_mcp_tools(backend: str) -> None:
    """mcp_tools: the example's own MCP server (a stdio subprocess) lists two tools under
    the prefix; they and the local tool answer in one parallel batch, in call order, and
    the server has stopped when the example ends."""
    done = run_example("mcp_tools", backend)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "MCP server 'notes': ['notes_search', 'notes_count_words']"
    started = [line for line in lines if line.startswith("started")]
    assert started == [
        "started   c1 notes_search",
        "started   c2 today",
        "started   c3 notes_count_words",
    ]
    assert [line for line in lines if line.startswith("answer")] == [
        "answer    c1: 'trip: train at 9:40, platform 4'",
        "answer    c2: '2026-12-03'",
        "answer    c3: '3'",
    ]
    assert lines[-2:] == [
        "final: Your train leaves at 9:40 today, from platform 4.",
        "the MCP server has stopped",
    ]


def test_structured_output() -> None:
    """structured_output: the JSON answer (in a code fence) comes back as a Trip, the
    schema sent as a strict response_format and in the prompt; an answer that does not
    fit is sent back with the error and the second one used; answers that never fit
    raise OutputParseError naming the field; in tool mode the final_answer call is the
    output."""
    done = run_example("structured_output")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    trip = "Trip(city='Lisbon', days=3, highlights=['Alfama', 'Belém'])"
    assert f"output: {trip}" in out
    assert "3 days in Lisbon: Alfama, Belém" in out
    assert "response_format: json_schema 'Trip', strict=True" in out
    assert "Answer with JSON only, following this JSON Schema:" in out
    assert (
        "asked again with: Your answer could not be used: the final answer does not fit "
        "Trip: expected an integer, got str 'three' @ output.days. Answer again."
    ) in out
    assert f"second answer: {trip} (2 model calls)" in out
    assert "OutputParseError: " in out and "@ output.days" in out
    assert "tools the model saw: ['final_answer']" in out
    assert f"from final_answer: {trip}" in out


def openai_env(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in OPENAI_ENV}
    return env | values


def test_openai_compatible_against_a_local_server() -> None:
    """openai_compatible, configured by env vars to a local OpenAI-compatible server:
    the model it names calls multiply, the tool's result goes back, and the answer is
    printed."""
    call = ToolCall("call_1", "multiply", '{"a": 17, "b": 23}')
    script = [
        SSEReply.of(AssistantMessage("", [call]), usage=Usage(20, 10, 30)),
        SSEReply.of("17 times 23 is 391.", usage=Usage(40, 8, 48)),
    ]
    with serve_openai_compatible(script) as server:
        env = openai_env(
            OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test", REACTCORE_MODEL="m-1"
        )
        done = run_example("openai_compatible", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["17 times 23 is 391.", "(2 model calls, 78 tokens)"]
    assert [r["model"] for r in server.requests] == ["m-1", "m-1"]
    assert server.request_headers[0]["authorization"] == "Bearer sk-test"
    tool_answer = server.requests[1]["messages"][-1]
    assert tool_answer == {"role": "tool", "tool_call_id": "call_1", "content": "391"}


def test_openai_compatible_model_error() -> None:
    """openai_compatible: an error from the endpoint is one line on stderr and exit 1."""
    with serve_openai_compatible([HTTPReply.error(401, "invalid api key")]) as server:
        env = openai_env(OPENAI_BASE_URL=server.base_url, REACTCORE_MODEL="m-1")
        done = run_example("openai_compatible", env=env)
    assert done.returncode == 1
    # Development mode's asyncio reports slow steps ("Executing <Task …> took 0.3 seconds").
    said = [line for line in done.stderr.splitlines() if not line.startswith("Executing <")]
    assert len(said) == 1 and said[0].startswith("the model failed: HTTP 401"), done.stderr
    assert "invalid api key" in said[0] and "Traceback" not in done.stderr


def test_openai_compatible_unconfigured() -> None:
    """openai_compatible with none of its env vars: one line saying what to set, exit 2."""
    done = run_example("openai_compatible", env=openai_env())
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "REACTCORE_MODEL" in done.stderr and "OPENAI_API_KEY" in done.stderr


def test_quickstart_offline_and_on_an_endpoint() -> None:
    """The README's quickstart runs offline on its scripted model, and on an
    OpenAI-compatible endpoint when two environment variables name it."""
    offline = run_example("quickstart", env=openai_env())
    assert offline.returncode == 0, offline.stderr
    assert offline.stdout.strip() == "Rain in both Oslo and Lima."
    calls = [ToolCall(f"c{i}", "weather", f'{{"city": "{c}"}}') for i, c in enumerate("AB")]
    script = [SSEReply.of(AssistantMessage("", calls)), SSEReply.of("from the endpoint")]
    with serve_openai_compatible(script) as server:
        env = openai_env(OPENAI_BASE_URL=server.base_url, REACTCORE_MODEL="m-2")
        online = run_example("quickstart", env=env)
    assert online.returncode == 0, online.stderr
    assert online.stdout.strip() == "from the endpoint"
    tool_answers = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_answers == ["A: 18 °C, light rain", "B: 18 °C, light rain"]


async def run_example_on(backend: str, name: str) -> str:
    """Run an example script on ``backend`` (from a test on that backend); its stdout."""
    env = dict(os.environ, PYTHONIOENCODING="utf-8") | DEV_ENV
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [sys.executable, *DEV_MODE, str(EXAMPLES / f"{name}.py"), backend],
            env=env,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert_nothing_unclosed(done.stderr.decode())
    return done.stdout.decode()


async def test_cancel_long_tool(anyio_backend: str) -> None:
    """cancel_long_tool: once the quick call has finished, the caller cancels the slow
    one by its call id; the tool's cleanup runs, the events (printed as JSON) go started,
    started, finished, cancelled, and the model reads why the slow call has no answer;
    the run ends in well under the slow tool's 30 s."""
    out = await run_example_on(anyio_backend, "cancel_long_tool")
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    tools = [(e["type"], e["call_id"]) for e in events if e["type"].startswith("tool_call")]
    assert tools == [
        ("tool_call_started", "call_lookup"),
        ("tool_call_started", "call_report"),
        ("tool_call_finished", "call_lookup"),
        ("tool_call_cancelled", "call_report"),
    ]
    cancelled = next(e for e in events if e["type"] == "tool_call_cancelled")
    assert cancelled["reason"] == "the report is not needed"
    assert events[-1]["type"] == "run_finished"
    assert "(cancel_tool('call_report') -> True)" in out
    assert out.index("cleanup ran") < out.index('"tool_call_cancelled"')
    assert (
        "answer: lookup: Lisbon is in Portugal | yearly_report: Error: Tool execution was "
        "cancelled by the caller: the report is not needed"
    ) in out
    took = re.search(r"the run took ([\d.]+) s", out)
    assert took is not None and float(took[1]) < 10, out


async def test_resume_after_crash(anyio_backend: str) -> None:
    """resume_after_crash: the child, killed with SIGKILL once three calls are
    checkpointed, ran w0–w2; the parent resumed the thread and ran only w3 and w4; no
    call ran twice, and the answer counts the model call made before the crash."""
    out = await run_example_on(anyio_backend, "resume_after_crash")
    child = re.search(r"child \(pid (\d+)\) killed with SIGKILL: exit status -9", out)
    parent = re.search(r"parent \(pid (\d+)\): resuming", out)
    assert child is not None and parent is not None, out
    ran = re.findall(r"^(w\d) ran in the (child|parent) \(pid (\d+)\)$", out, re.MULTILINE)
    assert ran == [
        ("w0", "child", child[1]),
        ("w1", "child", child[1]),
        ("w2", "child", child[1]),
        ("w3", "parent", parent[1]),
        ("w4", "parent", parent[1]),
    ]
    assert "each call ran once" in out
    assert "answer: 5 items done (2 model calls)" in out

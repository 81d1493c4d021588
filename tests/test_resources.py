"""Nothing a run or an agent opens is left open: a run's event buffer is closed at both
ends on every path (read or not, refused at start, resumed after a pause); an agent closes
the model client it built from a provider string (``aclose``, ``async with agent``) and
leaves a given model to its maker; the README and the examples run under ``python -X dev``
without a ``ResourceWarning``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from reactcore import (
    AgentRun,
    Approve,
    AssistantMessage,
    MemorySaver,
    OpenAIChatModel,
    ReactAgent,
    Resume,
    RunFinished,
    RunnableConfig,
    ThreadBusy,
    tool,
)
from reactcore.hooks import HumanInTheLoopHook
from reactcore.models import ModelRequest
from reactcore.testing import ScriptedChatModel, SSEReply, serve_openai_compatible
from tests.helpers import answers, asks
from tests.test_docs import blocks_of
from tests.test_examples import DEV_ENV, DEV_MODE, assert_nothing_unclosed

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
WAIT = 30  # seconds: the bound of every wait here (a loaded 2-core machine)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


Buffer = tuple[MemoryObjectSendStream[Any], MemoryObjectReceiveStream[Any]]


@pytest.fixture
def buffers(monkeypatch: pytest.MonkeyPatch) -> list[Buffer]:
    """Every event buffer (both ends) a run opens during the test, in order."""
    opened: list[Buffer] = []
    open_stream = AgentRun._open_stream

    def recording(run: AgentRun) -> None:
        open_stream(run)
        opened.append((run._send, run._receive))

    monkeypatch.setattr(AgentRun, "_open_stream", recording)
    return opened


def left_open(opened: list[Buffer]) -> list[str]:
    """The ends of ``opened`` not closed (probed through the public API, without taking
    anything: only a closed end refuses ``clone()``)."""
    found = []
    for number, ends in enumerate(opened):
        for name, end in zip(("send", "receive"), ends, strict=True):
            try:
                end.clone().close()
            except anyio.ClosedResourceError:
                continue
            found.append(f"buffer {number}: {name}")
    return found


def scripted_agent(*replies: object, **options: object) -> ReactAgent:
    return ReactAgent("a", ScriptedChatModel(list(replies)), tools=[add], **options)  # type: ignore[arg-type]


# --- the run's event buffer ---------------------------------------------------------------


async def test_invoke_leaves_no_stream_open(buffers: list[Buffer]) -> None:
    """``agent.invoke`` (whose handle never has a reader) closes both ends of its buffer."""
    agent = scripted_agent(asks(("c1", "add", {"a": 1, "b": 2})), answers)
    assert (await agent.invoke("go")).text == "3"
    assert len(buffers) == 1
    assert left_open(buffers) == []


async def test_start_whose_events_are_never_read_leaves_no_stream_open(
    buffers: list[Buffer],
) -> None:
    """A run from ``agent.start`` whose events nobody reads: its buffer is closed when the
    block ends; ``run.events()`` afterwards is a RuntimeError, not a silently empty stream."""
    agent = scripted_agent(asks(("c1", "add", {"a": 1, "b": 2})), answers)
    async with agent.start("go") as run:
        assert (await run.result()).text == "3"
        # The run has ended (its sending end closed); a reader may still come in the block.
        assert left_open(buffers) == ["buffer 0: receive"]
    assert left_open(buffers) == []
    with pytest.raises(RuntimeError, match=r"inside the `async with agent.start"):
        run.events()


async def test_a_reader_that_stops_at_the_last_event_leaves_no_stream_open(
    buffers: list[Buffer],
) -> None:
    """A reader that reads up to ``RunFinished`` and leaves without closing its stream, or
    one that reads to the end without ``async with``: nothing is left open."""
    async with scripted_agent("hi").start("go") as run:
        async for event in run.events():
            if isinstance(event, RunFinished):
                break
    async with scripted_agent("hi").start("go") as run:
        seen = [event async for event in run.events()]
        assert left_open(buffers[1:]) == []  # read to the end: closed at once
    assert isinstance(seen[-1], RunFinished)
    assert len(buffers) == 2
    assert left_open(buffers) == []


async def test_a_reader_with_events_left_to_read_keeps_them(buffers: list[Buffer]) -> None:
    """A reader attached in the block with events still unread when it ends keeps them
    (its stream is its own to close): it reads them after the block, to the end, and the
    buffer is then closed."""
    async with scripted_agent("hi").start("go") as run:
        events = run.events()
        await run.result()
    assert left_open(buffers) == ["buffer 0: receive"]
    seen = [event async for event in events]
    assert isinstance(seen[-1], RunFinished)
    assert left_open(buffers) == []


async def test_a_run_refused_at_start_leaves_no_stream_open(buffers: list[Buffer]) -> None:
    """A run refused before it starts (its thread busy: ``ThreadBusy``) closes its buffer."""
    entered, opened = anyio.Event(), anyio.Event()

    async def gate(request: ModelRequest) -> AssistantMessage:
        entered.set()
        await opened.wait()
        return AssistantMessage("first")

    agent = ReactAgent("a", ScriptedChatModel([gate]), saver=MemorySaver())
    config = RunnableConfig(thread_id="t")
    with anyio.fail_after(WAIT):
        async with agent.start("one", config) as first:
            await entered.wait()
            with pytest.raises(ThreadBusy):
                await agent.invoke("two", config)
            assert len(buffers) == 2
            assert left_open(buffers[1:]) == []  # the refused run's, at once
            opened.set()
            assert (await first.result()).text == "first"
    assert left_open(buffers) == []


async def test_a_run_resumed_after_a_pause_leaves_no_stream_open(buffers: list[Buffer]) -> None:
    """A run paused for approval and resumed in its block, neither leg's events read: the
    first leg's buffer is closed when the second starts, the second's when the block ends."""
    agent = ReactAgent(
        "a",
        ScriptedChatModel([asks(("a1", "add", {"a": 2, "b": 3})), answers]),
        tools=[add],
        hooks=[HumanInTheLoopHook({"add": True})],
        saver=MemorySaver(),
    )
    with anyio.fail_after(WAIT):
        async with agent.start("go", RunnableConfig(thread_id="t")) as run:
            assert (await run.result()).status == "interrupted"
            await run.resume(Resume({"a1": Approve()}))
            assert left_open(buffers[:1]) == []
            assert (await run.result()).text == "5"
    assert len(buffers) == 2
    assert left_open(buffers) == []


# --- model clients ------------------------------------------------------------------------


async def test_an_agent_closes_the_client_it_built_from_a_provider_string(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``ReactAgent("a", "openai:m")`` owns the client it built: ``async with agent``
    closes it (connections included) when the block ends; ``aclose()`` again is a no-op."""
    script = [SSEReply.of("hello"), SSEReply.of("again")]
    with serve_openai_compatible(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        async with ReactAgent("a", "openai:m") as agent:
            assert (await agent.invoke("hi")).text == "hello"
            client = agent.model._client  # type: ignore[attr-defined]
            assert isinstance(client, httpx.AsyncClient) and not client.is_closed
        assert client.is_closed
        await agent.aclose()  # idempotent
        assert client.is_closed
        other = ReactAgent("b", "openai:m")
        await other.aclose()
        await other.aclose()
        assert other.model._client.is_closed  # type: ignore[attr-defined]


async def test_a_given_model_stays_its_makers_to_close() -> None:
    """An agent given a model object never closes it: ``async with agent`` and
    ``aclose()`` leave the model's client open for whoever made it."""
    with serve_openai_compatible([SSEReply.of("hello")]) as server:
        async with OpenAIChatModel("m", base_url=server.base_url, api_key="k") as model:
            async with ReactAgent("a", model) as agent:
                assert (await agent.invoke("hi")).text == "hello"
            await agent.aclose()
            assert not model._client.is_closed
        assert model._client.is_closed
    async with ReactAgent("s", ScriptedChatModel(["ok"])) as scripted:  # no aclose at all
        assert (await scripted.invoke("hi")).text == "ok"


# --- the README and the examples under python -X dev -------------------------------------


# Run here: the examples tests/test_examples.py does not run as scripts (it runs every
# other one under the same mode, and the two services under a server).
SCRIPTS_HERE = ("tool_node_demo", "replicas")


def _jobs(folder: Path) -> list[dict[str, object]]:
    """The README's python blocks, and the examples of ``SCRIPTS_HERE``."""
    jobs: list[dict[str, object]] = []
    blocks = [b for b in blocks_of(ROOT / "README.md") if b.language in ("python", "py")]
    for number, block in enumerate(blocks):
        script = folder / f"readme_{number}.py"
        script.write_text(block.code, encoding="utf-8")
        jobs.append({"name": f"README block {number}", "path": str(script)})
    for name in SCRIPTS_HERE:
        jobs.append({"name": name, "path": str(EXAMPLES / f"{name}.py"), "cwd": str(folder)})
    return jobs


def test_the_readme_and_the_examples_leave_nothing_unclosed(tmp_path: Path) -> None:
    """Every README block and the examples of ``SCRIPTS_HERE`` run to exit status 0 in one
    ``python -X dev -W error::ResourceWarning`` process, and nothing printed is a
    ResourceWarning: no unclosed memory stream, socket or file."""
    jobs = _jobs(tmp_path)
    jobs_file = tmp_path / "jobs.json"
    jobs_file.write_text(json.dumps(jobs), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "REACTCORE_"))}
    env |= {"PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8"} | DEV_ENV
    done = subprocess.run(
        [sys.executable, *DEV_MODE, str(ROOT / "tests" / "scripts" / "run_scripts.py"), jobs_file],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=tmp_path,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    statuses = json.loads(done.stdout.splitlines()[-1])
    assert statuses == {job["name"]: 0 for job in jobs}, done.stderr
    assert len([job for job in jobs if "README" in str(job["name"])]) >= 2
    assert_nothing_unclosed(done.stderr)


def test_every_example_runs_in_development_mode() -> None:
    """Each example is run under ``-X dev -W error::ResourceWarning``: here, as a script in
    tests/test_examples.py (``run_example`` / ``run_example_on``), or served there (the
    services): a new example without such a run fails here."""
    source = (ROOT / "tests" / "test_examples.py").read_text(encoding="utf-8")
    scripted = set(re.findall(r'run_example(?:_on)?\((?:\w+, )?"(\w+)"', source))
    served = {"asyncio_service", "trio_service"}
    assert {"quickstart", "sync_tools", "cancel_long_tool"} <= scripted
    examples = {path.stem for path in EXAMPLES.glob("*.py")}
    assert examples == scripted | served | set(SCRIPTS_HERE)

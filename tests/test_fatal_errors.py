"""A ``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt``, ``SystemExit``,
a subclass of its own) raised by a tool: it comes out as itself, not in an exception group,
and the run is failed, never "cancelled from outside" — in parallel and sequential mode,
async tools and sync tools inline or in threads, on both backends. Real cancellation is
still told apart."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from reactcore import ReactAgent, RunCancelled, RunFailed, Tool, tool
from reactcore.models.scripted import ScriptedChatModel
from tests.helpers import asks

pytestmark = pytest.mark.anyio


class Halt(BaseException):
    """A BaseException of the application's own."""


KINDS = [KeyboardInterrupt, SystemExit, Halt]
# (parallel, sync tool, wrap_sync_tools_as_async): where the exception is raised
MODES = {
    "parallel-async": (True, False, False),
    "parallel-thread": (True, True, False),
    "sequential-async": (False, False, False),
    "sequential-inline": (False, True, False),
    "sequential-thread": (False, True, True),
}


def agent_raising(error: BaseException, parallel: bool, sync: bool, wrap: bool) -> Any:
    """An agent whose model asks for ``boom`` beside a ``patient`` async call, and the
    record of whether the patient call was cancelled (its ``finally`` ran)."""
    seen = {"patient_finally": False}

    async def boom_async() -> str:
        raise error

    def boom_sync() -> str:
        assert (threading.current_thread() is threading.main_thread()) == (
            not parallel and not wrap
        )
        raise error

    boom = Tool.from_function(boom_sync if sync else boom_async, name="boom")

    @tool
    async def patient() -> str:
        try:
            await anyio.sleep_forever()
        finally:
            seen["patient_finally"] = True
        return "never"  # pragma: no cover

    calls = [("1", "patient", {}), ("2", "boom", {})] if parallel else [("2", "boom", {})]
    model = ScriptedChatModel([asks(*calls), "unreachable"])
    agent = ReactAgent(
        "a",
        model,
        tools=[boom, patient],
        parallel_tool_execution=parallel,
        wrap_sync_tools_as_async=wrap,
    )
    return agent, seen


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
@pytest.mark.parametrize("mode", list(MODES))
async def test_base_exception_from_a_tool_is_raised_as_itself(
    kind: type[BaseException], mode: str
) -> None:
    """``invoke`` raises the tool's own exception instance (not a group, not
    ``RunCancelled``); in a parallel batch the sibling call was cancelled first."""
    error = kind("from the tool")
    parallel, sync, wrap = MODES[mode]
    agent, seen = agent_raising(error, parallel, sync, wrap)
    with anyio.fail_after(5), pytest.raises(kind) as raised:
        await agent.invoke("go")
    assert raised.value is error
    assert seen["patient_finally"] is parallel


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
async def test_run_with_a_base_exception_is_failed_not_cancelled(
    kind: type[BaseException],
) -> None:
    """The run handle says ``failed`` and its last event is ``RunFailed`` carrying the
    exception itself; ``result()`` raises it, and leaving ``start`` raises nothing more."""
    error = kind("from the tool")
    agent, _ = agent_raising(error, parallel=True, sync=True, wrap=False)
    with anyio.fail_after(5):
        async with agent.start("go") as run:
            async with run.events() as events:
                seen = [event async for event in events]
            assert await run.status() == "failed"
            assert isinstance(seen[-1], RunFailed) and seen[-1].error is error
            with pytest.raises(kind) as raised:
                await run.result()
            assert raised.value is error


async def test_start_raises_a_base_exception_nobody_asked_for() -> None:
    """A caller that only waits for the run (never calls ``result()``) still gets the
    ``KeyboardInterrupt`` as itself when it leaves ``start``: it never stays in the run."""
    error = KeyboardInterrupt()
    agent, _ = agent_raising(error, parallel=False, sync=False, wrap=False)
    statuses: list[str] = []

    async def wait_only() -> None:
        async with agent.start("go") as run:
            await run.wait()
            statuses.append(await run.status())

    with anyio.fail_after(5), pytest.raises(KeyboardInterrupt) as raised:
        await wait_only()
    assert raised.value is error
    assert statuses == ["failed"]


async def test_cancellation_from_outside_is_still_cancelled() -> None:
    """A run cancelled by the caller's own scope while a tool runs is ``cancelled`` with
    ``RunCancelled("the run was cancelled from outside")``: the backend's cancellation is
    not taken for a tool's BaseException."""
    started = anyio.Event()

    @tool
    async def wait() -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    agent = ReactAgent("a", ScriptedChatModel([asks(("1", "wait", {}))]), tools=[wait])
    handle: list[Any] = []

    async def run_it() -> None:
        async with agent.start("go") as run:
            handle.append(run)
            await run.wait()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_it)
            await started.wait()
            tg.cancel_scope.cancel()
    run = handle[0]
    assert await run.status() == "cancelled"
    with pytest.raises(RunCancelled, match="the run was cancelled from outside"):
        await run.result()

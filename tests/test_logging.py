"""Where the library's events go: never stdout; the stdlib ``reactcore`` logger when
structlog is not configured, structlog's processors (same keys) when it is."""

from __future__ import annotations

import logging
import pathlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import anyio
import pytest
import structlog
from structlog.testing import capture_logs

from reactcore import AgentToolNode, tool
from reactcore._logging import get_logger
from tests.helpers import call, calls_state


@tool(timeout=0.05)
async def stuck() -> str:
    """Never answers in time."""
    await anyio.sleep_forever()
    return "never"


@pytest.fixture
def unconfigured() -> Iterator[None]:
    """structlog as an application that configured nothing has it."""
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


@pytest.mark.anyio
@pytest.mark.usefixtures("unconfigured")
async def test_unconfigured_warning_goes_to_the_reactcore_logger_not_stdout(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """A timed-out call logs ``tool_call_timed_out`` on the stdlib logger ``reactcore``
    (level WARNING, the event and its keys in the message); nothing reaches stdout."""
    caplog.set_level(logging.WARNING, logger="reactcore")
    node = AgentToolNode([stuck], agent_name="a1")
    await node(calls_state(call("c1", "stuck")))
    records = [r for r in caplog.records if r.name == "reactcore"]
    assert [r.levelno for r in records] == [logging.WARNING]
    message = records[0].getMessage()
    assert message.startswith("tool_call_timed_out ")
    assert "agent='a1'" in message and "call_id='c1'" in message and "tool='stuck'" in message
    assert records[0].reactcore_event == "tool_call_timed_out"  # type: ignore[attr-defined]
    assert capsys.readouterr().out == ""


@pytest.mark.usefixtures("unconfigured")
def test_unconfigured_debug_is_not_emitted(caplog: pytest.LogCaptureFixture) -> None:
    """Below the logger's level nothing is formatted or emitted."""
    caplog.set_level(logging.INFO, logger="reactcore")
    get_logger(agent="a").debug("tool_call_arguments", arguments="secret-ish")
    get_logger(agent="a").info("tool_call_started", call_id="c1")
    assert [r.getMessage() for r in caplog.records] == ["tool_call_started agent='a' call_id='c1'"]


@pytest.mark.anyio
async def test_configured_structlog_gets_structured_events() -> None:
    """With structlog configured, the same event arrives with the same keys."""
    node = AgentToolNode([stuck], agent_name="a1")
    with capture_logs() as logs:
        await node(calls_state(call("c1", "stuck")))
    assert logs == [
        {
            "event": "tool_call_timed_out",
            "log_level": "warning",
            "agent": "a1",
            "call_id": "c1",
            "tool": "stuck",
            "timeout": 0.05,
        }
    ]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_plain_application_sees_warnings_on_stderr_only(backend: str) -> None:
    """In a fresh process that configured no logging at all, the warning reaches stderr
    through logging's last-resort handler and stdout stays empty."""
    script = textwrap.dedent(
        f"""
        import anyio
        from reactcore import AgentToolNode, tool
        from tests.helpers import call, calls_state

        @tool(timeout=0.05)
        async def stuck() -> str:
            await anyio.sleep_forever()

        async def main() -> None:
            await AgentToolNode([stuck])(calls_state(call("c1", "stuck")))

        anyio.run(main, backend={backend!r})
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=pathlib.Path(__file__).parent.parent,
    )
    assert done.stdout == ""
    assert "tool_call_timed_out" in done.stderr and "call_id='c1'" in done.stderr

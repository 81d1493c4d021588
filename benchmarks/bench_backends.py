"""Benchmark: the tool node on each implementation of the backend seam, beside the floor.

Async tools in one parallel batch (k = N) through a real ``AgentToolNode``, on the
loop's native backend (``native``) and on anyio's portable one (``anyio``: the task
groups and cancel scopes every release before the seam ran on), beside the loop's own
floor (``bare``): on asyncio ``asyncio.gather`` with an ``asyncio.Semaphore`` and
``asyncio.timeout`` per call, on trio a nursery whose tasks each hold a
``trio.CapacityLimiter`` slot under ``trio.move_on_after``. Two tools: ``noop`` returns
at once (a batch of them runs on one worker task: workers are started only while jobs
are left unclaimed); ``wait`` waits one turn of the loop (``asyncio.sleep(0)``,
``trio.lowlevel.checkpoint()``), so every call needs its own task, as bare's do. Medians
over the repeats, interleaved in one run; the figures of docs/benchmarks.md ("The
backend seam"). Then the io workload: N = 1,000 tools sleeping 50 ms under k = 100,
makespan ÷ the ideal ceil(N/k)·L.

``--rss``: instead, each batch of 10,000 calls alone in a fresh process (native
backend), and that process's peak RSS beside what its imports alone took.

    python benchmarks/bench_backends.py [asyncio|trio] [--repeat R] [--rss]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

import anyio
import trio
from bench_tool_node import node_executor, noop, sleeper

from reactcore import _backends

SIZES = (1_000, 10_000)
Tool = Callable[[], Awaitable[None]]


async def wait_asyncio() -> None:
    """A tool that waits one turn of the asyncio loop."""
    await asyncio.sleep(0)


async def wait_trio() -> None:
    """A tool that waits one turn of the trio loop."""
    await trio.lowlevel.checkpoint()


async def bare_asyncio(tool: Tool, n: int) -> None:
    limit = asyncio.Semaphore(n)

    async def one() -> None:
        async with limit, asyncio.timeout(300):
            await tool()

    await asyncio.gather(*(one() for _ in range(n)))


async def bare_trio(tool: Tool, n: int) -> None:
    limit = trio.CapacityLimiter(n)

    async def one() -> None:
        async with limit:
            with trio.move_on_after(300):
                await tool()

    async with trio.open_nursery() as nursery:
        for _ in range(n):
            nursery.start_soon(one)


async def _timed(run: Callable[[], Awaitable[None]]) -> float:
    gc.collect()
    start = time.perf_counter()
    await run()
    return time.perf_counter() - start


async def _node(tool: Tool, n: int, backend: _backends.Backend | None) -> float:
    with _backends.using(backend):
        return await _timed(node_executor(n)(tool, n))


async def main(loop: str, repeat: int) -> None:
    bare = bare_asyncio if loop == "asyncio" else bare_trio
    tools: dict[str, Tool] = {
        "noop": noop,
        "wait": wait_asyncio if loop == "asyncio" else wait_trio,
    }
    print(
        f"{'loop':<8} {'tool':<5} {'N':>6} {'bare µs':>8} {'anyio µs':>9} {'native µs':>10} "
        f"{'native÷bare':>12} {'anyio÷bare':>11} {'native s':>9}"
    )
    for name, tool in tools.items():
        for n in SIZES:
            samples: dict[str, list[float]] = {"bare": [], "anyio": [], "native": []}
            for _ in range(repeat):
                samples["bare"].append(await _timed(functools.partial(bare, tool, n)))
                samples["native"].append(await _node(tool, n, None))
                samples["anyio"].append(await _node(tool, n, _backends.PORTABLE))
            m = {k: statistics.median(v) for k, v in samples.items()}
            us = {k: v / n * 1e6 for k, v in m.items()}
            print(
                f"{loop:<8} {name:<5} {n:>6} {us['bare']:>8.1f} {us['anyio']:>10.1f} "
                f"{us['native']:>9.1f} {m['native'] / m['bare']:>10.2f}× "
                f"{m['anyio'] / m['bare']:>11.2f}× {m['native']:>8.3f}"
            )
    await io(repeat)
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


async def io(repeat: int, n: int = 1_000, k: int = 100, latency: float = 0.05) -> None:
    """The io workload: N tools sleeping L under k, makespan ÷ the ideal ceil(N/k)·L."""
    ideal = -(-n // k) * latency
    samples: dict[str, list[float]] = {"native": [], "anyio": []}
    for _ in range(repeat):
        for name, backend in (("native", None), ("anyio", _backends.PORTABLE)):
            with _backends.using(backend):
                samples[name].append(await _timed(node_executor(k)(sleeper(latency), n)))
    m = {name: statistics.median(v) for name, v in samples.items()}
    print(
        f"io N={n} k={k} L={latency * 1e3:g} ms: native {m['native'] * 1e3:.0f} ms "
        f"({m['native'] / ideal:.3f}× ideal), anyio {m['anyio'] * 1e3:.0f} ms "
        f"({m['anyio'] / ideal:.3f}×)"
    )


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one_batch(loop: str, tool: str) -> None:
    """One batch of 10,000 calls in this process; prints the peak RSS before and after."""
    imports = _peak_mb()
    fn = noop if tool == "noop" else (wait_asyncio if loop == "asyncio" else wait_trio)
    seconds: list[float] = []

    async def run() -> None:
        seconds.append(await _timed(node_executor(10_000)(fn, 10_000)))

    anyio.run(run, backend=loop)
    print(f"{loop:<8} {tool:<5} {seconds[0]:>8.3f} {imports:>10.0f} {_peak_mb():>8.0f}")


def rss(loops: tuple[str, ...]) -> None:
    print(f"{'loop':<8} {'tool':<5} {'batch s':>8} {'imports MB':>10} {'peak MB':>8}")
    for loop in loops:
        for tool in ("noop", "wait"):
            command = [sys.executable, __file__, loop, "--one", tool]
            subprocess.run(command, check=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("loop", nargs="?", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rss", action="store_true", help="peak RSS of one batch alone")
    parser.add_argument("--one", choices=("noop", "wait"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one_batch(args.loop, args.one)
    elif args.rss:
        rss((args.loop,))
    else:
        anyio.run(main, args.loop, args.repeat, backend=args.loop)

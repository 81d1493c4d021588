"""Benchmark: the tool node on each implementation of the backend seam, beside the floor.

No-op async tools in one parallel batch (k = N) through a real ``AgentToolNode``, on the
loop's native backend (``after``) and on anyio's portable one (``before``: what every
release before the seam ran), beside the loop's own floor (``bare``): on asyncio
``asyncio.gather`` with an ``asyncio.Semaphore`` and ``asyncio.timeout`` per call, on
trio a nursery whose tasks each hold a ``trio.CapacityLimiter`` slot under
``trio.move_on_after``. Medians over the repeats, interleaved in one run; the figures of
docs/benchmarks.md ("The backend seam").

    python benchmarks/bench_backends.py [asyncio|trio] [--repeat R]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import resource
import statistics
import time
from collections.abc import Awaitable, Callable

import anyio
import trio
from bench_tool_node import node_executor, noop

from reactcore import _backends

SIZES = (1_000, 10_000)


async def bare_asyncio(n: int) -> None:
    limit = asyncio.Semaphore(n)

    async def one() -> None:
        async with limit, asyncio.timeout(300):
            await noop()

    await asyncio.gather(*(one() for _ in range(n)))


async def bare_trio(n: int) -> None:
    limit = trio.CapacityLimiter(n)

    async def one() -> None:
        async with limit:
            with trio.move_on_after(300):
                await noop()

    async with trio.open_nursery() as nursery:
        for _ in range(n):
            nursery.start_soon(one)


async def _timed(run: Callable[[], Awaitable[None]]) -> float:
    gc.collect()
    start = time.perf_counter()
    await run()
    return time.perf_counter() - start


async def _node(n: int, backend: _backends.Backend | None) -> float:
    token = _backends.forced.set(backend)
    try:
        return await _timed(node_executor(n)(noop, n))
    finally:
        _backends.forced.reset(token)


async def main(loop: str, repeat: int) -> None:
    bare = bare_asyncio if loop == "asyncio" else bare_trio
    print(
        f"{'loop':<8} {'N':>6} {'bare µs':>8} {'before µs':>10} {'after µs':>9} "
        f"{'after÷bare':>11} {'before÷bare':>12} {'after s':>8}"
    )
    for n in SIZES:
        samples: dict[str, list[float]] = {"bare": [], "before": [], "after": []}
        for _ in range(repeat):
            samples["bare"].append(await _timed(functools.partial(bare, n)))
            samples["after"].append(await _node(n, None))
            samples["before"].append(await _node(n, _backends.PORTABLE))
        m = {k: statistics.median(v) for k, v in samples.items()}
        us = {k: v / n * 1e6 for k, v in m.items()}
        print(
            f"{loop:<8} {n:>6} {us['bare']:>8.1f} {us['before']:>10.1f} {us['after']:>9.1f} "
            f"{m['after'] / m['bare']:>10.2f}× {m['before'] / m['bare']:>11.2f}× "
            f"{m['after']:>8.3f}"
        )
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("loop", nargs="?", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    anyio.run(main, args.loop, args.repeat, backend=args.loop)

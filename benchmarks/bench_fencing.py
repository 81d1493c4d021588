"""Benchmark: what fencing costs ``PostgresSaver``, and how soon a stalled run's thread is
taken over.

- ``put``: one writer puts P checkpoints (12 messages, about 2 kB of JSON) one after the
  other: inside a claim of their run (the fenced write: the token compared and the lease
  row locked in the same statement) and outside any claim (the unfenced write, which only
  checks that no other live run leases the thread; the baseline, measured in the same
  run). Median and 95th percentile latency per put.
- ``takeover``: a run holds a thread's lease (``lease_ttl`` 0.5 s) and stalls (no
  renewals); another saver claims the thread with ``wait``. The delay from the stale
  lease's expiry to the new claim, both on the server's clock (``expires_at``).

The server at ``REACTCORE_PG_DSN`` (default ``postgresql://postgres@127.0.0.1:5432/test``),
a fresh schema dropped afterwards.

    python benchmarks/bench_fencing.py [--quick] [--backend asyncio|trio|both]
                                       [--repeat R] [--json PATH]
"""

from __future__ import annotations

import json
import os
import statistics
import time
import uuid
from collections.abc import Sequence
from typing import Any

import anyio
import attrs
import psycopg
from _common import backends, parse
from bench_savers import sample_checkpoint

from reactcore.postgres import PostgresSaver, _RowLeases

DSN = os.environ.get("REACTCORE_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
TTL = 0.5


@attrs.frozen
class Plan:
    puts: int
    takeovers: int
    repeat: int


QUICK = Plan(puts=400, takeovers=3, repeat=1)
FULL = Plan(puts=2000, takeovers=8, repeat=1)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def put_latencies(saver: PostgresSaver, thread_id: str, n: int, claimed: bool) -> list[float]:
    owner = f"bench-{thread_id}"
    latencies: list[float] = []

    async def write() -> None:
        for step in range(n):
            checkpoint = attrs.evolve(sample_checkpoint(thread_id, step), run_id=owner)
            started = time.perf_counter()
            await saver.put(thread_id, checkpoint)
            latencies.append(time.perf_counter() - started)

    if claimed:
        async with saver.claim(thread_id, owner=owner):
            await write()
    else:
        await write()
    return latencies


def lease_expiry(schema: str, thread_id: str) -> float:
    with psycopg.connect(DSN, autocommit=True) as conn:
        row = conn.execute(
            f'SELECT extract(epoch FROM expires_at) FROM "{schema}".leases WHERE thread_id = %s',
            (thread_id,),
        ).fetchone()
    assert row is not None
    return float(row[0])


async def takeover_delay(stale: PostgresSaver, fresh: PostgresSaver, thread_id: str) -> float:
    """Seconds from the stalled lease's expiry to the new owner's claim (server clock)."""
    assert _RowLeases(stale).try_acquire(thread_id, "stalled") is None  # never renewed
    expired_at = await anyio.to_thread.run_sync(lease_expiry, stale.schema, thread_id)
    async with fresh.claim(thread_id, owner="successor", wait=10):
        claimed_at = await anyio.to_thread.run_sync(lease_expiry, stale.schema, thread_id) - TTL
    return claimed_at - expired_at


async def measure(backend: str, plan: Plan) -> list[dict[str, Any]]:
    schema = f"rc_bench_{uuid.uuid4().hex[:8]}"
    rows: list[dict[str, Any]] = []
    try:
        options: dict[str, Any] = {"schema": schema, "lease_ttl": TTL, "heartbeat": 0.1}
        async with PostgresSaver(DSN, **options) as stale, PostgresSaver(DSN, **options) as fresh:
            await put_latencies(stale, "warm-up", 50, True)
            # Interleaved batches of 100, so that a noisy neighbour hits both alike.
            every: dict[bool, list[float]] = {False: [], True: []}
            for batch in range(max(1, plan.puts // 100)):
                for claimed in (batch % 2 == 0, batch % 2 == 1):
                    thread_id = f"p{int(claimed)}-{batch}"
                    every[claimed] += await put_latencies(stale, thread_id, 100, claimed)
            for claimed, latencies in every.items():
                rows.append(
                    {
                        "backend": backend,
                        "section": "put " + ("fenced (claimed)" if claimed else "unfenced"),
                        "n": len(latencies),
                        "p50_ms": statistics.median(latencies) * 1000,
                        "p95_ms": percentile(latencies, 0.95) * 1000,
                    }
                )
            delays = [await takeover_delay(stale, fresh, f"t{i}") for i in range(plan.takeovers)]
            rows.append(
                {
                    "backend": backend,
                    "section": "takeover after expiry",
                    "n": len(delays),
                    "p50_ms": statistics.median(delays) * 1000,
                    "p95_ms": max(delays) * 1000,
                }
            )
    finally:
        with psycopg.connect(DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    args, plan = parse(__doc__ or "", QUICK, FULL, argv)
    rows: list[dict[str, Any]] = []
    for backend in backends(args):
        rows += anyio.run(measure, backend, plan, backend=backend)
    print(
        f"{'backend':8} {'section':24} {'n':>6} {'p50 ms':>8} {'p95/max ms':>10} {'x unfenced':>10}"
    )
    base = {r["backend"]: r["p50_ms"] for r in rows if r["section"] == "put unfenced"}
    for r in rows:
        ratio = f"{r['p50_ms'] / base[r['backend']]:.2f}" if r["section"].startswith("put") else "-"
        print(
            f"{r['backend']:8} {r['section']:24} {r['n']:>6} {r['p50_ms']:>8.3f}"
            f" {r['p95_ms']:>10.3f} {ratio:>10}"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"plan": attrs.asdict(plan), "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()

"""A worker process for the Temporal tests: ``python worker.py ADDRESS TASK_QUEUE``.

It runs the test agents until it is killed, and prints ``ready`` once it polls.
"""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from temporalio.client import Client

from reactcore.temporal import worker
from temporal_workers.agents import temporal_agents


async def connect(address: str) -> Client:
    """A client, retried for 30 s (a server just restarted may not be healthy yet)."""
    for _ in range(300):
        try:
            return await Client.connect(address)
        except RuntimeError:
            await asyncio.sleep(0.1)
    raise SystemExit(f"no Temporal server at {address}")


async def main(address: str, task_queue: str) -> None:
    client = await connect(address)
    agents = list(temporal_agents(task_queue).values())
    async with worker(client, agents, sticky_queue_schedule_to_start_timeout=timedelta(seconds=1)):
        print("ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))

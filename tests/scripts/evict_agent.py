"""A run for the eviction crash test: a large result is stored, then the process is
killed; on resume, the model reads the result back through ``read_result``.

    python evict_agent.py BACKEND DB MARKS first|resume batch|model

``batch``: the large result and a hanging call run in one parallel batch, and the
process is killed mid-batch (the stored result is kept aside in the checkpoint's partial
answer). ``model``: the batch ends and the process is killed while the model is asked
next (the stored result is in the checkpoint's state). Each run of the large tool
appends ``big`` to MARKS; the resumed run prints the pages it read as JSON.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import anyio

from reactcore import (
    AssistantMessage,
    LargeResultEviction,
    ModelRequest,
    ReactAgent,
    RunnableConfig,
    SqliteSaver,
    ToolCall,
    ToolResponseMessage,
    tool,
)
from reactcore.testing import ScriptedChatModel

backend, db, marks, mode, where = sys.argv[1:6]
BIG = "".join(f"row {i:04d}: {'abcdefghij' * 3}\n" for i in range(300))
LIMIT = 4000
NEXT = re.compile(r"next offset: (\d+)\]")


@tool
def big() -> str:
    """A large document."""
    with Path(marks).open("a") as f:
        f.write("big\n")
    return BIG


@tool
def slow() -> str:
    """Slow on the first try (a sync tool: it runs in a worker thread)."""
    if mode == "first":
        time.sleep(600)  # killed before this ends
    return "slow done"


async def hang(request: ModelRequest) -> AssistantMessage:
    await anyio.sleep_forever()  # killed while the model "thinks"
    raise AssertionError("unreachable")


def pager(request: ModelRequest) -> AssistantMessage:
    """Read ``b1#0`` from 0, then from each page's "next offset", until the end."""
    last = request.messages[-1]
    assert isinstance(last, ToolResponseMessage)
    response = last.responses[-1]
    if response.name != "read_result":
        offset = 0
    else:
        found = NEXT.search(response.response_data.split("\n", 1)[0])
        if found is None:
            return AssistantMessage("read it all")
        offset = int(found[1])
    arguments = json.dumps({"handle": "b1#0", "offset": offset})
    return AssistantMessage("", [ToolCall(f"r{offset}", "read_result", arguments)])


first_turn = [ToolCall("b1", "big")] + ([ToolCall("s1", "slow")] if where == "batch" else [])
pages = len(BIG) // LIMIT + 2
if mode == "first":
    script: list = [AssistantMessage("", first_turn), hang]
else:
    script = [pager] * pages


async def main() -> None:
    async with SqliteSaver(db) as saver:
        agent = ReactAgent(
            "evict",
            ScriptedChatModel(script),
            tools=[big, slow],
            hooks=[LargeResultEviction(max_chars=LIMIT, head_chars=100)],
            parallel_tool_execution=True,
            saver=saver,
        )
        config = RunnableConfig(thread_id="t")
        result = await agent.invoke("go" if mode == "first" else None, config)
        read = [
            r.response_data
            for m in result.messages
            if isinstance(m, ToolResponseMessage)
            for r in m.responses
            if r.name == "read_result"
        ]
        print(json.dumps({"text": result.text, "pages": read}))


anyio.run(main, backend=backend)

"""Savers: where checkpoints live, and the layout they share.

Every saver (``MemorySaver``, ``SqliteSaver``, ``PostgresSaver``) keeps a thread as

- an append-only **log of its messages**: each message stored once, however many
  checkpoints hold it; large texts (tool results, image, audio and file data) stored once
  more compactly still, as blobs by content hash;
- a **record per checkpoint** of what its step changed: the step, the next node, the run,
  the state keys whose value changed, and a pointer into the log (segment and length).

So a checkpoint costs what its step added, whatever the length of the history: a thread
of N turns stores O(N) bytes, not O(N²), and a turn costs the same at the end as at the
start. A step that changes earlier messages (a summary replacing the history, a message
removed, a partial tool answer replaced by a longer one) starts a new segment of the log
from the first message that changed; nothing stored is rewritten, so every checkpoint of
``list`` can be read back (``get(thread_id, checkpoint_id=...)``). Reading the latest
checkpoint (a run resuming its thread) reads the log once. ``dump_checkpoint`` gives a
checkpoint whole, self-contained, to move between savers or export. A reader checks that
every row the checkpoints it rebuilds need is there (records from their snapshot on,
segments, messages, blobs): a thread missing one raises ``DamagedThread`` naming it, from
``get``, ``list`` and ``put`` alike.

A saver learns what a step changed by comparing the checkpoint with the thread's latest
one, which it keeps in memory (the run's messages are the same objects, so comparing
costs an identity check per message); a saver shared by processes checks, in each write,
that no other process wrote meanwhile, and reads the thread again if one did. The loop
still hands every saver the whole checkpoint: a saver of your own with the four methods of
``Saver`` keeps working.

**Forks.** ``saver.fork(thread_id, checkpoint_id, new_thread_id)`` starts a thread at
any checkpoint of another; the fork reads its parent's records and log up to there and
stores only what it adds (see ``_forks``); ``saver.history(thread_id)`` says what each
checkpoint's step did. A thread with forks is not deleted (``ThreadHasForks``).

``PostgresSaver`` needs the ``postgres`` extra; it is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._document import dump_checkpoint as dump_checkpoint
from ._document import load_checkpoint as load_checkpoint
from ._forks import AddedMessage as AddedMessage
from ._forks import CallRef as CallRef
from ._forks import HistoryStep as HistoryStep
from ._forks import change_arguments as change_arguments
from ._forks import drop_tool_result as drop_tool_result
from ._forks import replace_answer as replace_answer
from ._memory import MemorySaver as MemorySaver
from ._protocol import Checkpoint as Checkpoint
from ._protocol import LeasingSaver as LeasingSaver
from ._protocol import Saver as Saver
from ._protocol import SaverStatistics as SaverStatistics
from ._protocol import ThreadInfo as ThreadInfo
from ._sqlite import SqliteSaver as SqliteSaver

if TYPE_CHECKING:
    from ._postgres import PostgresSaver as PostgresSaver
    from ._postgres_layout import POSTGRES_SCHEMA as POSTGRES_SCHEMA

__all__ = [
    "POSTGRES_SCHEMA",
    "AddedMessage",
    "CallRef",
    "Checkpoint",
    "HistoryStep",
    "LeasingSaver",
    "MemorySaver",
    "PostgresSaver",
    "Saver",
    "SaverStatistics",
    "SqliteSaver",
    "ThreadInfo",
    "change_arguments",
    "drop_tool_result",
    "dump_checkpoint",
    "load_checkpoint",
    "replace_answer",
]


def __getattr__(name: str) -> Any:
    # PostgreSQL's driver is an optional extra: imported when its saver is first asked for.
    if name in ("PostgresSaver", "POSTGRES_SCHEMA"):
        from . import _postgres, _postgres_layout

        return getattr(_postgres if name == "PostgresSaver" else _postgres_layout, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

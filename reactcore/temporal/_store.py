"""Payload stores: where a Temporal run keeps what is too large for its history.

A workflow's history records every activity's input and result; a run that sent its
whole conversation to every model call would grow its history by the square of its
length, and the server ends a run whose history passes 50 MB (or a payload 2 MB). With a
store, the history holds keys instead: the activities write messages, conversations (a
chain of nodes, each naming its base and the messages it adds) and large tool results
into the store, under the SHA-256 of their bytes, and read them back on any worker. The
workflow itself never reads or writes the store (it must stay deterministic).

Every worker and every client of an agent must see the same store (a directory shared by
the workers' machines, a database): a key written by one worker is read by another after
a restart. Entries are immutable (a key names its content), so any number of writers may
write the same key, and a reader may cache what it read.
"""

from __future__ import annotations

import hashlib
import os
import threading
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Protocol, runtime_checkable

import anyio
import attrs

from .. import _validate as valid


@runtime_checkable
class PayloadStore(Protocol):
    """Immutable blobs by key (the SHA-256 of the blob, in hex), shared by the workers and
    clients of an agent run in Temporal (``TemporalAgent(store=...)``)."""

    async def get(self, key: str) -> bytes | None:
        """The blob stored under ``key``, ``None`` if there is none."""
        ...

    async def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` (again: nothing changes)."""
        ...


def digest(data: bytes) -> str:
    """The key of ``data``: its SHA-256, in hex."""
    return hashlib.sha256(data).hexdigest()


def _check_key(key: str) -> str:
    if len(key) != 64 or key.strip("0123456789abcdef"):
        raise ValueError(f"not a payload key (64 hex digits): {key[:80]!r}")
    return key


@attrs.define(eq=False)
class MemoryStore:
    """Blobs in this process's memory: for one process running both the worker and the
    client (tests, trying things out). Workers in other processes cannot read it, and it
    is lost with the process: a run whose worker restarts needs a shared store."""

    _blobs: dict[str, bytes] = attrs.field(factory=dict, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    async def get(self, key: str) -> bytes | None:
        """The blob under ``key``, if any."""
        await anyio.lowlevel.checkpoint()
        with self._lock:
            return self._blobs.get(_check_key(key))

    async def put(self, key: str, data: bytes) -> None:
        """Keep ``data`` under ``key``."""
        await anyio.lowlevel.checkpoint()
        with self._lock:
            self._blobs[_check_key(key)] = bytes(data)

    def __len__(self) -> int:
        return len(self._blobs)


@attrs.define(eq=False)
class FileStore:
    """Blobs as files under ``directory`` (``ab/abcdef…``), written atomically (a
    temporary file renamed into place): every worker whose machine sees the directory
    (a local disk for workers on one machine, a network file system for more) shares it,
    and a restarted worker finds what the previous one wrote.

    Nothing is ever deleted: remove files by age once the runs that wrote them have ended
    (``find DIR -type f -mtime +30 -delete``)."""

    directory: str | os.PathLike[str] = attrs.field(
        validator=valid.satisfies("a path", (str, os.PathLike))
    )

    def _path(self, key: str) -> Path:
        key = _check_key(key)
        return Path(self.directory, key[:2], key)

    async def get(self, key: str) -> bytes | None:
        """The blob under ``key``, if its file exists."""
        path = self._path(key)

        def read() -> bytes | None:
            try:
                return path.read_bytes()
            except FileNotFoundError:
                return None

        return await anyio.to_thread.run_sync(read)

    async def put(self, key: str, data: bytes) -> None:
        """Write ``data`` as the file of ``key`` (nothing if it exists)."""
        path = self._path(key)

        def write() -> None:
            if path.exists():
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f".{key}.{uuid.uuid4().hex}")
            partial.write_bytes(data)
            os.replace(partial, path)

        await anyio.to_thread.run_sync(write)


@attrs.define(eq=False)
class Cache:
    """What was read from a store lately, kept in a worker's memory up to ``budget``
    bytes (an entry never changes, so a cached one is never stale); the least recently
    used go first."""

    budget: int = 64 * 2**20
    _entries: OrderedDict[str, tuple[object, int]] = attrs.field(factory=OrderedDict, init=False)
    _used: int = attrs.field(default=0, init=False)

    def get(self, key: str) -> object | None:
        """The value cached under ``key``, if any."""
        found = self._entries.get(key)
        if found is None:
            return None
        self._entries.move_to_end(key)
        return found[0]

    def put(self, key: str, value: object, cost: int) -> None:
        """Keep ``value`` (about ``cost`` bytes) under ``key``, unless it is over a
        quarter of the budget."""
        if cost > self.budget // 4:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self._used -= old[1]
        self._entries[key] = (value, cost)
        self._used += cost
        while self._used > self.budget:
            _, (_, freed) = self._entries.popitem(last=False)
            self._used -= freed

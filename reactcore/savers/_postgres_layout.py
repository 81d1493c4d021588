"""The PostgreSQL side of the layout: its versions (``<schema>.meta``) and migrations,
the statements of leases, and ``put`` as one statement (the rows of a checkpoint, fenced
by the writer's lease, checked against the thread's last record)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, LiteralString

import attrs
import psycopg
from psycopg import sql

from ._sql import CHECK_FORKS, Dialect, Write, old_table_statements

_MIGRATIONS: tuple[tuple[LiteralString, ...], ...] = (
    (
        """CREATE TABLE {s}.checkpoints (
            id bigserial PRIMARY KEY,
            thread_id text COLLATE "C" NOT NULL,
            step integer NOT NULL,
            run_id text NOT NULL,
            created_at double precision NOT NULL,
            body text NOT NULL)""",
        "CREATE INDEX checkpoints_thread_id ON {s}.checkpoints (thread_id, id)",
        """CREATE TABLE {s}.threads (
            thread_id text COLLATE "C" PRIMARY KEY,
            status text NOT NULL,
            run_id text NOT NULL,
            step integer NOT NULL,
            updated_at double precision NOT NULL)""",
        "CREATE INDEX threads_status ON {s}.threads (status, thread_id)",
        """CREATE TABLE {s}.leases (
            thread_id text COLLATE "C" PRIMARY KEY,
            owner text NOT NULL,
            holder text NOT NULL,
            expires_at timestamptz NOT NULL,
            cancel_requested boolean NOT NULL DEFAULT false)""",
    ),
    # Version 2: the fencing token of each claim (a sequence: never reused).
    ("ALTER TABLE {s}.leases ADD COLUMN token bigserial",),
    # Version 3: message logs and deltas; the rows of whole checkpoints converted (see
    # ``_migrate_to_3``), then dropped.
    (
        "ALTER TABLE {s}.checkpoints RENAME TO checkpoints_whole",
        "ALTER INDEX {s}.checkpoints_pkey RENAME TO checkpoints_whole_pkey",
        "ALTER INDEX {s}.checkpoints_thread_id RENAME TO checkpoints_whole_thread_id",
    ),
    # Version 4: forks (``saver.fork``): the table of ``Dialect.fork_tables``.
    (),
)
"""``_MIGRATIONS[n]``: the statements bringing the layout from version ``n`` to ``n + 1``
(then, for version 3, ``_migrate_to_3``; for version 4, the tables of forks)."""

POSTGRES_SCHEMA = len(_MIGRATIONS)
"""The version of the PostgreSQL layout (in ``<schema>.meta``); 0 is a new schema."""

_OLD = "checkpoints_whole"

# (Pieces of ``_PUT``: the claim that lets a write through.)
_MINE = "SELECT FROM {s}leases WHERE thread_id = :thread AND token = :token FOR SHARE"
_FREE = (
    "SELECT WHERE NOT EXISTS (SELECT FROM {s}leases WHERE thread_id = :thread"
    " AND owner <> :run AND expires_at > clock_timestamp())"
)
_GO = " WHERE EXISTS (SELECT FROM go)"
_PUT = (
    "WITH ok AS ({claim}),"
    # The thread's row, locked: ``delete`` and other writers of the thread wait, and a
    # row changed or deleted meanwhile is checked again as it is now (read committed).
    " known AS (SELECT FROM {s}threads WHERE thread_id = :thread"
    " AND stamp = CAST(:expected AS text) FOR UPDATE),"
    " go AS (SELECT FROM ok WHERE CASE WHEN CAST(:expected AS text) IS NULL"
    " THEN NOT EXISTS (SELECT FROM {s}threads WHERE thread_id = :thread AND stamp IS NOT NULL)"
    " ELSE EXISTS (SELECT FROM known) END),"
    " blobs AS (INSERT INTO {s}blobs (thread_id, hash, body) SELECT :thread, h, b"
    " FROM unnest(CAST(:blob_hashes AS text[]), CAST(:blob_bodies AS text[])) AS x (h, b)"
    f"{_GO} ON CONFLICT DO NOTHING),"
    " segments AS (INSERT INTO {s}segments (thread_id, segment, parent, base)"
    " SELECT :thread, i, p, b FROM unnest(CAST(:segment_ids AS integer[]),"
    " CAST(:segment_parents AS integer[]), CAST(:segment_bases AS integer[])) AS x (i, p, b)"
    f"{_GO}),"
    " messages AS (INSERT INTO {s}messages (thread_id, segment, position, body)"
    " SELECT :thread, g, p, b FROM unnest(CAST(:message_segments AS integer[]),"
    " CAST(:message_positions AS integer[]), CAST(:message_bodies AS text[])) AS x (g, p, b)"
    f"{_GO}),"
    " checkpoint AS (INSERT INTO {s}checkpoints"
    " (thread_id, seq, step, run_id, created_at, snapshot, body)"
    f" SELECT :thread, :seq, :step, :run, :at, :snapshot, :body{_GO}),"
    " thread AS (INSERT INTO {s}threads (thread_id, status, run_id, step, updated_at, stamp)"
    f" SELECT :thread, :status, :run, :step, :at, :stamp{_GO}"
    " ON CONFLICT (thread_id) DO UPDATE SET status = excluded.status, run_id = excluded.run_id,"
    " step = excluded.step, updated_at = excluded.updated_at, stamp = excluded.stamp)"
    " SELECT EXISTS (SELECT FROM ok), EXISTS (SELECT FROM go), (SELECT holder FROM"
    " {s}leases WHERE thread_id = :thread AND expires_at > clock_timestamp()),"
    " EXISTS (SELECT FROM {s}checkpoints WHERE thread_id = :thread AND seq = :seq"
    " AND run_id = :run AND step = :step)"
)
"""One statement (one round trip, atomic): the rows of a checkpoint, written only if
the writer's claim still holds (its token is the thread's, the lease row locked against a
takeover meanwhile; or, outside any claim, no other live run leases the thread) and the
thread's stamp is still the one the writer knows (nobody wrote it since: the thread's row
locked, so a ``delete`` or another write of the thread either comes before, and the put
finds the thread changed, or waits for it; a new thread has no row yet: a put racing
another one's first write fails on their common keys); then whether the claim held,
whether the thread was as known, the live holder, and whether this very checkpoint is
stored already (the first attempt of a retried ``put`` got through)."""

_FORGET = {
    "lock_thread": "SELECT FROM {s}threads WHERE thread_id = :thread FOR UPDATE",
    CHECK_FORKS: "",
    "delete_thread": "WITH c AS (DELETE FROM {s}checkpoints WHERE thread_id = :thread),"
    " g AS (DELETE FROM {s}segments WHERE thread_id = :thread),"
    " m AS (DELETE FROM {s}messages WHERE thread_id = :thread),"
    " b AS (DELETE FROM {s}blobs WHERE thread_id = :thread),"
    " f AS (DELETE FROM {s}forks WHERE thread_id = :thread)"
    " DELETE FROM {s}threads WHERE thread_id = :thread",
}
"""``delete`` in PostgreSQL: the thread's row locked first (a ``put`` of the thread that
holds it commits before; one that comes after waits, then finds the thread gone and
stores its checkpoint whole, as a new thread; a ``fork`` of it, which holds it ``FOR
SHARE``, commits before, and is found), then its forks looked for (``ThreadHasForks``:
nothing deleted), then every row of the thread in one statement (one snapshot: a
thread's first ``put``, which has no row to lock, is deleted whole or left whole)."""

FORGET = tuple(_FORGET)

_STATEMENTS: dict[str, LiteralString] = {
    "meta": "CREATE TABLE IF NOT EXISTS {s}.meta (version integer NOT NULL)",
    "version": "SELECT version FROM {s}.meta",
    "insert_version": "INSERT INTO {s}.meta (version) VALUES (%s)",
    "set_version": "UPDATE {s}.meta SET version = %s",
    "acquire": "INSERT INTO {s}.leases AS l (thread_id, owner, holder, expires_at)"
    " VALUES (%(thread)s, %(owner)s, %(holder)s,"
    " clock_timestamp() + %(ttl)s * interval '1 second')"
    " ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, holder = excluded.holder,"
    " expires_at = excluded.expires_at, cancel_requested = false, token = excluded.token"
    # (The same owner again: a retry of an acquisition whose answer was lost.)
    " WHERE l.expires_at < clock_timestamp() OR l.owner = excluded.owner RETURNING token",
    "holder": "SELECT holder FROM {s}.leases WHERE thread_id = %s",
    "renew": "UPDATE {s}.leases SET expires_at = clock_timestamp() + %s * interval '1 second'"
    " WHERE thread_id = %s AND token = %s RETURNING cancel_requested",
    "release": "DELETE FROM {s}.leases WHERE thread_id = %s AND token = %s",
    "cancel": "UPDATE {s}.leases SET cancel_requested = true"
    " WHERE thread_id = %s AND expires_at > clock_timestamp()",
}


def _dialect_statements(dialect: Dialect) -> dict[str, str]:
    """The statements of the layout in ``dialect`` (its schema), and ``put``'s."""
    put = {
        "put": _PUT.replace("{claim}", _MINE),
        "put_unclaimed": _PUT.replace("{claim}", _FREE),
        **{name: text for name, text in _FORGET.items() if text},
        "lock_parent": "SELECT 1 FROM {s}threads WHERE thread_id = :thread FOR SHARE",
        **old_table_statements(_OLD),
    }
    return {**dialect.statements(), **{k: dialect.sql(v) for k, v in put.items()}}


@attrs.frozen
class _Connection:
    """A psycopg connection running the layout's statements by name."""

    conn: psycopg.Connection[Any]
    statements: Mapping[str, sql.SQL]

    def fetch(self, name: str, params: Mapping[str, Any]) -> Sequence[Sequence[Any]]:
        return self.conn.execute(self.statements[name], params).fetchall()

    def run(self, name: str, param_sets: Sequence[Mapping[str, Any]]) -> None:
        if param_sets:
            self.conn.cursor().executemany(self.statements[name], param_sets)


def _put_params(rows: Write, token: int | None) -> dict[str, Any]:
    """The parameters of ``_PUT`` for ``rows``: every row of a table as arrays."""

    def column(rows_of: tuple[dict[str, Any], ...], name: str) -> list[Any]:
        return [row[name] for row in rows_of]

    return {
        **rows.thread,
        **rows.checkpoint,
        "token": token,
        "expected": rows.expected,
        "blob_hashes": column(rows.blobs, "hash"),
        "blob_bodies": column(rows.blobs, "body"),
        "segment_ids": column(rows.segments, "segment"),
        "segment_parents": column(rows.segments, "parent"),
        "segment_bases": column(rows.segments, "base"),
        "message_segments": column(rows.messages, "segment"),
        "message_positions": column(rows.messages, "position"),
        "message_bodies": column(rows.messages, "body"),
    }

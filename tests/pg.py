"""The real PostgreSQL server for tests: its DSN (``REACTCORE_PG_DSN``), a check that it
answers (skip with the reason, or fail under CI), and a schema of its own per test, so
test sessions sharing the server never see each other's rows."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

DSN = os.environ.get("REACTCORE_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
_answer: str | None = None  # None: not asked yet; "": it answers; else why not


def require_server() -> str:
    """The DSN, once a server answers there; else skip (or fail when ``CI`` is set)."""
    global _answer
    if _answer is None:
        try:
            with psycopg.connect(DSN, connect_timeout=3) as conn:
                conn.execute("SELECT 1")
            _answer = ""
        except psycopg.Error as exc:
            _answer = f"no PostgreSQL server answers at {DSN} ({exc})"
    if _answer:
        if os.environ.get("CI"):
            pytest.fail(f"{_answer}: CI must run the PostgreSQL tests")
        pytest.skip(_answer)
    return DSN


def new_schema_name() -> str:
    return f"rc_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"


def drop_schema(name: str) -> None:
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@contextmanager
def fresh_schema() -> Iterator[str]:
    """A schema name nobody else uses, dropped (with everything in it) afterwards."""
    require_server()
    name = new_schema_name()
    try:
        yield name
    finally:
        drop_schema(name)

"""The names the model sees for an MCP server's tools: ones every provider accepts.

Providers take tool names of 1 to 64 letters, digits, ``_`` and ``-`` (OpenAI's rule,
which the others' include) and reject a whole request with any other. MCP servers name
tools as they like (spaces, ``/``, accents, any length), so each tool gets a safe name:

- a name already safe is kept as it is;
- any other has its accents dropped (``é`` → ``e``), every run of other characters made
  one ``_``, is cut to 55 characters (``tool`` if nothing is left), and gets ``_`` and
  the first 8 hex digits of the SHA-256 of the server's name: ``my tool`` →
  ``my_tool_`` + 8 hex digits.

A changed name always carries its hash, so it depends on nothing but the server's name:
the same across listings, reconnections and processes (a checkpoint's calls still
resolve), and apart from a tool the server really calls ``my_tool``. Should a hashed name
still meet another (a one-in-four-billion chance), it is hashed again with a counter.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Collection, Iterable
from typing import Any

from .. import _validate as valid
from .._tools import MAX_NAME_LENGTH, SAFE_NAME

_UNSAFE_RUN = re.compile(r"[^a-zA-Z0-9_-]+")
_HASH_DIGITS = 8


def _hashed(name: str, attempt: int) -> str:
    text = unicodedata.normalize("NFKD", name)
    text = "".join(c for c in text if not unicodedata.combining(c))
    base = _UNSAFE_RUN.sub("_", text)[: MAX_NAME_LENGTH - _HASH_DIGITS - 1] or "tool"
    salted = name if attempt == 0 else f"{name}\x00{attempt}"
    digest = hashlib.sha256(salted.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{base}_{digest[:_HASH_DIGITS]}"


def safe_names(names: Iterable[str]) -> dict[str, str]:
    """Each of ``names`` (the server's, with the toolset's prefix) → its safe name, unique."""
    given = list(dict.fromkeys(names))
    taken = {name for name in given if SAFE_NAME.fullmatch(name)}
    safe: dict[str, str] = {}
    for name in given:
        if SAFE_NAME.fullmatch(name):
            safe[name] = name
            continue
        attempt = 0
        while (candidate := _hashed(name, attempt)) in taken:
            attempt += 1
        taken.add(candidate)
        safe[name] = candidate
    return safe


def check_prefix(_: object, __: Any, prefix: str) -> None:
    """An attrs validator: ``prefix`` (put before every tool name) keeps names safe."""
    if prefix and not SAFE_NAME.fullmatch(prefix):
        raise ValueError(
            f"prefix {prefix!r} would make tool names providers reject: use letters, "
            "digits, '_' or '-' (64 at most)"
        )


def name_set(value: Collection[str] | None) -> frozenset[str] | None:
    """An attrs converter: tool names (``allow``, ``deny``) as a frozenset. A str (one
    name, taken letter by letter) or a non-collection is left for the validator to
    refuse, naming the parameter."""
    if value is None:
        return None
    return frozenset(value) if valid.ITERABLE.accepts(value) else valid.leave(value)

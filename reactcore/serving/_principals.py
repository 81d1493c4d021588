"""Principals: who a request comes from (the service's ``authorize`` callable), and the
thread ids a principal's requests may reach.

Clients name threads with ids they choose; those ids are never used as they are. A
principal's thread ``"t1"`` is stored under ``scoped_thread_id(principal, "t1")``, a hash
of both, so another principal naming ``"t1"`` reaches another thread (or none): ids cannot
be guessed across principals, and every replica of a service computes the same id.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio.to_thread

from .._exceptions import RequestRefused

if TYPE_CHECKING:
    from starlette.requests import Request

Authorize: TypeAlias = Callable[["Request"], Any]
"""``authorize(request) -> principal``, sync or async: a non-empty ``str`` naming who
sends the request. Returning ``None`` or raising ``RequestRefused(401, …)`` turns the
client away; a sync callable runs in a worker thread (it may look a token up)."""

MAX_CLIENT_ID = 256


def check_authorize(authorize: object) -> Authorize:
    """``authorize`` if it is callable, else a ``TypeError`` naming the parameter."""
    if not callable(authorize):
        raise TypeError(
            "authorize must be a callable taking the request and returning the principal "
            f"(a str), got {type(authorize).__name__}"
        )
    return authorize


async def principal_of(authorize: Authorize, request: Request) -> str:
    """The principal ``authorize`` names for ``request``; 401 when it names none."""
    if inspect.iscoroutinefunction(authorize) or inspect.iscoroutinefunction(
        getattr(authorize, "__call__", None)  # noqa: B004 - an instance with async __call__
    ):
        principal = await authorize(request)
    else:
        principal = await anyio.to_thread.run_sync(authorize, request)
        if inspect.isawaitable(principal):
            principal = await principal
    if principal is None:
        raise RequestRefused(401, "unauthorized", "unauthorized")
    if not isinstance(principal, str) or not principal:
        raise TypeError(
            f"authorize must return a non-empty str (the principal) or None, got {principal!r}"
        )
    return principal


def client_id(value: object, name: str) -> str:
    """A thread, run or call id a client sent: a non-empty str of at most 256 characters."""
    if not isinstance(value, str) or not value or len(value) > MAX_CLIENT_ID:
        raise RequestRefused(
            400,
            "bad_request",
            f"{name} must be a non-empty string of at most {MAX_CLIENT_ID} characters",
        )
    return value


def scoped_thread_id(principal: str, thread_id: str) -> str:
    """The thread a principal's ``thread_id`` names in the saver (see the module docstring)."""
    digest = hashlib.sha256(f"{len(principal)}:{principal}\0{thread_id}".encode()).hexdigest()
    return f"p-{digest[:40]}"

"""The backend seam: the only place in reactcore, beside the Temporal workflow module,
that uses ``asyncio`` or ``trio`` directly.

The scheduler needs four things of the event loop it runs on, and nothing else:

- its clock (``Backend.clock``);
- a call scope (``Backend.call_scope(deadline)``): what one call runs in, with a deadline
  set when the call starts, cancelled alone by ``CallScope.cancel`` while its siblings go
  on; an outside cancellation passes through it;
- a batch (``Backend.run_batch``): worker tasks, started as they are needed, that take
  jobs in order, all cancelled when one job raises or when the caller is cancelled, none
  alive once it returns;
- the exception a cancellation raises inside a job.

Three implementations: ``PORTABLE`` (anyio, on either loop: what every earlier release
ran), ``TRIO`` (trio's own nursery and cancel scopes, the semantics anyio gives on trio
without its layer) and ``AsyncioBackend`` (``asyncio`` tasks and timer handles, where
anyio's emulation of level-triggered cancel scopes costs most of a call). ``current()``
picks the native one for the running loop. See ``_asyncio`` for where asyncio's own
semantics differ inside a call.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import sniffio

from ._base import Backend, BatchError, CallScope, Runner, first_error
from ._portable import PORTABLE

__all__ = [
    "PORTABLE",
    "Backend",
    "BatchError",
    "CallScope",
    "Runner",
    "current",
    "first_error",
    "using",
]

# Which implementation ``current()`` gives in this context: ``None`` for the native one.
# Set through ``using``, by the tests and benchmarks that run one scheduler against each.
_forced: contextvars.ContextVar[Backend | None] = contextvars.ContextVar(
    "reactcore_backend", default=None
)


@contextlib.contextmanager
def using(backend: Backend | None) -> Iterator[None]:
    """``current()`` gives ``backend`` (``None``: the native one) inside the block."""
    token = _forced.set(backend)
    try:
        yield
    finally:
        _forced.reset(token)


def current() -> Backend:
    """The backend for the loop this task runs on (the native one, unless ``using``)."""
    chosen = _forced.get()
    if chosen is not None:
        return chosen
    library = sniffio.current_async_library()
    if library == "asyncio":
        from ._asyncio import SUPPORTED, running

        return running() if SUPPORTED else PORTABLE
    if library == "trio":
        from ._trio import TRIO

        return TRIO
    return PORTABLE

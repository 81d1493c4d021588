"""Serving agents to other programs: what every protocol app (``reactcore.ag_ui``,
``reactcore.ai_sdk``, ``reactcore.a2a``) shares.

- ``authorize(request) -> principal`` (sync or async), required by every app: threads are
  scoped to the principal it returns (``scoped_thread_id``), runs are found only by the
  principal that started them; anyone else gets 404, so ids are never confirmed.
- ``Limits``: body size, message count, per-principal request rate, runs streaming at
  once, how long a paused stream waits for a decision.
- Steering endpoints next to each stream (cancel one tool call, cancel the run, answer an
  approval), the same run-handle methods the Python API has; see ``reactcore.serving._app``.
- ``RequestRefused``: the one error a client sees (status, code, message; never a stack).
"""

from __future__ import annotations

from .._exceptions import RequestRefused as RequestRefused
from ._events_app import events_app as events_app
from ._limits import Limits as Limits
from ._principals import Authorize as Authorize
from ._principals import scoped_thread_id as scoped_thread_id

__all__ = ["Authorize", "Limits", "RequestRefused", "events_app", "scoped_thread_id"]

"""Per-run configuration handed to every node, tool and interceptor."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from . import _validate as valid


@attrs.frozen
class RunnableConfig:
    """Who the run is for and what travels with it.

    ``thread_id`` names the conversation (checkpoints are kept per thread);
    ``metadata`` holds caller-visible settings (``_stream_``); ``context`` is the run's
    working space shared by nodes and interceptors (``dynamic_tools``,
    ``_MODEL_ITERATION_`` …) — the one mutable part, on purpose.
    ``wait_for_thread``: when another live run owns ``thread_id``, how many seconds to
    wait for it to end before raising ``ThreadBusy`` (0, the default: raise at once;
    ``math.inf``: wait as long as it takes).
    """

    thread_id: str | None = attrs.field(
        default=None, validator=valid.text(non_empty=True, optional=True)
    )
    metadata: Mapping[str, Any] = attrs.field(factory=dict, hash=False, validator=valid.mapping())
    context: dict[str, Any] = attrs.field(
        factory=dict,
        hash=False,
        validator=valid.mapping(mutable=True),
    )
    wait_for_thread: float = attrs.field(
        default=0.0, kw_only=True, validator=valid.number(minimum=0)
    )

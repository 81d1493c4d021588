"""Where the library's log events go: structlog when the application configured it, else
the stdlib logger ``reactcore``. Never stdout.

An application that configured nothing sees nothing on stdout: events go to
``logging.getLogger("reactcore")``, so WARNING and above reach stderr through logging's
last-resort handler, and an application filters them by logger name like any library's.
An application that called ``structlog.configure`` gets structured events with the same
keys (``event``, ``agent``, ``run_id``, ``call_id`` …) through its own processors.

The choice is made at each call (``structlog.is_configured()`` is a flag read), so
configuring structlog after importing reactcore works.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs
import structlog

from ._tracing import current

LOGGER_NAME = "reactcore"
_stdlib = logging.getLogger(LOGGER_NAME)


def _render(event: str, fields: dict[str, Any]) -> str:
    """``event key=value …``: the stdlib record's message (values with ``repr``)."""
    if not fields:
        return event
    return event + " " + " ".join(f"{key}={value!r}" for key, value in fields.items())


@attrs.frozen
class Logger:
    """A logger bound to some context (``bind`` gives a new one), structlog-style."""

    context: dict[str, Any] = attrs.field(factory=dict)

    def bind(self, **fields: Any) -> Logger:
        """The same logger with more context."""
        return Logger({**self.context, **fields})

    def debug(self, event: str, **fields: Any) -> None:
        self._log(logging.DEBUG, "debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._log(logging.INFO, "info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._log(logging.WARNING, "warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._log(logging.ERROR, "error", event, fields)

    def _log(self, level: int, method: str, event: str, fields: dict[str, Any]) -> None:
        merged = {**self.context, **fields}
        if level >= logging.WARNING:
            tracer = current.get()
            if tracer is not None:  # a traced run: the warning is an event of the current span
                tracer.event(event, merged)
        if structlog.is_configured():
            getattr(structlog.get_logger(LOGGER_NAME), method)(event, **merged)
        elif _stdlib.isEnabledFor(level):
            extra = {"reactcore_event": event, "reactcore_fields": merged}
            _stdlib.log(level, "%s", _render(event, merged), extra=extra)


def get_logger(**context: Any) -> Logger:
    """The library's logger, bound to ``context`` (e.g. ``agent=name``)."""
    return Logger(context)

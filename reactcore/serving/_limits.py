"""``Limits``: what one client may ask of a served agent, and the per-principal request
rate that enforces part of it."""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

import attrs

from .. import _validate as valid
from .._exceptions import RequestRefused


def _positive(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"Limits.{attribute.name} must be a positive number, got {value!r}")


@attrs.frozen
class Limits:
    """Bounds on what clients send to a served agent (every protocol app takes one).

    - ``max_body_bytes``: a request body larger than this is refused (413) while it is
      read, before it is parsed.
    - ``max_messages``: a request carrying more messages is refused (413).
    - ``requests_per_second`` and ``burst``: each principal's requests (runs started and
      steering calls) refill at this rate up to ``burst``; beyond it, 429 with
      ``Retry-After``. ``max_principals`` principals are remembered (the least recent
      forgotten first), so the table stays bounded whatever clients claim to be.
    - ``max_live_runs``: runs streaming at once in one app; beyond it, 503.
    - ``pause_timeout``: how long a stream stays open on a run paused for approval, waiting
      for a decision through the steering endpoint; after it the stream ends with the pause
      (with a saver, a later request can still resume the thread).
    """

    max_body_bytes: int = attrs.field(default=1 << 20, validator=_positive)
    max_messages: int = attrs.field(default=1000, validator=_positive)
    requests_per_second: float = attrs.field(default=20.0, validator=_positive)
    burst: int = attrs.field(default=40, validator=_positive)
    max_principals: int = attrs.field(default=100_000, validator=_positive)
    max_live_runs: int = attrs.field(default=10_000, validator=_positive)
    pause_timeout: float = attrs.field(default=300.0, validator=_positive)


def check_limits(limits: object) -> Limits:
    """``limits`` if it is a ``Limits``, else a ``TypeError`` naming the parameter."""
    if not isinstance(limits, Limits):
        raise TypeError(f"limits must be a reactcore.serving.Limits, got {valid.got(limits)}")
    return limits


@attrs.define(eq=False)
class RequestRate:
    """A token bucket per principal (``Limits.requests_per_second``, ``burst``)."""

    limits: Limits
    _buckets: OrderedDict[str, tuple[float, float]] = attrs.field(factory=OrderedDict, init=False)

    def take(self, principal: str) -> None:
        """Count one request of ``principal``, or refuse it (429) when its bucket is empty."""
        now = time.monotonic()
        tokens, then = self._buckets.pop(principal, (float(self.limits.burst), now))
        rate = self.limits.requests_per_second
        tokens = min(float(self.limits.burst), tokens + (now - then) * rate)
        if tokens < 1.0:
            self._buckets[principal] = (tokens, now)
            wait = (1.0 - tokens) / rate
            raise RequestRefused(429, "rate_limited", f"too many requests; retry in {wait:.1f} s")
        self._buckets[principal] = (tokens - 1.0, now)
        while len(self._buckets) > self.limits.max_principals:
            self._buckets.popitem(last=False)

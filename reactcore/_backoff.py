"""Exponential backoff with jitter, shared by the retry interceptors."""

from __future__ import annotations

import random

import attrs

from . import _validate as valid

DELAY = valid.number(minimum=0)
FACTOR = valid.number(minimum=1)
JITTER = valid.number(minimum=0, below=1)


@attrs.frozen
class Backoff:
    """Delays ``initial_delay · backoff_factor^(n-1)``, capped at ``max_delay``, each scaled
    by a random factor in ``[1 - jitter, 1 + jitter]``."""

    initial_delay: float = attrs.field(default=1.0, validator=DELAY)
    backoff_factor: float = attrs.field(default=2.0, validator=FACTOR)
    max_delay: float = attrs.field(default=60.0, validator=DELAY)
    jitter: float = attrs.field(default=0.25, validator=JITTER)

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry)."""
        try:
            grown = self.initial_delay * self.backoff_factor ** (retry - 1)
        except OverflowError:  # far past the cap: a float power this big does not fit
            grown = self.max_delay if self.initial_delay else 0.0
        base = min(self.max_delay, grown)
        return base * random.uniform(1 - self.jitter, 1 + self.jitter)

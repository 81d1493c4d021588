"""Exponential backoff with jitter, shared by the retry interceptors."""

from __future__ import annotations

import random

import attrs


@attrs.frozen
class Backoff:
    """Delays ``initial_delay · backoff_factor^(n-1)``, capped at ``max_delay``, each scaled
    by a random factor in ``[1 - jitter, 1 + jitter]``."""

    initial_delay: float = 1.0
    backoff_factor: float = 2.0
    max_delay: float = 60.0
    jitter: float = 0.25

    def __attrs_post_init__(self) -> None:
        if self.initial_delay < 0 or self.max_delay < 0:
            raise ValueError("delays must not be negative")
        if self.backoff_factor < 1:
            raise ValueError("backoff_factor must be at least 1")
        if not 0 <= self.jitter < 1:
            raise ValueError("jitter must be in [0, 1)")

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry)."""
        try:
            grown = self.initial_delay * self.backoff_factor ** (retry - 1)
        except OverflowError:  # far past the cap: a float power this big does not fit
            grown = self.max_delay if self.initial_delay else 0.0
        base = min(self.max_delay, grown)
        return base * random.uniform(1 - self.jitter, 1 + self.jitter)

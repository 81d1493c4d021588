"""The agent's state: an immutable mapping, and how updates merge into it, key by key.

The strategies follow the seed:

- ``REPLACE`` (any key without a strategy): the new value.
- ``APPEND`` (``messages`` unless told otherwise): ``None`` keeps the old value; a list is
  concatenated, a single value appended; a ``Remove(x)`` in the update removes the first
  element equal to ``x``; an old value that is not a list is replaced by the new list.
- ``MERGE``: a shallow dict merge, new keys win; anything but dicts is a ``TypeError``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs

MESSAGES = "messages"


class KeyStrategy(enum.Enum):
    """How an update to one state key combines with the value already there."""

    REPLACE = "replace"
    APPEND = "append"
    MERGE = "merge"


@attrs.frozen
class Remove:
    """In an ``APPEND`` update: remove the first element equal to ``target``."""

    target: Any


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


def _append(old: Any, new: Any) -> Any:
    if new is None:
        return old
    result = list(old) if isinstance(old, list | tuple) else []
    for item in _as_list(new):
        if isinstance(item, Remove):
            for i, present in enumerate(result):
                if present == item.target:
                    del result[i]
                    break
        else:
            result.append(item)
    return result


def _merge_dicts(key: str, old: Any, new: Any) -> Any:
    if new is None:
        return old
    if old is None:
        old = {}
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        raise TypeError(
            f"state key {key!r} uses MERGE but got {type(old).__name__} and {type(new).__name__}"
        )
    return {**old, **new}


def apply(strategy: KeyStrategy, key: str, old: Any, new: Any) -> Any:
    """The value of ``key`` after an update ``new`` lands on ``old``."""
    if strategy is KeyStrategy.APPEND:
        return _append(old, new)
    if strategy is KeyStrategy.MERGE:
        return _merge_dicts(key, old, new)
    return new


def combine(strategy: KeyStrategy, key: str, first: Any, second: Any) -> Any:
    """One update that has the effect of ``first`` then ``second``.

    Used to fold the updates of several tool calls, in call order, into one.
    """
    if strategy is KeyStrategy.APPEND:
        if first is None:
            return second
        if second is None:
            return first
        return _as_list(first) + _as_list(second)
    return apply(strategy, key, first, second)


def rewrite(old: Sequence[Any], new: Sequence[Any]) -> list[Any]:
    """An ``APPEND`` update that turns the list ``old`` into ``new`` (a hook replacing
    messages, say): a ``Remove`` of each element from the first one that changes, then
    the new elements from there.

    A ``Remove`` takes out the first equal element, so the cut starts early enough that
    no element it removes has an equal one before the cut (which would go instead).
    """
    start = next(
        (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a is not b and a != b),
        min(len(old), len(new)),
    )
    first = _first_indexes(old)
    while start < len(old):
        earliest = min(first(x) for x in old[start:])
        if earliest >= start:
            break
        start = earliest
    return [*(Remove(x) for x in old[start:]), *new[start:]]


def _first_indexes(items: Sequence[Any]) -> Callable[[Any], int]:
    """The index of the first element of ``items`` equal to a given one, by hash when
    the elements have one."""
    index: dict[Any, int] = {}
    try:
        for i, item in enumerate(items):
            index.setdefault(item, i)
    except TypeError:  # an unhashable element: the list's own search
        return list(items).index
    return index.__getitem__


def frozen_mapping(data: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(data))


def _default_strategies(given: Mapping[str, KeyStrategy]) -> Mapping[str, KeyStrategy]:
    if isinstance(given, MappingProxyType) and MESSAGES in given:
        return given  # already ours (every merge passes the same one on)
    if MESSAGES in given:
        return MappingProxyType(dict(given))
    return MappingProxyType({MESSAGES: KeyStrategy.APPEND, **given})


@attrs.frozen(eq=False)
class OverAllState(Mapping[str, Any]):
    """A read-only mapping of state keys, and the strategy each key merges by.

    ``merge(update)`` returns a new state; the old one never changes.
    """

    data: Mapping[str, Any] = attrs.field(converter=frozen_mapping)
    key_strategies: Mapping[str, KeyStrategy] = attrs.field(
        factory=dict, converter=_default_strategies
    )

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OverAllState):
            return dict(self.data) == dict(other.data)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def strategy(self, key: str) -> KeyStrategy:
        """The strategy of ``key`` (``REPLACE`` when none was given)."""
        return self.key_strategies.get(key, KeyStrategy.REPLACE)

    def merge(self, update: Mapping[str, Any]) -> OverAllState:
        """A new state with ``update`` merged in, key by key."""
        data = dict(self.data)
        for key, value in update.items():
            data[key] = apply(self.strategy(key), key, data.get(key), value)
        return OverAllState(data, self.key_strategies)

    def combine_updates(self, updates: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        """Fold several partial updates, in order, into one by this state's strategies."""
        out: dict[str, Any] = {}
        for update in updates:
            for key, value in update.items():
                out[key] = (
                    combine(self.strategy(key), key, out[key], value) if key in out else value
                )
        return out

"""What of the agent state a client sees (``share_state``), and its changes as JSON Patch.

``share_state`` is ``None`` (nothing: no state events), a sequence of state keys (those
keys, their values as JSON), or a callable ``state -> dict`` (whatever it returns, JSON
values). The app sends ``STATE_SNAPSHOT`` of the shared view once the run has a state,
then ``STATE_DELTA`` whenever a step changed it: with keys, when a ``StateUpdated``
names one of them; with a callable, after every ``StateUpdated``. A delta replaces,
adds or removes whole top-level entries (``/key``), never a part of one.

The client's ``state`` in ``RunAgentInput``: with keys shared, the client's values of
those keys go into the run's input (merged by each key's strategy), so a frontend can
set what it sees; other keys, and anything with a callable, are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import attrs

from .._serde import converter
from .._validate import got

ShareState: TypeAlias = Sequence[str] | Callable[[Mapping[str, Any]], Mapping[str, Any]] | None
"""What ``ag_ui_app(share_state=…)`` takes; see the module docstring."""


def _json(value: Any) -> Any:
    """``value`` as JSON values (reactcore values through the library's converter)."""
    return json.loads(json.dumps(converter.unstructure(value), default=str))


def _pointer(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


@attrs.frozen
class SharedState:
    """The checked ``share_state``: ``view(state)`` and what changes when."""

    keys: tuple[str, ...] | None = None
    view_of: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None

    @classmethod
    def of(cls, share_state: object) -> SharedState:
        """A ``TypeError`` naming ``share_state`` unless it is one of the three forms."""
        if share_state is None:
            return cls()
        if callable(share_state):
            return cls(view_of=share_state)
        if isinstance(share_state, Sequence) and not isinstance(share_state, str | bytes):
            keys = tuple(share_state)
            if all(isinstance(k, str) and k for k in keys):
                return cls(keys=keys)
        raise TypeError(
            "share_state must be None, a sequence of state keys (str) or a callable "
            f"state -> dict, got {got(share_state)}"
        )

    @property
    def shared(self) -> bool:
        return self.keys is not None or self.view_of is not None

    def touches(self, changed: Sequence[str]) -> bool:
        """Whether a step that changed ``changed`` may change the view."""
        if self.keys is not None:
            return any(k in self.keys for k in changed)
        return self.view_of is not None

    def view(self, state: Mapping[str, Any] | None) -> dict[str, Any]:
        """The client's view of ``state`` (empty before the run has a state)."""
        if state is None:
            return {}
        if self.keys is not None:
            return {k: _json(state[k]) for k in self.keys if k in state}
        if self.view_of is not None:
            view = self.view_of(state)
            if not isinstance(view, Mapping):
                raise TypeError(f"share_state must return a dict, got {got(view)}")
            return {str(k): _json(v) for k, v in view.items()}
        return {}

    def from_client(self, state: Any) -> dict[str, Any]:
        """The client's values of the shared keys (see the module docstring)."""
        if self.keys is None or not isinstance(state, Mapping):
            return {}
        return {k: state[k] for k in self.keys if k in state}


def patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The JSON Patch (RFC 6902) turning ``before`` into ``after``, entry by entry."""
    ops: list[dict[str, Any]] = []
    for key in before:
        if key not in after:
            ops.append({"op": "remove", "path": _pointer(key)})
    for key, value in after.items():
        if key not in before:
            ops.append({"op": "add", "path": _pointer(key), "value": value})
        elif before[key] != value:
            ops.append({"op": "replace", "path": _pointer(key), "value": value})
    return ops

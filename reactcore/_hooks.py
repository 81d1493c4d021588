"""Hooks: code that runs at fixed points of the agent loop and may update the state.

A hook is any object with a ``name`` and any of the async methods ``before_agent``,
``after_agent``, ``before_model``, ``after_model``, each ``(state, config) -> dict | None``
returning a partial state update. An update may hold ``"jump_to"`` — ``"model"``,
``"tools"`` or ``"end"`` — if the hook lists that target in ``can_jump_to``; the jump is
not stored in the state. A hook may also bring ``tools``, ``interceptors`` and
``key_strategies``; hooks run ordered by ``order`` (default 0), then by position.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol

from ._config import RunnableConfig
from ._state import OverAllState

Position = Literal["before_agent", "after_agent", "before_model", "after_model"]
JumpTarget = Literal["model", "tools", "end"]
JUMP_TARGETS: frozenset[str] = frozenset({"model", "tools", "end"})
POSITIONS: tuple[Position, ...] = ("before_agent", "after_agent", "before_model", "after_model")


class Hook(Protocol):
    """Anything with a ``name``; see the module docstring for the optional parts."""

    @property
    def name(self) -> str: ...


def order_hooks(hooks: Iterable[Hook]) -> list[Hook]:
    """Hooks sorted by ``order`` then position; a name used twice → ``ValueError``."""
    listed = list(hooks)
    seen: set[str] = set()
    for hook in listed:
        name = getattr(hook, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"a hook needs a non-empty string name: {hook!r}")
        if name in seen:
            raise ValueError(f"two hooks are named {name!r}; hook names must be unique")
        seen.add(name)
    indexed = sorted(enumerate(listed), key=lambda p: (getattr(p[1], "order", 0), p[0]))
    return [hook for _, hook in indexed]


def _jump(hook: Hook, update: dict[str, Any]) -> JumpTarget | None:
    target = update.pop("jump_to", None)
    if target is None:
        return None
    allowed: Sequence[str] = getattr(hook, "can_jump_to", ())
    if target not in JUMP_TARGETS or target not in allowed:
        raise ValueError(
            f"hook {hook.name!r} jumped to {target!r}, which it does not declare in can_jump_to "
            f"({', '.join(allowed) or 'nothing'})"
        )
    jump: JumpTarget = target
    return jump


async def run_hooks(
    position: Position, hooks: Sequence[Hook], state: OverAllState, config: RunnableConfig
) -> tuple[OverAllState, JumpTarget | None, list[Mapping[str, Any]]]:
    """Run the hooks at ``position`` in order; stop at the first that jumps.

    Returns the new state, the jump (or ``None``) and the updates applied.
    """
    applied: list[Mapping[str, Any]] = []
    for hook in hooks:
        method = getattr(hook, position, None)
        if method is None:
            continue
        result = await method(state, config)
        if not result:
            continue
        update = dict(result)
        jump = _jump(hook, update)
        if update:
            state = state.merge(update)
            applied.append(update)
        if jump is not None:
            return state, jump, applied
    return state, None, applied

"""Hooks: code that runs at fixed points of the agent loop and may update the state.

A hook is any object with a ``name`` and any of the async methods ``before_agent``,
``after_agent``, ``before_model``, ``after_model`` and ``before_tools``, each
``(state, config) -> dict | None`` returning a partial state update. Two keys of an
update steer the loop instead of landing in the state:

- ``"jump_to"``: ``"model"``, ``"tools"`` or ``"end"``, if the hook lists that target in
  ``can_jump_to``;
- ``"interrupt"``: tool calls to pause the run for, waiting for a human (only from
  ``before_tools``; see ``HumanInTheLoopHook``).

A hook may also bring ``tools``, ``interceptors`` and ``key_strategies``, and say it
``requires_saver``. Hooks run ordered by ``order`` (default 0), then by position.

A hook with a ``check_tools(names)`` method is given the names of the agent's tools at
construction (its own, the hooks' and the interceptors'), so a hook naming tools can
refuse unknown ones early (``ValueError``); the agent skips this when it has a
``tool_resolver``, whose tools are known only at run time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, Protocol

import attrs

from ._config import RunnableConfig
from ._messages import ToolCall
from ._state import OverAllState

Position = Literal["before_agent", "after_agent", "before_model", "after_model", "before_tools"]
JumpTarget = Literal["model", "tools", "end"]
JUMP_TARGETS: frozenset[str] = frozenset({"model", "tools", "end"})


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


@attrs.frozen
class HookOutcome:
    """What the hooks of one position did: the new state, the keys they changed, and
    where the loop must go (``jump``) or that it must pause (``interrupt``)."""

    state: OverAllState
    keys: tuple[str, ...] = ()
    jump: JumpTarget | None = None
    interrupt: tuple[ToolCall, ...] | None = None


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
) -> HookOutcome:
    """Run the hooks at ``position`` in order; stop at the first that jumps or interrupts."""
    keys: list[str] = []
    for hook in hooks:
        method = getattr(hook, position, None)
        if method is None:
            continue
        result = await method(state, config)
        if not result:
            continue
        update = dict(result)
        jump = _jump(hook, update)
        interrupt = update.pop("interrupt", None)
        if update:
            state = state.merge(update)
            keys.extend(k for k in update if k not in keys)
        if jump is not None or interrupt:
            calls = tuple(interrupt) if interrupt else None
            return HookOutcome(state, tuple(keys), jump, calls)
    return HookOutcome(state, tuple(keys))

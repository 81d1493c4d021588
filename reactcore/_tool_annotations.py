"""What a tool says about itself beyond its schema: MCP's tool annotations, for any tool.

An MCP server marks each tool with hints (``readOnlyHint``, ``destructiveHint``,
``idempotentHint``, ``openWorldHint``, ``title``); ``reactcore.mcp`` keeps them on the
``Tool`` as a ``ToolAnnotations`` value, and a local ``@tool(annotations=...)`` may carry
one too. Built-ins read them generically: ``HumanInTheLoopHook(approve_destructive=True)``
asks approval for a tool marked destructive, ``ToolRetryInterceptor`` does not retry a tool
known not to be idempotent. A tool without annotations (``Tool.annotations is None``)
claims nothing, and is treated as before annotations existed.

Each hint is ``None`` when not said: hints are what the tool's author claims, not
guarantees (MCP: "clients should never make tool use decisions based on annotations from
untrusted servers" — use them to ask for more care, not less).
"""

from __future__ import annotations

import attrs

from . import _validate as valid

_HINT = valid.boolean(optional=True)


@attrs.frozen
class ToolAnnotations:
    """Hints about a tool's behaviour (MCP's ``ToolAnnotations``, in snake case).

    ``read_only``: it changes nothing. ``destructive``: it may delete or overwrite (not
    only add); meaningful when not read-only. ``idempotent``: calling it again with the
    same arguments has no further effect. ``open_world``: it reaches outside entities (the
    web) rather than a closed domain. ``title``: a name for people.
    """

    title: str | None = attrs.field(default=None, validator=valid.text(optional=True))
    read_only: bool | None = attrs.field(default=None, validator=_HINT)
    destructive: bool | None = attrs.field(default=None, validator=_HINT)
    idempotent: bool | None = attrs.field(default=None, validator=_HINT)
    open_world: bool | None = attrs.field(default=None, validator=_HINT)

    @property
    def marks_destructive(self) -> bool:
        """Whether the tool says it may destroy: ``destructive`` is true and it does not
        also say it is read-only (the hint means nothing then)."""
        return self.destructive is True and self.read_only is not True

    @property
    def repeatable(self) -> bool:
        """Whether calling it again is known to be safe: read-only or idempotent."""
        return self.read_only is True or self.idempotent is True

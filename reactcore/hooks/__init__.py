"""Built-in hooks: limits on model calls and tool calls."""

from __future__ import annotations

from ._model_call_limit import ModelCallLimitHook as ModelCallLimitHook
from ._tool_call_limit import ToolCallLimitHook as ToolCallLimitHook

__all__ = ["ModelCallLimitHook", "ToolCallLimitHook"]

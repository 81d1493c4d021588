"""Built-in hooks: limits on model calls and tool calls, human approval, personal-data
redaction and the eviction of large tool results."""

from __future__ import annotations

from ._eviction import LargeResultEviction as LargeResultEviction
from ._human_in_the_loop import ApprovalPolicy as ApprovalPolicy
from ._human_in_the_loop import HumanInTheLoopHook as HumanInTheLoopHook
from ._model_call_limit import ModelCallLimitHook as ModelCallLimitHook
from ._pii import PIIRedactionHook as PIIRedactionHook
from ._tool_call_limit import ToolCallLimitHook as ToolCallLimitHook

__all__ = [
    "ApprovalPolicy",
    "HumanInTheLoopHook",
    "LargeResultEviction",
    "ModelCallLimitHook",
    "PIIRedactionHook",
    "ToolCallLimitHook",
]

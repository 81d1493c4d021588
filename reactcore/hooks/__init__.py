"""Built-in hooks: limits on model calls and tool calls, human approval, summarisation."""

from __future__ import annotations

from ._human_in_the_loop import ApprovalPolicy as ApprovalPolicy
from ._human_in_the_loop import HumanInTheLoopHook as HumanInTheLoopHook
from ._model_call_limit import ModelCallLimitHook as ModelCallLimitHook
from ._summarization import SummarizationHook as SummarizationHook
from ._tool_call_limit import ToolCallLimitHook as ToolCallLimitHook

__all__ = [
    "ApprovalPolicy",
    "HumanInTheLoopHook",
    "ModelCallLimitHook",
    "SummarizationHook",
    "ToolCallLimitHook",
]

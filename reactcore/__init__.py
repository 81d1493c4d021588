"""reactcore: ReAct agents with real structured concurrency, on asyncio and trio."""

from __future__ import annotations

from ._config import RunnableConfig as RunnableConfig
from ._exception_processor import DefaultToolExceptionProcessor as DefaultToolExceptionProcessor
from ._exception_processor import ToolExceptionProcessor as ToolExceptionProcessor
from ._exceptions import ReactcoreError as ReactcoreError
from ._exceptions import ToolArgumentError as ToolArgumentError
from ._exceptions import ToolExecutionError as ToolExecutionError
from ._interceptors import ToolCallRequest as ToolCallRequest
from ._interceptors import ToolCallResponse as ToolCallResponse
from ._interceptors import ToolHandler as ToolHandler
from ._interceptors import ToolInterceptor as ToolInterceptor
from ._messages import AssistantMessage as AssistantMessage
from ._messages import Message as Message
from ._messages import SystemMessage as SystemMessage
from ._messages import ToolCall as ToolCall
from ._messages import ToolResponse as ToolResponse
from ._messages import ToolResponseMessage as ToolResponseMessage
from ._messages import UserMessage as UserMessage
from ._serde import messages_from_wire as messages_from_wire
from ._serde import messages_to_wire as messages_to_wire
from ._state import KeyStrategy as KeyStrategy
from ._state import OverAllState as OverAllState
from ._state import Remove as Remove
from ._tool_node import AgentToolNode as AgentToolNode
from ._tools import Tool as Tool
from ._tools import ToolContext as ToolContext
from ._tools import check_cancelled as check_cancelled
from ._tools import tool as tool

__all__ = [
    "AgentToolNode",
    "AssistantMessage",
    "DefaultToolExceptionProcessor",
    "KeyStrategy",
    "Message",
    "OverAllState",
    "ReactcoreError",
    "Remove",
    "RunnableConfig",
    "SystemMessage",
    "Tool",
    "ToolArgumentError",
    "ToolCall",
    "ToolCallRequest",
    "ToolCallResponse",
    "ToolContext",
    "ToolExceptionProcessor",
    "ToolExecutionError",
    "ToolHandler",
    "ToolInterceptor",
    "ToolResponse",
    "ToolResponseMessage",
    "UserMessage",
    "check_cancelled",
    "messages_from_wire",
    "messages_to_wire",
    "tool",
]

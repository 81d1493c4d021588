"""reactcore: ReAct agents with real structured concurrency, on asyncio and trio."""

from __future__ import annotations

from ._agent import ReactAgent as ReactAgent
from ._approval import Approve as Approve
from ._approval import Edit as Edit
from ._approval import Interrupt as Interrupt
from ._approval import Reject as Reject
from ._approval import Resume as Resume
from ._checkpoint import Checkpoint as Checkpoint
from ._checkpoint import LeasingSaver as LeasingSaver
from ._checkpoint import MemorySaver as MemorySaver
from ._checkpoint import Saver as Saver
from ._checkpoint import SqliteSaver as SqliteSaver
from ._checkpoint import ThreadInfo as ThreadInfo
from ._checkpoint import check_thread_id as check_thread_id
from ._checkpoint import dump_checkpoint as dump_checkpoint
from ._checkpoint import load_checkpoint as load_checkpoint
from ._config import RunnableConfig as RunnableConfig
from ._events import Event as Event
from ._events import ModelCallFinished as ModelCallFinished
from ._events import ModelCallRetried as ModelCallRetried
from ._events import ModelCallStarted as ModelCallStarted
from ._events import ModelDelta as ModelDelta
from ._events import RunFailed as RunFailed
from ._events import RunFinished as RunFinished
from ._events import RunInterrupted as RunInterrupted
from ._events import StateUpdated as StateUpdated
from ._events import SubagentCall as SubagentCall
from ._events import SubagentEvent as SubagentEvent
from ._events import ToolCallCancelled as ToolCallCancelled
from ._events import ToolCallFinished as ToolCallFinished
from ._events import ToolCallStarted as ToolCallStarted
from ._events import ToolCallTimedOut as ToolCallTimedOut
from ._exception_processor import DefaultToolExceptionProcessor as DefaultToolExceptionProcessor
from ._exception_processor import ToolExceptionProcessor as ToolExceptionProcessor
from ._exceptions import CallLimitExceeded as CallLimitExceeded
from ._exceptions import DamagedThread as DamagedThread
from ._exceptions import LeaseLost as LeaseLost
from ._exceptions import MaxIterationsExceeded as MaxIterationsExceeded
from ._exceptions import MCPError as MCPError
from ._exceptions import ModelError as ModelError
from ._exceptions import ModelHTTPError as ModelHTTPError
from ._exceptions import ModelStreamError as ModelStreamError
from ._exceptions import ModelTimeoutError as ModelTimeoutError
from ._exceptions import ModelTruncatedError as ModelTruncatedError
from ._exceptions import OutputParseError as OutputParseError
from ._exceptions import PayloadMissing as PayloadMissing
from ._exceptions import PIIDetectedError as PIIDetectedError
from ._exceptions import ReactcoreError as ReactcoreError
from ._exceptions import ReportedError as ReportedError
from ._exceptions import RequestRefused as RequestRefused
from ._exceptions import RunCancelled as RunCancelled
from ._exceptions import SaverError as SaverError
from ._exceptions import SaverUnavailable as SaverUnavailable
from ._exceptions import ThreadBusy as ThreadBusy
from ._exceptions import ThreadHasForks as ThreadHasForks
from ._exceptions import ToolArgumentError as ToolArgumentError
from ._exceptions import ToolExecutionError as ToolExecutionError
from ._handle import EventSource as EventSource
from ._handle import RunHandle as RunHandle
from ._handle import RunStatus as RunStatus
from ._hooks import Hook as Hook
from ._interceptors import ModelHandler as ModelHandler
from ._interceptors import ModelInterceptor as ModelInterceptor
from ._interceptors import ToolCallRequest as ToolCallRequest
from ._interceptors import ToolCallResponse as ToolCallResponse
from ._interceptors import ToolHandler as ToolHandler
from ._interceptors import ToolInterceptor as ToolInterceptor
from ._llm_node import AgentLlmNode as AgentLlmNode
from ._llm_node import next_request as next_request
from ._messages import AssistantMessage as AssistantMessage
from ._messages import AudioPart as AudioPart
from ._messages import ContentPart as ContentPart
from ._messages import FilePart as FilePart
from ._messages import ImagePart as ImagePart
from ._messages import Message as Message
from ._messages import SystemMessage as SystemMessage
from ._messages import TextPart as TextPart
from ._messages import ToolCall as ToolCall
from ._messages import ToolResponse as ToolResponse
from ._messages import ToolResponseMessage as ToolResponseMessage
from ._messages import UserMessage as UserMessage
from ._messages import part_from_bytes as part_from_bytes
from ._result import AgentResult as AgentResult
from ._run import AgentRun as AgentRun
from ._run import EventStream as EventStream
from ._serde import AllowNonFinite as AllowNonFinite
from ._serde import messages_from_wire as messages_from_wire
from ._serde import messages_to_wire as messages_to_wire
from ._shapes import event_from_json as event_from_json
from ._shapes import to_json as to_json
from ._state import KeyStrategy as KeyStrategy
from ._state import OverAllState as OverAllState
from ._state import Remove as Remove
from ._state import ReplaceAll as ReplaceAll
from ._tiktoken import TiktokenCounter as TiktokenCounter
from ._tokens import ApproximateTokenCounter as ApproximateTokenCounter
from ._tokens import TokenCounter as TokenCounter
from ._tokens import count_tokens as count_tokens
from ._tool_annotations import ToolAnnotations as ToolAnnotations
from ._tool_node import AgentToolNode as AgentToolNode
from ._tools import Tool as Tool
from ._tools import ToolContext as ToolContext
from ._tools import check_cancelled as check_cancelled
from ._tools import tool as tool
from ._toolset import Toolset as Toolset
from .hooks import ApprovalPolicy as ApprovalPolicy
from .hooks import HumanInTheLoopHook as HumanInTheLoopHook
from .hooks import LargeResultEviction as LargeResultEviction
from .hooks import ModelCallLimitHook as ModelCallLimitHook
from .hooks import PIIRedactionHook as PIIRedactionHook
from .hooks import SummarizationHook as SummarizationHook
from .hooks import ToolCallLimitHook as ToolCallLimitHook
from .interceptors import ContextEditingInterceptor as ContextEditingInterceptor
from .interceptors import ModelFallbackInterceptor as ModelFallbackInterceptor
from .interceptors import ModelRetryInterceptor as ModelRetryInterceptor
from .interceptors import ToolRetryInterceptor as ToolRetryInterceptor
from .interceptors import ToolSelectionInterceptor as ToolSelectionInterceptor
from .models._infer import infer_model as infer_model
from .models.anthropic import AnthropicModel as AnthropicModel
from .models.base import ChatModel as ChatModel
from .models.base import ChatOptions as ChatOptions
from .models.base import ChunkAssembler as ChunkAssembler
from .models.base import ModelChunk as ModelChunk
from .models.base import ModelRequest as ModelRequest
from .models.base import ModelResponse as ModelResponse
from .models.base import ToolCallDelta as ToolCallDelta
from .models.base import ToolSpec as ToolSpec
from .models.base import Usage as Usage
from .models.bedrock import BedrockModel as BedrockModel
from .models.gemini import GeminiModel as GeminiModel
from .models.openai import OpenAIChatModel as OpenAIChatModel
from .models.openai_responses import OpenAIResponsesModel as OpenAIResponsesModel

__all__ = [
    "AgentLlmNode",
    "AgentResult",
    "AgentRun",
    "AgentToolNode",
    "AllowNonFinite",
    "AnthropicModel",
    "ApprovalPolicy",
    "Approve",
    "ApproximateTokenCounter",
    "AssistantMessage",
    "AudioPart",
    "BedrockModel",
    "CallLimitExceeded",
    "ChatModel",
    "ChatOptions",
    "Checkpoint",
    "ChunkAssembler",
    "ContentPart",
    "ContextEditingInterceptor",
    "DamagedThread",
    "DefaultToolExceptionProcessor",
    "Edit",
    "Event",
    "EventSource",
    "EventStream",
    "FilePart",
    "GeminiModel",
    "Hook",
    "HumanInTheLoopHook",
    "ImagePart",
    "Interrupt",
    "KeyStrategy",
    "LargeResultEviction",
    "LeaseLost",
    "LeasingSaver",
    "MCPError",
    "MaxIterationsExceeded",
    "MemorySaver",
    "Message",
    "ModelCallFinished",
    "ModelCallLimitHook",
    "ModelCallRetried",
    "ModelCallStarted",
    "ModelChunk",
    "ModelDelta",
    "ModelError",
    "ModelFallbackInterceptor",
    "ModelHTTPError",
    "ModelHandler",
    "ModelInterceptor",
    "ModelRequest",
    "ModelResponse",
    "ModelRetryInterceptor",
    "ModelStreamError",
    "ModelTimeoutError",
    "ModelTruncatedError",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "OutputParseError",
    "OverAllState",
    "PIIDetectedError",
    "PIIRedactionHook",
    "PayloadMissing",
    "ReactAgent",
    "ReactcoreError",
    "Reject",
    "Remove",
    "ReplaceAll",
    "ReportedError",
    "RequestRefused",
    "Resume",
    "RunCancelled",
    "RunFailed",
    "RunFinished",
    "RunHandle",
    "RunInterrupted",
    "RunStatus",
    "RunnableConfig",
    "Saver",
    "SaverError",
    "SaverUnavailable",
    "SqliteSaver",
    "StateUpdated",
    "SubagentCall",
    "SubagentEvent",
    "SummarizationHook",
    "SystemMessage",
    "TextPart",
    "ThreadBusy",
    "ThreadHasForks",
    "ThreadInfo",
    "TiktokenCounter",
    "TokenCounter",
    "Tool",
    "ToolAnnotations",
    "ToolArgumentError",
    "ToolCall",
    "ToolCallCancelled",
    "ToolCallDelta",
    "ToolCallFinished",
    "ToolCallLimitHook",
    "ToolCallRequest",
    "ToolCallResponse",
    "ToolCallStarted",
    "ToolCallTimedOut",
    "ToolContext",
    "ToolExceptionProcessor",
    "ToolExecutionError",
    "ToolHandler",
    "ToolInterceptor",
    "ToolResponse",
    "ToolResponseMessage",
    "ToolRetryInterceptor",
    "ToolSelectionInterceptor",
    "ToolSpec",
    "Toolset",
    "Usage",
    "UserMessage",
    "check_cancelled",
    "check_thread_id",
    "count_tokens",
    "dump_checkpoint",
    "event_from_json",
    "infer_model",
    "load_checkpoint",
    "messages_from_wire",
    "messages_to_wire",
    "next_request",
    "part_from_bytes",
    "to_json",
    "tool",
]

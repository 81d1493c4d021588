"""Chat models: the ``ChatModel`` protocol the LLM node talks to, and the clients that
implement it, one module per provider wire format over one shared HTTP layer.

A model can be named by a provider string, ``"openai:gpt-4.1"``,
``"anthropic:claude-sonnet-4-5"``, ``"openai-responses:gpt-5"`` or
``"google:gemini-2.5-flash"``, Amazon Bedrock's ``"bedrock:<model id>"``, an
OpenAI-compatible host's ``"groq:…"``, ``"ollama:…"`` (``HOSTS``), Azure's
``"azure:<deployment>"`` or Vertex AI's ``"google-vertex:…"`` and ``"anthropic-vertex:…"``
(``infer_model``); keys, base URLs and projects come from the environment then.
"""

from __future__ import annotations

from ._google_auth import GoogleAuth as GoogleAuth
from ._hosts import HOSTS as HOSTS
from ._hosts import Host as Host
from ._hosts import azure_host as azure_host
from ._infer import infer_model as infer_model
from ._infer import known_providers as known_providers
from .anthropic import AnthropicModel as AnthropicModel
from .azure import azure_model as azure_model
from .base import ChatModel as ChatModel
from .base import ChatOptions as ChatOptions
from .base import ChunkAssembler as ChunkAssembler
from .base import ModelChunk as ModelChunk
from .base import ModelRequest as ModelRequest
from .base import ModelResponse as ModelResponse
from .base import ToolCallDelta as ToolCallDelta
from .base import ToolSpec as ToolSpec
from .base import Usage as Usage
from .bedrock import BedrockModel as BedrockModel
from .gemini import GeminiModel as GeminiModel
from .openai import OpenAIChatModel as OpenAIChatModel
from .openai_responses import OpenAIResponsesModel as OpenAIResponsesModel
from .vertex import VertexAnthropicModel as VertexAnthropicModel
from .vertex import VertexGeminiModel as VertexGeminiModel

__all__ = [
    "HOSTS",
    "AnthropicModel",
    "BedrockModel",
    "ChatModel",
    "ChatOptions",
    "ChunkAssembler",
    "GeminiModel",
    "GoogleAuth",
    "Host",
    "ModelChunk",
    "ModelRequest",
    "ModelResponse",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "ToolCallDelta",
    "ToolSpec",
    "Usage",
    "VertexAnthropicModel",
    "VertexGeminiModel",
    "azure_host",
    "azure_model",
    "infer_model",
    "known_providers",
]

"""reactcore.mcp: tools, resources and prompts from Model Context Protocol servers (which
may ask the client's model and user during a call), and an agent as an MCP server.

Needs the ``mcp`` extra (``pip install 'reactcore[mcp]'``); ``import reactcore`` never
imports the SDK.
"""

from __future__ import annotations

from .._exceptions import MCPError as MCPError
from ._elicitation import ElicitationAnswer as ElicitationAnswer
from ._elicitation import ElicitationRequest as ElicitationRequest
from ._prompts import Prompt as Prompt
from ._prompts import PromptArgument as PromptArgument
from ._prompts import PromptResult as PromptResult
from ._resources import Resource as Resource
from ._resources import ResourceContents as ResourceContents
from ._resources import ResourceTemplate as ResourceTemplate
from ._sampling import SamplingRequest as SamplingRequest
from ._serve import serve as serve
from ._toolset import MCPToolset as MCPToolset
from ._transports import SSETransport as SSETransport
from ._transports import StdioTransport as StdioTransport
from ._transports import StreamableHTTPTransport as StreamableHTTPTransport
from ._transports import Transport as Transport

__all__ = [
    "ElicitationAnswer",
    "ElicitationRequest",
    "MCPError",
    "MCPToolset",
    "Prompt",
    "PromptArgument",
    "PromptResult",
    "Resource",
    "ResourceContents",
    "ResourceTemplate",
    "SSETransport",
    "SamplingRequest",
    "StdioTransport",
    "StreamableHTTPTransport",
    "Transport",
    "serve",
]

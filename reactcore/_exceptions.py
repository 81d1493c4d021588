"""The exceptions reactcore raises, all under one root.

::

    ReactcoreError
     ├── ToolExecutionError        a tool raised and the exception processor chose to raise
     └── ToolArgumentError         (also ValueError) the model's arguments do not fit the tool

Errors of use (a bad option, a state the node cannot work on) are the builtin
``ValueError`` / ``TypeError``: they are bugs in the caller, not run-time failures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._messages import ToolCall


class ReactcoreError(Exception):
    """The root of every run-time error reactcore raises on its own."""


class ToolExecutionError(ReactcoreError):
    """Raised by ``AgentToolNode`` when a tool raised and the exception processor rethrows.

    The tool's own exception is chained as ``__cause__``; ``call`` is the model's call.
    """

    def __init__(self, message: str, *, call: ToolCall) -> None:
        super().__init__(message)
        self.call = call


class ToolArgumentError(ReactcoreError, ValueError):
    """Raised by ``Tool.parse_arguments`` when the model's arguments do not fit the signature.

    The node turns it into an error response naming the parameter, so the model can retry.
    """

    def __init__(self, message: str, *, tool_name: str) -> None:
        super().__init__(message)
        self.tool_name = tool_name

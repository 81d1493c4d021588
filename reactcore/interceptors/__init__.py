"""Built-in interceptors: retries, fallback models, tool selection, context editing."""

from __future__ import annotations

from ._context_editing import ContextEditingInterceptor as ContextEditingInterceptor
from ._fallback import ModelFallbackInterceptor as ModelFallbackInterceptor
from ._retry import ModelRetryInterceptor as ModelRetryInterceptor
from ._retry import ToolRetryInterceptor as ToolRetryInterceptor
from ._retry import is_retryable_model_error as is_retryable_model_error
from ._tool_selection import ToolSelectionInterceptor as ToolSelectionInterceptor

__all__ = [
    "ContextEditingInterceptor",
    "ModelFallbackInterceptor",
    "ModelRetryInterceptor",
    "ToolRetryInterceptor",
    "ToolSelectionInterceptor",
    "is_retryable_model_error",
]

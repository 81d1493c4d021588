"""What an agent may not take into a workflow: hooks and interceptors that call a model
themselves. Their call would run in workflow code (not deterministic, not retried, not
an activity), so ``TemporalAgent`` refuses them when it is built, naming them and why.

A hook or interceptor of one's own that calls a model cannot be recognised here: its
call has the same problem (see ``docs/temporal.md``, What runs where).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..hooks import SummarizationHook
from ..interceptors import ModelFallbackInterceptor, ToolSelectionInterceptor

if TYPE_CHECKING:
    from .._agent import ReactAgent


def _why(item: Any) -> str | None:
    """Why ``item`` (a hook or an interceptor) cannot run in a workflow (``None``: it can)."""
    if isinstance(item, SummarizationHook):
        return "it asks a model for the summary itself, in workflow code"
    if isinstance(item, ToolSelectionInterceptor) and item.asks_model:
        return (
            "its selector is a ChatModel, asked in workflow code (a function of the "
            "request as selector works)"
        )
    if isinstance(item, ModelFallbackInterceptor):
        return (
            "it asks other models (request.chat_model); the model activity calls the "
            "agent's own model only"
        )
    return None


def _refused(agent: ReactAgent) -> Iterator[str]:
    for field in ("hooks", "interceptors"):
        for index, item in enumerate(getattr(agent, field)):
            why = _why(item)
            if why is not None:
                yield f"agent.{field}[{index}] ({type(item).__name__}): {why}"


def check_supported(instance: Any, attribute: Any, agent: ReactAgent) -> None:
    """A ``TemporalAgent.agent`` validator: ``ValueError`` naming each hook and interceptor
    of ``agent`` that calls a model itself, and why it cannot run in a workflow."""
    refused = list(_refused(agent))
    if refused:
        raise ValueError(
            f"{type(instance).__name__}.{attribute.alias}: agent {agent.name!r} has hooks or "
            "interceptors that cannot run in a Temporal workflow, where every model call must "
            "be an activity: " + "; ".join(refused)
        )

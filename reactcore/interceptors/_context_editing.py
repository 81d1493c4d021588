"""Clearing old tool results from what the model is sent, once the context grows long."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import attrs

from .. import _validate as valid
from .._interceptors import ModelHandler
from .._logging import get_logger
from .._messages import Message, ToolResponseMessage
from .._tokens import OPTIONAL_COUNTER, TokenCounter, count_tokens
from ..models.base import ModelRequest, ModelResponse

DEFAULT_PLACEHOLDER = "[tool result cleared to save context]"


@attrs.frozen
class ContextEditingInterceptor:
    """Once a request would pass ``trigger_tokens`` (``count_tokens``, by ``counter`` or
    the agent's ``token_counter``), every tool result but the last ``keep_last_results``
    is sent to the model as ``placeholder`` (its content parts dropped); results of the
    tools named in ``exclude_tools`` are always sent whole.

    Only the request changes: the state, the checkpoints and the run's result keep every
    result whole, so the edit can be undone by a later request (a bigger budget, another
    model) and the history stays true. The assistant messages and their calls are sent as
    they are, so every call still has its answer. Put it after interceptors that add to
    the request and before retries (``ModelRetryInterceptor``), so each attempt is
    edited alike.
    """

    trigger_tokens: int = attrs.field(validator=valid.integer(minimum=1))
    keep_last_results: int = attrs.field(default=3, validator=valid.integer(minimum=0))
    placeholder: str = attrs.field(default=DEFAULT_PLACEHOLDER, validator=valid.text())
    counter: TokenCounter | None = attrs.field(default=None, validator=OPTIONAL_COUNTER)
    exclude_tools: Collection[str] = attrs.field(default=(), validator=valid.NAMES)

    def edit(self, messages: Sequence[Message]) -> list[Message]:
        """``messages`` with every tool result but the last ``keep_last_results`` (of
        tools not excluded) replaced by the placeholder."""
        found = [
            (index, position)
            for index, message in enumerate(messages)
            if isinstance(message, ToolResponseMessage)
            for position, response in enumerate(message.responses)
            if response.name not in self.exclude_tools
        ]
        clear: dict[int, set[int]] = {}
        for index, position in found[: max(len(found) - self.keep_last_results, 0)]:
            clear.setdefault(index, set()).add(position)
        out = list(messages)
        for index, positions in clear.items():
            message = out[index]
            assert isinstance(message, ToolResponseMessage)
            responses = [
                attrs.evolve(r, response_data=self.placeholder, parts=(), data=None)
                if p in positions
                else r
                for p, r in enumerate(message.responses)
            ]
            out[index] = attrs.evolve(message, responses=responses)
        return out

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        tokens = count_tokens(request, self.counter)
        if tokens <= self.trigger_tokens:
            return await handler(request)
        edited = self.edit(request.messages)
        get_logger().debug("tool_results_cleared", tokens=tokens)
        return await handler(attrs.evolve(request, messages=edited))

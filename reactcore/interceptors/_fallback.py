"""Falling back to other models when the primary one fails."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import attrs

from .. import _validate as valid
from .._exceptions import ModelError
from .._interceptors import ModelHandler
from .._logging import get_logger
from ..models._infer import as_chat_model
from ..models.base import ChatModel, ModelRequest, ModelResponse, model_name, report_retry
from ._retry import error_reason


def _is_model_error(error: Exception) -> bool:
    return isinstance(error, ModelError | OSError)


def _models(value: Iterable[ChatModel | str]) -> tuple[ChatModel, ...]:
    return (
        tuple(as_chat_model(m) for m in value)
        if valid.ITERABLE.accepts(value)
        else valid.leave(value)
    )


@attrs.frozen
class ModelFallbackInterceptor:
    """On a model failure, asks each of ``models`` (chat models, or provider strings such
    as ``"openai:gpt-4.1"``) in turn; the last failure is raised.

    Fallback models are asked through the rest of the chain (the interceptors listed
    after this one), exactly as the primary model was.
    """

    models: Sequence[ChatModel] = attrs.field(
        converter=_models, validator=valid.each(valid.chat_model())
    )
    fall_back_on: Callable[[Exception], bool] = attrs.field(
        default=_is_model_error, validator=valid.function()
    )

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        try:
            return await handler(request)
        except Exception as exc:
            if not self.models or not self.fall_back_on(exc):
                raise
            error = exc
        for index, model in enumerate(self.models):
            get_logger().warning("model_fallback", fallback=index, error=type(error).__name__)
            await report_retry(
                request.context, index + 1, 0.0, error_reason(error), model_name(model)
            )
            try:
                return await handler(attrs.evolve(request, chat_model=model))
            except Exception as exc:
                if not self.fall_back_on(exc):
                    raise
                error = exc
        raise error

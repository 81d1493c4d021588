"""Narrowing the tools the model sees, by a function or by asking a (smaller) model."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any

import attrs

from .. import _validate as valid
from .._interceptors import ModelHandler
from .._json import loads
from .._messages import UserMessage
from ..models.base import ChatModel, ModelRequest, ModelResponse

Selector = Callable[[ModelRequest], Sequence[str] | Awaitable[Sequence[str]]]

_PROMPT = (
    "Pick the tools needed to answer the conversation below. Reply with a JSON array of "
    "tool names only.\n\nTools:\n{tools}\n\nConversation (last user message):\n{question}"
)


async def _ask_model(model: ChatModel, request: ModelRequest) -> list[str]:
    specs = request.visible_tool_specs()
    listing = "\n".join(f"- {s.name}: {s.description}" for s in specs)
    question = next((m.text for m in reversed(request.messages) if isinstance(m, UserMessage)), "")
    prompt = _PROMPT.format(tools=listing, question=question)
    answer = await model.call(ModelRequest([UserMessage(prompt)], context={}))
    try:
        names = loads(answer.message.text)
    except ValueError:  # malformed, or past the bounded parser's limits
        return []  # an unusable selection narrows nothing away but always_include
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


_MODEL = valid.chat_model()
_SELECTOR = valid.satisfies(
    "a function of the request or a ChatModel",
    test=lambda v: callable(v) or _MODEL.spec.accepts(v),
)


@attrs.frozen
class ToolSelectionInterceptor:
    """Before each model call, keeps only the tools ``selector`` picks (plus
    ``always_include``), at most ``max_tools`` of them: the first ones it names.
    ``selector`` is a function of the request (sync or async) returning tool names, or a
    ``ChatModel`` asked to pick them.

    The narrowing is enforced, not advisory: the answer records the tools the model was
    shown, and the tool node refuses a call of any other tool it knows, so selection can
    carry permissions (per user, per tenant)."""

    selector: Selector | ChatModel = attrs.field(validator=_SELECTOR)
    max_tools: int | None = attrs.field(
        default=None, validator=valid.integer(minimum=0, optional=True)
    )
    always_include: Collection[str] = attrs.field(default=(), validator=valid.NAMES)

    @property
    def asks_model(self) -> bool:
        """Whether ``selector`` is a ``ChatModel`` (asked in a model call of its own)."""
        return callable(getattr(self.selector, "call", None)) and hasattr(self.selector, "stream")

    async def _select(self, request: ModelRequest) -> Sequence[str]:
        if self.asks_model:
            model: Any = self.selector
            return await _ask_model(model, request)
        picked: Any = self.selector(request)  # type: ignore[operator]
        if inspect.isawaitable(picked):
            picked = await picked
        return list(picked)

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        available = set(request.tools)
        picked = dict.fromkeys(await self._select(request))  # the selector's order: its ranking
        chosen = [n for n in picked if n in available and n not in self.always_include]
        if self.max_tools is not None:
            chosen = chosen[: self.max_tools]
        kept = [n for n in request.tools if n in self.always_include or n in chosen]
        return await handler(attrs.evolve(request, tools=kept))

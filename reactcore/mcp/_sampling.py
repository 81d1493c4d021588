"""Sampling: a server's ``sampling/createMessage``, answered by a model of the client.

Off unless the toolset opts in (``MCPToolset(sampling=True | a ChatModel)``): a server
never spends the user's tokens otherwise, and is answered with an error. With it on, a
request that arrives during one of the toolset's tool calls (see ``_inflight``) is
answered in that call's task, as a model call of the run: through the agent's model
interceptors (``side_call(intercepted=True)``), counted against the run's
``ModelCallLimitHook(run_limit=...)``, between ``ModelCallStarted`` and
``ModelCallFinished`` events with purpose ``"mcp_sampling"``, in a span nested under the
call's, and cancelled with the call. ``sampling=True`` asks the agent's model; a
``ChatModel`` is asked instead (still through the agent's interceptors).

``sampling_policy(request)`` (sync or async; ``SamplingRequest``) is asked first and may
refuse with ``False``. A request made outside any call (or which the protocol cannot tie
to one) is refused, unless ``sampling`` is a ``ChatModel`` and a policy accepts it: the
model is then asked directly, with no run to count it in.

What a server asks for becomes a ``ModelRequest``: its messages (text, images, audio) as
``UserMessage`` / ``AssistantMessage``, its system prompt, ``max_tokens``,
``temperature``; stop sequences and model hints are given to the policy, not followed.
Sampling with tools (``tools``, tool-use blocks) is refused: the client does not offer
it. The answer's text goes back (``stopReason`` ``maxTokens`` when the model was cut
short, else ``endTurn``).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import mcp.types as mt
import structlog

from .. import _validate as valid
from .._config import RunnableConfig
from .._exceptions import CallLimitExceeded
from .._llm_node import MODEL_NODE, side_call
from .._messages import AssistantMessage, Message, SystemMessage, TextPart, ToolCall, UserMessage
from ..hooks._model_call_limit import count_nested_call
from ..models.base import ChatModel, ChatOptions, ModelRequest, ModelResponse
from ._content import block_part
from ._inflight import Calls, hand_over

PURPOSE = "mcp_sampling"
"""The ``purpose`` of a sampling request and of its model-call events."""

_log = structlog.get_logger("reactcore.mcp")


@attrs.frozen
class SamplingRequest:
    """What a server asks the client's model (what ``sampling_policy`` decides on).

    ``call`` is the tool call in flight the request came during (``None`` outside one);
    ``model_hints`` are the server's preferred model names, in order.
    """

    server: str
    messages: tuple[Message, ...]
    system_prompt: str | None
    max_tokens: int
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    model_hints: tuple[str, ...] = ()
    call: ToolCall | None = None


SamplingPolicy = Callable[[SamplingRequest], bool | Awaitable[bool]]
SAMPLING_CHOICE = valid.satisfies(
    "True, False or a ChatModel (with call and stream)",
    test=lambda v: (
        isinstance(v, bool) or all(callable(getattr(v, m, None)) for m in ("call", "stream"))
    ),
)
"""The validator of ``MCPToolset.sampling``."""


def _message(sampled: mt.SamplingMessage, server: str) -> Message:
    blocks = sampled.content if isinstance(sampled.content, list) else [sampled.content]
    parts = [block_part(b, server) for b in blocks]  # type: ignore[arg-type]
    if sampled.role == "assistant":
        return AssistantMessage("".join(p.text for p in parts if isinstance(p, TextPart)))
    first = parts[0] if parts and isinstance(parts[0], TextPart) else None
    rest = tuple(parts[1:] if first is not None else parts)
    return UserMessage(first.text if first is not None else "", rest)


def _with_tools(sampled: mt.SamplingMessage) -> bool:
    blocks = sampled.content if isinstance(sampled.content, list) else [sampled.content]
    return any(isinstance(b, mt.ToolUseContent | mt.ToolResultContent) for b in blocks)


def to_request(
    params: mt.CreateMessageRequestParams, server: str, call: ToolCall | None
) -> SamplingRequest:
    """The server's request as a ``SamplingRequest``."""
    hints = (params.model_preferences.hints or []) if params.model_preferences else []
    return SamplingRequest(
        server,
        tuple(_message(m, server) for m in params.messages),
        params.system_prompt,
        params.max_tokens,
        params.temperature,
        tuple(params.stop_sequences or ()),
        tuple(h.name for h in hints if h.name),
        call,
    )


def _model_request(request: SamplingRequest, context: dict[str, Any]) -> ModelRequest:
    system = SystemMessage(request.system_prompt) if request.system_prompt else None
    options = ChatOptions(temperature=request.temperature, max_tokens=request.max_tokens)
    return ModelRequest(request.messages, system, options=options, context=context, purpose=PURPOSE)


def _result(response: ModelResponse, model: ChatModel) -> mt.CreateMessageResult:
    stop = "maxTokens" if response.finish_reason == "length" else "endTurn"
    name = str(getattr(model, "model", None) or type(model).__name__)
    return mt.CreateMessageResult(
        role="assistant",
        content=mt.TextContent(type="text", text=response.message.text),
        model=name,
        stop_reason=stop,
    )


def _refused(server: str, why: str) -> mt.ErrorData:
    _log.info("mcp_sampling_refused", server=server, reason=why)
    return mt.ErrorData(code=mt.INVALID_REQUEST, message=f"sampling refused: {why}")


async def _allowed(policy: SamplingPolicy | None, request: SamplingRequest) -> bool:
    if policy is None:
        return True
    answer = policy(request)
    if inspect.isawaitable(answer):
        answer = await answer
    return bool(answer)


@attrs.frozen
class Sampler:
    """A toolset's answer to ``sampling/createMessage`` (see the module docstring)."""

    sampling: bool | ChatModel
    policy: SamplingPolicy | None
    calls: Calls
    server: Callable[[], str]  # the server's name, as the toolset says it now

    @property
    def enabled(self) -> bool:
        return self.sampling is not False

    async def __call__(
        self, context: Any, params: mt.CreateMessageRequestParams
    ) -> mt.CreateMessageResult | mt.ErrorData:
        """The SDK's ``sampling_callback``."""
        server = self.server()
        if not self.enabled:
            return _refused(server, "the client did not enable sampling")
        if params.tools or any(_with_tools(m) for m in params.messages):
            return _refused(server, "the client does not offer tools in sampling")
        flight = self.calls.find()
        if flight is None:
            return await self._outside(server, params)
        config = flight.context.config
        request = to_request(params, server, flight.context.call)

        async def work() -> mt.CreateMessageResult | mt.ErrorData:
            return await self._in_call(request, config)

        answer = await hand_over(flight, work)
        return answer if answer is not None else _refused(server, "the tool call ended")

    async def _in_call(
        self, request: SamplingRequest, config: RunnableConfig
    ) -> mt.CreateMessageResult | mt.ErrorData:
        """Answered in the call's task: counted, intercepted, traced, cancelled with it."""
        if not await _allowed(self.policy, request):
            return _refused(request.server, "the client's policy refused it")
        try:
            count_nested_call(config)
        except CallLimitExceeded as exc:
            return _refused(request.server, str(exc))
        node = config.context.get(MODEL_NODE)
        model = self.sampling if not isinstance(self.sampling, bool) else None
        chosen = model if model is not None else node.model if node is not None else None
        if chosen is None:  # a tool node run on its own: there is no agent's model
            return _refused(request.server, "there is no agent's model to ask")
        sent = _model_request(request, config.context)
        try:
            response = await side_call(sent, config, chosen, intercepted=True)
        except Exception as exc:
            _log.warning("mcp_sampling_failed", server=request.server, error=type(exc).__name__)
            return mt.ErrorData(code=mt.INTERNAL_ERROR, message=f"the model failed: {exc}")
        return _result(response, chosen)

    async def _outside(
        self, server: str, params: mt.CreateMessageRequestParams
    ) -> mt.CreateMessageResult | mt.ErrorData:
        request = to_request(params, server, None)
        if isinstance(self.sampling, bool) or self.policy is None:
            return _refused(server, "it came outside a tool call")
        if not await _allowed(self.policy, request):
            return _refused(server, "the client's policy refused it")
        model = self.sampling
        try:
            response = await model.call(_model_request(request, {}))
        except Exception as exc:
            _log.warning("mcp_sampling_failed", server=server, error=type(exc).__name__)
            return mt.ErrorData(code=mt.INTERNAL_ERROR, message=f"the model failed: {exc}")
        return _result(response, model)

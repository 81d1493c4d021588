"""AgentLlmNode: what goes into the model request, and what comes back into the state."""

from __future__ import annotations

import json
from typing import Any

import anyio
import attrs
import pytest

from reactcore import (
    AgentLlmNode,
    AssistantMessage,
    ModelChunk,
    ModelHandler,
    ModelHTTPError,
    ModelRequest,
    ModelResponse,
    OverAllState,
    RunnableConfig,
    SystemMessage,
    ToolCall,
    Usage,
    UserMessage,
    tool,
)
from reactcore.models.scripted import ScriptedChatModel

pytestmark = pytest.mark.anyio


@tool
async def lookup(city: str) -> str:
    """Look up a city."""
    return city


@tool
async def other() -> str:
    """Another tool."""
    return "x"


def user_state(text: str = "hi", **extra: Any) -> OverAllState:
    return OverAllState({"messages": [UserMessage(text)], **extra})


async def test_iteration_counter_starts_at_zero_and_counts_up() -> None:
    """_MODEL_ITERATION_ in config.context is 0 on the first call, then +1 each call."""
    node = AgentLlmNode(ScriptedChatModel(["a", "b", "c"]))
    config = RunnableConfig()
    seen = []
    for _ in range(3):
        await node(user_state(), config)
        seen.append(config.context["_MODEL_ITERATION_"])
    assert seen == [0, 1, 2]


async def test_messages_from_state_or_input_else_value_error() -> None:
    """Messages come from `messages`, or `input` as a user message; neither → ValueError."""
    model = ScriptedChatModel(["a", "b"])
    node = AgentLlmNode(model)
    await node(OverAllState({"input": "from input"}))
    await node(user_state("from messages"))
    assert model.requests[0].messages == (UserMessage("from input"),)
    assert model.requests[1].messages == (UserMessage("from messages"),)
    with pytest.raises(ValueError, match="'messages' or 'input'"):
        await node(OverAllState({"other": 1}))


async def test_system_prompt_first_and_tools_in_request() -> None:
    """The system prompt travels as the request's system message; every tool's name,
    description and schema is in the request."""
    model = ScriptedChatModel(["ok"])
    node = AgentLlmNode(model, system_prompt="be brief", tools=[lookup, other])
    await node(user_state())
    request = model.requests[0]
    assert request.system_message == SystemMessage("be brief")
    assert request.tools == ("lookup", "other")
    specs = request.visible_tool_specs()
    assert specs[0].description == "Look up a city."
    assert specs[0].parameters["required"] == ["city"]


async def test_instruction_rendered_once_before_the_conversation() -> None:
    """The instruction is rendered from state values the first time, stored, and placed
    before the conversation; later calls reuse it even if the state changed."""
    model = ScriptedChatModel(["a", "b"])
    node = AgentLlmNode(model, instruction="Help {user} with {{braces}}.")
    state = user_state(user="ada")
    update = await node(state)
    assert update["_INSTRUCTION_"] == "Help ada with {braces}."
    assert model.requests[0].messages[0] == UserMessage("Help ada with {braces}.")
    state = state.merge(update).merge({"user": "bob"})
    update = await node(state)
    assert "_INSTRUCTION_" not in update
    assert model.requests[1].messages[0] == UserMessage("Help ada with {braces}.")


@pytest.mark.parametrize(
    ("template", "state_extra", "match"),
    [
        ("Hi {missing}", {}, "missing"),
        ("Hi {items}", {"items": [1, 2]}, "items"),
        ("Hi {messages}", {}, "messages"),
        ("Hi {}", {}, "plain names"),
        ("Hi {user.__class__}", {"user": "x"}, "plain names"),
    ],
)
async def test_instruction_errors_name_the_variable(
    template: str, state_extra: dict[str, Any], match: str
) -> None:
    """A missing or unusable placeholder → ValueError naming it; the model is not called."""
    model = ScriptedChatModel(["never"])
    with pytest.raises(ValueError, match=match):
        await AgentLlmNode(model, instruction=template)(user_state(**state_extra))
    assert model.requests == []


@attrs.frozen
class Answer:
    city: str
    score: int


async def test_output_schema_appended_once_to_last_user_message() -> None:
    """output_type becomes a JSON Schema appended to the last user message, only once;
    output_schema wins over output_type."""
    model = ScriptedChatModel(["a", "b", "c"])
    node = AgentLlmNode(model, output_type=Answer)
    await node(OverAllState({"messages": [UserMessage("first"), UserMessage("where?")]}))
    sent = model.requests[0].messages
    assert sent[0] == UserMessage("first")
    assert '"city"' in sent[1].text and sent[1].text.startswith("where?")
    await node(OverAllState({"messages": [sent[1]]}))
    assert model.requests[1].messages[0].text.count('"required"') == 1
    await AgentLlmNode(model, output_type=Answer, output_schema="MY-SCHEMA")(user_state("q"))
    assert model.requests[2].messages[0].text.endswith("MY-SCHEMA")


async def test_streaming_by_default_and_whole_when_asked() -> None:
    """By default the model is streamed (chunks reach the run's listener and are assembled
    into one message); `_stream_: False` in metadata calls it whole."""
    answer = AssistantMessage("hello there", [ToolCall("c1", "lookup", '{"city": "Oslo"}')])
    model = ScriptedChatModel([answer, answer], chunk_size=3)
    got: list[ModelChunk] = []

    async def listen(chunk: ModelChunk) -> None:
        got.append(chunk)

    node = AgentLlmNode(model, tools=[lookup])
    update = await node(user_state(), RunnableConfig(context={"_chunk_listener_": listen}))
    # The answer enters the state with the tools the model was shown.
    recorded = attrs.evolve(answer, visible_tools=("lookup",))
    assert update["messages"] == [recorded]
    assert len([c for c in got if c.text]) == 4
    got.clear()
    config = RunnableConfig(metadata={"_stream_": False}, context={"_chunk_listener_": listen})
    update = await node(user_state(), config)
    assert update["messages"] == [recorded]
    assert got == []


@pytest.mark.parametrize("stream", [True, False])
async def test_token_usage_accumulates_in_both_modes(stream: bool) -> None:
    """_TOKEN_USAGE_ sums the usage of every call, streamed or not."""
    model = ScriptedChatModel(["a", "b"], usage=Usage(3, 2, 5))
    node = AgentLlmNode(model)
    config = RunnableConfig(metadata={"_stream_": stream})
    state = user_state()
    for _ in range(2):
        state = state.merge(await node(state, config))
    assert state["_TOKEN_USAGE_"] == Usage(6, 4, 10)


async def test_model_interceptors_chain_narrow_tools_and_add_dynamic_tools() -> None:
    """Model interceptors wrap first-outermost; they can narrow the visible tools and add
    dynamic tools, which are handed to the tool node through config.context."""
    log: list[str] = []

    @tool
    async def extra() -> str:
        return "dynamic"

    class Outer:
        async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
            log.append("outer-before")
            response = await handler(attrs.evolve(request, tools=("other",)))
            log.append("outer-after")
            return response

    class Inner:
        async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
            log.append(f"inner sees {request.tools}")
            return await handler(
                attrs.evolve(request, tools=(*request.tools, "extra"), dynamic_tools=(extra,))
            )

    model = ScriptedChatModel(["ok"])
    node = AgentLlmNode(model, tools=[lookup, other], model_interceptors=[Outer(), Inner()])
    config = RunnableConfig()
    await node(user_state(), config)
    assert log == ["outer-before", "inner sees ('other',)", "outer-after"]
    assert [s.name for s in model.requests[0].visible_tool_specs()] == ["other", "extra"]
    assert config.context["dynamic_tools"]["extra"] is extra


async def test_interceptor_can_short_circuit_and_rewrite_messages() -> None:
    """An interceptor may answer without the model, or rewrite the messages it sees."""

    class Cache:
        async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
            if request.messages[-1] == UserMessage("cached?"):
                return ModelResponse(AssistantMessage("from cache"))
            return await handler(attrs.evolve(request, messages=[UserMessage("rewritten")]))

    model = ScriptedChatModel(["from model"])
    node = AgentLlmNode(model, model_interceptors=[Cache()])
    assert (await node(user_state("cached?")))["messages"][0].text == "from cache"
    assert (await node(user_state("other")))["messages"][0].text == "from model"
    assert model.requests[0].messages == (UserMessage("rewritten"),)


async def test_model_failure_raises_or_becomes_a_message() -> None:
    """A model error raises to the caller by default; with model_error_as_message the
    seed's 'Exception: …' assistant message is the answer instead."""
    error = ModelHTTPError("server said no", status_code=500)
    with pytest.raises(ModelHTTPError):
        await AgentLlmNode(ScriptedChatModel([error]))(user_state())
    node = AgentLlmNode(ScriptedChatModel([error]), model_error_as_message=True)
    update = await node(user_state())
    assert update["messages"][0].text == "Exception: server said no"


async def test_output_key_holds_the_answer() -> None:
    """output_key receives the assistant message too."""
    update = await AgentLlmNode(ScriptedChatModel(["done"]), output_key="answer")(user_state())
    assert update["answer"] == AssistantMessage("done")


async def test_cancelling_mid_stream_stops_the_node() -> None:
    """Cancelling while the model streams stops the node promptly."""

    async def slow(request: ModelRequest) -> AssistantMessage:
        await anyio.sleep(30)
        return AssistantMessage("late")

    node = AgentLlmNode(ScriptedChatModel([slow]))
    with anyio.move_on_after(0.1) as scope:
        await node(user_state())
    assert scope.cancelled_caught


def test_json_of_output_type_is_valid_schema() -> None:
    """The schema text sent for output_type is JSON with the attrs fields."""
    node = AgentLlmNode(ScriptedChatModel([]), output_type=Answer)
    request = node.build_request(user_state("q"), RunnableConfig(), {})
    text = request.messages[-1].text
    schema = json.loads(text[text.index("{") :])
    assert schema["required"] == ["city", "score"]

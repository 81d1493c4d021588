"""Structured output the model is held to (``output_type``, ``output_mode``,
``output_retries``): the ``response_format`` the endpoint gets over real HTTP, the
final-answer tool for endpoints without it, and asking again with the error before
raising ``OutputParseError``. What the model reads is asserted as exact text."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from reactcore import (
    AssistantMessage,
    MemorySaver,
    OpenAIChatModel,
    OutputParseError,
    ReactAgent,
    RunnableConfig,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    messages_to_wire,
    tool,
)
from reactcore._output import response_format
from reactcore.testing import ScriptedChatModel, SSEReply, serve_openai_compatible

pytestmark = pytest.mark.anyio


@attrs.frozen
class Trip:
    city: str
    days: int


@attrs.frozen
class Loose:
    city: str
    days: int = 1


GOOD = '{"city": "Lisbon", "days": 3}'
BAD = '{"city": "Lisbon", "days": "three"}'
DOES_NOT_FIT = (
    "the final answer does not fit Trip: expected an integer, got str 'three' @ output.days"
)
TRIP_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "additionalProperties": False,
    "required": ["city", "days"],
}


def final(arguments: str, call_id: str = "f1") -> AssistantMessage:
    """A model answer calling final_answer with ``arguments``."""
    return AssistantMessage("", [ToolCall(call_id, "final_answer", arguments)])


@tool
async def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


# --- response_format --------------------------------------------------------------------


async def test_response_format_is_sent_to_the_endpoint() -> None:
    """Over real HTTP the request carries response_format json_schema, strict, with the
    output type's schema (and the schema stays in the prompt); the answer is parsed."""
    with serve_openai_compatible([SSEReply.of(GOOD)]) as server:
        model = OpenAIChatModel("m", base_url=server.base_url, api_key="sk-test")
        result = await ReactAgent("a", model, output_type=Trip).invoke("plan")
    assert result.output == Trip("Lisbon", 3)
    body = server.requests[0]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Trip", "schema": TRIP_SCHEMA, "strict": True},
    }
    assert "Answer with JSON only" in body["messages"][-1]["content"]


async def test_strict_only_when_the_schema_allows_it() -> None:
    """A field with a default is optional, which strict structured outputs refuse: such
    a schema is sent with strict false."""
    assert response_format(Trip)["json_schema"]["strict"] is True
    loose = response_format(Loose)["json_schema"]
    assert loose["strict"] is False
    assert loose["schema"]["required"] == ["city"]


@pytest.mark.parametrize("mode", ["prompt", "tool"])
async def test_other_modes_send_no_response_format(mode: str) -> None:
    """output_mode "prompt" (the schema in the prompt only) and "tool" leave
    response_format out of the request."""
    script = [
        GOOD if mode == "prompt" else AssistantMessage("", [ToolCall("f", "final_answer", GOOD)])
    ]
    with serve_openai_compatible([SSEReply.of(script[0])]) as server:
        model = OpenAIChatModel("m", base_url=server.base_url, api_key="sk-test")
        agent = ReactAgent("a", model, output_type=Trip, output_mode=mode)  # type: ignore[arg-type]
        result = await agent.invoke("plan")
    assert result.output == Trip("Lisbon", 3)
    assert "response_format" not in server.requests[0]


# --- asking again -----------------------------------------------------------------------


async def test_an_answer_that_does_not_fit_is_sent_back_with_the_error() -> None:
    """The first answer does not fit: the model is asked again, reading the error (then
    the schema note); its second answer is the output."""
    model = ScriptedChatModel([BAD, GOOD])
    result = await ReactAgent("a", model, output_type=Trip).invoke("plan")
    assert result.output == Trip("Lisbon", 3)
    assert result.model_calls == 2
    told = model.requests[1].messages[-1]
    assert isinstance(told, UserMessage)
    assert told.text.startswith(f"Your answer could not be used: {DOES_NOT_FIT}. Answer again.")
    assert "Answer with JSON only, following this JSON Schema:" in told.text


@pytest.mark.parametrize(("retries", "calls"), [(0, 1), (1, 2), (2, 3)])
async def test_after_output_retries_the_run_raises(retries: int, calls: int) -> None:
    """Answers that never fit: the model is asked output_retries more times, then
    OutputParseError (with the last answer as raw)."""
    model = ScriptedChatModel(["not json", *[BAD] * retries])
    agent = ReactAgent("a", model, output_type=Trip, output_retries=retries)
    with pytest.raises(OutputParseError) as info:
        await agent.invoke("plan")
    assert len(model.requests) == calls
    assert info.value.raw == ("not json" if retries == 0 else BAD)


async def test_tool_calls_before_the_answer_are_not_checked() -> None:
    """Only the final answer is held to the schema: a turn of tool calls runs as usual."""
    calls = AssistantMessage("", [ToolCall("w", "weather", '{"city": "Lisbon"}')])
    model = ScriptedChatModel([calls, GOOD])
    result = await ReactAgent("a", model, tools=[weather], output_type=Trip).invoke("plan")
    assert result.output == Trip("Lisbon", 3)
    assert len(model.requests) == 2


# --- output_mode="tool" -----------------------------------------------------------------


async def test_the_final_answer_tool_gives_the_output() -> None:
    """The model sees a final_answer tool whose parameters are the schema (and no schema
    note in the prompt); its call is the answer: answered in the history, followed by
    the answer as the run's text, and parsed as output. No other model call."""
    model = ScriptedChatModel([final(GOOD)])
    agent = ReactAgent("a", model, tools=[weather], output_type=Trip, output_mode="tool")
    result = await agent.invoke("plan")
    assert result.output == Trip("Lisbon", 3)
    assert result.text == GOOD
    request = model.requests[0]
    specs = {s.name: s for s in request.tool_specs}
    assert list(request.tools) == ["weather", "final_answer"]
    assert specs["final_answer"].parameters == TRIP_SCHEMA
    assert request.messages[-1] == UserMessage("plan")
    answered = result.messages[2]
    assert answered == ToolResponseMessage(
        [ToolResponse("f1", "final_answer", "Final answer recorded.")]
    )
    assert result.messages[3] == AssistantMessage(GOOD, metadata={"final_answer": "f1"})
    assert len(messages_to_wire(result.messages)) == 4  # a history an endpoint accepts


async def test_bad_final_answer_arguments_are_sent_back_and_others_run() -> None:
    """final_answer with arguments that do not fit, beside a weather call: the model reads
    the error as final_answer's response, weather runs, and the next final answer is used."""
    turn = AssistantMessage(
        "",
        [ToolCall("f1", "final_answer", BAD), ToolCall("w", "weather", '{"city": "Lisbon"}')],
    )
    model = ScriptedChatModel([turn, final(GOOD, "f2")])
    agent = ReactAgent("a", model, tools=[weather], output_type=Trip, output_mode="tool")
    result = await agent.invoke("plan")
    assert result.output == Trip("Lisbon", 3)
    seen = model.requests[1].messages[-1]
    assert isinstance(seen, ToolResponseMessage)
    assert seen.responses == (
        ToolResponse(
            "f1",
            "final_answer",
            f"Error: {DOES_NOT_FIT}. Call final_answer again with arguments that fit its schema.",
            is_error=True,
        ),
        ToolResponse("w", "weather", "sunny in Lisbon"),
    )


async def test_a_final_answer_ends_the_turn_without_running_the_other_calls() -> None:
    """A usable final answer beside another call: the run ends; the other call is
    answered as not run, and never runs."""
    runs: list[str] = []

    @tool
    async def book(city: str) -> str:
        """Book a trip."""
        runs.append(city)
        return "booked"

    turn = AssistantMessage(
        "", [ToolCall("b", "book", '{"city": "Lisbon"}'), ToolCall("f", "final_answer", GOOD)]
    )
    model = ScriptedChatModel([turn])
    agent = ReactAgent("a", model, tools=[book], output_type=Trip, output_mode="tool")
    result = await agent.invoke("plan")
    assert result.output == Trip("Lisbon", 3)
    assert runs == []
    answered = result.messages[2]
    assert isinstance(answered, ToolResponseMessage)
    assert answered.responses[0] == ToolResponse(
        "b", "book", "Error: not run: the final answer ended the run.", is_error=True
    )


async def test_final_answers_that_never_fit_raise() -> None:
    """With output_retries=1, two final answers that do not fit → OutputParseError."""
    model = ScriptedChatModel([final(BAD), final(BAD, "f2")])
    agent = ReactAgent("a", model, output_type=Trip, output_mode="tool")
    with pytest.raises(OutputParseError, match=r"@ output\.days"):
        await agent.invoke("plan")
    assert len(model.requests) == 2


async def test_a_text_answer_in_tool_mode_is_told_to_call_the_tool() -> None:
    """In tool mode a text answer that is not the JSON is sent back, naming the tool."""
    model = ScriptedChatModel(["Lisbon, 3 days", final(GOOD)])
    agent = ReactAgent("a", model, output_type=Trip, output_mode="tool")
    result = await agent.invoke("plan")
    assert result.output == Trip("Lisbon", 3)
    told = model.requests[1].messages[-1]
    assert isinstance(told, UserMessage)
    assert told.text.endswith(
        "Answer again. Call the final_answer tool with arguments that fit its schema."
    )


async def test_a_thread_goes_on_after_a_final_answer() -> None:
    """After a final answer the thread is finished: new input continues it."""
    model = ScriptedChatModel([final(GOOD), final(GOOD.replace("3", "4"), "f2")])
    agent = ReactAgent("a", model, output_type=Trip, output_mode="tool", saver=MemorySaver())
    config = RunnableConfig(thread_id="t")
    await agent.invoke("plan", config)
    again = await agent.invoke("one more day", config)
    assert again.output == Trip("Lisbon", 4)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"output_type": dict[str, int], "output_mode": "tool"}, TypeError),
        ({"output_type": Trip, "output_mode": "json"}, ValueError),
        ({"output_type": Trip, "output_retries": -1}, ValueError),
    ],
)
async def test_bad_output_options_are_refused_at_construction(
    options: dict[str, Any], error: type[Exception]
) -> None:
    """Tool mode needs an attrs class; an unknown mode or negative retries are refused."""
    with pytest.raises(error):
        ReactAgent("a", ScriptedChatModel([]), **options)

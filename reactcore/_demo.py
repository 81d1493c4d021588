"""``reactcore demo``: a small agent with two tools in parallel, its events printed as
they happen — on a scripted model with no set-up, or on an OpenAI-compatible endpoint."""

from __future__ import annotations

import argparse
import os
import time

import anyio

from ._agent import ReactAgent
from ._events import (
    Event,
    ModelCallFinished,
    ModelCallStarted,
    ModelDelta,
    RunFailed,
    RunFinished,
    RunInterrupted,
    StateUpdated,
    ToolCallCancelled,
    ToolCallFinished,
    ToolCallStarted,
    ToolCallTimedOut,
)
from ._messages import AssistantMessage, ToolCall, ToolResponseMessage
from ._tools import tool
from .models.base import ChatModel, ModelRequest
from .models.openai import OpenAIChatModel
from .models.scripted import ScriptedChatModel

QUESTION = "What is the weather in Paris today, and how many people live there?"


@tool
async def weather(city: str) -> str:
    """Today's weather in a city (an async tool: 0.3 s of network I/O)."""
    await anyio.sleep(0.3)
    return {"Paris": "sunny, 21 °C", "Oslo": "snow, -4 °C"}.get(city, "cloudy, 15 °C")


@tool
def population(city: str) -> int:
    """How many people live in a city (a blocking tool: 0.2 s in a worker thread)."""
    time.sleep(0.2)
    return {"Paris": 2_102_650, "Oslo": 717_710}.get(city, 1_000_000)


def _final_answer(request: ModelRequest) -> AssistantMessage:
    answers = [m for m in request.messages if isinstance(m, ToolResponseMessage)][-1]
    found = {r.name: r.response_data for r in answers.responses}
    return AssistantMessage(
        f"In Paris it is {found['weather']} today, and {int(found['population']):,} "
        "people live there."
    )


def _scripted_model() -> ScriptedChatModel:
    calls = [
        ToolCall("call_1", "weather", '{"city": "Paris"}'),
        ToolCall("call_2", "population", '{"city": "Paris"}'),
    ]
    first = AssistantMessage("Let me look up both at once.", calls)
    return ScriptedChatModel([first, _final_answer], chunk_size=5)


def demo_model(args: argparse.Namespace) -> ChatModel | str:
    """The demo's model, or why a real endpoint cannot be used."""
    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL")
    name = args.model or os.environ.get("REACTCORE_MODEL")
    if args.scripted or not (base_url or name):
        return _scripted_model()
    if not name:
        return "a real endpoint needs a model name: pass --model or set REACTCORE_MODEL"
    if not os.environ.get("OPENAI_API_KEY"):
        return (
            "a real endpoint needs an API key: set OPENAI_API_KEY (any value for a local "
            "server that takes none)"
        )
    return OpenAIChatModel(name, base_url=base_url)


class _Printer:
    """Prints a run's events as they come: one line each, model text streamed inline."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.streaming = False
        self.exit_code = 1

    def _line(self, kind: str, text: str, *, end: str = "\n") -> None:
        elapsed = time.perf_counter() - self.start
        print(f"{elapsed:6.3f}s  {kind:<6} {text}", end=end, flush=True)

    def _stop_streaming(self) -> None:
        if self.streaming:
            print(flush=True)
            self.streaming = False

    def show(self, event: Event) -> None:
        if isinstance(event, ModelDelta):
            if event.text:
                if not self.streaming:
                    self._line("model", "", end="")
                    self.streaming = True
                print(event.text, end="", flush=True)
            return
        self._stop_streaming()
        if isinstance(event, ModelCallStarted):
            self._line("model", f"asked (call {event.iteration + 1})")
        elif isinstance(event, ModelCallFinished):
            names = ", ".join(c.name for c in event.message.tool_calls)
            self._line("model", f"answered: tool calls {names}" if names else "answered")
        elif isinstance(event, ToolCallStarted):
            self._line("tool", f"started  {event.call_id} {event.name}({event.arguments})")
        elif isinstance(event, ToolCallFinished):
            outcome = "failed" if event.is_error else "finished"
            self._line("tool", f"{outcome} {event.call_id} {event.name} in {event.duration:.3f} s")
        elif isinstance(event, ToolCallTimedOut):
            self._line("tool", f"timed out {event.call_id} {event.name} after {event.timeout:g} s")
        elif isinstance(event, ToolCallCancelled):
            self._line("tool", f"cancelled {event.call_id} {event.name}")
        elif isinstance(event, StateUpdated):
            self._line("state", f"{event.node}: {', '.join(event.keys)}")
        elif isinstance(event, RunFinished):
            self._line("done", event.result.text)
            self.exit_code = 0
        elif isinstance(event, RunFailed):
            self._line("failed", f"{type(event.error).__name__}: {event.error}")
        elif isinstance(event, RunInterrupted):
            self._line("paused", f"waiting for approval of {len(event.calls)} calls")


async def run_demo(model: ChatModel, question: str) -> int:
    agent = ReactAgent(
        "demo",
        model,
        tools=[weather, population],
        system_prompt="You answer questions about cities. Call the tools you need at once.",
        parallel_tool_execution=True,
    )
    printer = _Printer(time.perf_counter())
    try:
        async with agent.stream(question) as events:
            async for event in events:
                printer.show(event)
    finally:
        if isinstance(model, OpenAIChatModel):
            await model.aclose()
    return printer.exit_code

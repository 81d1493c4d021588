"""A Starlette service running agents: start a run, stream its events, cancel one tool
call or the whole run. Offline: a ScriptedChatModel stands in for the model.

    POST   /runs                              {"input": "Lisbon"} → {"run_id": ...}
    GET    /runs/{run_id}                     its status, and its answer or error
    GET    /runs/{run_id}/events              its events, as server-sent events
    POST   /runs/{run_id}/tools/{call_id}/cancel[?reason=...]  → {"cancelled": true}
    DELETE /runs/{run_id}                     cancel the run

The recipe, for any ASGI app:

- Runs live in a task group owned by the app's lifespan (``Runs.lifespan``): a request
  starts a run with ``await group.start(...)`` and gets its handle back; when the server
  stops, the runs still going are cancelled, so none outlives the app.
- Events are streamed as server-sent events in their documented JSON form:
  ``event: <type>`` and ``data: <json.dumps(reactcore.to_json(event))>``; a client reads
  them back with ``reactcore.event_from_json``.
- However the response ends (the client left, the server stopped), the run's event
  stream is closed, so the run never waits for a reader that is gone.
- ``await run.cancel_tool(call_id, reason)`` cancels one call (the model is told why);
  it answers ``{"cancelled": false}`` when the call had already finished (its answer
  kept), is still queued, or is unknown;
  ``await run.cancel()`` cancels the run (its stream ends with ``run_failed``).

Only anyio is used, so the same app runs on trio too (see ``trio_service.py``). Needs the
``examples`` extra (``pip install -e '.[examples]'``).

    python examples/asyncio_service.py
    curl -s -X POST localhost:8000/runs -d '{"input": "Lisbon"}'
    curl -N localhost:8000/runs/<run_id>/events
    curl -s -X POST localhost:8000/runs/<run_id>/tools/call_hotels/cancel
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import attrs
from anyio.abc import TaskGroup, TaskStatus
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from reactcore import (
    AgentRun,
    AssistantMessage,
    Event,
    EventStream,
    ModelRequest,
    ReactAgent,
    RunCancelled,
    ToolCall,
    ToolResponseMessage,
    to_json,
    tool,
)
from reactcore.testing import ScriptedChatModel

# --- the agent ------------------------------------------------------------------------


@tool
async def weather(city: str) -> str:
    """Today's weather in a city."""
    await anyio.sleep(0.1)
    return f"sunny, 24 °C in {city}"


@tool
async def find_hotels(city: str) -> list[str]:
    """Hotels with a room free tonight: a slow search (30 s), worth cancelling."""
    await anyio.sleep(30)
    return [f"Grand Hotel {city}", f"{city} Youth Hostel"]


def travel_model(request: ModelRequest) -> AssistantMessage:
    """The stand-in model: it asks for both tools, then reports what they answered."""
    last = request.messages[-1]
    if isinstance(last, ToolResponseMessage):
        found = "; ".join(f"{r.name}: {r.response_data}" for r in last.responses)
        return AssistantMessage(f"Here is what I found. {found}")
    city = json.dumps({"city": last.text})
    calls = [
        ToolCall("call_weather", "weather", city),
        ToolCall("call_hotels", "find_hotels", city),
    ]
    return AssistantMessage("", calls)


def travel_agent() -> ReactAgent:
    """A fresh agent for one run."""
    # A ScriptedChatModel answers a fixed number of requests (and keeps each one), so
    # every run gets its own; an agent on a real model would serve all the runs.
    model = ScriptedChatModel([travel_model, travel_model])
    return ReactAgent("travel", model, tools=[weather, find_hotels], parallel_tool_execution=True)


# --- the runs -------------------------------------------------------------------------


@attrs.define(eq=False)
class RunRecord:
    """A run the app started: its handle, how it ended once it has, and whether a client
    is reading its events (``listening``)."""

    run: AgentRun
    status: str = "running"
    text: str | None = None
    error: str | None = None
    listening: bool = False

    async def follow(self) -> None:
        """Wait for the run's end and record how it ended."""
        try:
            result = await self.run.result()
        except RunCancelled:
            self.status = "cancelled"
        except Exception as exc:  # the run's failure is its outcome, reported by GET
            self.status, self.error = "failed", f"{type(exc).__name__}: {exc}"
        else:
            self.status, self.text = result.status, result.text

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run.run_id,
            "status": self.status,
            "text": self.text,
            "error": self.error,
            "listening": self.listening,
        }


@attrs.define(eq=False)
class Runs:
    """The app's runs, each in a task of the task group its lifespan owns.

    ``live`` counts the runs whose task has not ended; ``closed`` is set once the group
    has exited, so no run is left.
    """

    make_agent: Callable[[], ReactAgent]
    records: dict[str, RunRecord] = attrs.field(factory=dict)
    live: int = 0
    closed: bool = False
    _group: TaskGroup | None = None

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()  # the server is stopping: so are the runs
        self.closed = True

    async def start(self, text: str) -> RunRecord:
        """Start a run in the group; its record once it has started."""
        if self._group is None:
            raise RuntimeError("the app is not serving (its lifespan is not running)")
        record: RunRecord = await self._group.start(self._run, text)
        return record

    async def _run(self, text: str, *, task_status: TaskStatus[RunRecord]) -> None:
        self.live += 1
        try:
            async with self.make_agent().start(text) as run:
                record = self.records[run.run_id] = RunRecord(run)
                task_status.started(record)
                await record.follow()
        finally:
            self.live -= 1


# --- events as server-sent events -----------------------------------------------------


def server_sent_event(event: Event) -> str:
    """One event as a server-sent event: its JSON ``type``, and its JSON form as data."""
    data = to_json(event)
    return f"event: {data['type']}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


async def _sse(events: EventStream) -> AsyncIterator[str]:
    async for event in events:
        yield server_sent_event(event)


class EventSourceResponse(StreamingResponse):
    """A run's events: ``event: <type>`` and ``data: <its JSON form>`` for each."""

    def __init__(self, record: RunRecord) -> None:
        events = record.run.events()  # RuntimeError if the run has a reader already
        headers = {"cache-control": "no-cache"}
        super().__init__(_sse(events), media_type="text/event-stream", headers=headers)
        self.events = events
        self.record = record
        record.listening = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # However the response ends (the client left, the server stopped), stop
        # listening, so the run never waits for a reader that is gone.
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.events.aclose()
            self.record.listening = False


# --- the routes -----------------------------------------------------------------------


def _record(request: Request) -> RunRecord:
    runs: Runs = request.app.state.runs
    run_id = request.path_params["run_id"]
    record = runs.records.get(run_id)
    if record is None:
        raise HTTPException(404, f"no run {run_id!r}")
    return record


async def create_run(request: Request) -> Response:
    try:
        text = (await request.json())["input"]
    except (ValueError, KeyError, TypeError):
        text = None
    if not isinstance(text, str) or not text.strip():
        raise HTTPException(422, 'expected a JSON body {"input": "<a city>"}')
    record = await request.app.state.runs.start(text)
    return JSONResponse({"run_id": record.run.run_id}, 201)


async def get_run(request: Request) -> Response:
    return JSONResponse(_record(request).to_json())


async def run_events(request: Request) -> Response:
    try:
        return EventSourceResponse(_record(request))
    except RuntimeError as exc:  # one reader per run
        raise HTTPException(409, str(exc)) from exc


async def cancel_tool(request: Request) -> Response:
    reason = request.query_params.get("reason", "cancelled through the API")
    cancelled = await _record(request).run.cancel_tool(request.path_params["call_id"], reason)
    return JSONResponse({"cancelled": cancelled})


async def cancel_run(request: Request) -> Response:
    cancelled = await _record(request).run.cancel()
    return JSONResponse({"cancelled": cancelled})


async def _error_json(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return JSONResponse({"error": exc.detail}, exc.status_code)


def create_app(make_agent: Callable[[], ReactAgent] = travel_agent) -> Starlette:
    """The service; ``app.state.runs`` holds its runs."""
    runs = Runs(make_agent)
    routes = [
        Route("/runs", create_run, methods=["POST"]),
        Route("/runs/{run_id}", get_run, methods=["GET"]),
        Route("/runs/{run_id}", cancel_run, methods=["DELETE"]),
        Route("/runs/{run_id}/events", run_events, methods=["GET"]),
        Route("/runs/{run_id}/tools/{call_id}/cancel", cancel_tool, methods=["POST"]),
    ]
    app = Starlette(
        routes=routes, lifespan=runs.lifespan, exception_handlers={HTTPException: _error_json}
    )
    app.state.runs = runs
    return app


# --- tracing (optional: pip install 'reactcore[otel]' opentelemetry-sdk) --------------


class RequestSpans:
    """ASGI middleware: a SERVER span per HTTP request, current while the app handles it
    (as an OpenTelemetry ASGI instrumentation would make), so the run a request starts
    is traced under that request's span."""

    def __init__(self, app: ASGIApp, tracer: Any) -> None:
        self.app, self.tracer = app, tracer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from opentelemetry.trace import SpanKind

        name = f"{scope['method']} {scope['path']}"
        with self.tracer.start_as_current_span(name, kind=SpanKind.SERVER):
            await self.app(scope, receive, send)


def traced_app(tracer_provider: Any) -> Starlette:
    """The service with OpenTelemetry on ``tracer_provider``: a span per request, and
    under ``POST /runs`` the run's ``invoke_agent travel`` span with its ``chat`` and
    ``execute_tool`` spans (``python examples/asyncio_service.py --otel`` prints them)."""

    def make_agent() -> ReactAgent:
        return attrs.evolve(travel_agent(), tracer_provider=tracer_provider)

    app = create_app(make_agent)
    app.add_middleware(RequestSpans, tracer=tracer_provider.get_tracer("asyncio_service"))
    return app


def console_tracing() -> Any:
    """A tracer provider printing each span to stdout when it ends (the SDK's console
    exporter); a real service exports to its collector instead."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    return provider


if __name__ == "__main__":
    import sys

    import uvicorn

    app = traced_app(console_tracing()) if "--otel" in sys.argv else create_app()
    # An open event stream would hold a graceful shutdown until its run ends: give the
    # streams 5 s, then uvicorn cancels them (and the lifespan cancels the runs).
    uvicorn.run(app, host="127.0.0.1", port=8000, timeout_graceful_shutdown=5)

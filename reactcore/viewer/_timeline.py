"""Building a ``Timeline`` from a run's events, one at a time: from an event log, or live.

``TimelineBuilder.add(t, event)`` takes each event in its JSON form (``to_json(event)``)
at ``t`` seconds; ``builder.timeline()`` is the picture so far (call it as often as the
picture is redrawn: it costs ``O(n log n)`` in the spans, and adding an event ``O(1)``).
``Timeline.read(path)`` (``timeline_of_file``) does both for an event log.

What the events say, and how it is drawn:

- ``model_call_started`` … ``model_call_finished``: a model span; its ``model_delta``s give
  the streamed progress (characters over time, a few points kept however many deltas
  came); ``model_call_retried`` marks a retry and restarts the progress (the deltas before
  it belonged to the failed attempt).
- The answer's tool calls: each is *requested* when ``model_call_finished`` names it; the
  time to its ``tool_call_started`` (sent once it holds its slots) is *queued*; then it
  runs until ``tool_call_finished`` (``error`` when ``is_error``), ``tool_call_timed_out``
  or ``tool_call_cancelled`` (its ``reason``: who asked and why). A bar is as long as the
  run measured the call (``duration``; a timeout's ``timeout``) when the end event says,
  else until its end event.
- ``run_interrupted``: the run waits for a human to decide on its calls until the next
  leg's first event; the bars of the answer's calls not started yet show the wait.
- ``run_failed``: the run's end, with its error; calls still running end with it
  (``cancelled`` when the run was cancelled, else ``unfinished``).
- ``subagent_event``: the subagent's events, drawn under the call that ran it.
- Events of a type this version does not know are skipped (counted in a warning).

Abandoned worker threads are not in the events (the run reports them in its logs,
``tool_thread_abandoned``), so the timeline cannot show them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from math import isfinite
from typing import Any

import attrs

from ._lanes import layout
from ._log import EventLogError, TimedEvent, iter_event_log
from ._model import (
    ApprovalWait,
    ModelSpan,
    Outcome,
    Retry,
    Segment,
    Timeline,
    ToolSpan,
)

PREVIEW_CHARS = 300
"""How much of a call's arguments, an answer or an error the timeline keeps."""

_PROGRESS_POINTS = 64  # at most about twice this many points of streamed progress per call


def _preview(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


_JSON_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    dict: "an object",
    list: "an array",
}


def _field(event: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = event.get(name)
    wrong = isinstance(value, bool) and kind is not bool
    if not isinstance(value, kind) or wrong or (isinstance(value, float) and not isfinite(value)):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        expected = " or ".join(_JSON_NAMES.get(k, k.__name__) for k in kinds)
        got = "missing" if name not in event else f"{type(value).__name__} {value!r:.40}"
        where = event.get("type") if isinstance(event.get("type"), str) else "an event"
        raise ValueError(f"{where}: field {name!r} should be {expected}, got {got}")
    return value


def _optional(event: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    return None if event.get(name) is None else _field(event, name, kind)


# --- what is known so far ---------------------------------------------------------------


@attrs.define
class _Call:
    key: str
    call_id: str
    name: str
    parent: str | None
    requested: float | None = None
    arguments: str = ""
    approval: float | None = None  # when the run paused for a decision on it
    answered: float | None = None  # when the next leg began
    dropped: float | None = None  # when its run went on without starting it
    started: float | None = None
    ended: float | None = None
    state: str | None = None
    reason: str | None = None
    duration: float | None = None
    timeout: float | None = None
    response: str = ""


@attrs.define
class _Model:
    key: str
    iteration: int
    purpose: str
    start: float
    parent: str | None
    end: float | None = None
    state: str = "running"
    retries: list[Retry] = attrs.Factory(list)
    progress: list[tuple[float, int]] = attrs.Factory(list)
    step: int = 1  # keep every step-th point of progress
    deltas: int = 0
    characters: int = 0
    calls: int = 0
    text: str = ""
    tokens: int | None = None

    def delta(self, t: float, characters: int) -> None:
        self.deltas += 1
        self.characters += characters
        if self.deltas % self.step == 0:
            self.progress.append((t, self.characters))
            if len(self.progress) > 2 * _PROGRESS_POINTS:
                self.progress = self.progress[1::2]
                self.step *= 2


@attrs.define
class _Run:
    """One run: the top one (``key`` None) or a subagent's (the key of its call)."""

    key: str | None
    agent: str | None = None
    model: _Model | None = None
    waiting: ApprovalWait | None = None
    waiting_for: list[_Call] = attrs.Factory(list)
    pending: list[_Call] = attrs.Factory(list)  # named by the model, not started
    running: dict[str, _Call] = attrs.Factory(dict)
    ended: float | None = None

    def call_key(self, call_id: str) -> str:
        return call_id if self.key is None else f"{self.key}/{call_id}"


def _delta_characters(event: Mapping[str, Any]) -> int:
    size = len(_optional(event, "text", str) or "") + len(_optional(event, "reasoning", str) or "")
    piece = event.get("tool_call")
    if isinstance(piece, dict):
        for name in ("name", "arguments"):
            value = piece.get(name)
            size += len(value) if isinstance(value, str) else 0
    return size


def _response_text(event: Mapping[str, Any]) -> str:
    response = event.get("response")
    if not isinstance(response, dict):
        return ""
    data = response.get("response_data")
    return _preview(data if isinstance(data, str) else repr(data))


# --- the builder ------------------------------------------------------------------------


@attrs.define(eq=False)
class TimelineBuilder:
    """Builds a ``Timeline`` from events added one at a time (see the module docstring).

    ``timed`` False says the times are event numbers, not seconds (a log without times);
    ``warnings`` are shown above the picture.
    """

    timed: bool = True
    warnings: list[str] = attrs.Factory(list)
    _runs: dict[str | None, _Run] = attrs.field(factory=dict, init=False)
    _calls: dict[str, _Call] = attrs.field(factory=dict, init=False)
    _models: list[_Model] = attrs.field(factory=list, init=False)
    _waits: list[ApprovalWait] = attrs.field(factory=list, init=False)
    _outcome: Outcome = attrs.field(default=Outcome("running", 0.0), init=False)
    _last: float = attrs.field(default=0.0, init=False)
    events: int = attrs.field(default=0, init=False)
    """How many events were added."""
    _unknown: dict[str, int] = attrs.field(factory=dict, init=False)

    def add(self, t: float, event: Mapping[str, Any]) -> None:
        """Take ``event`` (its JSON form) at ``t`` seconds. ``ValueError`` when it is not
        an event's JSON form (the message names the field)."""
        self.events += 1
        self._last = max(self._last, t)
        self._add(t, event, self._run(None))

    def _run(self, key: str | None, agent: str | None = None) -> _Run:
        run = self._runs.get(key)
        if run is None:
            run = self._runs[key] = _Run(key, agent)
        return run

    def _call(self, run: _Run, call_id: str, name: str) -> _Call:
        key = run.call_key(call_id)
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = _Call(key, call_id, name, run.key)
        return call

    def _add(self, t: float, event: Mapping[str, Any], run: _Run) -> None:
        kind = _field(event, "type", str)
        if run.waiting is not None and kind != "run_interrupted":
            self._answered(t, run)
        handler = _HANDLERS.get(kind)
        if handler is None:
            self._unknown[kind] = self._unknown.get(kind, 0) + 1
            return
        handler(self, t, event, run)

    # --- each event ---------------------------------------------------------------------

    def _subagent(self, t: float, event: Mapping[str, Any], run: _Run) -> None:
        path = _field(event, "path", list)
        if not path:
            raise ValueError("subagent_event: field 'path' is empty")
        inner = run
        for step in path:
            if not isinstance(step, dict):
                raise ValueError("subagent_event: a step of 'path' is not an object")
            call_id = _field(step, "call_id", str)
            agent = _field(step, "agent", str)
            call = self._call(inner, call_id, agent)
            if call.started is None:  # a log that starts inside the subagent's call
                call.started = t
                inner.running[call.key] = call
            inner = self._run(call.key, agent)
        self._add(t, _field(event, "event", dict), inner)

    def _model_started(self, t: float, event: Mapping[str, Any], run: _Run) -> None:
        self._drop_pending(t, run)
        purpose = _optional(event, "purpose", str) or "agent"
        key = f"{run.key or ''}#{len(self._models)}"
        run.model = _Model(key, _field(event, "iteration", int), purpose, t, run.key)
        self._models.append(run.model)

    def _open_model(self, t: float, run: _Run) -> _Model:
        if run.model is None:  # a log that starts inside a model call
            self._model_started(t, {"type": "model_call_started", "iteration": 0}, run)
            assert run.model is not None
        return run.model

    def _delta(self, t: float, event: Mapping[str, Any], run: _Run) -> None:
        self._open_model(t, run).delta(t, _delta_characters(event))

    def _retried(self, t: float, event: Mapping[str, Any], run: _Run) -> None:
        model = self._open_model(t, run)
        retry = Retry(
            t,
            _field(event, "attempt", int),
            _preview(_field(event, "reason", str)),
            float(_field(event, "delay_s", (int, float))),
            _optional(event, "model", str),
        )
        model.retries.append(retry)
        model.deltas = model.characters = 0
        model.progress, model.step = [(t, 0)], 1

    def _model_finished(self, t: float, event: Mapping[str, Any], run: _Run) -> None:
        model = self._open_model(t, run)
        message = _field(event, "message", dict)
        calls = _optional(message, "tool_calls", list) or []
        usage = _optional(event, "usage", dict)
        model.end, model.state = t, "finished"
        model.text = _preview(_optional(message, "text", str) or "")
        model.calls = len(calls)
        if usage is not None:
            model.tokens = _optional(usage, "total_tokens", int)
        model.progress.append((t, model.characters))
        run.model = None
        for item in calls:
            if not isinstance(item, dict):
                raise ValueError("model_call_finished: a tool call is not an object")
            call = self._call(run, _field(item, "id", str), _field(item, "name", str))
            call.requested = t
            call.arguments = _preview(_field(item, "arguments", str))
            run.pending.append(call)

    def _tool_started(self, t: float, event: Mapping[str, Any], run: _Run) -> None:
        call = self._call(run, _field(event, "call_id", str), _field(event, "name", str))
        call.started = t
        call.dropped = None
        if not call.arguments:
            call.arguments = _preview(_field(event, "arguments", str))
        run.running[call.key] = call

    def _ended(
        self, t: float, event: Mapping[str, Any], run: _Run, state: str, reason: str | None
    ) -> _Call:
        call = self._call(run, _field(event, "call_id", str), _field(event, "name", str))
        if call.started is None:  # a log that starts while it runs
            call.started = t
        call.ended, call.state, call.reason = t, state, reason
        call.response = _response_text(event)
        run.running.pop(call.key, None)
        return call

    def _tool_finished(self, t: float, event: Mapping[str, Any], run: _Run) -> None:
        error = _field(event, "is_error", bool)
        call = self._ended(t, event, run, "error" if error else "finished", None)
        call.duration = float(_field(event, "duration", (int, float)))
        if error:
            call.reason = call.response

    def _timed_out(self, t: float, event: Mapping[str, Any], run: _Run) -> None:
        timeout = float(_field(event, "timeout", (int, float)))
        call = self._ended(t, event, run, "timed_out", f"timed out after {timeout:g} s")
        call.timeout = timeout

    def _cancelled(self, t: float, event: Mapping[str, Any], run: _Run) -> None:
        why = _optional(event, "reason", str)
        reason = "cancelled by the caller" + (f": {_preview(why)}" if why else "")
        call = self._ended(t, event, run, "cancelled", reason)
        duration = _optional(event, "duration", (int, float))
        if duration is not None:  # how long it ran until it stopped, as the run measured
            call.duration = float(duration)

    def _finished(self, t: float, event: Mapping[str, Any], run: _Run) -> None:
        result = _field(event, "result", dict)
        self._end_run(t, run, "unfinished", "the run ended while it ran")
        if run.key is None:
            text = _preview(_optional(result, "text", str) or "")
            self._outcome = Outcome("finished", t, None, text)

    def _failed(self, t: float, event: Mapping[str, Any], run: _Run) -> None:
        error = _field(event, "error", dict)
        name = _field(error, "type", str)
        message = _preview(f"{name}: {_field(error, 'message', str)}")
        cancelled = name == "RunCancelled"
        if cancelled:
            self._end_run(t, run, "cancelled", "cancelled with the run")
        else:
            self._end_run(t, run, "unfinished", f"the run failed ({name})")
        if run.model is not None:
            run.model.end, run.model.state, run.model = t, "failed", None
        if run.key is None:
            self._outcome = Outcome("cancelled" if cancelled else "failed", t, message)

    def _interrupted(self, t: float, event: Mapping[str, Any], run: _Run) -> None:
        calls = _field(event, "calls", list)
        waiting: list[_Call] = []
        for item in calls:
            if not isinstance(item, dict):
                raise ValueError("run_interrupted: a call is not an object")
            call = self._call(run, _field(item, "id", str), _field(item, "name", str))
            call.approval, call.answered = t, None
            waiting.append(call)
        run.waiting = ApprovalWait(t, t, tuple(c.name for c in waiting), False, 0, run.key)
        # The calls of the same answer that need no decision wait for the pause as well.
        for call in run.pending:
            if call not in waiting and call.started is None:
                call.approval, call.answered = t, None
                waiting.append(call)
        run.waiting_for = waiting
        run.pending = []
        if run.key is None:
            self._outcome = Outcome("interrupted", t)

    def _end_run(self, t: float, run: _Run, state: str, reason: str) -> None:
        """The run ended at ``t``: calls still running end with it, its subagents' too."""
        inside = f"{run.key}/"
        for other in self._runs.values():
            if other is run or run.key is None or (other.key or "").startswith(inside):
                for call in other.running.values():
                    if call.ended is None:
                        call.ended, call.state, call.reason = t, state, reason
                other.running.clear()
                self._drop_pending(t, other)
                if other.model is not None and other is not run:
                    other.model.end, other.model.state, other.model = t, "failed", None
                other.ended = other.ended if other.ended is not None else t

    def _drop_pending(self, t: float, run: _Run) -> None:
        for call in run.pending:
            if call.started is None:
                call.dropped = t
        run.pending = []

    def _answered(self, t: float, run: _Run) -> None:
        """The next leg of a paused run began at ``t``."""
        assert run.waiting is not None
        self._waits.append(attrs.evolve(run.waiting, end=t, answered=True))
        for call in run.waiting_for:
            call.answered = t
            run.pending.append(call)
        run.waiting, run.waiting_for = None, []
        if run.key is None:
            self._outcome = Outcome("running", t)

    # --- the picture --------------------------------------------------------------------

    def timeline(self, now: float | None = None) -> Timeline:
        """The picture of the events so far; spans still open end at ``now`` (default:
        the last event's time)."""
        end = self._last if now is None else max(now, self._last)
        tools = [self._span(call, end) for call in self._calls.values()]
        models = [
            ModelSpan(
                m.key,
                m.iteration,
                m.purpose,
                m.start,
                end if m.end is None else m.end,
                "running" if m.end is None else m.state,  # type: ignore[arg-type]
                0,
                m.parent,
                self._agent(m.parent),
                tuple(m.retries),
                tuple(m.progress),
                m.deltas,
                m.characters,
                m.calls,
                m.text,
                m.tokens,
            )
            for m in self._models
        ]
        waits = list(self._waits)
        waits += [attrs.evolve(r.waiting, end=end) for r in self._runs.values() if r.waiting]
        agents = {k: r.agent for k, r in self._runs.items() if k is not None and r.agent}
        laid = layout(tools, models, waits, agents)
        warnings = list(self.warnings)
        if self._unknown:
            kinds = ", ".join(f"{k} ({n})" for k, n in sorted(self._unknown.items()))
            warnings.append(f"events of types this version does not know were skipped: {kinds}")
        outcome = self._outcome
        if outcome.status == "running":
            outcome = attrs.evolve(outcome, t=end)
        return Timeline(
            max(end, 1e-6),
            laid.lanes,
            laid.tools,
            laid.models,
            laid.waits,
            outcome,
            self.events,
            self.timed,
            tuple(warnings),
        )

    def _agent(self, key: str | None) -> str | None:
        run = self._runs.get(key)
        return None if run is None else run.agent

    @staticmethod
    def _stop(call: _Call, end: float) -> float:
        """When a started call stopped running: by the run's own measure when its end
        event has one (``duration``; a timeout's clock starts with the call), which no
        delay in sending the event shifts; else when its end event was sent."""
        assert call.started is not None
        if call.ended is None:
            return end
        if call.duration is not None:
            return call.started + call.duration
        if call.state == "timed_out" and call.timeout is not None:
            return call.started + call.timeout
        return call.ended

    def _span(self, call: _Call, end: float) -> ToolSpan:
        segments: list[Segment] = []
        waited_from = call.requested
        if call.approval is not None:
            until = end if call.answered is None else call.answered
            segments.append(Segment("approval", call.approval, until))
            waited_from = until
        if call.started is not None:
            if waited_from is not None and call.started > waited_from:
                segments.append(Segment("queued", waited_from, call.started))
            segments.append(Segment("running", call.started, self._stop(call, end)))
            state = call.state or "running"
        else:
            assert waited_from is not None
            stop = end if call.dropped is None else call.dropped
            if call.answered is not None or call.approval is None:
                segments.append(Segment("queued", waited_from, max(stop, waited_from)))
            state = "not_run"
        return ToolSpan(
            call.key,
            call.call_id,
            call.name,
            state,  # type: ignore[arg-type]
            tuple(segments),
            0,
            call.parent,
            self._agent(call.parent),
            call.reason,
            call.duration,
            call.timeout,
            call.arguments,
            call.response,
        )


_HANDLERS = {
    "subagent_event": TimelineBuilder._subagent,
    "model_call_started": TimelineBuilder._model_started,
    "model_delta": TimelineBuilder._delta,
    "model_call_retried": TimelineBuilder._retried,
    "model_call_finished": TimelineBuilder._model_finished,
    "tool_call_started": TimelineBuilder._tool_started,
    "tool_call_finished": TimelineBuilder._tool_finished,
    "tool_call_timed_out": TimelineBuilder._timed_out,
    "tool_call_cancelled": TimelineBuilder._cancelled,
    "state_updated": lambda *_: None,
    "run_finished": TimelineBuilder._finished,
    "run_interrupted": TimelineBuilder._interrupted,
    "run_failed": TimelineBuilder._failed,
}


def timeline_of(events: Iterable[TimedEvent], warnings: Iterable[str] = ()) -> Timeline:
    """The timeline of ``events`` (drawn as untimed when the first is); a bad one raises
    ``EventLogError`` naming its line. ``warnings`` are read once all events are."""
    builder = TimelineBuilder()
    for item in events:
        if builder.events == 0:
            builder.timed = item.timed
        try:
            builder.add(item.t, item.event)
        except ValueError as exc:
            raise EventLogError(str(exc), line=item.line) from None
    builder.warnings.extend(warnings)
    return builder.timeline()


def timeline_of_file(path: str | os.PathLike[str]) -> Timeline:
    """The timeline of the event log at ``path``, read line by line (memory stays bounded
    by the picture, not the file); ``EventLogError`` names a bad line."""
    warnings: list[str] = []
    with open(path, "rb") as file:
        return timeline_of(iter_event_log(file, warnings), warnings)

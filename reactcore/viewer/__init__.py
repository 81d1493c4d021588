"""Seeing a run: its events drawn on a time axis.

Record a run's events with their times (``open_event_log``), then draw them: ``reactcore
timeline EVENTS.jsonl -o run.html`` (or ``timeline_html(timeline_of_file(path))``) writes
one self-contained HTML page: one lane per tool call running at once, the model calls
between batches with their streamed output, queueing for limiter slots, timeouts,
cancellations, errors, retries, pauses for approval, and subagents under the calls that
ran them. ``TimelineBuilder`` builds the same picture from events as they come.
``await timeline_of_thread(saver, thread_id)`` draws a thread that was not recorded from
its checkpoints (step by step: ``reactcore timeline --sqlite PATH --thread ID``).

``viewer_app(app, authorize=...)``: the live viewer, an operator's page mounted beside a
served app (``reactcore.serving``): its runs drawn as they go, steered from the page
(cancel a call or the run, answer a pause for approval).
"""

from __future__ import annotations

from ._app import viewer_app as viewer_app
from ._log import EventLog as EventLog
from ._log import EventLogError as EventLogError
from ._log import TimedEvent as TimedEvent
from ._log import iter_event_log as iter_event_log
from ._log import open_event_log as open_event_log
from ._log import read_event_log as read_event_log
from ._model import ApprovalWait as ApprovalWait
from ._model import Lane as Lane
from ._model import ModelSpan as ModelSpan
from ._model import Outcome as Outcome
from ._model import Retry as Retry
from ._model import Segment as Segment
from ._model import Timeline as Timeline
from ._model import ToolSpan as ToolSpan
from ._page import timeline_html as timeline_html
from ._thread import ThreadNotFound as ThreadNotFound
from ._thread import timeline_of_thread as timeline_of_thread
from ._timeline import TimelineBuilder as TimelineBuilder
from ._timeline import timeline_of as timeline_of
from ._timeline import timeline_of_file as timeline_of_file

__all__ = [
    "ApprovalWait",
    "EventLog",
    "EventLogError",
    "Lane",
    "ModelSpan",
    "Outcome",
    "Retry",
    "Segment",
    "ThreadNotFound",
    "TimedEvent",
    "Timeline",
    "TimelineBuilder",
    "ToolSpan",
    "iter_event_log",
    "open_event_log",
    "read_event_log",
    "timeline_html",
    "timeline_of",
    "timeline_of_file",
    "timeline_of_thread",
    "viewer_app",
]

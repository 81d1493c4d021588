"""The exceptions reactcore raises, all under one root.

::

    ReactcoreError
     ├── ToolExecutionError        a tool raised and the exception processor chose to raise
     ├── ToolArgumentError         (also ValueError) the model's arguments do not fit the tool
     ├── ModelError                the model gave no usable answer
     │    ├── ModelHTTPError       an HTTP error status (after retries)
     │    ├── ModelTimeoutError    connect / read / write timed out (after retries)
     │    ├── ModelStreamError     a streamed answer was cut or malformed
     │    └── ModelTruncatedError  the answer hit the token limit where a cut one is unusable
     ├── MaxIterationsExceeded     the model kept calling tools past ``max_iterations``
     ├── CallLimitExceeded         a limit hook with ``exit_behavior="error"`` tripped
 ├── PIIDetectedError          ``PIIRedactionHook`` in ``"block"`` mode found personal data
     ├── RunCancelled              the caller cancelled the run (``run.cancel()``)
     ├── OutputParseError          the final answer does not parse as ``output_type``
     ├── ReportedError             a run's error read back from JSON (``event_from_json``)
     ├── ThreadBusy                another live run owns the thread (``thread_id``)
     │    └── LeaseLost            another owner took over the thread of a stalled run
     ├── SaverError                a saver cannot do what it was asked
     │    ├── SaverUnavailable     the checkpoint database cannot be reached, read or written
     │    ├── DamagedThread        a thread's stored checkpoints lack a record they need
     │    └── ThreadHasForks       ``delete`` of a thread other threads were forked from
     ├── MCPError                  an MCP server cannot be reached, or failed (``reactcore.mcp``)
     ├── PayloadMissing            (also LookupError) a payload store lacks what a run refers to
     ├── ScriptExhaustedError      (also RuntimeError) a ScriptedChatModel ran out of replies
     ├── CassetteError             a cassette cannot be read, or has no recording to replay
     │    └── CassetteMismatchError  what a replayed run sends differs from every recording
     └── RequestRefused            a served agent refuses a client's request (``reactcore.serving``)

Errors of use (a bad option, a state the node cannot work on) are the builtin
``ValueError`` / ``TypeError``: they are bugs in the caller, not run-time failures.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._messages import AssistantMessage, Message, ToolCall


class ReactcoreError(Exception):
    """The root of every run-time error reactcore raises on its own."""


class ToolExecutionError(ReactcoreError):
    """Raised by ``AgentToolNode`` when a tool raised and the exception processor rethrows.

    The tool's own exception is chained as ``__cause__``; ``call`` is the model's call.
    """

    def __init__(self, message: str, *, call: ToolCall) -> None:
        super().__init__(message)
        self.call = call


class ToolArgumentError(ReactcoreError, ValueError):
    """Raised by ``Tool.parse_arguments`` when the model's arguments do not fit the signature.

    The node turns it into an error response naming the parameter, so the model can retry.
    """

    def __init__(self, message: str, *, tool_name: str) -> None:
        super().__init__(message)
        self.tool_name = tool_name


class ModelError(ReactcoreError):
    """Raised when the model could not give an answer (after any retries)."""


class ModelHTTPError(ModelError):
    """Raised by a model client when the endpoint answered with an HTTP error status.

    ``status_code``, ``request_id`` (the provider's, when sent) and ``body`` (an excerpt,
    never the request or its credentials) say what the server said; ``retry_after`` is
    the wait in seconds it asked for (``retry-after-ms`` or ``Retry-After``), if any, which
    every retry honours.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        request_id: str | None = None,
        body: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.request_id = request_id
        self.body = body
        self.retry_after = retry_after


class ModelTimeoutError(ModelError):
    """Raised by a model client when connecting, writing or reading timed out."""


class ModelStreamError(ModelError):
    """Raised when a streamed answer was cut or malformed: never passed on half-made."""


class ModelTruncatedError(ModelError):
    """Raised when the model's answer was cut at its token limit (``finish_reason ==
    "length"``) where a cut answer cannot be used: it carries tool calls (whose arguments
    may be cut), or it is the final answer of an agent with ``output_type`` /
    ``output_schema``. ``message`` is the answer as far as it came.

    A plain text answer cut by the limit is not an error: it is returned, with
    ``finish_reason == "length"``.
    """

    def __init__(self, message: str, *, answer: AssistantMessage) -> None:
        super().__init__(message)
        self.message = answer


class MaxIterationsExceeded(ReactcoreError):
    """Raised by ``ReactAgent`` when ``max_iterations`` model calls gave no final answer.

    ``messages`` holds the conversation so far.
    """

    def __init__(self, message: str, *, messages: Sequence[Message] = ()) -> None:
        super().__init__(message)
        self.messages = list(messages)


class CallLimitExceeded(ReactcoreError):
    """Raised by ``ModelCallLimitHook`` / ``ToolCallLimitHook`` with ``exit_behavior="error"``."""


class PIIDetectedError(ReactcoreError):
    """Raised by ``PIIRedactionHook`` when a detector in ``"block"`` mode finds personal
    data: in the user's input (before the first model call), in a tool's result (the run
    ends: it is not turned into an error result for the model) or in the model's answer.

    ``kinds`` names the detectors that matched (``"email"``, ``"credit_card"`` …), ``where``
    the point (``"user_input"``, ``"tool_result"``, ``"model_output"``); ``call_id`` and
    ``tool`` say which call, for a tool result. The matched values are never in the error,
    its message or its attributes: they must not reach a log either.
    """

    def __init__(
        self,
        message: str,
        *,
        kinds: Sequence[str],
        where: str,
        call_id: str | None = None,
        tool: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kinds = tuple(kinds)
        self.where = where
        self.call_id = call_id
        self.tool = tool


class OutputParseError(ReactcoreError, ValueError):
    """Raised by ``ReactAgent`` when the final answer does not parse as ``output_type``,
    after the model was asked again ``output_retries`` times.

    ``raw`` is the model's last answer (its text, or its ``final_answer`` arguments).
    """

    def __init__(self, message: str, *, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


class RunCancelled(ReactcoreError):
    """Raised by ``AgentRun.result()`` when the run was cancelled with ``run.cancel()``.

    ``messages`` is the conversation so far, with the responses of the tool calls that had
    finished (as a partial ``ToolResponseMessage``); ``state`` is the whole state.
    """

    def __init__(
        self, message: str, *, messages: Sequence[Message] = (), state: Any = None
    ) -> None:
        super().__init__(message)
        self.messages = list(messages)
        self.state = state


class ReportedError(ReactcoreError):
    """The error of a ``RunFailed`` read back by ``event_from_json``: only the original
    exception's class name (``type_name``) and message travel in JSON."""

    def __init__(self, message: str, *, type_name: str) -> None:
        super().__init__(message)
        self.type_name = type_name


class ThreadBusy(ReactcoreError):
    """Raised by ``ReactAgent.start`` / ``invoke`` / ``stream`` when another live run (in
    this process, or another one sharing the saver) owns the thread.

    Raised at once, or after ``RunnableConfig.wait_for_thread`` seconds of waiting for
    the owner to end. ``thread_id`` is the thread; ``holder`` says who owns it, as far as
    the saver knows (e.g. ``"run 3f2a… (pid 4242)"``).
    """

    def __init__(self, thread_id: str, holder: str = "another run") -> None:
        super().__init__(
            f"thread {thread_id!r} is busy: {holder} owns it (wait for it to end, "
            "or pass RunnableConfig(wait_for_thread=seconds) to wait)"
        )
        self.thread_id = thread_id
        self.holder = holder


class LeaseLost(ThreadBusy):
    """Raised by ``AgentRun.result()`` / ``invoke`` (and by a saver's ``put``) when the
    run's claim on its thread was taken over: the run stalled past its lease (a long GC
    pause, a frozen VM, a network partition), another owner claimed the thread, and every
    write the stale run tries afterwards is refused (fenced by its claim's token).

    The run stops with it; nothing it did after losing the claim was stored. ``thread_id``
    is the thread, ``owner`` the run that lost it, ``holder`` the thread's owner now, as
    far as the saver knows; ``reason``, when given, replaces "another owner took it over"
    (a lease that could not be renewed in time, which another owner may take over).
    """

    def __init__(
        self,
        thread_id: str,
        owner: str,
        holder: str = "another owner",
        *,
        reason: str | None = None,
    ) -> None:
        # Not ThreadBusy's message: nobody should wait for this thread and try again.
        what = reason or f"another owner took it over ({holder})"
        ReactcoreError.__init__(
            self,
            f"run {owner} lost thread {thread_id!r}: {what}; the run stopped, and none of "
            "its writes since were stored",
        )
        self.thread_id = thread_id
        self.holder = holder
        self.owner = owner


class SaverError(ReactcoreError):
    """The root of the errors of a saver's store (``SaverUnavailable``, ``DamagedThread``):
    the checkpoints cannot be stored or read back, whoever owns the thread."""


class SaverUnavailable(SaverError):
    """Raised by a saver when its database cannot be reached, read or written.

    ``PostgresSaver``: no connection within ``connect_timeout`` seconds, or the connection
    was lost again when the statement was retried; ``target`` names the server and
    database (never the password). ``SqliteSaver``: SQLite failed on the file (a full
    disk, an I/O error, a file it cannot open or that is no database, a lock held by
    another process past ``busy_timeout``); ``target`` is the file's path, and nothing of
    the operation was stored. The message gives the driver's reason; the driver's error
    is chained as ``__cause__``.
    """

    def __init__(self, message: str, *, target: str) -> None:
        super().__init__(message)
        self.target = target


class DamagedThread(SaverError):
    """Raised by a saver's ``get``, ``list`` and ``put`` (so by a run on the thread, when
    it reads its checkpoint) when a record the thread's stored checkpoints need is
    missing or unreadable: a checkpoint record (or the snapshot record the later ones
    build on), a segment or a message of its log, a large text stored apart (a blob).

    Nothing was lost by the saver: something removed or changed its rows (a hand-made
    ``DELETE``, a restore of part of the tables, a disk that lost data). The thread's
    checkpoints cannot be read back as they were; restore the store from a backup, or
    ``delete`` the thread. ``thread_id`` is the thread; ``record`` names what is missing
    or unreadable (``"checkpoint record 1"``, ``"segment 8"``, ``"message 3 of segment
    2"``, ``"blob 3fa2…"``).
    """

    def __init__(self, thread_id: str, record: str, problem: str = "is missing") -> None:
        super().__init__(
            f"thread {thread_id!r} is damaged: its {record} {problem}, so its checkpoints "
            "cannot be read back (restore the saver's store from a backup, or delete the "
            "thread)"
        )
        self.thread_id = thread_id
        self.record = record


class ThreadHasForks(SaverError):
    """Raised by a saver's ``delete`` when threads were forked from the thread
    (``saver.fork``): a fork reads its parent's history up to where it forked, so the
    parent is kept, whole, until its forks are deleted. ``thread_id`` is the thread;
    ``forks`` the threads forked from it (delete those first, or keep the parent).
    Nothing was deleted."""

    def __init__(self, thread_id: str, forks: Sequence[str]) -> None:
        names = ", ".join(repr(f) for f in forks)
        super().__init__(
            f"thread {thread_id!r} cannot be deleted: the threads {names} were forked from "
            "it and read its history (delete them first)"
        )
        self.thread_id = thread_id
        self.forks = tuple(forks)


class ScriptExhaustedError(ReactcoreError, RuntimeError):
    """Raised by ``ScriptedChatModel`` (a test model) when it gets a request after its last
    reply."""


class CassetteError(ReactcoreError):
    """Raised by a ``reactcore.testing.Cassette`` when its file cannot be read or written,
    when a replay asks for something it holds no recording of, or when a tool's answer
    cannot be recorded. It always ends the run (never an error result for the model):
    a replay that went another way than the recording is a failed test."""


class CassetteMismatchError(CassetteError):
    """Raised by a replaying ``Cassette`` when a request (or a tool call) matches no
    recording: ``field`` is the first JSON path where it differs from the nearest one
    (``"$.messages[1].content"``; ``"path"`` for the URL, ``"tool"`` for a tool's name),
    ``recorded`` and ``sent`` the two values there (``None`` when absent)."""

    def __init__(self, message: str, *, field: str, recorded: Any = None, sent: Any = None) -> None:
        super().__init__(message)
        self.field = field
        self.recorded = recorded
        self.sent = sent


class MCPError(ReactcoreError):
    """Raised by ``reactcore.mcp.MCPToolset`` when its MCP server cannot be reached, closed
    the connection, or answered a request with a protocol error; ``server`` names it.

    During a tool call the node turns it into an error response for the model (naming the
    server); out of ``async with toolset`` or a reconnection it reaches the caller.
    """

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server


class PayloadMissing(ReactcoreError, LookupError):
    """Raised by ``reactcore.temporal`` when the agent's payload store has no entry for a
    key a run refers to (``key``): the store is not the one every worker and client of
    the agent shares, or its entries were deleted while the run still needed them. In an
    activity it fails the run (retrying would not bring the entry back).
    """

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


class RequestRefused(ReactcoreError):
    """Raised by a served agent's app (``reactcore.serving``, the protocol apps) when it
    refuses a client's request; the app answers with ``status`` and a JSON body holding
    ``code`` and the message, never more (no stack, no key). An ``authorize`` callable
    raises it (``RequestRefused(401, "unauthorized", "…")``) to turn a client away."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

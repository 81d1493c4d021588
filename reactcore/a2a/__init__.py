"""A2A for reactcore agents (the ``a2a`` extra: the official ``a2a-sdk``).

- ``a2a_app(agent, authorize=…, url=…)``: an ASGI app serving the agent over A2A — the
  agent card at ``/.well-known/agent-card.json``, JSON-RPC at its root (``SendMessage``,
  ``SendStreamingMessage``, ``GetTask``, ``CancelTask``, and the v0.3 names
  ``message/send``, ``message/stream``, ``tasks/get``, ``tasks/cancel``). A task is a
  thread of the saver, scoped to the principal; cancel ends the run; an approval is
  ``input-required``, answered by the next message on the task.
- ``RemoteAgent(url).as_tool()``: a remote A2A agent as a tool of a reactcore agent,
  called like a subagent: its progress streams into the calling run as
  ``SubagentEvent``s, and cancelling the call cancels the remote task.
"""

from __future__ import annotations

from ._app import a2a_app as a2a_app
from ._remote import RemoteAgent as RemoteAgent

__all__ = ["RemoteAgent", "a2a_app"]

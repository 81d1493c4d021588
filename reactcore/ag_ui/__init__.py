"""An agent served over AG-UI (the Agent-User Interaction protocol): ``ag_ui_app(agent,
authorize=…)`` is an ASGI (Starlette) app a service mounts; AG-UI clients
(``@ag-ui/client``'s ``HttpAgent``, CopilotKit) POST a ``RunAgentInput`` at its root and
read the run as AG-UI events. Beside the stream, ``runs/{runId}/…`` cancels one tool
call or the run and answers approvals (``reactcore.serving``). See ``docs/ag-ui.md``.

Needs the ``ag-ui`` extra (``ag-ui-protocol``, ``starlette``).
"""

from __future__ import annotations

from ._app import ag_ui_app as ag_ui_app
from ._state import ShareState as ShareState

__all__ = ["ShareState", "ag_ui_app"]

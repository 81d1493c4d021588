"""An agent served as the AI SDK's UI message stream (``useChat``'s default transport):
``ai_sdk_app(agent, authorize=...)``, an ASGI (Starlette) app; see ``docs/ai-sdk.md``.

Needs the ``ai-sdk`` extra (Starlette).
"""

from __future__ import annotations

from ._app import ai_sdk_app as ai_sdk_app

__all__ = ["ai_sdk_app"]

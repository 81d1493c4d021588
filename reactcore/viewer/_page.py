"""The timeline as one self-contained HTML page: its style, its script and the timeline's
JSON all inline, and a Content-Security-Policy that lets the page load nothing at all (no
network, no CDN, no font), so it works the same from a ``file://`` URL, an e-mail
attachment or a CI artifact.

The drawing is ``timeline.js`` (``ReactcoreTimeline.render(element, timeline)``), the same
script a live page calls again with each newer timeline; its style is ``timeline.css``.
"""

from __future__ import annotations

import html
import json
from importlib import resources

from ._model import Timeline

_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def asset(name: str) -> str:
    """The text of one of the viewer's files (``timeline.js``, ``timeline.css``)."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def script_json(value: object) -> str:
    """``value`` as JSON that is safe inside a ``<script>`` element (no ``</script>``,
    no ``<!--``: every ``<`` is escaped)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def timeline_html(timeline: Timeline, *, title: str = "reactcore run") -> str:
    """The page drawing ``timeline`` (see the module docstring), titled ``title``."""
    if not isinstance(timeline, Timeline):
        raise TypeError(f"timeline must be a Timeline, got {type(timeline).__name__}")
    if not isinstance(title, str):
        raise TypeError(f"title must be a str, got {type(title).__name__}")
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>
{asset("timeline.css")}</style>
</head>
<body>
<div id="timeline"></div>
<script type="application/json" id="timeline-data">{script_json(timeline.to_json())}</script>
<script>
{asset("timeline.js")}
ReactcoreTimeline.render(
  document.getElementById("timeline"),
  JSON.parse(document.getElementById("timeline-data").textContent),
  {{title: {script_json(title)}}}
);
</script>
</body>
</html>
"""

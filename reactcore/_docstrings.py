"""Per-parameter descriptions from a docstring's parameter section.

Three common styles are read; what is not recognised is simply not used (a docstring is
prose, not a contract):

- Google: an ``Args:`` (or ``Arguments:``, ``Parameters:``) header, then indented
  ``name (type): text`` or ``name: text`` items, continued on more-indented lines;
- NumPy: a ``Parameters`` header underlined with dashes, then ``name : type`` lines with
  the text indented below;
- Sphinx: ``:param name: text`` or ``:param type name: text`` fields.
"""

from __future__ import annotations

import inspect
import re

_GOOGLE_HEADER = re.compile(
    r"(\s*)(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments):\s*"
)
_GOOGLE_ITEM = re.compile(r"\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)")
_NUMPY_HEADERS = ("Parameters", "Other Parameters")
_NUMPY_ITEM = re.compile(r"\*{0,2}(\w+)\s*(?::.*)?")
_DASHES = re.compile(r"\s*-{3,}\s*")
_SPHINX = re.compile(r"(\s*):param\s+(?:[^:]*\s)?\*{0,2}(\w+)\s*:\s*(.*)")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _append(found: dict[str, str], name: str, text: str) -> None:
    found[name] = f"{found[name]} {text}".strip()


def _google(lines: list[str], found: dict[str, str]) -> None:
    i = 0
    while i < len(lines):
        header = _GOOGLE_HEADER.fullmatch(lines[i])
        i += 1
        if header is None:
            continue
        base, item_indent, current = len(header.group(1)), None, None
        while i < len(lines):
            line = lines[i]
            if line.strip():
                indent = _indent(line)
                if indent <= base:
                    break
                item_indent = indent if item_indent is None else item_indent
                item = _GOOGLE_ITEM.fullmatch(line.strip()) if indent == item_indent else None
                if item is not None:
                    current = item.group(1)
                    found[current] = item.group(2).strip()
                elif current is not None and indent > item_indent:
                    _append(found, current, line.strip())
            i += 1


def _numpy(lines: list[str], found: dict[str, str]) -> None:
    for i, line in enumerate(lines[:-1]):
        if line.strip() not in _NUMPY_HEADERS or not _DASHES.fullmatch(lines[i + 1]):
            continue
        base, current = _indent(line), None
        for j in range(i + 2, len(lines)):
            text = lines[j]
            if not text.strip():
                continue
            if _indent(text) <= base:
                underlined = j + 1 < len(lines) and _DASHES.fullmatch(lines[j + 1])
                item = _NUMPY_ITEM.fullmatch(text.strip())
                if underlined or item is None:
                    break
                current = item.group(1)
                found[current] = ""
            elif current is not None:
                _append(found, current, text.strip())


def _sphinx(lines: list[str], found: dict[str, str]) -> None:
    current, base = None, 0
    for line in lines:
        field = _SPHINX.fullmatch(line)
        if field is not None:
            base, current = len(field.group(1)), field.group(2)
            found[current] = field.group(3).strip()
        elif current is not None and line.strip() and _indent(line) > base:
            if line.strip().startswith(":"):
                current = None
            else:
                _append(found, current, line.strip())
        else:
            current = None


def parameter_descriptions(doc: str) -> dict[str, str]:
    """Parameter name → description, from ``doc`` in any of the three styles."""
    lines = inspect.cleandoc(doc).splitlines()
    found: dict[str, str] = {}
    for read in (_sphinx, _google, _numpy):
        read(lines, found)
    return {name: text for name, text in found.items() if text}

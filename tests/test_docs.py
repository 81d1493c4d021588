"""The documentation holds: every ```python block of README.md and docs/ runs, offline;
every relative link of the README and the docs resolves; every public name is in the API
reference.

A block runs as a script of its own (a subprocess, cwd a fresh folder per page, a timeout).
An HTML comment on the line before a block's fence says what it needs:

- ``<!-- docs: file=NAME -->``: the block is a file the page's later blocks use (saved as
  NAME beside them; compiled, not run on its own);
- ``<!-- docs: stand-in=openai -->`` (or ``stand-in=openai:SCRIPT``): the block talks to a
  real OpenAI-compatible endpoint, configured by the environment (``OPENAI_BASE_URL``,
  ``OPENAI_API_KEY``, ``REACTCORE_MODEL``); here the loopback server of
  ``reactcore.testing`` stands in for it, answering from the named script below, and must
  have been asked;
- ``<!-- docs: stand-in=temporal -->``: the block connects to a Temporal server at
  ``TEMPORAL_ADDRESS``; a local dev server stands in;
- ``<!-- docs: needs=postgres schema=NAME -->``: the block uses the PostgreSQL server at
  ``REACTCORE_PG_DSN`` (skipped, saying why, when none answers; a failure under CI), in the
  schema NAME, dropped before and after the block.

Options combine: ``<!-- docs: stand-in=openai:weather timeout=90 -->``. Fragments that are
not programs (signatures, shell, output) use other fence languages (``text``, ``sh``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest

import reactcore
from reactcore import AssistantMessage, ToolCall
from reactcore.testing import HTTPReply, ServerReply, SSEReply, serve_openai_compatible

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
REFERENCE = DOCS / "reference"
BLOCK_TIMEOUT = 60.0

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
_MARKER = re.compile(r"^\s*<!--\s*docs:(?P<options>.*?)-->\s*$")


@attrs.frozen
class Block:
    """One fenced block of a page: where it starts, its language, code and options."""

    page: Path
    line: int
    language: str
    code: str
    options: Mapping[str, str] = attrs.field(factory=dict)

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _options(text: str) -> dict[str, str]:
    options = {}
    for word in text.split():
        key, _, value = word.partition("=")
        options[key] = value
    return options


def blocks_of(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, dedented, with the options of a marker before them."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        language = opening["info"].strip().split(" ")[0].lower()
        previous = next((line for line in reversed(lines[:index]) if line.strip()), "")
        marker = _MARKER.match(previous)
        body: list[str] = []
        index += 1
        while index < len(lines) and not (
            lines[index].strip().startswith(fence) and not lines[index].strip()[len(fence) :]
        ):
            line = lines[index]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            index += 1
        options = _options(marker["options"]) if marker else {}
        start = index - len(body)
        found.append(Block(page, start, language, "\n".join(body) + "\n", options))
        index += 1
    return found


PYTHON_BLOCKS = [b for page in PAGES for b in blocks_of(page) if b.language in ("python", "py")]


# --- stand-ins for real endpoints -------------------------------------------------------


def _replies(*messages: AssistantMessage | str) -> Callable[[Any], ServerReply]:
    """Answers in order, streamed when the request asks for a stream; then an error."""
    position = 0

    def reply(request: Any) -> ServerReply:
        nonlocal position
        position += 1
        if position > len(messages):
            return HTTPReply.error(400, f"the stand-in's script has no reply #{position}")
        message = messages[position - 1]
        return SSEReply.of(message) if request.get("stream") else HTTPReply.completion(message)

    return reply


def _weather_calls() -> AssistantMessage:
    cities = ["Oslo", "Lima"]
    calls = [ToolCall(f"call_{c}", "weather", f'{{"city": "{c}"}}') for c in cities]
    return AssistantMessage("", calls)


STAND_IN_SCRIPTS: dict[str, Callable[[], Callable[[Any], ServerReply]]] = {
    "hello": lambda: _replies("Hello from the stand-in."),
    "weather": lambda: _replies(_weather_calls(), "Rain in both Oslo and Lima."),
}


@contextmanager
def _stand_in_openai(script: str) -> Iterator[dict[str, str]]:
    with serve_openai_compatible(STAND_IN_SCRIPTS[script or "hello"]()) as server:
        yield {
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-stand-in",
            "REACTCORE_MODEL": "stand-in-model",
        }
        assert server.requests, "the block never asked the stand-in endpoint"


@contextmanager
def _stand_in_temporal(folder: Path) -> Iterator[dict[str, str]]:
    from reactcore.temporal.testing import DevServer

    with DevServer(str(folder / "temporal.db")) as server:
        yield {"TEMPORAL_ADDRESS": server.address}


@contextmanager
def _postgres(schema: str) -> Iterator[dict[str, str]]:
    dsn = _postgres_dsn()
    import psycopg
    from psycopg import sql

    def drop() -> None:
        if schema:
            with psycopg.connect(dsn, autocommit=True) as connection:
                statement = sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE")
                connection.execute(statement.format(sql.Identifier(schema)))

    drop()
    try:
        yield {"REACTCORE_PG_DSN": dsn}
    finally:
        drop()


def _postgres_dsn() -> str:
    dsn = os.environ.get("REACTCORE_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
    try:
        import psycopg

        psycopg.connect(dsn, connect_timeout=3).close()
    except Exception as exc:  # any failure to connect means: no server to run against
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL at {dsn} does not answer under CI: {exc}")
        pytest.skip(f"PostgreSQL at {dsn} does not answer: {exc}")
    return dsn


# --- the code blocks run ----------------------------------------------------------------


def test_the_docs_have_python_blocks() -> None:
    """The collector finds the blocks (a broken fence pattern would silently run none)."""
    assert len(PYTHON_BLOCKS) >= 40
    assert {b.page.name for b in PYTHON_BLOCKS} >= {"README.md", "getting-started.md"}


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.id)
def test_code_block_runs(block: Block, tmp_path: Path) -> None:
    """The block runs to the end, exit status 0, offline (or against its stand-in)."""
    known = {"file", "stand-in", "needs", "schema", "timeout"}
    assert set(block.options) <= known, f"unknown docs options {set(block.options) - known}"
    for other in blocks_of(block.page):
        if "file" in other.options:
            (tmp_path / other.options["file"]).write_text(other.code, encoding="utf-8")
    if "file" in block.options:
        compile(block.code, block.options["file"], "exec")
        return
    script = tmp_path / "block.py"
    script.write_text(block.code, encoding="utf-8")
    env = dict(os.environ, PYTHONIOENCODING="utf-8", PYTHONPATH=str(ROOT))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "REACTCORE_MODEL", "TEMPORAL_ADDRESS"):
        env.pop(name, None)
    with ExitStack() as stack:
        stand_in = block.options.get("stand-in", "")
        kind, _, script_name = stand_in.partition(":")
        if kind == "openai":
            env.update(stack.enter_context(_stand_in_openai(script_name)))
        elif kind == "temporal":
            env.update(stack.enter_context(_stand_in_temporal(tmp_path)))
        else:
            assert not stand_in, f"unknown stand-in {stand_in!r}"
        if block.options.get("needs") == "postgres":
            env.update(stack.enter_context(_postgres(block.options.get("schema", ""))))
        else:
            assert "needs" not in block.options, f"unknown need {block.options['needs']!r}"
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=float(block.options.get("timeout", BLOCK_TIMEOUT)),
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, (
            f"{block.id} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
        )


# --- links ------------------------------------------------------------------------------

_LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^#{1,6}\s+(?P<text>.+?)\s*#*\s*$")


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub and MkDocs (toc's default slugify) make it, for plain
    headings: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text.lower()).strip()
    return re.sub(r"[ ]+", "-", text)


def _anchors(page: Path) -> set[str]:
    anchors = set()
    in_fence = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (heading := _HEADING.match(line)):
            anchors.add(_slug(heading["text"]))
        elif not in_fence and line.startswith("::: "):  # mkdocstrings: the object's path
            anchors.add(line.removeprefix("::: ").strip())
    return anchors


def _links(page: Path) -> Iterator[str]:
    in_fence = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            yield from (m["target"] for m in _LINK.finditer(re.sub(r"`[^`]*`", "", line)))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    """Every relative link of the page names a file of the repository, and its anchor (in
    a Markdown file) a heading there; links to other sites are not followed (offline)."""
    broken = []
    for target in _links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: …
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target}: no heading #{anchor}")
    assert broken == []


def test_the_readme_is_one_screenful_of_choices() -> None:
    """The README stays short (at most 200 lines): the rest lives in docs/."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200


# --- the API reference ------------------------------------------------------------------

_PUBLIC_SUBMODULES = (
    "reactcore.hooks",
    "reactcore.interceptors",
    "reactcore.models",
    "reactcore.testing",
    "reactcore.mcp",
    "reactcore.temporal",
    "reactcore.otel",
    "reactcore.postgres",
    "reactcore.savers",
    "reactcore.serving",
    "reactcore.ag_ui",
    "reactcore.a2a",
    "reactcore.ai_sdk",
    "reactcore.viewer",
)


def _documented() -> set[str]:
    text = "\n".join(p.read_text(encoding="utf-8") for p in REFERENCE.glob("*.md"))
    return set(re.findall(r"^::: ([\w.]+)\s*$", text, flags=re.MULTILINE))


def test_every_public_name_is_in_the_api_reference() -> None:
    """Each name of ``reactcore.__all__`` has its ``::: reactcore.X`` entry, and each public
    subpackage is documented (as a module, or name by name): a new public name without
    docs fails here."""
    import importlib

    documented = _documented()
    missing = [n for n in reactcore.__all__ if f"reactcore.{n}" not in documented]
    for module_name in _PUBLIC_SUBMODULES:
        module = importlib.import_module(module_name)
        if module_name in documented:
            continue
        missing += [
            f"{module_name}.{n}"
            for n in module.__all__
            if f"{module_name}.{n}" not in documented and f"reactcore.{n}" not in documented
        ]
    assert missing == []


def test_every_test_the_docs_name_exists() -> None:
    """Each test the README and the reliability page name as holding a guarantee
    (``test_x.py::test_y``, or ``::test_z`` for another of the same file) is a test of that
    file: renaming or removing one breaks its guarantee's reference here."""
    missing = []
    for page in (ROOT / "README.md", DOCS / "reliability.md", DOCS / "models.md"):
        current = ""
        names = re.findall(r"`(?:tests/)?((?:test_\w+\.py)?::test_\w+)`", page.read_text("utf-8"))
        assert names, f"{page.name} names no test"
        for name in names:
            file_name, _, test = name.partition("::")
            current = file_name or current
            source = (ROOT / "tests" / current).read_text(encoding="utf-8")
            if not re.search(rf"^(async )?def {test}\(", source, flags=re.MULTILINE):
                missing.append(f"{page.name}: {current}::{test}")
    assert missing == []


_FEATURES = (
    "streaming",
    "parallel tools",
    "reasoning round trip",
    "caching",
    "content parts",
    "structured output mode",
)


def _provider_table() -> list[list[str]]:
    """The rows of the provider × feature table of the models page, cells stripped."""
    text = (DOCS / "models.md").read_text("utf-8")
    section = text.split("## Providers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[c.strip() for c in row.strip("|").split("|")] for row in rows if "---" not in row]


def test_the_provider_table_pins_every_feature_of_every_provider_to_a_test() -> None:
    """The models page has a column for each provider ``infer_model`` knows (named by its
    class and provider string) and a row for each feature; every cell names the test
    that holds it (which ``test_every_test_the_docs_name_exists`` checks exists)."""
    from reactcore.models._infer import _AZURE, _PROVIDERS, _VERTEX

    rows = {row[0]: row[1:] for row in _provider_table()}
    heads = rows["class, string"]
    for prefix, cls in _PROVIDERS.items():
        column = [i for i, cell in enumerate(heads) if f"`{cls.__name__}`" in cell]
        assert column, f"no column for {cls.__name__}"
        assert f'`"{prefix}:…"`' in heads[column[0]], prefix
    for prefix in (*_AZURE, *_VERTEX):
        assert any(f'`"{prefix}:…"`' in cell for cell in heads), prefix
    # A column per API, and one each for the OpenAI-compatible hosts, Azure and Vertex AI.
    assert len(heads) == len(set(_PROVIDERS.values())) + 3
    for feature in _FEATURES:
        cells = rows[feature]
        assert len(cells) == len(heads), feature
        for cell in cells:
            assert re.search(r"`(?:test_\w+\.py)?::test_\w+`", cell), (feature, cell)

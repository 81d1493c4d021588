"""The public API: ``reactcore.__all__`` is sorted, importable and complete."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import reactcore


def _names_bound_in_init() -> set[str]:
    """Every public name ``reactcore/__init__.py`` binds: imports, defs, classes, assignments."""
    tree = ast.parse(Path(reactcore.__file__).read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


def test_all_is_sorted_and_unique() -> None:
    """``__all__`` is sorted (as STYLE asks) and lists each name once."""
    assert reactcore.__all__ == sorted(reactcore.__all__)
    assert len(set(reactcore.__all__)) == len(reactcore.__all__)


def test_the_mcp_package_exports_its_values_sorted() -> None:
    """``reactcore.mcp.__all__`` is sorted, unique, importable, and holds the typed values
    of resources and prompts beside the toolset; ``ToolAnnotations`` is a core name (any
    tool may carry it)."""
    mcp = importlib.import_module("reactcore.mcp")
    assert mcp.__all__ == sorted(set(mcp.__all__))
    assert all(hasattr(mcp, name) for name in mcp.__all__)
    values = {"Prompt", "PromptArgument", "PromptResult", "Resource", "ResourceContents"}
    assert values | {"ResourceTemplate", "MCPToolset"} <= set(mcp.__all__)
    assert "ToolAnnotations" in reactcore.__all__


def test_every_name_in_all_is_importable() -> None:
    """``from reactcore import X`` works for every X in ``__all__``."""
    module = importlib.import_module("reactcore")
    missing = [name for name in reactcore.__all__ if not hasattr(module, name)]
    assert missing == []
    namespace: dict[str, object] = {}
    exec(f"from reactcore import {', '.join(reactcore.__all__)}", namespace)
    assert all(name in namespace for name in reactcore.__all__)


def test_every_public_name_of_the_package_is_in_all() -> None:
    """Each public name ``__init__`` binds is exported through ``__all__`` (none forgotten)."""
    assert _names_bound_in_init() - set(reactcore.__all__) == set()


def _imported_modules(module: str) -> set[str]:
    """The modules ``reactcore/<module>.py`` imports from (relative names as written)."""
    path = Path(reactcore.__file__).parent / f"{module}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}


def test_the_two_nodes_meet_only_in_the_loop() -> None:
    """Neither node imports the other: what both read (dynamic tools) is in a neutral
    module, ``_run_context``."""
    assert "_tool_node" not in _imported_modules("_llm_node")
    assert "_llm_node" not in _imported_modules("_tool_node")
    assert "_run_context" in _imported_modules("_llm_node") & _imported_modules("_tool_node")


def test_every_provider_module_sends_through_the_shared_http_layer() -> None:
    """Provider modules are wire mappings: none builds or sends an httpx request itself."""
    for module in (
        "models/openai",
        "models/anthropic",
        "models/openai_responses",
        "models/gemini",
    ):
        path = Path(reactcore.__file__).parent / f"{module}.py"
        if not path.exists():
            continue
        source = path.read_text(encoding="utf-8")
        assert ".send(" not in source and "build_request" not in source, module
        assert "_http" in _imported_modules(module), module


def test_every_exception_of_the_tree_is_exported() -> None:
    """Each exception class of ``reactcore._exceptions`` is a ``ReactcoreError`` and is
    importable from ``reactcore`` (but the test helpers' ``ScriptExhaustedError``,
    ``CassetteError`` and ``CassetteMismatchError``, from ``reactcore.testing``): a caller
    can catch any of them by its public name."""
    from reactcore import _exceptions

    classes = {
        name: value
        for name, value in vars(_exceptions).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    }
    assert all(issubclass(cls, reactcore.ReactcoreError) for cls in classes.values())
    testing_only = {"ScriptExhaustedError", "CassetteError", "CassetteMismatchError"}
    assert set(classes) - set(reactcore.__all__) == testing_only
    assert issubclass(reactcore.DamagedThread, reactcore.SaverError)
    assert issubclass(reactcore.SaverUnavailable, reactcore.SaverError)

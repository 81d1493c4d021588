"""A griffe extension for the API reference: an attrs class's fields as its parameters.

attrs writes ``__init__`` at run time, so reading the source finds no signature. For each
attrs class this builds one from ``attrs.fields`` (names, kinds, defaults) and the
annotations griffe read from the source, adds a "Parameters" section whose descriptions are
the fields' docstrings (or, for a field without one, its entry in the class docstring's
``Args:`` section, which that table replaces), and drops the fields from the member list (they are listed there).
"""

from __future__ import annotations

import ast
from typing import Any

import attrs
from griffe import (
    Class,
    Docstring,
    DocstringParameter,
    DocstringSectionParameters,
    Extension,
    Function,
    Inspector,
    ObjectNode,
    Parameter,
    ParameterKind,
    Parameters,
    Visitor,
    dynamic_import,
    parse_google,
)


def _take_args_section(cls: Class) -> dict[str, str]:
    """The descriptions of the class docstring's ``Args:`` section, by name; the section is
    taken out (the fields' table replaces it)."""
    if cls.docstring is None:
        return {}
    # Parsed here, before the class has a signature: griffe's checks of the names
    # against the signature would flag every entry.
    sections = parse_google(cls.docstring, warn_unknown_params=False, warn_missing_types=False)
    described: dict[str, str] = {}
    for section in [s for s in sections if isinstance(s, DocstringSectionParameters)]:
        described.update({p.name: p.description for p in section.value})
        sections.remove(section)
    cls.docstring.__dict__["parsed"] = sections  # the cached value griffe reads later
    return described


def _default(field: Any) -> str | None:
    """How the default reads in a signature; None when the field is required."""
    default = field.default
    if default is attrs.NOTHING:
        return None
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        factory = default.factory
        if default.takes_self:
            return "<computed>"
        if factory in (dict, list, set, tuple):
            return repr(factory())
        return f"{getattr(factory, '__name__', 'factory')}()"
    return repr(default)


class AttrsFields(Extension):
    """Signatures and parameter tables for attrs classes."""

    def on_class_members(
        self,
        *,
        node: ast.AST | ObjectNode,
        cls: Class,
        agent: Visitor | Inspector,
        **kwargs: Any,
    ) -> None:
        if isinstance(node, ObjectNode) or "__init__" in cls.members:
            return
        try:
            runtime = dynamic_import(cls.path)
        except ImportError:
            return
        if not (isinstance(runtime, type) and attrs.has(runtime)):
            return
        parameters = [Parameter("self", kind=ParameterKind.positional_or_keyword)]
        documented = []
        described = _take_args_section(cls)
        for field in attrs.fields(runtime):
            if not field.init:
                continue
            name = field.alias or field.name
            member = cls.members.get(field.name)
            annotation = getattr(member, "annotation", None)
            description = (
                member.docstring.value
                if member and member.docstring
                else described.get(name, described.get(field.name, ""))
            )
            kind = (
                ParameterKind.keyword_only if field.kw_only else ParameterKind.positional_or_keyword
            )
            default = _default(field)
            parameters.append(Parameter(name, annotation=annotation, kind=kind, default=default))
            documented.append(
                DocstringParameter(
                    name, annotation=annotation, description=description, value=default
                )
            )
            if not field.name.startswith("_") and member is not None and member.is_attribute:
                cls.del_member(field.name)
        init = Function("__init__", parameters=Parameters(*parameters), parent=cls)
        cls.set_member("__init__", init)
        if cls.docstring is None:
            cls.docstring = Docstring("", parent=cls)
        if documented:
            cls.docstring.parsed.append(DocstringSectionParameters(documented))

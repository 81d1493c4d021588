"""JSON Schema as the Gemini API takes it: the OpenAPI 3.0 subset of its ``Schema``.

Function declarations (``parameters``) and structured output (``responseSchema``) take a
``Schema``, not JSON Schema. ``gemini_schema`` converts a tool's or an output type's JSON
Schema to it and says what it left out:

- ``$ref`` to ``#/$defs/…`` (or ``#/definitions/…``) is inlined, the defs dropped; a
  reference back into a definition being inlined (a recursive type) becomes that
  definition's bare ``type``;
- ``type`` is upper case (``"OBJECT"``, as the official SDK sends it); ``"null"`` among
  the types, in ``anyOf`` or in ``enum`` becomes ``nullable: true``; a list of several
  types becomes ``anyOf``; ``oneOf`` becomes ``anyOf``; an ``allOf`` of one schema is
  merged in; a string ``const`` becomes a one-value ``enum``;
- kept as they are: ``title``, ``description``, ``default``, ``example``, ``items``,
  ``properties`` (recursively), ``required`` (the names among the properties),
  ``propertyOrdering``, the size and range bounds (``minItems``, ``maxItems``,
  ``minLength``, ``maxLength``, ``minProperties``, ``maxProperties``, ``minimum``,
  ``maximum``), ``pattern``, and ``enum`` when its values are strings;
- ``format`` is kept where the API knows it: ``enum`` and ``date-time`` for strings,
  ``float``/``double`` for numbers, ``int32``/``int64`` for integers;
- everything else is dropped: ``additionalProperties`` (the Gemini API refuses it; only
  Vertex AI takes it), ``$schema``, ``$id``, ``$comment``, ``examples``,
  ``exclusiveMinimum``/``exclusiveMaximum``, ``multipleOf``, ``uniqueItems``, ``not``,
  ``patternProperties``, tuple ``items``/``prefixItems``, an ``allOf`` of several, a
  non-string ``enum`` or ``const``, and any key the API does not know. An empty
  ``properties`` map is left out too (the API refuses an ``OBJECT`` with empty properties).

The dropped keys come back as JSON paths (``$.properties.tags.uniqueItems``), which the
Gemini client logs at debug level (``gemini_schema_keys_dropped``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_KEPT = frozenset(
    {
        "title",
        "description",
        "default",
        "example",
        "pattern",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "minProperties",
        "maxProperties",
        "minimum",
        "maximum",
        "propertyOrdering",
    }
)
# Read by the conversion itself (not copied as they are).
_READ = frozenset(
    {
        "type",
        "format",
        "enum",
        "const",
        "nullable",
        "anyOf",
        "oneOf",
        "allOf",
        "items",
        "properties",
        "required",
        "$ref",
        "$defs",
        "definitions",
    }
)
_FORMATS = {
    "STRING": frozenset({"enum", "date-time"}),
    "NUMBER": frozenset({"float", "double"}),
    "INTEGER": frozenset({"int32", "int64"}),
}
_REF_PREFIXES = ("#/$defs/", "#/definitions/")


def gemini_schema(schema: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``schema`` (JSON Schema) as a Gemini ``Schema``, and the JSON paths of what was
    dropped (see the module)."""
    defs = {**_mapping(schema.get("definitions")), **_mapping(schema.get("$defs"))}
    converting = _Conversion(defs)
    return converting.convert(schema, "$"), converting.dropped


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


class _Conversion:
    """One conversion: the root's definitions, the ones being inlined, what was dropped."""

    def __init__(self, defs: Mapping[str, Any]) -> None:
        self.defs = defs
        self.inlining: list[str] = []
        self.dropped: list[str] = []

    def convert(self, schema: Any, path: str) -> dict[str, Any]:
        if not isinstance(schema, Mapping):
            self.dropped.append(path)  # ``true`` / ``false`` schemas say nothing it takes
            return {}
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self._inlined(ref, schema, path)
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _KEPT:
                out[key] = value
            elif key not in _READ or (key in ("$defs", "definitions") and path != "$"):
                self.dropped.append(f"{path}.{key}")
        nullable = schema.get("nullable") is True
        nullable |= self._type(schema.get("type"), out, path)
        nullable |= self._alternatives(schema, out, path)
        self._merge_all_of(schema.get("allOf"), out, path)
        nullable |= self._enum(schema, out, path)
        self._format(schema.get("format"), out, path)
        self._children(schema, out, path)
        if nullable:
            out["nullable"] = True
        return out

    def _inlined(self, ref: str, schema: Mapping[str, Any], path: str) -> dict[str, Any]:
        """The definition ``ref`` names, converted, with the referring schema's own words
        (its description, title, default) on top."""
        name = next((ref[len(p) :] for p in _REF_PREFIXES if ref.startswith(p)), None)
        target = self.defs.get(name) if name is not None else None
        if name is None or not isinstance(target, Mapping):
            self.dropped.append(f"{path}.$ref")
            inlined: dict[str, Any] = {}
        elif name in self.inlining:  # a recursive type: cut here
            self.dropped.append(f"{path}.$ref")
            kind = target.get("type")
            inlined = {"type": kind.upper()} if isinstance(kind, str) else {}
        else:
            self.inlining.append(name)
            inlined = self.convert(target, f"{path}<{name}>")
            self.inlining.pop()
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return {**inlined, **self.convert(rest, path)} if rest else inlined

    def _type(self, kind: Any, out: dict[str, Any], path: str) -> bool:
        """Set ``out``'s type; True when ``null`` is among the types."""
        if isinstance(kind, str):
            if kind == "null":
                return True
            out["type"] = kind.upper()
            return False
        if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
            kinds = [k.upper() for k in kind if k != "null"]
            if len(kinds) == 1:
                out["type"] = kinds[0]
            elif kinds:
                out["anyOf"] = [{"type": k} for k in kinds]
            return "null" in kind
        if kind is not None:
            self.dropped.append(f"{path}.type")
        return False

    def _alternatives(self, schema: Mapping[str, Any], out: dict[str, Any], path: str) -> bool:
        """``anyOf`` / ``oneOf`` as ``anyOf``, ``{"type": "null"}`` taken out as
        nullability and a single alternative left merged in; True when nullable."""
        key = "anyOf" if "anyOf" in schema else "oneOf" if "oneOf" in schema else None
        if key is None:
            return False
        options = schema[key]
        if not isinstance(options, list):
            self.dropped.append(f"{path}.{key}")
            return False
        nullable = False
        converted = []
        for index, option in enumerate(options):
            if isinstance(option, Mapping) and option.get("type") == "null" and len(option) == 1:
                nullable = True
                continue
            converted.append(self.convert(option, f"{path}.{key}[{index}]"))
        if len(converted) == 1:
            for name, value in converted[0].items():
                out.setdefault(name, value)
        elif converted:
            out["anyOf"] = converted
        return nullable

    def _merge_all_of(self, all_of: Any, out: dict[str, Any], path: str) -> None:
        if all_of is None:
            return
        if isinstance(all_of, list) and len(all_of) == 1:
            for name, value in self.convert(all_of[0], f"{path}.allOf[0]").items():
                out.setdefault(name, value)
        else:
            self.dropped.append(f"{path}.allOf")

    def _enum(self, schema: Mapping[str, Any], out: dict[str, Any], path: str) -> bool:
        """A string ``enum`` (or ``const``) kept, ``None`` in it taken as nullability;
        True when nullable."""
        if "const" in schema:
            if isinstance(schema["const"], str):
                out["enum"] = [schema["const"]]
                out.setdefault("type", "STRING")
            else:
                self.dropped.append(f"{path}.const")
        values = schema.get("enum")
        if values is None:
            return False
        if not isinstance(values, list):
            self.dropped.append(f"{path}.enum")
            return False
        strings = [v for v in values if v is not None]
        if strings and all(isinstance(v, str) for v in strings):
            out["enum"] = strings
            out.setdefault("type", "STRING")
        else:
            self.dropped.append(f"{path}.enum")
        return None in values

    def _format(self, value: Any, out: dict[str, Any], path: str) -> None:
        if value is None:
            return
        if value in _FORMATS.get(out.get("type", ""), ()):
            out["format"] = value
        else:
            self.dropped.append(f"{path}.format")

    def _children(self, schema: Mapping[str, Any], out: dict[str, Any], path: str) -> None:
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and properties:
            out["properties"] = {
                name: self.convert(sub, f"{path}.properties.{name}")
                for name, sub in properties.items()
            }
            required = schema.get("required")
            if isinstance(required, list):
                names = [n for n in required if n in properties]
                if names:
                    out["required"] = names
        elif properties is not None and not isinstance(properties, Mapping):
            self.dropped.append(f"{path}.properties")
        items = schema.get("items")
        if isinstance(items, Mapping):
            out["items"] = self.convert(items, f"{path}.items")
        elif items is not None:
            self.dropped.append(f"{path}.items")

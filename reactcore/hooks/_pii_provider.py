"""The copies of a model's text a provider keeps on its answer, redacted.

An ``AssistantMessage``'s ``provider_data`` holds what a provider needs back on later
requests, and some of it is text the model wrote — its thinking, again. The redaction of
the message's ``text`` and ``reasoning`` must reach those copies too, or they go on into
checkpoints and the next requests. What can be edited is edited in place; what is signed
by the provider cannot be (the signature would no longer match, and the provider refuses
the request), so it is dropped:

- Anthropic (``"anthropic"``): ``thinking`` blocks are signed. When the text of any of a
  message's thinking blocks holds something the detectors find, all the message's
  thinking blocks (``redacted_thinking`` ones too) are dropped: the model's request then
  goes on without them, and a tool loop whose first answer lost its thinking is finished
  without thinking (``AnthropicModel`` does so for any turn begun without it).
- Amazon Bedrock (``"bedrock"``): reasoning blocks are signed, as Anthropic's are, and
  dropped alike (all of the message's) when the text of any holds something found; a tool
  loop begun without reasoning goes on without thinking (``BedrockModel`` does so).
- OpenAI Responses (``"openai-responses"``): a reasoning item's summary texts (and its
  ``reasoning_text`` content, from models that send it) are plain copies, redacted in
  place; its ``encrypted_content`` is the provider's own ciphertext, kept.
- Gemini (``"google"``): an unsigned thought part (and any other part kept whole) is
  redacted in place; one carrying a ``thoughtSignature`` whose text holds something found
  is dropped. When the message's text was redacted, its text parts lose their signatures
  (they would sign text the model did not write); function calls keep theirs.

Data of any other key (a provider of your own) is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..models._bedrock_answers import PROVIDER as BEDROCK
from ..models._gemini_parts import PROVIDER as GOOGLE
from ..models._gemini_parts import SIGNATURE as GOOGLE_SIGNATURE
from ..models._responses_answers import PROVIDER as RESPONSES
from ..models.anthropic import PROVIDER as ANTHROPIC

Redact = Callable[[str], str]
Cleaner = Callable[[Mapping[str, Any], Redact, bool], Mapping[str, Any]]
_KINDS = frozenset({"type"})


def strings(value: Any, redact: Redact, keep: frozenset[str] = frozenset()) -> Any:
    """JSON-like ``value`` with its strings redacted; keys (and the values of the keys in
    ``keep``) left alone. The same object when nothing changed."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        out = {k: v if k in keep else strings(v, redact, keep) for k, v in value.items()}
        return value if all(out[k] is v for k, v in value.items()) else out
    if isinstance(value, list | tuple):
        items = [strings(v, redact, keep) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value


def chars(value: Any) -> int:
    """The characters of the strings in JSON-like ``value`` (what scanning it reads)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, Mapping):
        return sum(chars(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(chars(v) for v in value)
    return 0


def _signed_blocks(key: str, field: str) -> Cleaner:
    """The cleaner of a provider whose thinking blocks (a list under ``key``, each text
    under ``field``) are signed: all of them dropped when any holds something found."""

    def clean(data: Mapping[str, Any], redact: Redact, text_changed: bool) -> Mapping[str, Any]:
        blocks = data.get(key)
        if not isinstance(blocks, list):
            return data
        texts = [b[field] for b in blocks if isinstance(b, Mapping) and field in b]
        texts = [t for t in texts if isinstance(t, str)]
        # each block, and all of them together (the message's reasoning is their join)
        if all(redact(t) == t for t in [*texts, "".join(texts)]):
            return data
        return {k: v for k, v in data.items() if k != key}

    return clean


def _responses(data: Mapping[str, Any], redact: Redact, text_changed: bool) -> Mapping[str, Any]:
    output = data.get("output")
    if not isinstance(output, list):
        return data
    cleaned = [
        {
            k: strings(v, redact, _KINDS) if k in ("summary", "content") else v
            for k, v in entry.items()
        }
        if isinstance(entry, Mapping) and entry.get("type") == "reasoning"
        else entry
        for entry in output
    ]
    if cleaned == output:
        return data
    return {**data, "output": cleaned}


def _gemini(data: Mapping[str, Any], redact: Redact, text_changed: bool) -> Mapping[str, Any]:
    layout = data.get("parts")
    if not isinstance(layout, list):
        return data
    cleaned: list[Any] = []
    for entry in layout:
        if not isinstance(entry, Mapping):
            cleaned.append(entry)
        elif isinstance(entry.get("part"), Mapping):
            part = entry["part"]
            redacted = strings(part, redact, frozenset({GOOGLE_SIGNATURE}))
            if redacted is part:
                cleaned.append(entry)
            elif GOOGLE_SIGNATURE not in part:
                cleaned.append({**entry, "part": redacted})
        elif entry.get("ref") == "text" and text_changed and GOOGLE_SIGNATURE in entry:
            cleaned.append({k: v for k, v in entry.items() if k != GOOGLE_SIGNATURE})
        else:
            cleaned.append(entry)
    if cleaned == layout:
        return data
    return {**data, "parts": cleaned}


_PROVIDERS: Mapping[str, Cleaner] = {
    ANTHROPIC: _signed_blocks("thinking", "thinking"),
    BEDROCK: _signed_blocks("reasoning", "text"),
    RESPONSES: _responses,
    GOOGLE: _gemini,
}


def provider_data(
    data: Mapping[str, Any], redact: Redact, *, text_changed: bool
) -> Mapping[str, Any]:
    """``data`` (a message's ``provider_data``) with the copies of the model's text each
    known provider keeps redacted, or dropped where signed (see the module); the same
    object when nothing changed. ``text_changed``: the message's text was redacted."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        clean = _PROVIDERS.get(key)
        if clean is None or not isinstance(value, Mapping):
            out[key] = value
            continue
        cleaned = clean(value, redact, text_changed)
        if cleaned or not value:  # a provider left with nothing has no entry
            out[key] = cleaned
    if out.keys() == data.keys() and all(out[k] is v for k, v in data.items()):
        return data
    return out

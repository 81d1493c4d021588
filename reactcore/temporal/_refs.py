"""Conversations and large tool results by reference, through a payload store.

A message's key is the SHA-256 of its JSON (the checkpoint encoding, keys sorted). A
conversation is stored as a chain of nodes, ``{"base": <node key or null>, "keys": [...]}``
(a node's key is the SHA-256 of that JSON): the messages of the base, then those of
``keys``. A conversation that grows by two messages a turn adds one small node a turn,
and the model activity's input names the previous node and the new messages only.

The workflow computes every key itself (hashing is deterministic) and never touches the
store: the activities store what they are sent (the messages the store may not have
yet, then the node), before they answer. So once an activity has finished, its
conversation is in the store, and the workflow refers to it from then on.

A tool result over ``inline_limit`` bytes is stored by the tool activity, and the
workflow holds a marker in its place, ``[stored:sha256:<key>:<characters>] <the first
200 characters>``: the model activity and the client put the whole text back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import attrs

from .._exceptions import PayloadMissing
from .._messages import Message, ToolResponseMessage
from .._serde import converter
from . import _codec as codec
from ._store import Cache, PayloadStore, digest

PREVIEW = 200
_MARK = re.compile(r"\[stored:sha256:([0-9a-f]{64}):(\d+)\] ")


def message_json(message: Message) -> str:
    """The JSON a message is stored and keyed by."""
    data = converter.unstructure(message, Message)
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)


def load_message(text: str) -> Message:
    """The message ``message_json`` wrote."""
    message: Message = converter.structure(json.loads(text), Message)  # type: ignore[arg-type]
    return message


def node_json(base: str | None, keys: Sequence[str]) -> str:
    """The JSON of a conversation node."""
    return json.dumps({"base": base, "keys": list(keys)}, separators=(",", ":"))


def key_of(text: str) -> str:
    """The key of ``text`` (its UTF-8 bytes)."""
    return digest(text.encode("utf-8", "surrogatepass"))


def marker(key: str, text: str) -> str:
    """What the workflow holds in place of a stored tool result ``text``."""
    return f"[stored:sha256:{key}:{len(text)}] {text[:PREVIEW]}"


def marked(text: str) -> str | None:
    """The key of the stored result ``text`` stands for, ``None`` if it is no marker."""
    found = _MARK.match(text)
    return found.group(1) if found is not None else None


@attrs.define(eq=False)
class Conversations:
    """The workflow's side: the keys of its messages, what the store has, and the chain
    of the conversation stored last (which the next one most likely extends)."""

    _known: dict[int, tuple[Message, str, str]] = attrs.field(factory=dict, init=False)
    _stored: set[str] = attrs.field(factory=set, init=False)
    _last: list[str] = attrs.field(factory=list, init=False)
    _nodes: list[tuple[int, str]] = attrs.field(factory=list, init=False)

    def of(self, messages: Sequence[Message]) -> codec.Conversation:
        """``messages`` by reference: the longest stored prefix (a node of the chain
        stored last), then the rest (inline where the store may not have them)."""
        known: dict[int, tuple[Message, str, str]] = {}
        for message in messages:
            entry = self._known.get(id(message))
            if entry is None or entry[0] is not message:
                text = message_json(message)
                entry = (message, key_of(text), text)
            known[id(message)] = entry
        self._known = known  # (the messages are kept alive with their ids)
        keys = [known[id(m)][1] for m in messages]
        same = 0
        for mine, last in zip(keys, self._last, strict=False):
            if mine != last:
                break
            same += 1
        end, base = 0, None
        for count, node in self._nodes:
            if count > same:
                break
            end, base = count, node
        tail = keys[end:]
        inline = {
            known[id(m)][1]: known[id(m)][2]
            for m in messages[end:]
            if known[id(m)][1] not in self._stored
        }
        return codec.Conversation(key_of(node_json(base, tail)), base, tail, inline)

    def stored(self, conversation: codec.Conversation, messages: int) -> None:
        """An activity stored ``conversation`` (of ``messages`` messages)."""
        start = messages - len(conversation.keys)
        kept = [node for node in self._nodes if node[0] <= start]
        if conversation.base is None:
            kept = []
        elif not kept or kept[-1][1] != conversation.base:
            kept = [(start, conversation.base)]
        self._nodes = [*kept, (messages, conversation.key)]
        self._stored.update(conversation.keys)
        self._last = [*self._last[:start], *conversation.keys]

    def loaded(self, key: str, texts: Sequence[str]) -> list[Message]:
        """The messages of the stored node ``key`` (their JSON ``texts``), known as stored."""
        messages = [load_message(t) for t in texts]
        keys = [key_of(t) for t in texts]
        self._known = {id(m): (m, k, t) for m, k, t in zip(messages, keys, texts, strict=True)}
        self._stored.update(keys)
        self._last = keys
        self._nodes = [(len(keys), key)]
        return messages


@attrs.define(eq=False)
class Reader:
    """The activities' and the client's side: reading and writing conversations and
    stored results, with what was read cached (entries never change): a worker that
    answered the previous turn of a run reads only the new messages of the next."""

    store: PayloadStore
    _raw: Cache = attrs.field(factory=Cache, init=False)
    _nodes: Cache = attrs.field(factory=lambda: Cache(16 * 2**20), init=False)
    _messages: Cache = attrs.field(factory=Cache, init=False)

    async def get(self, key: str) -> bytes:
        """The entry ``key`` (``PayloadMissing`` if the store has none)."""
        found = self._raw.get(key)
        if isinstance(found, bytes):
            return found
        data = await self.store.get(key)
        if data is None:
            raise PayloadMissing(
                f"the payload store has no entry {key}: is it the store every worker and "
                "client of the agent shares?",
                key=key,
            )
        self._raw.put(key, data, len(data))
        return data

    async def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``."""
        await self.store.put(key, data)

    async def save(self, conversation: codec.Conversation) -> None:
        """Store the messages of ``conversation`` the store may not have, then its node
        (so a stored node's messages are always there)."""
        for key, text in conversation.inline.items():
            data = text.encode("utf-8", "surrogatepass")
            if digest(data) != key:
                raise ValueError(f"message {key} does not match its JSON")
            await self.put(key, data)
        node = node_json(conversation.base, conversation.keys)
        if key_of(node) != conversation.key:
            raise ValueError(f"conversation {conversation.key} does not match its node")
        await self.put(conversation.key, node.encode())

    async def keys(self, key: str) -> list[str]:
        """The message keys of the stored node ``key``, base first."""
        chain: list[list[str]] = []
        node: str | None = key
        while node is not None:
            found = self._nodes.get(node)
            if not isinstance(found, tuple):
                data = await self.get(node)
                parsed = json.loads(data)
                found = (parsed["base"], parsed["keys"])
                self._nodes.put(node, found, len(data))
            chain.append(found[1])
            node = found[0]
        return [k for part in reversed(chain) for k in part]

    async def texts(self, keys: Sequence[str]) -> list[str]:
        """The JSON of the messages ``keys``."""
        return [(await self.get(k)).decode("utf-8", "surrogatepass") for k in keys]

    async def messages(self, conversation: codec.Conversation) -> list[Message]:
        """The messages of ``conversation``, stored first, with stored results put back."""
        await self.save(conversation)
        return await self.load(conversation.key)

    async def load(self, key: str) -> list[Message]:
        """The messages of the stored node ``key``, with stored results put back."""
        out: list[Message] = []
        for k in await self.keys(key):
            found = self._messages.get(k)
            if found is None:
                data = await self.get(k)
                found = await self.expanded(load_message(data.decode("utf-8", "surrogatepass")))
                self._messages.put(k, found, 2 * len(data) + _stored_size(found))
            out.append(found)  # type: ignore[arg-type]
        return out

    async def expanded(self, message: Message) -> Message:
        """``message`` with each stored tool result's whole text in place of its marker."""
        if not isinstance(message, ToolResponseMessage):
            return message
        responses = list(message.responses)
        changed = False
        for i, response in enumerate(responses):
            key = marked(response.response_data)
            if key is not None:
                text = (await self.get(key)).decode("utf-8", "surrogatepass")
                responses[i] = attrs.evolve(response, response_data=text)
                changed = True
        return attrs.evolve(message, responses=tuple(responses)) if changed else message

    async def result_text(self, text: str, inline_limit: int) -> str:
        """A tool result's text as the workflow gets it: a marker once over ``inline_limit``
        bytes (the text stored), else itself."""
        data = text.encode("utf-8", "surrogatepass")
        if len(data) <= inline_limit:
            return text
        key = digest(data)
        await self.put(key, data)
        return marker(key, text)


def _stored_size(message: Message) -> int:
    if not isinstance(message, ToolResponseMessage):
        return 0
    return sum(len(r.response_data) for r in message.responses)

"""Per-run configuration handed to every node, tool and interceptor."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import attrs
from cattrs.errors import ClassValidationError
from cattrs.gen import make_dict_structure_fn, override

from . import _validate as valid
from ._serde import AllowNonFinite, converter, describe_error

THREAD_ID_MAX_BYTES = 1024
"""The longest thread id a saver keeps, in bytes of UTF-8: 1024 ASCII characters, fewer
when they are not ASCII (at least 256). Every saver has the same rule, so that a thread
moves between them; the bound keeps an id within a database index entry (PostgreSQL's
B-tree refuses entries over about 2.7 kB, and an incompressible id counts in full)."""

_THREAD_ID_RULE = (
    "a thread id must be a non-empty str of valid Unicode (no lone surrogates), without "
    f"NUL characters, of at most {THREAD_ID_MAX_BYTES} bytes in UTF-8"
)


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else f"{text[:30]!r}…"


def check_thread_id(thread_id: str) -> str:
    """``thread_id``, if every saver can keep it; checked by every saver method and by
    the claim of every run, before any I/O.

    Raised by ``check_thread_id``: ``ValueError`` naming the rule and what breaks it
    (empty, a NUL character, a lone surrogate, more than ``THREAD_ID_MAX_BYTES`` bytes
    in UTF-8); ``TypeError`` when it is not a ``str``.
    """
    if type(thread_id) is not str:
        raise TypeError(f"{_THREAD_ID_RULE}, got {valid.a_or_an(type(thread_id).__name__)}")
    if not thread_id:
        raise ValueError(f"{_THREAD_ID_RULE}, got an empty string")
    nul = thread_id.find("\x00")
    if nul >= 0:
        raise ValueError(f"{_THREAD_ID_RULE}: {_shown(thread_id)} has a NUL at index {nul}")
    try:
        size = len(thread_id.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{_THREAD_ID_RULE}: {_shown(thread_id)} has a lone surrogate at index {exc.start}"
        ) from None
    if size > THREAD_ID_MAX_BYTES:
        raise ValueError(f"{_THREAD_ID_RULE}: {_shown(thread_id)} has {size} bytes")
    return thread_id


def _thread_id(instance: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """``RunnableConfig.thread_id``: ``None`` or an id every saver keeps (``check_thread_id``)."""
    if value is None:
        return
    try:
        check_thread_id(value)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"RunnableConfig.thread_id: {exc}") from None


@attrs.frozen
class RunnableConfig:
    """Who the run is for and what travels with it.

    ``thread_id`` names the conversation (checkpoints are kept per thread);
    ``metadata`` holds caller-visible settings (``_stream_``); ``context`` is the run's
    working space shared by nodes and interceptors (``dynamic_tools``,
    ``_MODEL_ITERATION_`` …) — the one mutable part, on purpose.
    ``wait_for_thread``: when another live run owns ``thread_id``, how many seconds to
    wait for it to end before raising ``ThreadBusy`` (0, the default: raise at once;
    ``math.inf``: wait as long as it takes).
    ``unfinished``: what new input does on a thread whose last run did not finish (it was
    cancelled, or its process died): ``"raise"`` (the default) refuses it with a
    ``ValueError`` naming what is pending, so nothing is dropped silently; ``"cancel"``
    ends that run for good — each call it left unanswered gets ``Error: Tool execution was
    cancelled by the caller: the run ended before this call finished``, the finished
    calls' answers and state updates are kept — and the new input goes on from there (a
    chat whose user pressed stop, then wrote again). A pause for approval is not
    unfinished: it still waits for its decisions.
    """

    thread_id: str | None = attrs.field(default=None, validator=_thread_id)
    metadata: Mapping[str, Any] = attrs.field(factory=dict, hash=False, validator=valid.mapping())
    context: dict[str, Any] = attrs.field(
        factory=dict,
        hash=False,
        validator=valid.mapping(mutable=True),
    )
    wait_for_thread: float = attrs.field(
        default=0.0, kw_only=True, validator=valid.number(minimum=0)
    )
    unfinished: Literal["raise", "cancel"] = attrs.field(
        default="raise", kw_only=True, validator=valid.one_of("raise", "cancel")
    )


_NAMES = tuple(f.name for f in attrs.fields(RunnableConfig))

# A mapping given as a config: the same keys as RunnableConfig's fields, strictly typed (no
# extra key); wait_for_thread may be math.inf, as it may in RunnableConfig(...).
converter.register_structure_hook(
    RunnableConfig,
    make_dict_structure_fn(
        RunnableConfig,
        converter,
        metadata=override(struct_hook=converter.get_structure_hook(dict[str, Any])),
        wait_for_thread=override(
            struct_hook=converter.get_structure_hook(Annotated[float, AllowNonFinite])
        ),
    ),
)


def as_config(value: RunnableConfig | Mapping[str, Any] | None) -> RunnableConfig:
    """The run's config from what a caller gave: a ``RunnableConfig``; a ``Mapping`` with
    its fields as keys (``{"thread_id": "t1"}``), converted by the one converter; ``None``
    (the default config).

    Raised by ``as_config``: ``TypeError`` naming ``RunnableConfig`` and the key that is
    not one of its fields or holds a value of the wrong type, or for a value that is none
    of the three; the field checks of ``RunnableConfig`` (an empty ``thread_id``, a
    negative ``wait_for_thread``) as ``RunnableConfig(...)`` raises them.
    """
    if value is None:
        return RunnableConfig()
    if isinstance(value, RunnableConfig):
        return value
    if not isinstance(value, Mapping):
        hint = f"; RunnableConfig(thread_id={value!r:.40})" if isinstance(value, str) else ""
        fields = ", ".join(_NAMES)
        raise TypeError(
            f"config must be a RunnableConfig, a Mapping of its fields ({fields}) or None, got "
            f"{valid.got(value)}{hint}"
        )
    unknown = next((key for key in value if key not in _NAMES), None)
    if unknown is not None:
        raise TypeError(
            f"config: RunnableConfig has no field {unknown!r} (a Mapping given as the config "
            f"has its fields as keys: {', '.join(_NAMES)})"
        )
    try:
        structured: RunnableConfig = converter.structure(value, RunnableConfig)
    except ClassValidationError as exc:
        for inner in exc.exceptions:
            if not getattr(inner, "__notes__", None):
                # RunnableConfig's own checks (a NUL in thread_id …) already name the field.
                raise inner from None
        raise TypeError(
            f"config: a Mapping given as a RunnableConfig: {describe_error(exc, 'config')}"
        ) from None
    return structured

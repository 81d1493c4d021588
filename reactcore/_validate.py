"""Argument checks for public constructors: attrs validators with one wording.

A value of the wrong type is a ``TypeError``, a value out of range a ``ValueError``; both
name the class and the parameter, say what was expected and what was given::

    ReactAgent.max_parallel_tools must be an int, got str '5'
    ReactAgent.max_parallel_tools must be at least 1, got 0
    ReactAgent.tools[2] must be a Tool, a function or a Toolset, got int 3

The functions below make attrs validators (``attrs.field(validator=integer(minimum=1))``);
outside attrs, ``integer(minimum=1).spec.check(where, value)`` raises the same errors for
``where`` (``"tool 'f': timeout"``).
``bool`` is never taken where an ``int`` or a number is meant; an ``int`` is taken where a
number (``float``) is. Protocol-typed parameters are checked structurally (the methods they
need are there); lists item by item, the index in the message.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Callable, Collection, Iterable, Mapping, MutableMapping, Sequence
from types import MappingProxyType
from typing import Any, NoReturn, Protocol, cast

import attrs

Limit = tuple[Callable[[Any], bool], str]
"""A range check: whether a value (of the right type) is in range, and what it must be."""


# Words that start with a vowel letter but not a vowel sound ("a UUID", "a unicode string").
_SOUNDS_LIKE_YOU = ("uu", "uni", "use", "usa", "uti", "one")


def a_or_an(name: str) -> str:
    """``name`` after its indefinite article, for messages: ``"an int"``, ``"a str"``,
    ``"an AssistantMessage"``, ``"a UUID"``."""
    lower = name.lower()
    vowel = lower[:1] in ("a", "e", "i", "o", "u") and not lower.startswith(_SOUNDS_LIKE_YOU)
    return f"{'an' if vowel else 'a'} {name}"


def got(value: Any) -> str:
    """How a message shows a given value: its type, then its repr (cut at 60 characters)."""
    return f"{type(value).__name__} {value!r:.60}"


class Check:
    """What one parameter must be: its type (``what``), then its range (``limits``).

    ``problem(value)`` says what is wrong with a value; ``check(where, value)`` raises it.
    A field's attrs validator is made of it by ``validator`` (a plain function: attrs
    calls it for every field of every instance made, so it is kept fast).
    """

    __slots__ = (
        "_hint",
        "_limits",
        "_reject",
        "_test",
        "_types",
        "fast",
        "optional",
        "simple",
        "what",
    )

    def __init__(
        self,
        what: str,
        types: type | tuple[type, ...] = object,
        *,
        test: Callable[[Any], bool] | None = None,
        reject: type | tuple[type, ...] = (),
        limits: Sequence[Limit] = (),
        optional: bool = False,
        hint: Callable[[Any], str] | None = None,
        fast: Callable[[Any], bool] | None = None,
    ) -> None:
        self.what = f"{what} or None" if optional else what
        self._types = types
        self._test = test
        self._reject = reject
        self._limits = tuple(limits)
        self.optional = optional
        self._hint = hint
        # A plain type check is done inline by the validator (one call per field).
        self.simple = types if fast is None and test is None and not reject and not limits else None
        if fast is None and types is object and test is not None and not reject and not limits:
            fast = test
        if fast is not None and optional:
            given = fast
            fast = lambda v: v is None or given(v)  # noqa: E731
        # What most values pass by quickly: True only when ``problem`` finds nothing.
        self.fast = fast

    def problem(self, value: Any) -> tuple[type[Exception], str] | None:
        """``None`` when ``value`` passes; else the error's type and its text after the
        parameter's name (``" must be an int, got str '5'"``)."""
        if value is None and self.optional:
            return None
        if (
            not isinstance(value, self._types)
            or isinstance(value, self._reject)
            or (self._test is not None and not self._test(value))
        ):
            hint = self._hint(value) if self._hint is not None else ""
            return TypeError, f" must be {self.what}, got {got(value)}{hint}"
        for in_range, must in self._limits:
            if not in_range(value):
                return ValueError, f" {must}, got {value!r:.60}"
        return None

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` passes."""
        return self.problem(value) is None

    def check(self, where: str, value: Any) -> None:
        """Raise the error for ``value`` given as ``where`` (``"tool 'f': timeout"``)."""
        problem = self.problem(value)
        if problem is not None:
            _raise(where, problem)


def _raise(where: str, problem: tuple[type[Exception], str]) -> NoReturn:
    error, text = problem
    raise error(f"{where}{text}")


class Each(Check):
    """A collection whose items each pass ``item`` (the index is in the message)."""

    __slots__ = ("_container", "_item")

    def __init__(self, item: Check, container: Check) -> None:
        super().__init__(container.what, fast=_each_fast(item, container.optional))
        self._item = item
        self._container = container

    def problem(self, value: Any) -> tuple[type[Exception], str] | None:
        found = self._container.problem(value)
        if found is not None or value is None:
            return found
        for index, entry in enumerate(value):
            wrong = self._item.problem(entry)
            if wrong is not None:
                return wrong[0], f"[{index}]{wrong[1]}"
        return None


def _each_fast(item: Check, optional: bool) -> Callable[[Any], bool]:
    """A tuple or a list whose items pass their quick check."""
    simple, fast = item.simple, item.fast

    def each_fast(value: Any) -> bool:
        if type(value) is not tuple and type(value) is not list:
            return optional and value is None
        for entry in value:  # a loop: cheaper than all() over a generator for a few items
            if simple is not None:
                if not isinstance(entry, simple):
                    return False
            elif fast is None or not fast(entry):
                return False
        return True

    return each_fast


class Validator(Protocol):
    """An attrs validator made by this module; ``spec`` is its ``Check``."""

    spec: Check

    def __call__(self, instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None: ...


def validator(spec: Check) -> Validator:
    """The attrs validator of ``spec``: errors name the instance's class and the field's
    parameter name (its alias: ``tools=`` for a field kept as ``tool_names``)."""
    fast, simple, problem = spec.fast, spec.simple, spec.problem

    def fail(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        found = problem(value)
        if found is not None:
            _raise(f"{type(instance).__name__}.{attribute.alias}", found)

    # Three shapes of one check, so that a value that passes costs one call at most.
    if simple is not None and spec.optional:

        def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
            if value is not None and not isinstance(value, simple):
                fail(instance, attribute, value)

    elif simple is not None:

        def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
            if not isinstance(value, simple):
                fail(instance, attribute, value)

    elif fast is not None:

        def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
            if not fast(value):
                fail(instance, attribute, value)

    else:
        validate = fail

    made = cast(Validator, validate)
    made.spec = spec
    return made


def leave(value: object) -> Any:
    """``value`` as given, from a converter that cannot convert it: the field's validator
    then refuses it with the usual message (a converter is not told the parameter's name,
    and mypy's attrs plugin accepts only plain functions as converters)."""
    return value


# --- the checks ----------------------------------------------------------------------------


def satisfies(what: str, types: type | tuple[type, ...] = object, **options: Any) -> Validator:
    """A validator for a check of one's own: ``Check(what, types, test=…, reject=…,
    limits=…, optional=…, hint=…)`` (an instance of ``types``, not of ``reject``, passing
    ``test`` is ``what`` the parameter must be; ``limits`` are its range)."""
    return validator(Check(what, types, **options))


def _at_least(minimum: float) -> Limit:
    if minimum == 0:
        return (lambda v: v >= 0, "must not be negative")
    return (lambda v: v >= minimum, f"must be at least {minimum:g}")


def integer(*, minimum: int | None = None, optional: bool = False) -> Validator:
    """An ``int`` (not a ``bool``), at least ``minimum`` if given."""
    floor = minimum if minimum is not None else -math.inf
    limits = [_at_least(minimum)] if minimum is not None else []
    check = Check(
        "an int",
        int,
        reject=bool,
        limits=limits,
        optional=optional,
        fast=lambda v: type(v) is int and v >= floor,
    )
    return validator(check)


def number(
    *,
    positive: bool = False,
    minimum: float | None = None,
    below: float | None = None,
    optional: bool = False,
) -> Validator:
    """A number of seconds, a factor …: an ``int`` or a ``float`` (not a ``bool``), not NaN;
    ``positive`` (> 0), at least ``minimum``, less than ``below`` if given."""
    limits: list[Limit] = [(lambda v: not math.isnan(v), "must be a number, not NaN")]
    if positive:
        limits.append((lambda v: v > 0, "must be positive"))
    if minimum is not None and below is not None:
        limits.append((lambda v: minimum <= v < below, f"must be in [{minimum:g}, {below:g})"))
    elif minimum is not None:
        limits.append(_at_least(minimum))
    # NaN fails every comparison, so it never takes the fast way.
    fast: Callable[[Any], bool]
    if positive:
        fast = lambda v: (type(v) is float or type(v) is int) and v > 0  # noqa: E731
    elif minimum is not None and below is not None:
        fast = lambda v: (type(v) is float or type(v) is int) and minimum <= v < below  # noqa: E731
    elif minimum is not None:
        fast = lambda v: (type(v) is float or type(v) is int) and v >= minimum  # noqa: E731
    else:
        fast = lambda v: (type(v) is float or type(v) is int) and v == v  # noqa: E731
    check = Check(
        "a number", (int, float), reject=bool, limits=limits, optional=optional, fast=fast
    )
    return validator(check)


def boolean(*, optional: bool = False) -> Validator:
    """``True`` or ``False`` (a truthy string such as ``"no"`` is a mistake, not a yes)."""
    return validator(Check("a bool", bool, optional=optional))


def text(*, non_empty: bool = False, optional: bool = False) -> Validator:
    """A ``str``; with ``non_empty``, not blank."""
    if not non_empty:
        return validator(Check("a str", str, optional=optional))
    check = Check(
        "a non-empty str",
        str,
        limits=[(lambda v: bool(v) and not v.isspace(), "must not be empty")],
        optional=optional,
        fast=lambda v: type(v) is str and bool(v) and not v.isspace(),
    )
    return validator(check)


def one_of(*choices: str) -> Validator:
    """One of the strings ``choices``."""
    listed = f"one of {', '.join(repr(c) for c in choices)}"
    return satisfies(
        listed,
        str,
        limits=[(lambda v: v in choices, f"must be {listed}")],
        fast=lambda v: type(v) is str and v in choices,
    )


def instance_of(cls: type | tuple[type, ...], what: str, *, optional: bool = False) -> Validator:
    """An instance of ``cls`` (``what`` names it in messages: ``"an anyio.CapacityLimiter"``)."""
    return validator(Check(what, cls, optional=optional))


def mapping(*, optional: bool = False, mutable: bool = False) -> Validator:
    """A ``Mapping`` (a ``dict`` …); with ``mutable``, a ``MutableMapping``."""
    # isinstance of an ABC costs several times a type test: plain dicts are let through first.
    plain = (dict,) if mutable else (dict, MappingProxyType)
    what, kind = ("a MutableMapping", MutableMapping) if mutable else ("a Mapping", Mapping)
    return validator(Check(what, kind, optional=optional, fast=lambda v: type(v) in plain))


def function(what: str = "a callable", *, optional: bool = False) -> Validator:
    """Something callable."""
    return satisfies(what, test=callable, optional=optional)


def _has(*methods: str) -> Callable[[Any], bool]:
    def test(value: Any) -> bool:
        return all(callable(getattr(value, m, None)) for m in methods)

    return test


def has_methods(*methods: str, what: str, optional: bool = False) -> Validator:
    """An object with every one of ``methods`` (a structural check of a protocol)."""
    return satisfies(what, test=_has(*methods), optional=optional)


def _model_hint(value: Any) -> str:
    if isinstance(value, str):
        return f'; pass a ChatModel, e.g. OpenAIChatModel("{value:.40}")'
    return ""


def chat_model(*, optional: bool = False) -> Validator:
    """A ``ChatModel`` (``call`` and ``stream``); a string says how to make one."""
    what = "a ChatModel (with call and stream)"
    return satisfies(what, test=_has("call", "stream"), optional=optional, hint=_model_hint)


def each(item: Validator, *, names: bool = False, optional: bool = False) -> Validator:
    """A list or tuple whose items pass ``item``; with ``names``, any collection but a
    ``str`` (a set of tool names, say: one string would be taken letter by letter)."""
    what, kind = (
        ("a collection (not a str)", Collection) if names else ("a list or tuple", Sequence)
    )
    return validator(Each(item.spec, Check(what, kind, reject=(str, bytes), optional=optional)))


ITERABLE = Check("an iterable (not a str)", Iterable, reject=(str, bytes))
"""What a converter making a tuple (or a set) takes: anything to iterate over once (a
list, a generator …) but a ``str``, which would be taken letter by letter."""


def type_form(*, optional: bool = False) -> Validator:
    """A type: a class, or a typing form such as ``list[int]`` or ``int | None``."""

    def test(value: Any) -> bool:
        return isinstance(value, type) or typing.get_origin(value) is not None

    return satisfies("a type (a class or a typing form)", test=test, optional=optional)


NAMES = each(text(), names=True)
"""A collection of ``str`` (tool names), not one ``str``."""

"""OverAllState and the key strategies (REPLACE, APPEND, MERGE), as SEED-NOTES states them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reactcore import KeyStrategy, OverAllState, Remove, UserMessage
from reactcore._state import rewrite

APPEND, MERGE, REPLACE = KeyStrategy.APPEND, KeyStrategy.MERGE, KeyStrategy.REPLACE


def merged(old: Any, new: Any, strategy: KeyStrategy) -> Any:
    """The value of key "k" after ``{"k": new}`` lands on a state holding ``old``."""
    data = {} if old is _MISSING else {"k": old}
    return OverAllState(data, {"k": strategy}).merge({"k": new})["k"]


_MISSING = object()


# --- strategies and defaults -------------------------------------------------------------


def test_keys_without_a_strategy_are_replace_and_messages_append() -> None:
    """A key with no strategy is REPLACE; "messages" is APPEND unless told otherwise."""
    state = OverAllState({})
    assert state.strategy("anything") is REPLACE
    assert state.strategy("messages") is APPEND
    assert OverAllState({}, {"messages": REPLACE}).strategy("messages") is REPLACE
    assert OverAllState({}, {"k": MERGE}).strategy("messages") is APPEND


def test_messages_are_appended_by_default() -> None:
    """Without any strategies given, a messages update is appended to the conversation."""
    hi, there = UserMessage("hi"), UserMessage("there")
    state = OverAllState({"messages": [hi]}).merge({"messages": there})
    assert state["messages"] == [hi, there]


@pytest.mark.parametrize(
    ("old", "new"),
    [([1], [2]), ("a", None), ({"x": 1}, {"y": 2}), (_MISSING, 5)],
    ids=["list", "none", "dict", "missing"],
)
def test_replace_takes_the_new_value(old: Any, new: Any) -> None:
    """REPLACE: the value after an update is the update, whatever it and the old value are."""
    assert merged(old, new, REPLACE) == new


# --- APPEND ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(["a"], None, ["a"], id="none-keeps-old"),
        pytest.param(["a"], ["b", "c"], ["a", "b", "c"], id="list-concatenated"),
        pytest.param(["a"], [], ["a"], id="empty-list"),
        pytest.param(["a"], "b", ["a", "b"], id="single-appended"),
        pytest.param(["a"], {"d": 1}, ["a", {"d": 1}], id="dict-appended-whole"),
        pytest.param(("a",), ["b"], ["a", "b"], id="old-tuple"),
        pytest.param(["a"], ("b", "c"), ["a", "b", "c"], id="tuple-concatenated"),
        pytest.param(_MISSING, ["a"], ["a"], id="missing-key"),
        pytest.param(_MISSING, "a", ["a"], id="missing-key-single"),
        pytest.param("old", ["x"], ["x"], id="old-non-list-replaced"),
        pytest.param({"k": 1}, "x", ["x"], id="old-dict-replaced"),
        pytest.param(["a", "b", "a"], Remove("a"), ["b", "a"], id="remove-first-equal"),
        pytest.param(["a", "b"], Remove("z"), ["a", "b"], id="remove-absent"),
        pytest.param(["a", "b"], [Remove("a"), "c"], ["b", "c"], id="remove-then-add"),
        pytest.param(["a"], ["b", Remove("b")], ["a"], id="add-then-remove"),
        pytest.param(["a", "a"], [Remove("a"), Remove("a")], [], id="remove-twice"),
    ],
)
def test_append_rules(old: Any, new: Any, expected: Any) -> None:
    """APPEND: None keeps, lists concatenate, single values append, Remove drops one match,
    and an old value that is not a list is replaced."""
    assert merged(old, new, APPEND) == expected


def test_remove_matches_by_equality() -> None:
    """Remove(x) drops the first element equal to x (not the same object), e.g. a message."""
    first, second = UserMessage("dup"), UserMessage("keep")
    state = OverAllState({"messages": [first, second, UserMessage("dup")]})
    after = state.merge({"messages": Remove(UserMessage("dup"))})
    assert after["messages"] == [second, UserMessage("dup")]


# --- MERGE -------------------------------------------------------------------------------


def test_merge_is_shallow_and_new_keys_win() -> None:
    """MERGE: keys of both dicts, the update's value winning; nested dicts are not merged."""
    old = {"a": 1, "b": 1, "nested": {"x": 1}}
    new = {"b": 2, "c": 3, "nested": {"y": 2}}
    assert merged(old, new, MERGE) == {"a": 1, "b": 2, "c": 3, "nested": {"y": 2}}


@pytest.mark.parametrize(("old", "new"), [(_MISSING, {"a": 1}), (None, {"a": 1})])
def test_merge_onto_nothing_is_the_update(old: Any, new: Any) -> None:
    """MERGE onto a missing (or None) value gives the update's keys."""
    assert merged(old, new, MERGE) == new


def test_merge_of_none_keeps_the_old_dict() -> None:
    """A None MERGE update leaves the old dict as it was."""
    assert merged({"a": 1}, None, MERGE) == {"a": 1}


@pytest.mark.parametrize(
    ("old", "new", "types"),
    [({"a": 1}, [1], "dict and list"), (5, {"a": 1}, "int and dict"), ({}, "s", "dict and str")],
)
def test_merge_of_non_dicts_is_a_type_error(old: Any, new: Any, types: str) -> None:
    """MERGE of anything but dicts is a TypeError naming the key and both types."""
    with pytest.raises(TypeError, match=f"'k' uses MERGE but got {types}"):
        merged(old, new, MERGE)


# --- the state as a value ----------------------------------------------------------------


def test_merge_returns_a_new_state_and_leaves_the_old_unchanged() -> None:
    """merge builds a new state; the old state and the lists and dicts it holds are untouched."""
    items, options = ["a"], {"x": 1}
    old = OverAllState(
        {"items": items, "options": options, "name": "n"}, {"items": APPEND, "options": MERGE}
    )
    new = old.merge({"items": ["b"], "options": {"y": 2}, "name": "m", "extra": 1})
    assert new is not old
    assert dict(old) == {"items": ["a"], "options": {"x": 1}, "name": "n"}
    assert items == ["a"]
    assert options == {"x": 1}
    assert dict(new) == {"items": ["a", "b"], "options": {"x": 1, "y": 2}, "name": "m", "extra": 1}


def test_merge_keeps_the_key_strategies() -> None:
    """The merged state merges by the same strategies as the state it came from."""
    state = OverAllState({}, {"k": APPEND}).merge({"k": 1}).merge({"k": 2})
    assert state["k"] == [1, 2]
    assert state.strategy("k") is APPEND


def test_state_is_a_read_only_mapping() -> None:
    """OverAllState is a Mapping: lookups, in, len and iteration work; writes are refused."""
    state = OverAllState({"a": 1, "b": None})
    assert isinstance(state, Mapping)
    assert "a" in state
    assert "b" in state
    assert "zz" not in state
    assert len(state) == 2
    assert sorted(state) == ["a", "b"]
    assert state.get("zz", 7) == 7
    assert dict(state.items()) == {"a": 1, "b": None}
    with pytest.raises(TypeError):
        state["a"] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        del state["a"]  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        state.data["a"] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        state.key_strategies["a"] = MERGE  # type: ignore[index]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        state.data = {}  # type: ignore[misc]
    with pytest.raises(KeyError):
        state["zz"]
    assert dict(state) == {"a": 1, "b": None}


def test_state_copies_the_dict_it_is_built_from() -> None:
    """Changing the dict a state was built from afterwards does not change the state."""
    source: dict[str, Any] = {"a": 1}
    state = OverAllState(source)
    source["a"] = 2
    source["b"] = 3
    assert dict(state) == {"a": 1}


def test_states_compare_by_data_and_are_unhashable() -> None:
    """Two states with equal data are equal; a state is mutable-looking data, so unhashable."""
    assert OverAllState({"a": [1]}) == OverAllState({"a": [1]})
    assert OverAllState({"a": [1]}) != OverAllState({"a": [2]})
    with pytest.raises(TypeError):
        hash(OverAllState({}))


# --- combine_updates: sequential and parallel give the same state ------------------------

KEYS = ["a", "b", "c", "messages"]
scalars = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["x", "y", "z"]))
values = st.one_of(
    scalars,
    st.builds(Remove, scalars),
    st.lists(st.one_of(scalars, st.builds(Remove, scalars)), max_size=4),
    st.dictionaries(st.sampled_from(["p", "q", "r"]), scalars, max_size=3),
)
updates = st.dictionaries(st.sampled_from(KEYS), values, max_size=4)
strategy_maps = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(list(KeyStrategy)))
initial_data = st.dictionaries(st.sampled_from(KEYS), values, max_size=4)


def _fold(state: OverAllState, updates: list[dict[str, Any]]) -> OverAllState | type[TypeError]:
    try:
        for update in updates:
            state = state.merge(update)
    except TypeError:
        return TypeError
    return state


def _combined(state: OverAllState, updates: list[dict[str, Any]]) -> OverAllState | type[TypeError]:
    try:
        return state.merge(state.combine_updates(updates))
    except TypeError:
        return TypeError


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial_data, strategy_maps, st.lists(updates, max_size=4))
def test_combined_updates_merge_like_sequential_updates(
    data: dict[str, Any], strategies: dict[str, KeyStrategy], batch: list[dict[str, Any]]
) -> None:
    """Merging combine_updates(u1, …, un) gives the state of merging u1, …, un in turn
    (or both fail with TypeError): parallel tool updates land like sequential ones."""
    state = OverAllState(data, strategies)
    assert _combined(state, batch) == _fold(state, batch)


def test_combine_updates_keeps_call_order() -> None:
    """combine_updates folds in order: APPEND keeps order, REPLACE keeps the last value,
    MERGE lets later keys win, and a key in one update only keeps its value."""
    state = OverAllState({}, {"log": APPEND, "opts": MERGE})
    combined = state.combine_updates(
        [
            {"log": "first", "last": 1, "opts": {"a": 1, "b": 1}, "only": [9]},
            {"log": ["second", "third"], "last": 2, "opts": {"b": 2}},
        ]
    )
    assert combined == {
        "log": ["first", "second", "third"],
        "last": 2,
        "opts": {"a": 1, "b": 2},
        "only": [9],
    }


def test_combine_updates_of_nothing_is_empty() -> None:
    """No updates combine into the empty update."""
    assert OverAllState({"a": 1}).combine_updates([]) == {}


# --- rewrite -----------------------------------------------------------------------------


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    old=st.lists(st.integers(0, 3), max_size=8),
    new=st.lists(st.integers(0, 3), max_size=8),
)
def test_rewrite_turns_the_old_list_into_the_new_one(old: list[int], new: list[int]) -> None:
    """``rewrite(old, new)`` is an APPEND update that gives ``new`` when merged on ``old``,
    whatever equal elements the lists hold (``Remove`` takes the first equal one)."""
    update = rewrite(old, new)
    assert OverAllState({"messages": old}).merge({"messages": update})["messages"] == new


def test_rewrite_keeps_the_unchanged_start_and_handles_unhashable_items() -> None:
    """Elements before the first change are not touched; the cut moves earlier when a
    removed element has an equal one before it; unhashable elements work too."""
    hi, there = UserMessage("hi"), UserMessage("there")
    assert rewrite([hi, there], [hi, UserMessage("you")]) == [Remove(there), UserMessage("you")]
    assert rewrite([there, hi, hi], [there, hi, there]) == [Remove(hi), Remove(hi), hi, there]
    assert rewrite([[1], [2]], [[1], [3]]) == [Remove([2]), [3]]
    assert rewrite([hi], [hi]) == []

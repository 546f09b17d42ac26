"""The JSON codec: seed 004 vectors, merge/diff properties, parsing errors, record access, paths."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ampsctl.errors import InputError
from ampsctl.filter.ast import Field, Step
from ampsctl.messages.json_record import JsonRecord
from ampsctl.messages import json_codec
from ampsctl.messages.codec import Codec
from ampsctl.messages.json_codec import JSON, same
from ampsctl.messages.paths import join_path, split_path

VECTORS = tomllib.loads((Path(__file__).parent / "seed004_vectors.toml").read_text(encoding="utf-8"))


def doc(text: str | None) -> Any:
    return None if text is None else JSON.parse(text.encode())


def canonical(value: Any) -> bytes:
    """Order-free, type-preserving form for comparisons (spec §2.1: field order is not significant)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


# --- seed 004 vectors ---------------------------------------------------------------------


@pytest.mark.parametrize("case", VECTORS["merge"], ids=lambda case: case["name"])
def test_merge_vector(case: dict[str, Any]) -> None:
    base = doc(case.get("base"))
    before = canonical(base)
    result = functools.reduce(JSON.merge, [doc(text) for text in case["deltas"]], base)
    assert canonical(result) == canonical(doc(case["expected"]))
    assert canonical(base) == before  # pure


@pytest.mark.parametrize("case", VECTORS["diff"], ids=lambda case: case["name"])
def test_diff_vector(case: dict[str, Any]) -> None:
    result = JSON.diff(
        doc(case.get("old")),
        doc(case["new"]),
        case["keys"],
        no_empties=case.get("no_empties", False),
        send_keys=case.get("send_keys", True),
        select=case.get("select"),
    )
    if "expected" in case:
        assert result is not None and canonical(result) == canonical(doc(case["expected"]))
    else:
        assert result is None


@pytest.mark.parametrize("case", VECTORS["conflate"], ids=lambda case: case["name"])
def test_conflate_vector(case: dict[str, Any]) -> None:
    state, deltas = doc(case["stored"]), []
    for text in case["updates"]:
        update = doc(text)
        deltas.append(JSON.diff(state, update, case["keys"]))
        state = update  # a plain publish replaces the stored record
    assert canonical(functools.reduce(JSON.merge, deltas)) == canonical(doc(case["expected"]))


def test_diff_output_follows_new_key_order() -> None:
    old = doc('{"b":1, "id":1, "a":1}')
    new = doc('{"b":2, "id":1, "a":2}')
    assert list(JSON.diff(old, new, ["/id"]) or {}) == ["b", "id", "a"]


def test_merge_keeps_base_order_and_appends_new_fields() -> None:
    merged = JSON.merge(doc('{"b":1, "id":1}'), doc('{"c":3, "id":1, "b":2}'))
    assert list(merged) == ["b", "id", "c"]


def test_json_codec_satisfies_the_protocol() -> None:
    assert isinstance(JSON, Codec) and JSON.name == "json"


# --- Hypothesis properties ----------------------------------------------------------------

names = st.text(alphabet="abcxyz", min_size=1, max_size=3)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(names, inner, max_size=4)),
    max_leaves=12,
)
objects = st.dictionaries(names, values, max_size=5)


@given(objects)
def test_merging_an_empty_delta_changes_nothing(base: dict[str, Any]) -> None:
    assert same(JSON.merge(base, {}), base)


@given(objects, objects)
def test_merging_the_same_delta_twice_equals_once(base: dict[str, Any], delta: dict[str, Any]) -> None:
    once = JSON.merge(base, delta)
    assert same(JSON.merge(once, delta), once)


@given(objects, objects)
def test_merge_does_not_modify_its_inputs(base: dict[str, Any], delta: dict[str, Any]) -> None:
    base_before, delta_before = canonical(base), canonical(delta)
    JSON.merge(base, delta)
    assert canonical(base) == base_before and canonical(delta) == delta_before


@given(objects, objects, st.booleans())
def test_merge_of_the_diff_rebuilds_an_additive_change(old: dict[str, Any], change: dict[str, Any], send_keys: bool) -> None:
    # new = merge(old, change) has every field of old (a delta cannot remove fields), and the
    # key field /id is the same on both sides, as it is for one SOW record.
    old = {**old, "id": 1}
    change.pop("id", None)
    new = JSON.merge(old, change)
    delta = JSON.diff(old, new, ["/id"], send_keys=send_keys)
    assert delta is not None
    assert same(JSON.merge(old, delta), new)


@given(objects)
def test_diff_of_an_unchanged_record_is_the_keys_or_nothing(record: dict[str, Any]) -> None:
    record = {**record, "id": 5}
    assert JSON.diff(record, record, ["/id"]) == {"id": 5}
    assert JSON.diff(record, record, ["/id"], no_empties=True) is None


@given(objects)
def test_parse_serialize_round_trip(record: dict[str, Any]) -> None:
    assert same(JSON.parse(JSON.serialize(record)), record)


@given(st.binary(max_size=40))
def test_garbage_is_an_input_error_or_an_object(raw: bytes) -> None:
    try:
        assert isinstance(JSON.parse(raw), dict)
    except InputError as error:
        assert error.code == "JSON"


# --- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [b"", b"[1", b"\xff\xfe\x00", b"<a/>", b"35=D\x01", b"[1,2]", b"null", b"7", b'{"a":1e400}'])
def test_bad_json_is_a_clear_input_error(raw: bytes) -> None:
    with pytest.raises(InputError) as caught:
        JSON.parse(raw)
    assert caught.value.code == "JSON" and caught.value.message


def test_merge_and_diff_reject_non_objects() -> None:
    with pytest.raises(InputError):
        JSON.merge({"a": 1}, [1])  # type: ignore[arg-type]
    with pytest.raises(InputError):
        JSON.diff({"a": 1}, "x", ["/a"])


def test_deep_nesting_is_merged_and_diffed_not_a_traceback() -> None:
    deep = b'{"a":' * 1000 + b"1" + b"}" * 1000  # as deep as orjson reads
    nested = JSON.parse(deep)
    assert JSON.serialize(JSON.merge(nested, nested)) == deep
    assert JSON.diff(nested, nested, ["/x"]) == {}


def test_unwritable_value_is_an_input_error() -> None:
    with pytest.raises(InputError):
        JSON.serialize({"a": 2**70})


# --- record access ------------------------------------------------------------------------

SAMPLE = b'{"a":{"b":[1,2]},"o":[{"n":1},{"m":2},{"n":[3,4]}],"s":"x","@k":1,"e":null}'


@pytest.mark.parametrize(
    "field",
    [
        Field((Step("a"), Step("b"))),
        Field((Step("a"), Step("b", 1))),
        Field((Step("a"), Step("b", 5))),
        Field((Step("o"), Step("n"))),
        Field((Step("o"), Step("n", 1))),
        Field((Step("s", 0),)),
        Field((Step("s", 1),)),
        Field((Step("s"), Step("t"))),
        Field((Step("@k"),)),
        Field((Step("@k"),), bracketed=True),
        Field((Step("e"),)),
        Field((Step("missing"),)),
    ],
)
def test_codec_record_is_the_shared_json_record(field: Field) -> None:
    record = JSON.record(JSON.parse(SAMPLE))
    assert type(record) is JsonRecord
    assert record.get(field) == JsonRecord.from_bytes(SAMPLE).get(field)


# --- paths --------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "steps"), [("/id", ("id",)), (" /customer/name ", ("customer", "name")), ("/55", ("55",)), ("/@attr", ("@attr",))])
def test_split_path(text: str, steps: tuple[str, ...]) -> None:
    assert split_path(text) == steps
    assert join_path(steps) == text.strip()


@pytest.mark.parametrize("text", ["", "/", "id", "/a//b", "/a/"])
def test_split_path_rejects_malformed_paths(text: str) -> None:
    with pytest.raises(InputError) as caught:
        split_path(text)
    assert caught.value.code == "PATH"


@pytest.mark.parametrize(
    ("old", "new", "keys", "select", "expected"),
    [
        # A key field goes out with send_keys whether or not the select list names it, nested or not
        # (a nested one was dropped with its unselected parent, so the delta named no record).
        ({"id": 1, "a": {"b": 1, "z": 1}, "c": 1}, {"id": 1, "a": {"b": 1, "z": 2}, "c": 2}, ["/a/b"], ["/c"], {"a": {"b": 1}, "c": 2}),
        ({"id": 1, "c": 1}, {"id": 1, "c": 2}, ["/id"], ["/c"], {"id": 1, "c": 2}),
        ({"o": {"k": {"id": 7}}, "c": 1}, {"o": {"k": {"id": 7}}, "c": 2}, ["/o/k/id"], ["/c"], {"o": {"k": {"id": 7}}, "c": 2}),
    ],
)
def test_diff_sends_nested_key_fields_outside_the_select_list(old, new, keys, select, expected) -> None:
    assert JSON.diff(old, new, keys, select=select) == expected
    assert JSON.diff(old, new, keys, select=select, send_keys=False) == {"c": 2}
    assert JSON.diff(old, {**new, "c": 1}, keys, select=select, no_empties=True) is None


# --- the loops behind deep documents -------------------------------------------------------
# merge and diff recurse, and fall back to a loop of their own when the recursion runs out
# (documents nested hundreds of levels deep). The two are separate code: they must agree.

paths = st.lists(names, min_size=1, max_size=3).map(lambda steps: "/" + "/".join(steps))


def _outcome(call: Any) -> Any:
    try:
        return ("ok", call())
    except InputError as exc:
        return ("error", exc.message)


def _through_the_loops(call: Any) -> Any:
    """``call``'s outcome with the recursive merge and diff failing, as on a very deep document."""
    def too_deep(*args: Any, **kwargs: Any) -> Any:
        raise RecursionError

    with mock.patch.object(json_codec, "_merge", too_deep), mock.patch.object(json_codec._Diff, "object", too_deep):
        return _outcome(call)


@given(objects, objects)
def test_merge_in_a_loop_equals_the_recursive_merge(base: dict[str, Any], delta: dict[str, Any]) -> None:
    expected = _outcome(lambda: JSON.merge(base, delta))
    got = _through_the_loops(lambda: JSON.merge(base, delta))
    assert got[0] == expected[0] and (got[0] == "error" or canonical(got[1]) == canonical(expected[1]))
    assert got[0] == "error" or list(got[1]) == list(expected[1])  # field order too


@given(st.one_of(st.none(), objects), objects, st.lists(paths, max_size=2), st.one_of(st.none(), st.lists(paths, min_size=1, max_size=3)),
       st.booleans(), st.booleans())
def test_diff_in_a_loop_equals_the_recursive_diff(old: dict[str, Any] | None, new: dict[str, Any], keys: list[str],
                                                  select: list[str] | None, send_keys: bool, no_empties: bool) -> None:
    def diff() -> Any:
        return JSON.diff(old, new, keys, no_empties=no_empties, send_keys=send_keys, select=select)

    expected, got = _outcome(diff), _through_the_loops(diff)
    assert got[0] == expected[0]
    if got[0] == "ok" and got[1] is not None:
        assert canonical(got[1]) == canonical(expected[1]) and orjson.dumps(got[1]) == orjson.dumps(expected[1])
    else:
        assert got == expected


@pytest.mark.parametrize("case", VECTORS["diff"], ids=lambda case: case["name"])
def test_diff_vector_in_a_loop(case: dict[str, Any]) -> None:
    def diff() -> Any:
        return JSON.diff(doc(case.get("old")), doc(case["new"]), case["keys"], no_empties=case.get("no_empties", False),
                         send_keys=case.get("send_keys", True), select=case.get("select"))

    assert _through_the_loops(diff) == _outcome(diff)

"""ampsctl.messages.stream: per-key folding (merge --stream) and conflation, without the CLI."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ampsctl.errors import AmpsctlError, InputError
from ampsctl.messages import types
from ampsctl.messages.keys import key_material
from ampsctl.messages.stream import conflate, fold, fold_into, key_function, record_key_values

JSON = types.codec("json")
FIX = types.codec("fix")
XML = types.codec("xml")

# Seed 004's conflation example (also the CLI golden conflate-json-seed004), with a second key.
UPDATES = [
    {"id": 99, "status": "open", "notes": "none", "xref": 82},
    {"id": 99, "status": "questioned", "notes": "none", "xref": 82},
    {"id": "7", "a": 1},
    {"id": 99, "status": "questioned", "notes": "jcarlo hold", "xref": 82},
    {"id": 99, "status": "cleared", "notes": "none", "xref": 82},
    {"id": 7, "a": 2},
    {"id": 99, "status": "open", "notes": "none", "xref": 82},
]


def tagged(docs: list[Any]) -> list[tuple[int, Any]]:
    return list(enumerate(docs, 1))


def test_fold_final_record_per_key_in_first_seen_order() -> None:
    out = list(fold(JSON, tagged(UPDATES), ["/id"]))
    # JSON 7 and "7" are one SOW key; the later message's id replaces like any other field.
    assert out == [{"id": 99, "status": "open", "notes": "none", "xref": 82}, {"id": 7, "a": 2}]


def test_fold_every_yields_each_intermediate_record() -> None:
    deltas = [{"id": 1, "a": {"x": 1, "y": 1}}, {"id": 2, "b": 1}, {"id": 1, "a": {"y": 2}, "c": [1]}, {"id": 1, "c": [2, 3]}]
    out = list(fold(JSON, tagged(deltas), ["/id"], every=True))
    assert out == [
        {"id": 1, "a": {"x": 1, "y": 1}},
        {"id": 2, "b": 1},
        {"id": 1, "a": {"x": 1, "y": 2}, "c": [1]},
        {"id": 1, "a": {"x": 1, "y": 2}, "c": [2, 3]},  # arrays replaced whole
    ]


def test_fold_is_lazy_with_every_and_leaves_inputs_unchanged() -> None:
    docs = [{"id": 1, "a": {"x": 1}}, {"id": 1, "a": {"y": None}}]
    before = copy.deepcopy(docs)
    stream = fold(JSON, tagged(docs), ["/id"], every=True)
    assert next(stream) == {"id": 1, "a": {"x": 1}}
    assert next(stream) == {"id": 1, "a": {"x": 1, "y": None}}  # null replaces, never deletes
    assert docs == before


def test_fold_into_continues_a_fold_and_tags_each_records_messages() -> None:
    # A scalar then an object replaces, an object then an object merges: folding in parts
    # must continue from the state, not merge separately folded parts.
    docs = [{"id": 1, "a": {"x": 1}}, {"id": 2, "b": 1}, {"id": 1, "a": 5}, {"id": "1", "a": {"y": 2}}, {"id": 3}]
    state = fold_into({}, JSON, tagged(docs[:2]), ["/id"])
    tags: dict[Any, list[int]] = {}
    assert fold_into(state, JSON, list(enumerate(docs[2:], 3)), ["/id"], tags=tags) is state
    assert list(state.values()) == list(fold(JSON, tagged(docs), ["/id"]))
    assert list(state.values())[0] == {"id": "1", "a": {"y": 2}}
    assert sorted(tags.values()) == [[3, 4], [5]]


def test_fold_composite_and_nested_keys() -> None:
    docs = [
        {"k": {"a": 1}, "b": "x", "v": 1},
        {"k": {"a": 1}, "b": "y", "v": 2},
        {"k": {"a": 1}, "b": "x", "w": 3},
    ]
    out = list(fold(JSON, tagged(docs), ["/k/a", "/b"]))
    assert out == [{"k": {"a": 1}, "b": "x", "v": 1, "w": 3}, {"k": {"a": 1}, "b": "y", "v": 2}]


def test_fold_fix_tag_by_tag() -> None:
    docs = [FIX.parse(raw) for raw in (b"55=IBM\x0144=1\x01", b"55=MSFT\x0144=7\x01", b"55=IBM\x0144=2\x0138=100\x01")]
    out = [FIX.serialize(doc) for doc in fold(FIX, tagged(docs), ["/55"])]
    assert out == [b"55=IBM\x0144=2\x0138=100\x01", b"55=MSFT\x0144=7\x01"]


def test_errors_raise_without_callback() -> None:
    with pytest.raises(InputError, match="key field /id is missing"):
        list(fold(JSON, tagged([{"id": 1}, {"a": 3}]), ["/id"]))


def test_errors_go_to_callback_with_the_tag_and_the_message_is_skipped() -> None:
    seen: list[tuple[Any, str]] = []

    def on_error(tag: Any, exc: AmpsctlError) -> None:
        seen.append((tag, exc.code))

    docs = [{"id": 1, "a": 1}, {"a": 3}, {"id": [1, 2]}, {"id": 1, "a": 2}]
    assert list(fold(JSON, tagged(docs), ["/id"], on_error=on_error)) == [{"id": 1, "a": 2}]
    assert seen == [(2, "SOWKEY"), (3, "SOWKEY")]
    seen.clear()
    assert list(conflate(JSON, tagged(docs), ["/id"], on_error=on_error)) == [{"id": 1, "a": 2}]
    assert seen == [(2, "SOWKEY"), (3, "SOWKEY")]


def test_invalid_key_path_is_reported_per_message() -> None:
    seen: list[Any] = []
    out = list(fold(JSON, tagged([{"id": 1}, {"id": 2}]), ["id"], on_error=lambda tag, exc: seen.append((tag, exc.code))))
    assert out == [] and seen == [(1, "PATH"), (2, "PATH")]


def test_conflate_seed004_example() -> None:
    assert list(conflate(JSON, tagged(UPDATES), ["/id"])) == [{"id": 99, "status": "open", "notes": "none"}, {"id": 7, "a": 2}]


def test_conflate_key_seen_once_and_no_empties() -> None:
    docs = [{"id": 1, "a": 1}, {"id": 2, "a": 1}, {"id": 2, "a": 1}]
    assert list(conflate(JSON, tagged(docs), ["/id"])) == [{"id": 2}]
    assert list(conflate(JSON, tagged(docs), ["/id"], no_empties=True)) == []


def test_key_function_xml_through_records() -> None:
    doc = XML.parse(b'<Order><Id>5</Id><Qty>1</Qty></Order>')
    assert record_key_values(XML, doc, ["/Order/Id"]) == ("5",)  # as written: keys read values as strings
    assert key_function(XML, ["/Order/Id"])(doc) == key_function(JSON, ["/id"])({"id": "5"})
    padded = XML.parse(b'<Order><Id>05</Id><Qty>1</Qty></Order>')
    assert key_function(XML, ["/Order/Id"])(padded) != key_function(XML, ["/Order/Id"])(doc)


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=4))
values = st.one_of(scalars, st.lists(scalars, max_size=2), st.dictionaries(st.sampled_from("ab"), scalars, max_size=2))
documents = st.dictionaries(st.sampled_from(["id", "k", "x"]), values, max_size=3)
key_paths = st.sampled_from([["/id"], ["/k/a"], ["/id", "/k"], ["/x/b", "/id"], ["/id", "/x"]])


class _Failed(tuple):  # type: ignore[type-arg]
    """(code, message) of an InputError, told apart from a composite key's tuple."""


def _key_or_error(function: Any, doc: Any) -> Any:
    try:
        return function(doc)
    except InputError as exc:
        return _Failed((exc.code, exc.message))


@given(documents, documents, key_paths)
def test_key_function_equal_exactly_when_sow_keys_are(a: dict[str, Any], b: dict[str, Any], paths: list[str]) -> None:
    def reference(doc: dict[str, Any]) -> bytes:
        return key_material("", record_key_values(JSON, doc, paths))

    key_of = key_function(JSON, paths)
    expected = [_key_or_error(reference, doc) for doc in (a, b)]
    got = [_key_or_error(key_of, doc) for doc in (a, b)]
    for want, have in zip(expected, got, strict=True):  # the same errors as key_values and canon
        assert isinstance(want, _Failed) == isinstance(have, _Failed)
        if isinstance(want, _Failed):
            assert have == want
    if not any(isinstance(key, _Failed) for key in expected):  # the same grouping
        assert (got[0] == got[1]) == (expected[0] == expected[1])

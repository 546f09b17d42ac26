"""The FIX and NVFIX codecs: parse/serialize, delta merge (spec §6, V5) and delta diff (§7)."""

from __future__ import annotations

from functools import reduce

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ampsctl.errors import InputError
from ampsctl.messages.codec import Codec
from ampsctl.messages.fix import FIX, NVFIX, FixCodec, FixDocument


def fix(text: str) -> FixDocument:
    return FIX.parse(text.replace("|", "\x01").encode())


def nv(text: str) -> FixDocument:
    return NVFIX.parse(text.replace("|", "\x01").encode())


def wire(doc: FixDocument | None) -> str | None:
    return None if doc is None else FIX.serialize(doc).decode().replace("\x01", "|")


def test_codecs_implement_the_protocol() -> None:
    assert isinstance(FIX, Codec) and isinstance(NVFIX, Codec)
    assert (FIX.name, NVFIX.name) == ("fix", "nvfix")


def test_parse_keeps_order_repeats_and_value_text() -> None:
    doc = fix("35=D|55=MSFT|44=90.250|58=|55=IBM")
    assert doc.fields == (("35", "D"), ("55", "MSFT"), ("44", "90.250"), ("58", ""), ("55", "IBM"))
    assert doc.values("55") == ("MSFT", "IBM")
    assert FIX.record(doc).fields == {"35": "D", "55": ["MSFT", "IBM"], "44": 90.25, "58": None}


def test_serialize_always_ends_with_the_separator() -> None:
    assert FIX.serialize(fix("1=FOO|5=TEST1")) == b"1=FOO\x015=TEST1\x01"
    assert FixCodec("nvfix", separator="|").serialize(nv("Symbol=MSFT")) == b"Symbol=MSFT|"


@pytest.mark.parametrize(
    ("codec", "raw", "message"),
    [
        (FIX, b"35=D\x01garbage\x01", "MALFORMED FIX field 'garbage' at byte 5"),
        (FIX, b"Symbol=MSFT\x01", "expected tag=value"),
        (NVFIX, b"=x\x01", "malformed NVFIX field"),
        (FIX, b"\x00\xff\xfe\x89PNG", "malformed FIX field"),
    ],
)
def test_garbage_is_an_input_error_with_the_type_code(codec: FixCodec, raw: bytes, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("MALFORMED", "malformed")) as info:
        codec.parse(raw)
    assert info.value.code == codec.name.upper()


def test_serialize_refuses_fields_that_would_not_parse_back() -> None:
    with pytest.raises(InputError):
        NVFIX.serialize(FixDocument((("a", "x\x01y"),)))
    with pytest.raises(InputError):
        FIX.serialize(FixDocument((("Symbol", "x"),)))


# --- delta publish -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "delta", "merged"),
    [
        ("1=FOO|5=TEST1|", "5=TEST1|2=BAR", "1=FOO|5=TEST1|2=BAR|"),  # V5 (FAQ): appended, trailing SOH
        ("1=A|2=B|3=C|", "2=X|", "1=A|2=X|3=C|"),  # replaced in place, order kept
        ("1=A|2=B|", "2=|", "1=A|2=|"),  # a present empty value is NULL and replaces
        ("1=A|2=B|", "1=A|", "1=A|2=B|"),  # absent = unchanged: a delta cannot delete (V2)
        ("1=A|9=x|7=k|9=y|", "9=z|", "1=A|9=z|7=k|"),  # repeated tag = array, replaced whole (R2)
        ("1=A|9=x|", "9=p|9=q|", "1=A|9=p|9=q|"),
    ],
)
def test_merge_tag_by_tag(base: str, delta: str, merged: str) -> None:
    b, d = fix(base), fix(delta)
    assert wire(FIX.merge(b, d)) == merged
    assert (b, d) == (fix(base), fix(delta))  # pure


def test_merge_into_nothing_is_an_insert() -> None:  # V6
    assert FIX.merge(None, fix("1=A|")) == fix("1=A|")


def test_nvfix_merge_by_name() -> None:
    merged = NVFIX.merge(nv("Symbol=MSFT|Qty=100|"), nv("Qty=200|Side=Buy|"))
    assert NVFIX.serialize(merged) == b"Symbol=MSFT\x01Qty=200\x01Side=Buy\x01"


# --- delta subscribe ---------------------------------------------------------------------------


def test_diff_sends_keys_and_changed_fields() -> None:  # K10 / D1 shape
    old, new = fix("55=IBM|109=US|44=1|38=10|"), fix("55=IBM|109=US|44=2|38=10|")
    assert wire(FIX.diff(old, new, ["/55", "/109"])) == "55=IBM|109=US|44=2|"
    assert wire(FIX.diff(old, new, ["/55", "/109"], send_keys=False)) == "44=2|"


def test_diff_of_an_unchanged_record() -> None:  # D3
    doc = fix("1=1|2=1|")
    assert wire(FIX.diff(doc, doc, ["/1"])) == "1=1|"
    assert FIX.diff(doc, doc, ["/1"], no_empties=True) is None


def test_diff_compares_value_text() -> None:  # 1 and 1.0 are different bytes and keys (K7)
    assert wire(FIX.diff(fix("1=1|2=1|"), fix("1=1|2=1.0|"), ["/1"])) == "1=1|2=1.0|"


def test_diff_with_a_select_list() -> None:  # D5
    old, new = fix("1=1|2=1|3=1|"), fix("1=1|2=1|3=2|")
    assert FIX.diff(old, new, ["/1"], select=["/1", "/2"], no_empties=True) is None
    assert wire(FIX.diff(old, new, ["/1"], select=["/3"])) == "1=1|3=2|"


def test_diff_of_an_insert_is_the_full_message() -> None:  # D4
    assert wire(FIX.diff(None, fix("1=2|2=1|3=2|"), ["/1"])) == "1=2|2=1|3=2|"


def test_diff_rejects_nested_paths() -> None:
    with pytest.raises(InputError, match="flat"):
        FIX.diff(fix("1=1|"), fix("1=1|"), ["/a/b"])


def test_conflation_as_the_seed_shows() -> None:  # D2 with /1=id /2=status /3=notes /4=xref
    states = ["1=99|2=open|3=none|4=82|", "1=99|2=questioned|3=none|4=82|", "1=99|2=questioned|3=jcarlo hold|4=82|",
              "1=99|2=cleared|3=none|4=82|", "1=99|2=open|3=none|4=82|"]
    deltas = [FIX.diff(fix(a), fix(b), ["/1"]) for a, b in zip(states, states[1:])]
    assert wire(reduce(FIX.merge, deltas)) == "1=99|2=open|3=none|"


# --- properties --------------------------------------------------------------------------------

_values = st.text(st.characters(blacklist_characters="\x01", blacklist_categories=("Cs",)), max_size=6)
_fix_docs = st.lists(st.tuples(st.sampled_from(["1", "2", "35", "55", "109"]), _values), max_size=8).map(
    lambda pairs: FixDocument(tuple(pairs))
)
_nv_names = st.text("ABQab9_.-é", min_size=1, max_size=3)  # addressable by a path: no '/', no spaces
_nv_docs = st.lists(st.tuples(_nv_names, _values), max_size=8).map(lambda pairs: FixDocument(tuple(pairs)))
_pairs = st.one_of(st.tuples(st.just(FIX), _fix_docs, _fix_docs, _fix_docs), st.tuples(st.just(NVFIX), _nv_docs, _nv_docs, _nv_docs))


@given(_pairs)
def test_round_trip(case: tuple[FixCodec, FixDocument, FixDocument, FixDocument]) -> None:
    codec, doc, _, _ = case
    raw = codec.serialize(doc)
    assert codec.parse(raw) == doc and codec.serialize(codec.parse(raw)) == raw


@given(_pairs)
def test_merging_an_empty_delta_changes_nothing(case: tuple[FixCodec, FixDocument, FixDocument, FixDocument]) -> None:
    codec, doc, _, _ = case
    assert codec.merge(doc, FixDocument()) == doc


@given(_pairs)
def test_merging_a_delta_twice_equals_once(case: tuple[FixCodec, FixDocument, FixDocument, FixDocument]) -> None:
    codec, doc, delta, _ = case
    once = codec.merge(doc, delta)
    assert codec.merge(once, delta) == once


@given(_pairs, st.booleans())
def test_merging_the_diff_rebuilds_the_new_state(case: tuple[FixCodec, FixDocument, FixDocument, FixDocument], send_keys: bool) -> None:
    codec, old, delta, _ = case
    new = codec.merge(old, delta)  # an additive change: new has every field of old
    # A key field identifies the record, so it never changes between old and new.
    keys = [f"/{name}" for name, _ in old.fields[:1] if old.values(name) == new.values(name)]
    diffed = codec.diff(old, new, keys, send_keys=send_keys)
    assert diffed is not None and codec.merge(old, diffed) == new


@pytest.mark.parametrize("tag", ["\u00b2", "\u0665\u0665", "\uff15\uff15", "055", "0"])
def test_a_fix_tag_is_a_positive_integer_in_ascii_digits_without_leading_zeros(tag: str) -> None:
    # str.isdigit() took superscripts and other scripts' digits; 055 was another field than 55.
    with pytest.raises(InputError, match="expected tag=value"):
        FIX.parse(f"35=D\x01{tag}=x\x01".encode())
    with pytest.raises(InputError, match="FIX tags are positive numbers"):
        FIX.serialize(FixDocument((("35", "D"), (tag, "x"))))

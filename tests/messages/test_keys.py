"""SOW keys: the spec's equivalence vectors K1-K10, the scheme's fixed values, and its errors.

The K vectors (spec/messages.md §3.4) say which messages share a key, not what the key is.
The pinned values below are the scheme of docs/formats.md "SOW keys" (version 1): if one of
them changes, every stored SOW file keyed by an older ampsctl would no longer match.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ampsctl.errors import InputError
from ampsctl.messages.fix import FixRecord
from ampsctl.messages.keys import (
    KEY_SCHEME_VERSION,
    canon,
    check_supplied_key,
    crc64_ecma,
    generate_key,
    key_material,
    key_values,
    sow_key,
)


def test_crc_is_ecma_182() -> None:
    assert crc64_ecma(b"123456789") == 0x6C40DF5F0B497347  # the catalogue check value
    assert crc64_ecma(b"") == 0


def test_scheme_is_pinned() -> None:
    assert KEY_SCHEME_VERSION == 2
    assert key_material("orders", [7, None]) == b"orders\x00\x027\x00\x01N"
    assert generate_key("orders", [7]) == str(crc64_ecma(b"orders\x00\x027"))
    assert generate_key("orders", [7]).isdigit()


def test_k1_same_values_same_key() -> None:
    a = sow_key({"orderId": 7, "p": 1}, ["/orderId"], "orders")
    b = sow_key({"orderId": 7, "p": 2}, ["/orderId"], "orders")
    assert a == b


def test_k2_topics_separate_keys() -> None:
    message = {"id": 1}
    assert sow_key(message, ["/id"], "A") != sow_key(message, ["/id"], "B")


def test_k3_shared_key_domain() -> None:
    message = {"id": 1}
    assert sow_key(message, ["/id"], "X") == sow_key(message, ["/id"], "X")


def test_k4_no_concatenation_collision() -> None:
    assert sow_key({"a": "ab", "b": "c"}, ["/a", "/b"], "t") != sow_key({"a": "a", "b": "bc"}, ["/a", "/b"], "t")


def test_k5_key_order_matters() -> None:
    assert sow_key({"a": 1, "b": 2}, ["/a", "/b"], "t") != sow_key({"a": 2, "b": 1}, ["/a", "/b"], "t")


def test_k6_text_form_number_equals_string() -> None:
    assert sow_key({"id": 1}, ["/id"], "t") == sow_key({"id": "1"}, ["/id"], "t")


def test_k7_integer_differs_from_float() -> None:
    assert sow_key({"id": 1}, ["/id"], "t") != sow_key({"id": 1.0}, ["/id"], "t")


def test_k8_base64_key_accepted_unchanged() -> None:
    assert check_supplied_key("QUJDMTIz") == "QUJDMTIz"
    assert check_supplied_key("a+b/c==") == "a+b/c=="


@pytest.mark.parametrize("text", ["abc$%", "abc def", "ab-c", "ab_c", "é", ""])
def test_k9_non_base64_key_rejected(text: str) -> None:
    with pytest.raises(InputError) as caught:
        check_supplied_key(text)
    assert caught.value.code == "SOWKEY"


def test_k9_message_names_the_character() -> None:
    with pytest.raises(InputError, match=r"'\$' at position 4"):
        check_supplied_key("abc$%")


def test_k10_fix_composite_key() -> None:
    first = FixRecord.from_bytes(b"55=IBM\x01109=US\x0144=1\x01")
    second = FixRecord.from_bytes(b"55=IBM\x01109=US\x0144=2\x01")
    assert key_values(first, ["/55", "/109"]) == ("IBM", "US")
    assert sow_key(first, ["/55", "/109"], "fix-topic") == sow_key(second, ["/55", "/109"], "fix-topic")
    other = FixRecord.from_bytes(b"55=IBM\x01109=UK\x0144=1\x01")
    assert sow_key(first, ["/55", "/109"], "fix-topic") != sow_key(other, ["/55", "/109"], "fix-topic")


def test_fix_pairs_document_matches_record() -> None:
    pairs = [("55", "IBM"), ("109", "US"), ("44", "1")]
    record = FixRecord.from_bytes(b"55=IBM\x01109=US\x0144=1\x01")
    assert sow_key(pairs, ["/55", "/109"], "t") == sow_key(record, ["/55", "/109"], "t")


def test_nested_json_key() -> None:
    assert key_values({"c": {"id": "x"}, "n": None}, ["/c/id", "/n"]) == ("x", None)


def test_missing_key_field_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="key field /orderId is missing") as caught:
        key_values({"id": 1}, ["/orderId"])
    assert caught.value.code == "SOWKEY" and caught.value.hint


def test_missing_key_field_can_key_on_null() -> None:
    assert key_values({"id": 1}, ["/orderId"], allow_missing=True) == (None,)


def test_missing_fix_tag_is_an_error() -> None:
    with pytest.raises(InputError, match="/55"):
        key_values(FixRecord.from_bytes(b"109=US\x01"), ["/55"])


@pytest.mark.parametrize(
    ("doc", "what"),
    [({"id": [1, 2]}, "array"), ({"id": {"a": 1}}, "object"), ({"a": [{"b": 1}]}, "array")],
)
def test_array_or_object_key_value_rejected(doc: dict, what: str) -> None:
    path = "/a/b" if "a" in doc else "/id"
    with pytest.raises(InputError, match=what):
        key_values(doc, [path])


def test_repeated_fix_tag_rejected() -> None:
    with pytest.raises(InputError, match="array"):
        key_values(FixRecord.from_bytes(b"55=A\x0155=B\x01"), ["/55"])


def test_bad_key_path_and_no_keys() -> None:
    with pytest.raises(InputError):
        key_values({"id": 1}, ["id"])
    with pytest.raises(InputError):
        key_values({"id": 1}, [])


def test_nul_rejected_instead_of_colliding() -> None:
    with pytest.raises(InputError, match="NUL"):
        generate_key("t", ["a\x00\x02b"])
    with pytest.raises(InputError, match="NUL"):
        generate_key("t\x00", ["a"])


def test_empty_text_is_null() -> None:
    assert canon("") == canon(None) == b"\x01N"
    assert canon(True) == b"\x02true"


_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))),
)


@given(st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))), st.lists(_scalar, min_size=1, max_size=4), st.lists(_scalar, min_size=1, max_size=4))
def test_material_is_injective_on_canonical_values(domain: str, left: list, right: list) -> None:
    """Different canonical value tuples never share key material (so only a CRC collision can merge them)."""
    same = [canon(v) for v in left] == [canon(v) for v in right]
    assert (key_material(domain, left) == key_material(domain, right)) == same
    if same:
        assert generate_key(domain, left) == generate_key(domain, right)


@pytest.mark.parametrize(
    ("domain", "values", "key"),
    [
        ("orders", [7], "14124411285351201523"),
        ("orders", ["7"], "14124411285351201523"),
        ("orders", [7.0], "11164206362148543805"),
        ("X", ["IBM", "US"], "7140058212087011074"),
    ],
)
def test_documented_examples(domain: str, values: list, key: str) -> None:
    """The worked examples of docs/formats.md "SOW keys"; changing one is a new scheme version."""
    assert generate_key(domain, values) == key


def _bytewise_crc64(data: bytes) -> int:
    """The CRC-64/ECMA-182 definition, one bit at a time: the reference for the table-driven one."""
    crc = 0
    for byte in data:
        crc ^= byte << 56
        for _ in range(8):
            crc = ((crc << 1) ^ 0x42F0E1EBA9EA3693) & (2**64 - 1) if crc >> 63 else (crc << 1) & (2**64 - 1)
    return crc


@given(st.binary(max_size=64), st.integers(min_value=0, max_value=64))
def test_the_word_table_crc_equals_the_bitwise_definition_also_when_continued(data: bytes, cut: int) -> None:
    from ampsctl.messages.keys import crc64_ecma

    assert crc64_ecma(data) == _bytewise_crc64(data)
    assert crc64_ecma(data[cut:], crc64_ecma(data[:cut])) == _bytewise_crc64(data)


@given(st.text(max_size=12).filter(lambda text: "\x00" not in text),
       st.lists(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                          st.text(max_size=8).filter(lambda text: "\x00" not in text)), min_size=1, max_size=3))
def test_generate_key_is_the_crc_of_the_key_material(domain: str, values: list[object]) -> None:
    from ampsctl.messages.keys import generate_key, key_material

    assert generate_key(domain, values) == str(_bytewise_crc64(key_material(domain, values)))

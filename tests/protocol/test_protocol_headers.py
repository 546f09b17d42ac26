"""Header fields (spec/protocol.md §3), ampsctl/protocol/headers.py: the table, the §3.3 aliases
and the §3.4 value conventions."""

from __future__ import annotations

import pytest

from ampsctl.protocol import Reason
from ampsctl.protocol import headers as h
from ampsctl.protocol.errors import HeaderValueError

# §3.3, every alias the broker must accept, with its wire key.
SECTION_3_3 = {
    "order_by": "orderby",
    "lease_period": "lp",
    "leaseperiod": "lp",
    "opts": "o",
    "options": "o",
    "version": "v",
    "password": "pw",
    "command": "c",
    "cmd": "c",
    "command_id": "cid",
    "cmd_id": "cid",
    "topic": "t",
    "filter": "f",
    "ack_type": "a",
    "bookmark": "bm",
    "batch_size": "bs",
    "correlation_id": "x",
    "expiration": "e",
    "seq": "s",
    "sow_key": "k",
    "msg_len": "l",
    "timestamp": "ts",
    "subids": "sids",
}


def test_the_table_is_consistent() -> None:
    keys = [field.key for field in h.FIELDS]
    assert len(keys) == len(set(keys))
    assert not set(h.ALIASES) & set(keys), "an alias must never shadow another field's wire key"
    assert all(field.canonical for field in h.FIELDS)


@pytest.mark.parametrize(("alias", "key"), sorted(SECTION_3_3.items()))
def test_every_section_3_3_alias_normalizes_to_its_wire_key(alias: str, key: str) -> None:
    assert h.wire_key(alias) == key
    assert h.normalize({alias: "v1"}) == {key: "v1"}


def test_the_wire_key_wins_over_an_alias_in_either_order() -> None:
    assert h.normalize({"topic": "alias", "t": "wire"}) == {"t": "wire"}
    assert h.normalize({"t": "wire", "topic": "alias"}) == {"t": "wire"}
    assert h.normalize({"cmd": "first", "command": "second"}) == {"c": "second"}  # between aliases: the last


def test_nulls_are_absent_and_unknown_keys_are_kept() -> None:
    raw = {"c": "publish", "x": None, "mt": "json", "vendor_thing": [1, 2]}
    assert h.normalize(raw) == {"c": "publish", "mt": "json", "vendor_thing": [1, 2]}


def test_normalize_returns_the_header_itself_when_nothing_changes() -> None:
    raw = {"c": "publish", "t": "orders"}
    assert h.normalize(raw) is raw


@pytest.mark.parametrize(("value", "expected"), [(10, 10), ("10", 10), (" 7 ", 7), ("0", 0), (2**64 - 1, 2**64 - 1)])
def test_integers_may_arrive_as_strings(value: object, expected: int) -> None:
    assert h.integer({"bs": value}, "bs") == expected


@pytest.mark.parametrize("value", [True, 1.5, "ten", "", [1], -1, "-1", 2**64])
def test_bad_integers_are_rejected_with_the_field_reason(value: object) -> None:
    with pytest.raises(HeaderValueError) as caught:
        h.integer({"s": value}, "s")
    assert caught.value.field == "s" and caught.value.reason is Reason.INVALID_OPTIONS


def test_integer_ranges_and_reasons() -> None:
    assert h.integer({}, "bs") is None
    with pytest.raises(HeaderValueError, match="outside 1..10000"):
        h.integer({"bs": 0}, "bs", minimum=1, maximum=10_000)
    with pytest.raises(HeaderValueError) as caught:
        h.integer({"bm": "x"}, "bm", reason=Reason.INVALID_BOOKMARK)
    assert caught.value.reason is Reason.INVALID_BOOKMARK


def test_strings_may_arrive_as_integers() -> None:
    assert h.text({"cid": 42}, "cid") == "42"
    assert h.text({"cid": "42"}, "cid") == "42"
    with pytest.raises(HeaderValueError) as caught:
        h.text({"t": ["a"]}, "t", Reason.INVALID_TOPIC)
    assert caught.value.reason is Reason.INVALID_TOPIC and "an array" in caught.value.message
    with pytest.raises(HeaderValueError):
        h.text({"cid": True}, "cid")


@pytest.mark.parametrize(
    ("value", "expected"), [(True, True), (False, False), ("true", True), ("FALSE", False), (1, True), (0, False)]
)
def test_booleans(value: object, expected: bool) -> None:
    assert h.boolean({"send_oof": value}, "send_oof") is expected


def test_bad_booleans() -> None:
    with pytest.raises(HeaderValueError):
        h.boolean({"send_oof": "yes"}, "send_oof")


@pytest.mark.parametrize(
    ("text", "items"),
    [("a,b", ("a", "b")), ("processed,", ("processed",)), (" a , ,b ,", ("a", "b")), ("", ()), (None, ())],
)
def test_comma_lists_tolerate_spaces_empties_and_a_trailing_comma(text: str | None, items: tuple[str, ...]) -> None:
    assert h.split_list(text) == items


def test_join_list_is_absent_for_nothing() -> None:
    assert h.join_list(("a", "b")) == "a,b"
    assert h.join_list(()) is None


@pytest.mark.parametrize(
    ("micros", "text"),
    [(0, "19700101T000000.000000Z"), (1_704_110_400_123_456, "20240101T120000.123456Z")],
)
def test_timestamps_use_the_basic_utc_form(micros: int, text: str) -> None:
    assert h.format_timestamp(micros) == text

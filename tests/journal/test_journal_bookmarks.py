"""Bookmarks and timestamps: FNV-1a 64, the AMPS shapes, ISO-8601, and command-line positions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ampsctl.errors import InputError
from ampsctl.journal.bookmarks import (
    format_bookmark, format_timestamp, is_bookmark, parse_bookmark, parse_position, parse_timestamp, publisher_hash,
)


@pytest.mark.parametrize(("name", "expected"), [
    ("", 0xCBF29CE484222325),  # the FNV-1a 64 offset basis
    ("a", 0xAF63DC4C8601EC8C),
    ("foobar", 0x85944171F73967E8),
])
def test_fnv1a64_reference_values(name: str, expected: int) -> None:
    assert publisher_hash(name) == expected


def test_bookmark_shape() -> None:
    assert format_bookmark("a", 42) == f"{0xAF63DC4C8601EC8C}|42|"
    assert parse_bookmark("12290412031115262887|1484244707000000007|") == (12290412031115262887, 1484244707000000007)
    assert parse_bookmark(" 1|2| ") == (1, 2)


@pytest.mark.parametrize("text", ["", "1|2", "|2|", "a|2|", "1|2|3|", "0", "0|1", "99999999999999999999|1|"])
def test_bad_bookmarks_are_input_errors(text: str) -> None:
    with pytest.raises(InputError) as info:
        parse_bookmark(text)
    assert info.value.hint and "bookmark" in info.value.message


@pytest.mark.parametrize(("text", "micros"), [
    ("19700101T000000Z", 0),
    ("19700101T000001", 1_000_000),
    ("20261122T093000.123456Z", 1_795_339_800_123_456),
    ("20261122T093000.1Z", 1_795_339_800_100_000),
    ("2026-11-22T09:30:00.123456Z", 1_795_339_800_123_456),
    ("2026-11-22T09:30:00+00:00", 1_795_339_800_000_000),
    ("2026-11-22T10:30:00+01:00", 1_795_339_800_000_000),
    ("2026-11-22T04:30:00-0500", 1_795_339_800_000_000),
    ("2026-11-22 09:30:00", 1_795_339_800_000_000),
])
def test_timestamps(text: str, micros: int) -> None:
    assert parse_timestamp(text) == micros


@pytest.mark.parametrize("text", ["", "2026", "20261322T093000Z", "20261122T253000Z", "2026-11-22", "20261122T093000.1234567Z",
                                  "yesterday", "20261122T093000Zjunk"])
def test_bad_timestamps(text: str) -> None:
    with pytest.raises(InputError) as info:
        parse_timestamp(text)
    assert "20261122T093000.123456Z" in (info.value.hint or "")


@given(st.integers(min_value=0, max_value=253402300799999999))  # up to 9999-12-31
def test_format_and_parse_timestamps_round_trip(micros: int) -> None:
    text = format_timestamp(micros)
    assert len(text) == 23 and text.endswith("Z")
    assert parse_timestamp(text) == micros


def test_positions() -> None:
    assert parse_position("0").sequence == 0
    assert parse_position("0|1|").now
    assert parse_position("5|10|").sequence == 10
    assert parse_position("5|10|,6|3|").sequence == 3  # a list means the earliest
    assert parse_position("5|10|,0").sequence == 0
    assert parse_position("20260101T000000Z").timestamp == 1_767_225_600_000_000
    assert is_bookmark("1|2|,0|1|") and not is_bookmark("20260101T000000Z")
    with pytest.raises(InputError, match="neither a bookmark nor a timestamp"):
        parse_position("soon")
    with pytest.raises(InputError, match="invalid bookmark"):
        parse_position("1|x|")


def test_timestamps_without_a_text_form() -> None:
    from ampsctl.journal.bookmarks import timestamp_value

    assert format_timestamp(-62135596800000000) == "00010101T000000.000000Z"
    assert timestamp_value(-(1 << 63)) == -(1 << 63)
    with pytest.raises(OverflowError):
        format_timestamp((1 << 63) - 1)

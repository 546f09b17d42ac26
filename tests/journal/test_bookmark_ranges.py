"""Timestamps at the edges: UTC offsets beyond ±23:59 and offsets that leave the years 1 to 9999.

Both are InputErrors with "invalid timestamp" (exit 2 on an option, 3 in an import line), never
an OverflowError (exit 5, internal error), in ``parse_timestamp`` and in ``parse_position``.
"""

from __future__ import annotations

import pytest

from ampsctl.errors import InputError
from ampsctl.journal.bookmarks import format_timestamp, parse_position, parse_timestamp


@pytest.mark.parametrize("text", [
    "0001-01-01T00:00:00+01:00",  # 0000-12-31T23:00Z
    "0001-01-01T00:00:00.000000+00:01",
    "9999-12-31T23:30:00-01:00",  # 10000-01-01T00:30Z
    "9999-12-31T23:59:59.999999-00:01",
])
def test_an_offset_that_leaves_the_years_1_to_9999_is_out_of_range(text: str) -> None:
    for parse in (parse_timestamp, lambda t: parse_position(t).timestamp):
        with pytest.raises(InputError, match=r"invalid timestamp .*out of range") as info:
            parse(text)
        assert "20261122T093000.123456Z" in (info.value.hint or "")


@pytest.mark.parametrize("text", [
    "2026-01-01T00:00:00+25:00", "2026-01-01T00:00:00+99:99", "2026-01-01T00:00:00-24:00",
    "2026-01-01T00:00:00+00:60", "2026-01-01T00:00:00+0160", "2026-01-01T00:00:00-2400",
])
def test_offsets_beyond_23_59_are_refused(text: str) -> None:
    for parse in (parse_timestamp, lambda t: parse_position(t).timestamp):
        with pytest.raises(InputError, match=r"invalid timestamp .*UTC offset"):
            parse(text)


@pytest.mark.parametrize(("text", "utc"), [
    ("2026-01-01T23:59:00+23:59", "20260101T000000.000000Z"),
    ("2025-12-31T00:01:00-23:59", "20260101T000000.000000Z"),
    ("0001-01-01T00:00:00-00:00", "00010101T000000.000000Z"),
    ("0001-01-01T01:00:00+01:00", "00010101T000000.000000Z"),
    ("9999-12-31T22:59:59.999999-01:00", "99991231T235959.999999Z"),
])
def test_offsets_within_range_are_converted(text: str, utc: str) -> None:
    assert format_timestamp(parse_timestamp(text)) == utc
    assert parse_position(text).timestamp == parse_timestamp(text)


def test_a_position_shaped_like_a_timestamp_keeps_the_timestamp_error() -> None:
    with pytest.raises(InputError, match="invalid timestamp '20261322T093000Z'"):
        parse_position("20261322T093000Z")
    with pytest.raises(InputError, match="neither a bookmark nor a timestamp"):
        parse_position("soon")

"""The per-segment index: lookups, the file format, and files the reader must not trust."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ampsctl.journal.index import NO_TIMESTAMP, SPACING, IndexDefect, SegmentIndex, decode_index, encode_index, same_index


def _index(timestamps: list[int], size: int = 1000) -> SegmentIndex:
    index = SegmentIndex(3, 101)
    offset = 36
    for i, stamp in enumerate(timestamps):
        index.add(101 + i, stamp, offset, size)
        offset += size
    return index


def test_entries_every_spacing_bytes() -> None:
    index = _index([10] * 200, size=1000)
    assert index.offsets[0] == 36 and index.max_before[0] == NO_TIMESTAMP
    assert all(b - a >= SPACING for a, b in zip(index.offsets, index.offsets[1:]))
    assert all(b - a < SPACING + 1000 for a, b in zip(index.offsets, index.offsets[1:]))
    assert (index.records, index.last_sequence, index.covered_bytes) == (200, 300, 36 + 200 * 1000)


@given(st.lists(st.integers(min_value=0, max_value=1000), min_size=1, max_size=400), st.integers(min_value=-5, max_value=1005))
def test_timestamp_lookup_never_starts_after_a_wanted_record(stamps: list[int], wanted: int) -> None:
    index = _index(stamps, size=700)
    start = index.offset_for_timestamp(wanted)
    first = next((i for i, stamp in enumerate(stamps) if stamp >= wanted), None)
    if first is not None:
        assert start <= 36 + first * 700
    assert index.offset_for_sequence(101 + len(stamps) // 2) <= 36 + (len(stamps) // 2) * 700


def test_file_round_trip_and_defects() -> None:
    index = _index([5, 3, 9] * 100)
    data = encode_index(index)
    again = decode_index(data)
    assert same_index(index, again) is None
    assert again.first_timestamp == 5 and again.max_timestamp == 9 and again.last_timestamp == 9
    empty = SegmentIndex(1, 1, 36)
    assert decode_index(encode_index(empty)).first_timestamp is None
    for bad, reason in ((data[:-1], "bytes"), (b"x" * 10, "shorter"), (data[:40] + bytes([data[40] ^ 1]) + data[41:], "checksum"),
                        (b"\x00" + data[1:], "magic")):
        with pytest.raises(IndexDefect, match=reason):
            decode_index(bad)
    other = _index([5, 3, 9] * 100)
    other.max_timestamp = 99
    assert "max timestamp" in (same_index(index, other) or "")

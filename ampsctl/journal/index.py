"""The per-segment index: where to start reading for a sequence or a timestamp.

Theory of operation. An index is a sparse list of entries, one for the first record of a
segment and then one for the first record at or after every ``SPACING`` bytes (64 KiB), each
``(sequence, offset, max_timestamp_before)`` where ``max_timestamp_before`` is the largest
timestamp of all records of the segment before that entry's record. Timestamps come from the
caller and need not increase, so the running maximum is what makes a binary search valid:

* every record before entry ``i`` has ``sequence < entries[i].sequence``, so a scan for
  sequence ``s`` may start at the last entry with ``sequence <= s``;
* every record before entry ``i`` has ``timestamp <= max_timestamp_before[i]``, so a scan for
  the first record with ``timestamp >= t`` may start at the last entry whose
  ``max_timestamp_before < t``: nothing before it can qualify.

Either way the reader decodes at most ``SPACING`` bytes it does not want. The index also
carries the segment summary (first/last sequence and timestamp, largest timestamp, record
count) so a reader learns a sealed segment's range without reading it.

On disk (``NNNNNNNN.index`` next to ``NNNNNNNN.journal``; docs/formats.md) it is written once,
when the writer seals or closes a segment, through a temporary file and a rename. It is a
cache: ``covered_bytes`` must equal the segment's size, the checksum must match and the
entries must be in order inside the segment (``decode_index``), otherwise the reader ignores it
and rebuilds the same index in memory from the segment. The reader also checks that an entry
lands on its record before it seeks there (reader.py). Pure: bytes in,
bytes out; the file handling is in ``segment.py`` and ``writer.py``.
"""

from __future__ import annotations

import struct
import zlib
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from ampsctl.journal.codec import HEADER_SIZE

INDEX_MAGIC = b"\x89AJX\r\n\x1a\n"
INDEX_VERSION = 1
SPACING = 64 * 1024
INDEX_HEAD = struct.Struct("<8sHHIQQQQqqqQ")  # magic, version, head size, entry count, segment, covered bytes,
INDEX_HEAD_SIZE = INDEX_HEAD.size  # first seq, last seq, first ts, last ts, max ts, record count
ENTRY = struct.Struct("<QQq")
CHECKSUM = struct.Struct("<I")
NO_TIMESTAMP = -(1 << 63)  # "before every timestamp": the max_timestamp_before of the first entry


class IndexDefect(Exception):
    """An index file that cannot be used; the reader rebuilds the index instead."""


@dataclass(slots=True)
class SegmentIndex:
    """Summary and sparse entries of one segment. Built incrementally by ``add``."""

    number: int
    first_sequence: int  # from the segment header: the sequence the first record has (or would have)
    covered_bytes: int = 0  # the segment size this index describes
    records: int = 0
    last_sequence: int = 0  # first_sequence - 1 while empty
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    max_timestamp: int = NO_TIMESTAMP
    sequences: list[int] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    max_before: list[int] = field(default_factory=list)
    next_entry: int = 0  # an entry is due for the first record at or after this offset

    def __post_init__(self) -> None:
        if not self.records:
            self.last_sequence = self.first_sequence - 1

    def add(self, sequence: int, timestamp: int, offset: int, length: int) -> None:
        """Account for one record appended at ``offset`` (``length`` bytes)."""
        if offset >= self.next_entry:
            self.sequences.append(sequence)
            self.offsets.append(offset)
            self.max_before.append(self.max_timestamp)
            self.next_entry = offset + SPACING
        if self.first_timestamp is None:
            self.first_timestamp = timestamp
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        self.last_timestamp = timestamp
        self.last_sequence = sequence
        self.records += 1
        self.covered_bytes = offset + length

    def offset_for_sequence(self, sequence: int) -> int:
        """Where a scan for ``sequence`` starts (the segment's first record offset if none is earlier)."""
        i = bisect_right(self.sequences, sequence) - 1
        return self.offsets[max(i, 0)] if self.offsets else 0

    def sequence_at(self, offset: int) -> int | None:
        """The sequence of the entry at ``offset`` (None when no entry is there)."""
        i = bisect_left(self.offsets, offset)
        return self.sequences[i] if i < len(self.offsets) and self.offsets[i] == offset else None

    def offset_for_timestamp(self, timestamp: int) -> int:
        """Where a scan for the first record with a timestamp >= ``timestamp`` starts."""
        i = bisect_left(self.max_before, timestamp) - 1
        return self.offsets[max(i, 0)] if self.offsets else 0

    @property
    def empty(self) -> bool:
        return self.records == 0


def encode_index(index: SegmentIndex) -> bytes:
    count = len(index.offsets)
    head = INDEX_HEAD.pack(
        INDEX_MAGIC, INDEX_VERSION, INDEX_HEAD_SIZE, count, index.number, index.covered_bytes,
        index.first_sequence, index.last_sequence,
        _stored(index.first_timestamp), _stored(index.last_timestamp), index.max_timestamp, index.records,
    )
    entries = b"".join(ENTRY.pack(*entry) for entry in zip(index.sequences, index.offsets, index.max_before, strict=True))
    body = head + entries
    return body + CHECKSUM.pack(zlib.crc32(body))


def decode_index(data: bytes) -> SegmentIndex:
    """The index in ``data``; IndexDefect when it is not a complete, intact version-1 index."""
    if len(data) < INDEX_HEAD_SIZE + CHECKSUM.size:
        raise IndexDefect(f"index file is {len(data)} bytes, shorter than its header")
    (magic, version, head_size, count, number, covered, first_seq, last_seq,
     first_ts, last_ts, max_ts, records) = INDEX_HEAD.unpack_from(data)
    if magic != INDEX_MAGIC:
        raise IndexDefect(f"wrong magic number {magic!r} (expected {INDEX_MAGIC!r})")
    if version != INDEX_VERSION or head_size != INDEX_HEAD_SIZE:
        raise IndexDefect(f"unsupported index version {version}")
    expected = INDEX_HEAD_SIZE + count * ENTRY.size + CHECKSUM.size
    if len(data) != expected:
        raise IndexDefect(f"index file is {len(data)} bytes; its header says {expected}")
    if zlib.crc32(memoryview(data)[:-CHECKSUM.size]) != CHECKSUM.unpack_from(data, len(data) - CHECKSUM.size)[0]:
        raise IndexDefect("index checksum mismatch")
    index = SegmentIndex(number, first_seq, covered, records, last_seq,
                         _loaded(first_ts, records), _loaded(last_ts, records), max_ts)
    for i in range(count):
        sequence, offset, before = ENTRY.unpack_from(data, INDEX_HEAD_SIZE + i * ENTRY.size)
        index.sequences.append(sequence)
        index.offsets.append(offset)
        index.max_before.append(before)
    index.next_entry = (index.offsets[-1] + SPACING) if index.offsets else 0
    _check_entries(index)
    return index


def _check_entries(index: SegmentIndex) -> None:
    """IndexDefect for an intact index that cannot describe a segment (another tool's, or crafted):
    the reader then walks the segment instead. It still checks each entry it uses (reader.py)."""
    sequences, offsets = index.sequences, index.offsets
    if index.records != index.last_sequence - index.first_sequence + 1 or index.records < 0:
        raise IndexDefect(f"record count {index.records} does not match sequences {index.first_sequence} to {index.last_sequence}")
    if bool(offsets) != bool(index.records):
        raise IndexDefect(f"{len(offsets)} entries for {index.records} records")
    if not offsets:
        return
    if offsets[0] != HEADER_SIZE or sequences[0] != index.first_sequence:
        raise IndexDefect("the first entry is not the segment's first record")
    for i in range(1, len(offsets)):
        if not (offsets[i - 1] < offsets[i] < index.covered_bytes and sequences[i - 1] < sequences[i] <= index.last_sequence):
            raise IndexDefect(f"entry {i} does not come after entry {i - 1} inside the segment")


def same_index(a: SegmentIndex, b: SegmentIndex) -> str | None:
    """What differs between two indexes of one segment (file against rebuilt), or None."""
    for name in ("number", "first_sequence", "covered_bytes", "records", "last_sequence", "first_timestamp",
                 "last_timestamp", "max_timestamp", "sequences", "offsets", "max_before"):
        if getattr(a, name) != getattr(b, name):
            return f"its {name.replace('_', ' ')} disagrees with the segment"
    return None


def _stored(timestamp: int | None) -> int:
    return 0 if timestamp is None else timestamp


def _loaded(timestamp: int, records: int) -> int | None:
    return timestamp if records else None

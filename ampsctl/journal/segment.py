"""Segment files: naming, headers, reading records in chunks, and telling a torn tail from damage.

A journal directory holds ``NNNNNNNN.journal`` segment files (the number in decimal, at least
eight digits) and optional ``NNNNNNNN.index`` files; every other file is ignored. A segment name
that is not a readable regular file (a dangling symbolic link, a link loop, a directory) is an
InputError naming it, never skipped: a segment silently left out would lose its records. This
module only reads; ``writer.py`` is the only code that writes or cuts files.

Torn tail or damage? A crash can leave the last segment ending in part of a record, or in a
record whose bytes never reached the disk. Damage is a bad record with intact records after
it. So when the walk of the last segment meets a bad record at offset P, ``_find_intact``
looks for any intact record after P with a later sequence (an 8-byte needle found with
``bytes.find``, then a checksum test; see ``_find_intact``). None: the bytes from P to
the end are a torn tail. One: P is damage, reported with its offset, never skipped. In any
segment but the last, a bad record is always damage (the writer syncs a segment before it
starts the next one), and so is a record whose checksum is intact but whose structure is not
(``RecordDefect.intact``): a torn write does not leave a valid checksum behind.

``analyze`` walks with ``views.view_records``, which checks each record's structure as well as
its checksum: the walk is what establishes a segment for the reader (and for the index the
writer writes after recovery), so the reader's later scans may trust the structure.
"""

from __future__ import annotations

import errno
import os
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ampsctl.errors import InputError
from ampsctl.journal.codec import HEADER_SIZE, MIN_RECORD, HeaderDefect, RecordDefect, SegmentHeader, decode_header, record_defect
from ampsctl.journal.errors import JournalCorruptError, JournalFormatError
from ampsctl.journal.index import IndexDefect, SegmentIndex, decode_index
from ampsctl.journal.views import RecordView, view_records

SEGMENT_SUFFIX = ".journal"
INDEX_SUFFIX = ".index"
_SEGMENT_NAME = re.compile(r"([0-9]{8,})\.journal")
CHUNK_BYTES = 1 << 20
RESYNC_DENSE = 64
_RESYNC_CANDIDATES = 64  # needle hits tested per sequence value (payload bytes can contain a needle)
_SEQUENCE = struct.Struct("<Q")

# decode_records / view_records: (data, start, end, out) -> offset of the first incomplete record
DecodeFn = Callable[[bytes, int, int, list[Any]], int]


def segment_name(number: int) -> str:
    return f"{number:08d}{SEGMENT_SUFFIX}"


def index_path(segment: Path) -> Path:
    return segment.with_suffix(INDEX_SUFFIX)


def list_segments(directory: Path) -> list[tuple[int, Path]]:
    """``(number, path)`` of every segment file in ``directory``, by number."""
    found = []
    try:
        entries = list(os.scandir(directory))
    except OSError as exc:
        raise InputError(f"cannot read journal directory: {exc.strerror}", code="IO", hint="give an existing, readable directory") from None
    for entry in entries:
        match = _SEGMENT_NAME.fullmatch(entry.name)
        if match is not None and _is_segment_file(entry):
            found.append((int(match[1]), Path(entry.path)))
    found.sort()
    for (number, first), (other, second) in zip(found, found[1:]):
        if number == other:  # 00000002.journal and 000000002.journal: a copy, which one is the segment?
            raise InputError(f"journal segment {number} has two files in '{directory}': '{first.name}' and '{second.name}'",
                             code="IO", hint="a segment is one file: move the copy out of the journal directory")
    return found


def _is_segment_file(entry: os.DirEntry[str]) -> bool:
    """Whether an entry with a segment's name is a regular file to read. InputError when it is a
    symbolic link that cannot be followed, or anything else that is not a file; False only when
    it was deleted since the directory was listed (a writer removing a torn last segment)."""
    try:
        if entry.is_file():
            return True
        if not entry.is_symlink():
            if not os.path.lexists(entry.path):
                return False
            raise InputError(f"journal segment '{entry.path}' is not a regular file", code="IO",
                             hint="a NNNNNNNN.journal name is reserved for segment files: move it out of the journal directory")
        target = os.readlink(entry.path)
    except OSError as exc:
        raise InputError(f"cannot read journal segment '{entry.path}': {exc.strerror}", code="IO",
                         hint="the segment is a symbolic link that cannot be followed: point it at the segment file"
                              if exc.errno == errno.ELOOP else "check the file and its permissions") from None
    raise InputError(f"journal segment '{entry.path}' is a symbolic link to '{target}', which does not exist", code="IO",
                     hint="restore the file it points to, or point the link at the segment file")


_FORMAT_HINT = "give the directory (or a NNNNNNNN.journal file) that `ampsctl journal import` or the broker wrote"


def read_header(path: Path, data: bytes, *, last: bool) -> SegmentHeader | None:
    """The header of the segment whose first bytes are ``data``.

    None for a torn header of the last segment (shorter than a header, or all zero: the writer
    created the file and crashed). JournalFormatError for a file that is not a segment or has
    an unsupported version; JournalCorruptError for a damaged header.
    """
    try:
        return decode_header(data)
    except HeaderDefect as defect:
        if defect.kind in ("short", "zero") and last:
            return None
        if defect.kind == "magic":
            raise JournalFormatError(str(path), defect.reason, hint=_FORMAT_HINT) from None
        if defect.kind == "version":
            raise JournalFormatError(str(path), defect.reason,
                                     hint="this journal was written by a newer ampsctl: read it with that version") from None
        raise JournalCorruptError(str(path), 0, defect.reason) from None


def check_number(path: Path, number: int, header: SegmentHeader) -> None:
    if header.number != number:
        raise JournalCorruptError(str(path), 0, f"segment header says segment {header.number}, but the file is named for segment {number}",
                                  hint="segment files must keep the names the writer gave them")


def load_index(segment: Path, number: int, first_sequence: int, size: int) -> SegmentIndex | None:
    """The segment's index file if it exists, is intact and describes exactly this segment."""
    try:
        data = index_path(segment).read_bytes()
    except OSError:
        return None
    try:
        index = decode_index(data)
    except IndexDefect:
        return None
    if index.number != number or index.first_sequence != first_sequence or index.covered_bytes != size:
        return None
    return index


def read_span(path: Path, start: int, end: int, decode: DecodeFn) -> Iterator[tuple[int, list[Any]]]:
    """``(offset, records)`` decoded from ``path[start:end]``, in order, ``CHUNK_BYTES`` at a time;
    ``offset`` is where the first of the records starts in the file.

    ``start`` is a record boundary and ``end`` the end of a whole record (a segment's size or
    its ``valid_end``): a record that runs past ``end``, or any other bad record, raises
    JournalCorruptError after the good records before it were yielded.
    """
    try:
        stream = open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read journal segment '{path}': {exc.strerror}", code="IO") from None
    with stream:
        stream.seek(start)
        base, data = start, b""  # data holds path[base : base + len(data)]
        while base < end:
            want = end - base - len(data)
            needed = int.from_bytes(data[:4], "little") if len(data) >= 4 else 0
            chunk = stream.read(min(want, max(CHUNK_BYTES, needed - len(data)))) if want > 0 else b""
            if not chunk and want > 0:
                want = 0  # the file is shorter than ``end`` (cut while we read): what is here is all
            data = data + chunk if data else chunk
            out: list[Any] = []
            try:
                stop = decode(data, 0, len(data), out)
            except RecordDefect as defect:
                if out:
                    yield base, out
                raise JournalCorruptError(str(path), base + defect.offset, defect.reason) from None
            if out:
                yield base, out
            base, data = base + stop, data[stop:]
            if data and not chunk:  # nothing more to read, yet a record is unfinished
                defect = record_defect(data, 0, len(data))
                reason = defect.reason if defect is not None else "record runs past the end of the segment"
                raise JournalCorruptError(str(path), base, reason)
            if not data and not chunk and base < end:
                raise JournalCorruptError(str(path), base, f"segment ends at offset {base}, before the {end} bytes it had when opened")


def intact_sequence_at(path: Path, offset: int) -> int | None:
    """The sequence of the record at ``offset`` of a segment file if that record is intact
    (checksum and structure), else None: checks that an index entry lands on a record."""
    try:
        with open(path, "rb") as stream:
            stream.seek(offset)
            data = stream.read(HEADER_SIZE + 16)
            length = int.from_bytes(data[:4], "little")
            if len(data) >= 4 and length > len(data):
                data += stream.read(length - len(data))
    except OSError as exc:
        raise InputError(f"cannot read journal segment '{path}': {exc.strerror}", code="IO") from None
    if len(data) < MIN_RECORD or record_defect(data, 0, len(data)) is not None:
        return None
    return int.from_bytes(data[4:12], "little")


# ------------------------------------------------------------------------------ analysis


@dataclass(slots=True)
class Damage:
    """A bad region of a segment: ``offset`` to ``resume`` (the next intact record, or None)."""

    offset: int
    reason: str
    resume: int | None = None
    resume_sequence: int | None = None


@dataclass(slots=True)
class Analysis:
    """What a full walk of one segment found."""

    header: SegmentHeader
    size: int
    index: SegmentIndex  # of the intact records before the first damage (all of them if none)
    valid_end: int  # end of the last intact record before any damage or torn tail
    torn_offset: int | None = None  # last segment only: where the torn tail starts
    torn_reason: str = ""
    damage: list[Damage] | None = None  # every bad region (verify continues past the first)
    sequence_errors: list[tuple[int, str]] | None = None  # (offset, reason) of out-of-order sequences
    last_sequence: int | None = None  # of the last intact record seen, after damage too

    @property
    def clean(self) -> bool:
        return not self.damage and not self.sequence_errors


def analyze(path: Path, header: SegmentHeader, *, last: bool, every_problem: bool = False) -> Analysis:
    """Walk every record of a segment: build its index, find a torn tail or damage.

    With ``every_problem`` the walk continues after damage from the next intact record (for
    ``verify``); otherwise it stops at the first damage. Never modifies the file.
    """
    data = _read_all(path)
    size = len(data)
    index = SegmentIndex(header.number, header.first_sequence)
    result = Analysis(header, size, index, HEADER_SIZE)
    expected = header.first_sequence
    pos = HEADER_SIZE
    add = index.add
    damaged = False
    while pos < size:
        out: list[RecordView] = []
        defect: RecordDefect | None = None
        try:
            stop = view_records(data, pos, size, out)
        except RecordDefect as exc:
            defect, stop = exc, exc.offset
        for view in out:
            sequence = view.sequence
            if sequence != expected:
                why = f"sequence {sequence} where {expected} was expected"
                result.sequence_errors = [*(result.sequence_errors or []), (view.offset, why)]
                if not every_problem:
                    result.valid_end = view.offset
                    return result
            expected = sequence + 1
            result.last_sequence = sequence
            if not damaged:
                add(sequence, view.timestamp, view.offset, view.length)
        if not damaged:
            result.valid_end = stop
        if stop >= size:
            break
        if defect is None:  # an incomplete record at the end of the file
            defect = record_defect(data, stop, size) or RecordDefect(stop, "record runs past the end of the segment", incomplete=True)
        found = _find_intact(data, stop + 1, expected)
        if found is None and last and not defect.intact:
            result.torn_offset, result.torn_reason = stop, defect.reason
            break
        resume, resume_sequence = found if found is not None else (None, None)
        result.damage = [*(result.damage or []), Damage(stop, defect.reason, resume, resume_sequence)]
        damaged = True
        if not every_problem or resume is None:
            break
        pos, expected = resume, resume_sequence  # type: ignore[assignment]
    return result


def _find_intact(data: bytes, start: int, expected: int) -> tuple[int, int] | None:
    """The earliest intact record at or after ``start`` whose sequence is ``expected`` or later.

    Probes the next ``RESYNC_DENSE`` sequences one by one, then ever sparser ones (16 probes at
    each step size 2, 4, 8, ...) up to the most records the rest of the data could hold. A run
    of intact records after the damage is found when it is at least 1/16 as long as the
    distance from the damage. A binary search between the last miss and the hit then finds the
    first of them (exact when there is one damaged region; a later intact run otherwise, which
    only widens the region reported).
    """
    most = expected + (len(data) - start) // MIN_RECORD
    probes = list(range(expected, min(expected + RESYNC_DENSE, most + 1)))
    step, probe = 2, expected + RESYNC_DENSE
    while probe <= most:
        probes.extend(range(probe, min(probe + 16 * step, most + 1), step))
        probe, step = probe + 16 * step, step * 2
    low = expected - 1
    for sequence in probes:
        hit = _intact_with_sequence(data, start, sequence)
        if hit is not None:
            break
        low = sequence
    else:
        return None
    found = (hit, sequence)
    high = sequence
    while high - low > 1:
        middle = (low + high) // 2
        hit = _intact_with_sequence(data, start, middle)
        if hit is None:
            low = middle
        else:
            found, high = (hit, middle), middle
    return found


def _intact_with_sequence(data: bytes, start: int, sequence: int) -> int | None:
    needle = _SEQUENCE.pack(sequence)
    hit = data.find(needle, start + 4)
    for _ in range(_RESYNC_CANDIDATES):
        if hit < 0:
            return None
        if record_defect(data, hit - 4, len(data)) is None:
            return hit - 4
        hit = data.find(needle, hit + 1)
    return None


def _read_all(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read journal segment '{path}': {exc.strerror}", code="IO") from None


def read_head_bytes(path: Path) -> tuple[bytes, int]:
    """The first HEADER_SIZE bytes of a file and its size."""
    try:
        with open(path, "rb") as stream:
            return stream.read(HEADER_SIZE), os.fstat(stream.fileno()).st_size
    except OSError as exc:
        raise InputError(f"cannot read journal segment '{path}': {exc.strerror}", code="IO") from None

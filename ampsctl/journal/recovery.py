"""Opening a journal for appending: check what is on disk, repair a torn end, say what was cut.

Theory of operation (the writer's ``open``; the reader never repairs):

* The last segment file whose header is torn (shorter than a header, or all zeros: the writer
  died creating it) is removed whole, with its index.
* Every sealed segment's header is read (a file that is not a segment, or of another format
  version, is refused), its index is loaded or, when missing or stale, rebuilt by walking the
  segment (damage found then is refused), and each segment must start right after the one
  before it (a gap means a lost segment: refused).
* The last segment is walked whole: a torn tail is cut (truncate, then fsync) and reported in
  ``Recovery``; damage is refused with JournalCorruptError naming the segment and offset.
* Nothing acknowledged is cut: a torn tail is, by definition, bytes with no intact record
  after them, written after the last fsync (see segment.py for how it is told from damage).
  A last segment shorter than the index its clean close wrote lost acknowledged records
  (a crash leaves no such index: opening deletes it): refused, whole records or not.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ampsctl.journal.errors import JournalCorruptError
from ampsctl.journal.files import environment_error, remove, sync_file, write_index_file
from ampsctl.journal.index import IndexDefect, SegmentIndex, decode_index
from ampsctl.journal.segment import (
    Analysis, analyze, check_number, index_path, list_segments, load_index, read_head_bytes, read_header,
)


@dataclass(frozen=True, slots=True)
class Recovery:
    """What opening the journal cut: a torn tail (or a whole segment whose header was torn)."""

    path: str
    offset: int
    bytes_cut: int
    reason: str
    removed_segment: bool = False

    def __str__(self) -> str:
        if self.removed_segment:
            return f"removed {self.path}: {self.reason} ({self.bytes_cut} bytes)"
        return f"cut a torn tail of {self.bytes_cut} bytes from {self.path} at offset {self.offset}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Recovered:
    """The segment to append to (None: the journal is empty) with its index, and what was cut."""

    path: Path | None
    index: SegmentIndex | None
    report: Recovery | None


def recover(directory: Path, *, durable: bool) -> Recovered:
    """Check ``directory`` and make its last segment ready for appending (module docstring)."""
    report: Recovery | None = None
    files = list_segments(directory)
    while files:
        _, path = files[-1]
        head, size = read_head_bytes(path)
        if read_header(path, head, last=True) is not None:
            break
        _remove(path)
        _remove(index_path(path))
        report = Recovery(str(path), 0, size, f"incomplete segment header ({size} bytes)", removed_segment=True)
        files.pop()
    if not files:
        return Recovered(None, None, report)
    previous: SegmentIndex | None = None
    for number, path in files[:-1]:
        index = _sealed_index(number, path, durable)
        _check_follows(path, previous, index.first_sequence)
        previous = index
    number, path = files[-1]
    head, size = read_head_bytes(path)
    header = read_header(path, head, last=True)
    assert header is not None  # checked by the first loop
    check_number(path, number, header)
    _check_follows(path, previous, header.first_sequence)
    _check_not_shrunk(path, number, header.first_sequence, size)
    found = analyze(path, header, last=True)  # always walked: the segment appended to is checked whole
    _refuse_damage(path, found)
    if found.torn_offset is not None:
        try:
            os.truncate(path, found.torn_offset)
            sync_file(path)
        except OSError as exc:
            raise environment_error(exc, "cut the torn tail of", path) from None
        report = Recovery(str(path), found.torn_offset, found.size - found.torn_offset, found.torn_reason)
    _remove(index_path(path))  # stale after the first append; written again on close
    return Recovered(path, found.index, report)


def _sealed_index(number: int, path: Path, durable: bool) -> SegmentIndex:
    head, size = read_head_bytes(path)
    header = read_header(path, head, last=False)
    assert header is not None
    check_number(path, number, header)
    index = load_index(path, number, header.first_sequence, size)
    if index is None:  # lost (a crash while rotating) or damaged: rebuild it from the segment
        found = analyze(path, header, last=False)
        _refuse_damage(path, found)
        index = found.index
        try:
            write_index_file(path, index, durable=durable)
        except OSError as exc:
            raise environment_error(exc, "write journal index for", path) from None
    return index


def _check_not_shrunk(path: Path, number: int, first_sequence: int, size: int) -> None:
    """Refuse a last segment shorter than the index a clean close wrote for it.

    That index covered every byte the segment held then, all of it acknowledged; opening to
    append deletes it, so a crash never leaves one behind. A segment shorter than it lost
    acknowledged records (restored from an older copy, cut by hand or by the disk), even when
    the cut falls on a record boundary and the segment looks whole."""
    try:
        index = decode_index(index_path(path).read_bytes())
    except (OSError, IndexDefect):
        return  # no index (after a crash, always) or a damaged one: the walk decides
    if index.number != number or index.first_sequence != first_sequence or index.covered_bytes <= size:
        return
    raise JournalCorruptError(
        str(path), size,
        f"the segment is {size} bytes but its index, written when the journal was last closed, covers "
        f"{index.covered_bytes} bytes through sequence {index.last_sequence}: acknowledged records were lost",
        hint=f"restore the segment from a copy; to go on without those records, delete {index_path(path).name}",
    )


def _check_follows(path: Path, previous: SegmentIndex | None, first_sequence: int) -> None:
    if previous is not None and first_sequence != previous.last_sequence + 1:
        raise JournalCorruptError(
            str(path), 0,
            f"segment starts at sequence {first_sequence} but the previous segment ends at {previous.last_sequence}",
            hint="a segment file is missing or comes from another journal; restore it before writing",
        )


def _refuse_damage(path: Path, found: Analysis) -> None:
    if found.damage:
        raise JournalCorruptError(str(path), found.damage[0].offset, found.damage[0].reason)
    if found.sequence_errors:
        offset, why = found.sequence_errors[0]
        raise JournalCorruptError(str(path), offset, why)


def _remove(path: Path) -> None:
    try:
        remove(path)
    except OSError as exc:
        raise environment_error(exc, "remove", path) from None

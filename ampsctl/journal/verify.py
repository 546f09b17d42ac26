"""Verification: every byte of every segment and index, every problem listed, nothing raised.

``verify_segments`` walks each segment with ``segment.analyze(every_problem=True)``: after a
damaged region it continues from the next intact record, so one flipped byte is one problem
and two damaged places are two. It also checks each segment's header, that each segment
starts right after the one before it, and that an index file, when present, is intact and
agrees with its segment. A torn tail of the last segment is not a problem (the reader reports
it as ``torn_tail``; the writer cuts it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ampsctl.journal.errors import JournalCorruptError, JournalFormatError, JournalProblem, ProblemKind
from ampsctl.journal.index import IndexDefect, decode_index, same_index
from ampsctl.journal.segment import Analysis, Damage, analyze, check_number, index_path, read_head_bytes, read_header


def verify_segments(files: list[tuple[int, Path, bool]], progress: Callable[[int], None] | None = None) -> list[JournalProblem]:
    """Problems of the segments ``(number, path, is_last)`` in order (number -1: from the header)."""
    problems: list[JournalProblem] = []
    previous_end: int | None = None  # the last sequence of the segment before, when known
    for number, path, last in files:
        head, size = read_head_bytes(path)
        found, previous_end = _segment_problems(number, path, last, head, size, previous_end)
        problems.extend(found)
        if progress is not None:
            progress(size)
    return problems


def _segment_problems(number: int, path: Path, last: bool, head: bytes, size: int,
                      previous_end: int | None) -> tuple[list[JournalProblem], int | None]:
    """The problems of one segment, and its last sequence (None when unknown)."""
    try:
        header = read_header(path, head, last=last)
        if header is not None:
            check_number(path, number if number >= 0 else header.number, header)
    except JournalCorruptError as exc:
        kind = ProblemKind.FORMAT if isinstance(exc, JournalFormatError) else ProblemKind.HEADER
        return [exc.problem(kind)], None
    if header is None:
        return [], previous_end  # a torn header: see JournalReader.torn_tail
    problems = []
    if previous_end is not None and header.first_sequence != previous_end + 1:
        problems.append(JournalProblem(str(path), 0, _gap(previous_end, header.first_sequence), ProblemKind.SEQUENCE))
    found = analyze(path, header, last=last, every_problem=True)
    for damage in found.damage or ():
        length = (damage.resume if damage.resume is not None else size) - damage.offset
        problems.append(JournalProblem(str(path), damage.offset, _damage_text(damage), ProblemKind.RECORD, length))
    for offset, why in found.sequence_errors or ():
        problems.append(JournalProblem(str(path), offset, why, ProblemKind.SEQUENCE))
    problems.extend(_index_problems(path, size, found))
    if found.damage and found.damage[-1].resume is None:
        return problems, None  # the segment ends in damage: its last sequence is unknown
    return problems, found.last_sequence if found.last_sequence is not None else header.first_sequence - 1


def _gap(previous_end: int, first: int) -> str:
    if first > previous_end + 1:
        return (f"segment starts at sequence {first} but the previous segment ends at {previous_end}: "
                f"sequences {previous_end + 1} to {first - 1} are missing")
    return f"segment starts at sequence {first} but the previous segment already reached {previous_end}"


def _damage_text(damage: Damage) -> str:
    if damage.resume is None:
        return f"{damage.reason}; no intact record follows in this segment"
    return (f"{damage.reason}; intact records resume at offset {damage.resume} "
            f"(sequence {damage.resume_sequence})")


def _index_problems(path: Path, size: int, found: Analysis) -> list[JournalProblem]:
    """An index file that is damaged, stale or disagrees with its (intact) segment."""
    where = index_path(path)
    try:
        data = where.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [JournalProblem(str(where), 0, f"cannot read index file: {exc.strerror}", ProblemKind.INDEX)]
    fix = "; delete it: readers rebuild it in memory and the writer rewrites it"
    try:
        index = decode_index(data)
    except IndexDefect as exc:
        return [JournalProblem(str(where), 0, f"index file is damaged: {exc}{fix}", ProblemKind.INDEX)]
    if index.covered_bytes > size:  # as the writer's recovery says it (journal/recovery.py)
        return [JournalProblem(str(where), 0, f"the segment is {size} bytes but its index covers {index.covered_bytes} bytes "
                               f"through sequence {index.last_sequence}: records were lost from its end, and the writer "
                               f"refuses to open the journal; restore the segment from a copy, or delete the index to go on "
                               f"without those records", ProblemKind.INDEX)]
    if index.covered_bytes != size:
        return [JournalProblem(str(where), 0, f"index describes {index.covered_bytes} bytes of the segment, which has {size}{fix}",
                               ProblemKind.INDEX)]
    if found.clean:
        differs = same_index(index, found.index)
        if differs is not None:
            return [JournalProblem(str(where), 0, f"index file disagrees with its segment: {differs}{fix}", ProblemKind.INDEX)]
    return []

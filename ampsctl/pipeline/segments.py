"""Reading one journal segment on its own: the unit of work of the Spark data source.

Theory of operation. A Spark task reads exactly one segment file, so the work of a journal
splits by segment across executors. ``plan_segments`` (on the driver) lists the segments and
reads only their headers; each ``SegmentTask`` carries the next segment's first sequence, so
the task can check on its own that no records are missing between it and the next segment
(what ``JournalReader`` checks across segments). ``read_segment`` (on an executor) then:

1. walks the segment once with ``journal.segment.analyze`` (the reader's own walk: torn tail of
   the last segment, damage, sequences that do not run on);
2. decodes the intact spans with ``journal.codec.Decoder`` and pairs each record with its file
   offset (``journal.views.view_trusted_records``: the spans are those analyze checked), so
   every row can say where it came from.

Invariants, the same as ``JournalReader.scan``:
* a torn tail of the last segment is not data: it is left out, silently;
* damage (a bad record with intact records after it, a sequence out of order, a gap to the
  next segment) raises JournalCorruptError with the segment path and the byte offset, after
  every good record before it was produced;
* with ``skip_corrupt`` the damaged region is skipped instead, from the bad offset to the next
  intact record, and described in a ``Skipped`` (``damage`` lists them without reading records).
No pyspark here: this module is plain Python, used by the data source and by tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ampsctl.errors import InputError
from ampsctl.journal.codec import HEADER_SIZE, Decoder
from ampsctl.journal.errors import JournalCorruptError
from ampsctl.journal.record import JournalRecord
from ampsctl.journal.segment import Analysis, analyze, check_number, list_segments, read_head_bytes, read_header
from ampsctl.journal.views import RecordView, view_trusted_records

_SEGMENT_FILE = re.compile(r"([0-9]{8,})\.journal")


@dataclass(frozen=True, slots=True)
class SegmentTask:
    """One segment to read; picklable, so it travels to an executor as a Spark partition."""

    path: str
    number: int  # from the file name (-1: a lone file with another name; the header's number is used)
    last: bool  # the journal's last segment: a torn tail may end it
    next_first_sequence: int | None  # the first sequence of the next segment (None: last, or unknown)
    to_sequence: int | None = None  # stop after this sequence (an as-of point); None: read it all
    next_path: str | None = None  # the next segment's file (a gap to it is reported there, as JournalReader does)


@dataclass(frozen=True, slots=True)
class Skipped:
    """A damaged region left out with ``skip_corrupt``: where, how long, why, and the sequences lost."""

    path: str
    offset: int
    length: int
    reason: str
    first_missing: int | None  # the first sequence not read (None when unknown)
    resume_sequence: int | None  # the sequence read next (None: the rest of the segment is lost)

    @property
    def records(self) -> int | None:
        """How many records were lost, when both ends are known."""
        if self.first_missing is None or self.resume_sequence is None:
            return None
        return self.resume_sequence - self.first_missing

    def __str__(self) -> str:
        lost = f", {self.records} record(s) from sequence {self.first_missing}" if self.records else ""
        return f"{self.path}: skipped {self.length} bytes at offset {self.offset} ({self.reason}{lost})"


def plan_segments(journal: str | Path, *, to_sequence: int | None = None) -> list[SegmentTask]:
    """The segments of a journal directory (or one segment file), in order, headers checked.

    With ``to_sequence``, segments that start after it are left out: a scan up to an as-of
    point never reads them, so their damage cannot matter (as in ``JournalReader.scan``).
    """
    path = Path(journal)
    if path.is_dir():
        files = list_segments(path)
    elif path.is_file():
        match = _SEGMENT_FILE.fullmatch(path.name)
        files = [(int(match[1]) if match else -1, path)]
    else:
        raise InputError(f"journal '{path}' does not exist", code="IO",
                         hint="give a journal directory (or one NNNNNNNN.journal segment file)")
    firsts: list[int | None] = []
    for position, (_, file) in enumerate(files):
        head, _ = read_head_bytes(file)
        header = read_header(file, head, last=position == len(files) - 1)
        firsts.append(header.first_sequence if header is not None else None)
    tasks = [SegmentTask(str(file), number, position == len(files) - 1,
                         firsts[position + 1] if position + 1 < len(files) else None, to_sequence,
                         str(files[position + 1][1]) if position + 1 < len(files) else None)
             for position, (number, file) in enumerate(files)]
    if to_sequence is None:
        return tasks
    return [task for task, first in zip(tasks, firsts, strict=True) if first is not None and first <= to_sequence]


def read_segment(task: SegmentTask, *, skip_corrupt: bool = False) -> Iterator[tuple[int, JournalRecord]]:
    """``(file offset, record)`` for every intact record of the segment, in order (see the module docstring)."""
    path = Path(task.path)
    analysis = _analyze(task, every_problem=skip_corrupt)
    if analysis is None:
        return
    data = path.read_bytes()[:analysis.size]
    upper = task.to_sequence if task.to_sequence is not None else 1 << 64
    last = analysis.header.first_sequence - 1  # the last sequence read
    for start, end in _good_spans(analysis, skip_corrupt):
        views: list[RecordView] = []
        records: list[JournalRecord] = []
        view_trusted_records(data, start, end, views)  # spans analyze checked already
        Decoder().decode_records(data, start, end, records)
        bad = {offset for offset, _ in analysis.sequence_errors or ()}
        for view, record in zip(views, records, strict=True):
            if record.sequence > upper:
                return
            if view.offset not in bad:
                last = record.sequence
                yield view.offset, record
    # Damage, or a gap to the next segment, matters only when the scan reaches it: not when
    # the as-of point was read before it (the local reader returns there, too).
    if not skip_corrupt and last < upper:
        problem = _first_problem(task, analysis)
        if problem is not None:
            raise problem


def damage(task: SegmentTask) -> list[Skipped]:
    """What ``read_segment(task, skip_corrupt=True)`` leaves out."""
    analysis = _analyze(task, every_problem=True)
    if analysis is None:
        return []
    data = Path(task.path).read_bytes()[:analysis.size]
    expected = analysis.header.first_sequence  # the next sequence to read, walking span by span
    found = []
    for (start, end), region in zip(_good_spans(analysis, True), analysis.damage or (), strict=False):
        views: list[RecordView] = []
        view_trusted_records(data, start, end, views)  # spans analyze checked already
        if views:
            expected = views[-1].sequence + 1
        resume = region.resume if region.resume is not None else analysis.size
        found.append(Skipped(task.path, region.offset, resume - region.offset, region.reason, expected, region.resume_sequence))
        if region.resume_sequence is not None:
            expected = region.resume_sequence
    found += [Skipped(task.path, offset, 0, reason, None, None) for offset, reason in analysis.sequence_errors or ()]
    gap = _gap(task, analysis)
    if gap is not None:
        found.append(Skipped(task.path, analysis.size, 0, gap.reason, None, None))
    if task.to_sequence is not None:  # only what a read up to the as-of point skips
        found = [s for s in found if s.first_missing is None or s.first_missing <= task.to_sequence]
    return sorted(found, key=lambda skipped: skipped.offset)


def _analyze(task: SegmentTask, *, every_problem: bool) -> Analysis | None:
    path = Path(task.path)
    head, _ = read_head_bytes(path)
    header = read_header(path, head, last=task.last)
    if header is None:  # a torn header: the writer created the file and crashed
        return None
    if task.number >= 0:
        check_number(path, task.number, header)
    return analyze(path, header, last=task.last, every_problem=every_problem)


def _good_spans(analysis: Analysis, skip_corrupt: bool) -> list[tuple[int, int]]:
    """The byte ranges holding intact records: up to the first damage, or around every region."""
    if not skip_corrupt or not analysis.damage:
        return [(HEADER_SIZE, analysis.valid_end)]
    spans, start = [], HEADER_SIZE
    for region in analysis.damage:
        spans.append((start, region.offset))
        if region.resume is None:
            return spans
        start = region.resume
    end = analysis.torn_offset if analysis.torn_offset is not None else analysis.size
    spans.append((start, end))
    return spans


def _first_problem(task: SegmentTask, analysis: Analysis) -> JournalCorruptError | None:
    problems = [(region.offset, region.reason) for region in analysis.damage or ()]
    problems += list(analysis.sequence_errors or ())
    if problems:
        offset, reason = min(problems)
        return JournalCorruptError(task.path, offset, reason)
    return _gap(task, analysis)


def _gap(task: SegmentTask, analysis: Analysis) -> JournalCorruptError | None:
    """A next segment that does not start right after this one (only checked on a clean segment)."""
    if task.next_first_sequence is None or analysis.damage or analysis.sequence_errors:
        return None
    last = analysis.index.last_sequence if analysis.index.records else analysis.header.first_sequence - 1
    first = task.next_first_sequence
    if first == last + 1:
        return None
    # JournalReader's error, word for word: at offset 0 of the segment that does not follow on
    what = f"sequences {last + 1} to {first - 1} are missing" if first > last + 1 else "it overlaps the segment before"
    return JournalCorruptError(task.next_path or task.path, 0 if task.next_path else analysis.size,
                               f"segment starts at sequence {first} but the previous segment ends at {last}: {what}",
                               hint="a segment file is missing or was copied from another journal; restore it")

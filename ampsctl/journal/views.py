"""Lazy records for fast sequential scans: checked, but decoded only when asked.

A full ``JournalRecord`` costs about 0.75 µs to decode and build in CPython (strings, a bytes
slice, an 11-tuple); a scan that only counts, locates or filters by sequence and time needs
none of that. The walks here read ``(length, sequence, timestamp)`` per record and check the
checksums a batch at a time (the codec's residue property); ``RecordView.record()`` decodes
(and checks) the full record on demand.

An intact checksum does not vouch for a record's structure: a file written by another tool (or
crafted) can carry a valid checksum over an unknown command, unknown flag bits, field lengths
that do not add up, or a text that is not UTF-8. Hence two walks, one contract (that of
``codec.Decoder.decode_records``: whole records only, the good records before a damaged one,
then ``RecordDefect``):

* ``view_records`` checks the structure too, exactly what ``codec.record_defect`` checks, so it
  accepts and refuses the same records as the decoder. The shape (bytes 20-32: command, flags,
  the five text lengths) repeats from record to record: a small cache maps it to the record
  length less the payload (-1 for a bad command or flag), one dict look-up and a comparison a
  record; the texts are checked with one ``isascii`` (a decode only when that fails). About
  0.2 µs a record more than the checksums alone (+30% on the reader's opening walk). ``segment.analyze`` walks with it: that is
  every walk that establishes a segment (the reader's opening walk, ``verify``, the writer's
  recovery, the rebuild of a lost index).
* ``view_trusted_records`` checks the checksums only. The reader's scans use it on bytes whose
  structure is already established: by its own opening walk, or by the segment's intact index
  file, which only a walk like that or the writer's encoder (which refuses what the format
  cannot hold) ever produced. ``verify`` checks every record again without trusting an index.
"""

from __future__ import annotations

import struct
import zlib
from operator import itemgetter

from ampsctl.journal.codec import (
    BATCH_BYTES, HEAD_SIZE, KNOWN_FLAGS, MIN_RECORD, RECORD_HEAD, RESIDUE, RecordDefect, decode_record, record_defect,
)
from ampsctl.journal.record import COMMANDS, Command, JournalRecord

_LENGTH_SEQUENCE_TIME = struct.Struct("<IQq").unpack_from
# length, sequence, timestamp, shape (bytes 20-32: command, flags, the five text lengths), payload length
_HEAD = struct.Struct("<IQq12s16xI").unpack_from
_SHAPE = struct.Struct("<BBHHHHH").unpack
_SHAPE_LIMIT = 4096  # distinct shapes remembered (a crafted file must not grow memory)
_fixed: dict[bytes, int] = {}  # shape -> record length less the payload; -1: a bad command or flag bit


class RecordView(tuple):  # type: ignore[type-arg]
    """``(data, offset, length, sequence, timestamp)`` of one checked record in a read buffer."""

    __slots__ = ()

    data = property(itemgetter(0))
    offset = property(itemgetter(1))  # in ``data``, not in the segment file
    length = property(itemgetter(2))
    sequence = property(itemgetter(3))
    timestamp = property(itemgetter(4))

    @property
    def command(self) -> Command:
        code = self[0][self[1] + 20]
        command = COMMANDS[code] if code < len(COMMANDS) else None
        if command is None:  # view_records refuses it; a trusted walk over a crafted file does not
            raise RecordDefect(self[1], f"unknown command byte {code}", sequence=self[3], intact=True)
        return command

    @property
    def topic(self) -> str:
        data, offset = self[0], self[1]
        head = RECORD_HEAD.unpack_from(data, offset)
        start = offset + HEAD_SIZE
        try:
            return str(data[start:start + head[5]], "utf-8")
        except UnicodeDecodeError:  # view_records refuses it; a trusted walk over an altered segment does not
            raise RecordDefect(offset, "topic is not valid UTF-8", sequence=self[3], intact=True) from None

    def record(self) -> JournalRecord:
        """The full record (decoded and checked again)."""
        return decode_record(self[0], self[1])


def view_records(data: bytes, start: int, end: int, out: list[RecordView]) -> int:
    """Append a RecordView for every whole record in ``data[start:end]``, checksums and
    structure checked; return where the first incomplete record starts. RecordDefect as in
    ``Decoder.decode_records``."""
    unpack = _HEAD
    fixed_of = _fixed.get
    crc32 = zlib.crc32
    view = memoryview(data)
    append = out.append
    new = tuple.__new__
    pos = batch_start = start
    batch_count = len(out)
    limit = end - HEAD_SIZE
    while pos <= limit:
        length, sequence, timestamp, shape, pl = unpack(data, pos)
        stop = pos + length
        if stop > end or length - pl != (fixed_of(shape) or _shape_fixed(shape)):
            break  # incomplete, or a bad command, flag or length: decided after the loop
        if not data[pos + HEAD_SIZE:stop - 4 - pl].isascii() and _texts_defect(data, pos, stop):
            break  # a text that is not UTF-8 (or a checksum that would have said so first)
        append(new(RecordView, (data, pos, length, sequence, timestamp)))
        pos = stop
        if pos - batch_start >= BATCH_BYTES:
            if crc32(view[batch_start:pos], RESIDUE) != RESIDUE:
                raise _first_bad(data, batch_start, pos, out, batch_count)
            batch_start, batch_count = pos, len(out)
    return _finish(data, view, batch_start, pos, end, out, batch_count)


def view_trusted_records(data: bytes, start: int, end: int, out: list[RecordView]) -> int:
    """``view_records`` for bytes whose structure is established (module docstring): checksums
    only, about 2.5x faster. A record whose length cannot be right still stops it."""
    unpack = _LENGTH_SEQUENCE_TIME
    crc32 = zlib.crc32
    view = memoryview(data)
    append = out.append
    new = tuple.__new__
    pos = batch_start = start
    batch_count = len(out)
    limit = end - HEAD_SIZE
    while pos <= limit:
        length, sequence, timestamp = unpack(data, pos)
        stop = pos + length
        if stop > end or length < MIN_RECORD:
            break
        append(new(RecordView, (data, pos, length, sequence, timestamp)))
        pos = stop
        if pos - batch_start >= BATCH_BYTES:
            if crc32(view[batch_start:pos], RESIDUE) != RESIDUE:
                raise _first_bad(data, batch_start, pos, out, batch_count)
            batch_start, batch_count = pos, len(out)
    return _finish(data, view, batch_start, pos, end, out, batch_count)


def _finish(data: bytes, view: memoryview, batch_start: int, pos: int, end: int, out: list[RecordView],
            batch_count: int) -> int:
    """Check the last batch, then say why the walk stopped before ``end`` (if not incomplete)."""
    if pos > batch_start and zlib.crc32(view[batch_start:pos], RESIDUE) != RESIDUE:
        raise _first_bad(data, batch_start, pos, out, batch_count)
    if pos <= end - HEAD_SIZE:
        defect = record_defect(data, pos, end)
        if defect is None:
            raise RecordDefect(pos, "record could not be read")
        if not defect.incomplete:
            raise defect
    return pos


def _shape_fixed(shape: bytes) -> int:
    """The record length less the payload of records of this shape; -1 when the command or a
    flag bit is unknown (no length matches it: the walk stops and record_defect says why)."""
    command, flags, tl, ml, sl, cl, nl = _SHAPE(shape)
    fixed = MIN_RECORD + tl + ml + sl + cl + nl if 0 < command < 5 and not flags & ~KNOWN_FLAGS else -1
    if len(_fixed) >= _SHAPE_LIMIT:
        _fixed.clear()
    _fixed[shape] = fixed
    return fixed


def _texts_defect(data: bytes, pos: int, stop: int) -> bool:
    """Whether the record at ``pos`` (texts not all ASCII) is bad: record_defect decodes each text."""
    return record_defect(data, pos, stop) is not None


def _first_bad(data: bytes, start: int, stop: int, out: list[RecordView], kept: int) -> RecordDefect:
    pos = start
    while pos < stop:
        defect = record_defect(data, pos, stop)
        if defect is not None:
            del out[kept:]
            return defect
        pos += int.from_bytes(data[pos:pos + 4], "little")
        kept += 1
    del out[kept:]
    return RecordDefect(stop, "checksum mismatch in the records before this offset")

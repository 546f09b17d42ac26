"""Lazy records for fast sequential scans: checked, but decoded only when asked.

A full ``JournalRecord`` costs about 0.75 µs to decode and build in CPython (strings, a bytes
slice, an 11-tuple); a scan that only counts, locates or filters by sequence and time needs
none of that. ``view_records`` walks a buffer of records reading only ``(length, sequence,
timestamp)`` per record and checks the checksums a batch at a time (the codec's residue
property), so what it yields is exactly as trustworthy as a decoded record: bytes the writer
wrote, unchanged. The writer validated each record's structure before computing its checksum,
so an intact checksum also vouches for the field lengths; ``RecordView.record()`` decodes
(and checks) the full record on demand.

Same contract as ``codec.Decoder.decode_records``: whole records only, the good records before
a damaged one, then ``RecordDefect``.
"""

from __future__ import annotations

import struct
import zlib
from operator import itemgetter

from ampsctl.journal.codec import BATCH_BYTES, HEAD_SIZE, MIN_RECORD, RECORD_HEAD, RESIDUE, RecordDefect, decode_record, record_defect
from ampsctl.journal.record import COMMANDS, Command, JournalRecord

_LENGTH_SEQUENCE_TIME = struct.Struct("<IQq").unpack_from


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
        command = COMMANDS[self[0][self[1] + 20]]
        assert command is not None  # checked by the checksum: the writer stores only 1-4
        return command

    @property
    def topic(self) -> str:
        data, offset = self[0], self[1]
        head = RECORD_HEAD.unpack_from(data, offset)
        start = offset + HEAD_SIZE
        return str(data[start:start + head[5]], "utf-8")

    def record(self) -> JournalRecord:
        """The full record (decoded and checked again)."""
        return decode_record(self[0], self[1])


def view_records(data: bytes, start: int, end: int, out: list[RecordView]) -> int:
    """Append a RecordView for every whole record in ``data[start:end]``; return where the
    first incomplete record starts. RecordDefect as in ``Decoder.decode_records``."""
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
    if pos > batch_start and crc32(view[batch_start:pos], RESIDUE) != RESIDUE:
        raise _first_bad(data, batch_start, pos, out, batch_count)
    if pos <= limit:
        defect = record_defect(data, pos, end)
        if defect is None:
            raise RecordDefect(pos, "record could not be read")
        if not defect.incomplete:
            raise defect
    return pos


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

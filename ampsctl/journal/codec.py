"""The journal's byte format, version 1: segment headers and records. Pure: bytes in, bytes out.

Theory of operation (docs/formats.md, "Transaction log (journal)", is the normative text).
All integers are little-endian. A segment file is a 36-byte header followed by records::

    header  magic "\\x89AJL\\r\\n\\x1a\\n" | u16 version=1 | u16 header size=36 | u32 flags=0 |
            u64 segment number | u64 first sequence | u32 checksum
    record  u32 length L | u64 sequence | i64 timestamp µs | u8 command | u8 flags |
            u16 topic, message type, sow key, correlation id, client name lengths |
            u64 expiration | u64 publisher sequence | u32 payload length |
            topic | message type | sow key | correlation id | client name | payload |
            u32 checksum

Checksums are CRC-32 as in zlib/zip/PNG (``zlib.crc32``). Every checksum is the running CRC of
all bytes of the segment before it, header included. By the CRC residue property the running
value right after any intact checksum is the constant ``RESIDUE`` (0x2144DF1C), so:

* a record's checksum equals ``crc32(record[0:L-4], RESIDUE)``: each record checks on its own;
* any run of intact whole records satisfies ``crc32(run, RESIDUE) == RESIDUE``: the decoder
  checks a batch of records (up to ``BATCH_BYTES``) with one call, and walks the batch record by
  record only when that fails, to name the first bad one.

Invariants:
* ``decode_records`` returns only records whose checksum, lengths, command, flags and texts
  (UTF-8) are valid, exactly what ``record_defect`` checks (``views.view_records`` too); on damage it returns the good records before it and raises ``RecordDefect`` with the
  offset of the first bad record, never skipping one.
* A record is never longer than the data it was cut from: ``RecordDefect.incomplete`` marks a
  record whose declared length runs past the end of the data (the caller decides whether the
  file simply ends there, a torn tail, or more bytes are needed).
* ``None`` and ``""`` stay distinct for the optional strings (a flag bit says "present"), and
  absent integers are stored as 0 with their flag bit clear.
* Batches stay under 8 KiB so that any one or two flipped bits in a batch are still caught
  (CRC-32 has Hamming distance 3 or more up to 91,607 bits, about 11 KiB).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Any, NamedTuple

from ampsctl.errors import InputError
from ampsctl.journal.record import Command, JournalRecord

FORMAT_VERSION = 1
SEGMENT_MAGIC = b"\x89AJL\r\n\x1a\n"  # PNG-style: a high byte and line endings catch text files and bad transfers
HEADER = struct.Struct("<8sHHIQQI")
HEADER_SIZE = HEADER.size  # 36
RECORD_HEAD = struct.Struct("<IQqBBHHHHHQQI")
HEAD_SIZE = RECORD_HEAD.size  # 52
TRAILER = struct.Struct("<I")
MIN_RECORD = HEAD_SIZE + TRAILER.size  # 56: a record with empty strings and payload
MAX_RECORD = 0xFFFFFFFF  # the length is a u32
MAX_TEXT = 0xFFFF  # topic, message type, key, correlation id and client name are u16-sized
RESIDUE = 0x2144DF1C  # zlib.crc32(x + crc32(x).to_bytes(4, "little")) for every x
BATCH_BYTES = 8192

# Flag bits: which optional fields are present.
F_SOW_KEY = 0x01
F_EXPIRATION = 0x02
F_CORRELATION_ID = 0x04
F_CLIENT_NAME = 0x08
F_PUBLISHER_SEQUENCE = 0x10
KNOWN_FLAGS = 0x1F

_INT64 = (-(1 << 63), (1 << 63) - 1)
_UINT64 = (0, (1 << 64) - 1)
_CACHE_LIMIT = 4096  # distinct topics / types / client names / shapes remembered per encoder or decoder
# RECORD_HEAD with bytes 20-32 (command, flags, the five text lengths) as one 12-byte "shape"
_HEAD_SHAPE = struct.Struct("<IQq12sQQI")
_SHAPE = struct.Struct("<BBHHHHH")
_KEYED = F_SOW_KEY | F_CLIENT_NAME  # the broker's usual publish: a SOW key and a client name, nothing else
_pack_head = RECORD_HEAD.pack
_pack_trailer = TRAILER.pack
_join = b"".join
_crc32 = zlib.crc32


class SegmentHeader(NamedTuple):
    number: int
    first_sequence: int
    version: int = FORMAT_VERSION


class HeaderDefect(Exception):
    """A segment header that cannot be read; ``kind`` is short, zero, magic, version, checksum or
    sequence (a first sequence of 0: sequences start at 1)."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


class RecordDefect(Exception):
    """A bad record at ``offset`` (relative to the data decoded); ``incomplete``: runs past the end;
    ``intact``: its checksum is intact (the structure is bad), so it cannot be a torn write."""

    def __init__(self, offset: int, reason: str, *, incomplete: bool = False, sequence: int | None = None,
                 intact: bool = False) -> None:
        super().__init__(reason)
        self.offset = offset
        self.reason = reason
        self.incomplete = incomplete
        self.sequence = sequence  # the record's sequence field when it could be read
        self.intact = intact


# ----------------------------------------------------------------------------- headers


def encode_header(number: int, first_sequence: int) -> bytes:
    body = HEADER.pack(SEGMENT_MAGIC, FORMAT_VERSION, HEADER_SIZE, 0, number, first_sequence, 0)[:-4]
    return body + TRAILER.pack(zlib.crc32(body))


def decode_header(data: bytes) -> SegmentHeader:
    """The header at the start of ``data``; HeaderDefect says why it cannot be read."""
    if len(data) >= 8 and data[:8] != SEGMENT_MAGIC and any(data[:HEADER_SIZE]):
        raise HeaderDefect("magic", f"wrong magic number {bytes(data[:8])!r} (expected {SEGMENT_MAGIC!r}){_looks_like(data)}")
    if len(data) < HEADER_SIZE:
        if data[:8] != SEGMENT_MAGIC[: len(data)]:
            raise HeaderDefect("magic", f"wrong magic number {bytes(data[:8])!r} (expected {SEGMENT_MAGIC!r}){_looks_like(data)}")
        raise HeaderDefect("short", f"truncated segment header: {len(data)} of {HEADER_SIZE} bytes")
    if not any(data[:HEADER_SIZE]):
        raise HeaderDefect("zero", "segment header is all zero bytes (the file was created but never written)")
    magic, version, size, flags, number, first, checksum = HEADER.unpack_from(data)
    if version != FORMAT_VERSION:
        raise HeaderDefect("version", f"unsupported journal format version {version} (this ampsctl reads version {FORMAT_VERSION})")
    if zlib.crc32(data[: HEADER_SIZE - 4]) != checksum:
        raise HeaderDefect("checksum", "segment header checksum mismatch")
    if size != HEADER_SIZE or flags != 0:
        raise HeaderDefect("checksum", f"segment header has size {size} and flags {flags:#x}; version 1 has {HEADER_SIZE} and 0")
    if first == 0:
        raise HeaderDefect("sequence", "segment header says its first sequence is 0; sequences start at 1")
    return SegmentHeader(number, first, version)


def _looks_like(data: bytes) -> str:
    """What a file with another magic number seems to be, for the error message."""
    head = bytes(data[:64])
    if head.startswith(b"SQLite format 3\x00"):
        return "; the file is an SQLite database, such as a SOW file (read those with `ampsctl sow query|dump|stats`)"
    if head.startswith(b"\x89AJX"):  # index.INDEX_MAGIC
        return "; the file is a journal index (NNNNNNNN.index), not a segment: give the NNNNNNNN.journal file or the directory"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return ""
    # a line break is text too (isprintable refuses it); a NUL or other control character is not
    return "; the file looks like text" if text.replace("\n", "").replace("\r", "").replace("\t", "").isprintable() else ""


# ----------------------------------------------------------------------------- encoding


class Encoder:
    """Builds record bytes. Remembers the UTF-8 form of repeated strings (topics, types, clients)."""

    __slots__ = ("_texts",)

    def __init__(self) -> None:
        self._texts: dict[str, bytes] = {}

    def encode(
        self,
        sequence: int,
        timestamp: int,
        command: Command | int,
        topic: str,
        message_type: str,
        payload: bytes,
        sow_key: str | None = None,
        expiration: int | None = None,
        correlation_id: str | None = None,
        client_name: str | None = None,
        publisher_sequence: int | None = None,
    ) -> bytes:
        """One record's bytes, checksum included; InputError for a value the format cannot hold."""
        texts = self._texts
        t = texts.get(topic)
        if t is None:
            t = self._remember(topic, "topic")
        m = texts.get(message_type)
        if m is None:
            m = self._remember(message_type, "message type")
        flags = 0
        s = c = n = b""
        try:
            if sow_key is not None:
                s = sow_key.encode()
                flags = F_SOW_KEY
            if correlation_id is not None:
                c = correlation_id.encode()
                flags |= F_CORRELATION_ID
        except (UnicodeEncodeError, AttributeError):
            _utf8(sow_key or "", "sow key")  # raises the error that names the field
            _utf8(correlation_id or "", "correlation id")
            raise
        if client_name is not None:
            n = texts.get(client_name)
            if n is None:
                n = self._remember(client_name, "client name")
            flags |= F_CLIENT_NAME
        if expiration is None:
            expiration = 0
        else:
            flags |= F_EXPIRATION
        if publisher_sequence is None:
            publisher_sequence = 0
        else:
            flags |= F_PUBLISHER_SEQUENCE
        tl, ml, sl, cl, nl, pl = len(t), len(m), len(s), len(c), len(n), len(payload)
        length = MIN_RECORD + tl + ml + sl + cl + nl + pl
        try:
            if not 0 < command < 5:
                raise struct.error
            body = _join((_pack_head(length, sequence, timestamp, command, flags, tl, ml, sl, cl, nl,
                                     expiration, publisher_sequence, pl), t, m, s, c, n, payload))
        except (struct.error, TypeError):
            raise _bad_value(length, sequence, timestamp, command, (t, m, s, c, n), expiration, publisher_sequence,
                             payload) from None
        return body + _pack_trailer(_crc32(body, RESIDUE))

    def encode_record(self, record: JournalRecord) -> bytes:
        return self.encode(*record)

    def _remember(self, text: str, what: str) -> bytes:
        if len(self._texts) >= _CACHE_LIMIT:
            self._texts.clear()  # a workload with endless distinct topics must not grow memory
        encoded = self._texts[text] = _utf8(text, what)
        return encoded


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"journal record {what} is not valid Unicode text: {exc.reason}", code="JOURNAL_RECORD",
                         hint="lone surrogates cannot be stored; decode the input as UTF-8 first") from None
    except AttributeError:
        raise InputError(f"journal record {what} must be text, not {type(text).__name__}", code="JOURNAL_RECORD") from None


def _bad_value(length: int, sequence: Any, timestamp: Any, command: Any, texts: tuple[bytes, ...],
               expiration: Any, publisher_sequence: Any, payload: Any) -> InputError:
    """Name the one field the format cannot hold (struct.error does not say which)."""
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        return _record_error(f"payload must be bytes, not {type(payload).__name__}")
    names = ("topic", "message type", "sow key", "correlation id", "client name")
    for name, text in zip(names, texts, strict=True):
        if len(text) > MAX_TEXT:
            return _record_error(f"{name} is {len(text)} bytes; the journal stores at most {MAX_TEXT}")
    checks = (
        ("sequence", sequence, _UINT64), ("timestamp", timestamp, _INT64),
        ("expiration", expiration, _UINT64), ("publisher sequence", publisher_sequence, _UINT64),
    )
    for name, value, (low, high) in checks:
        if not isinstance(value, int) or not low <= value <= high:
            return _record_error(f"{name} {value!r} is not an integer from {low} to {high}")
    if not isinstance(command, int) or not 1 <= command <= 4:
        return _record_error(f"command {command!r} is not one of {', '.join(c.label for c in Command)}")
    if length > MAX_RECORD:
        return _record_error(f"record is {length} bytes; the journal stores at most {MAX_RECORD}")
    return _record_error("a field value cannot be stored")


def _record_error(reason: str) -> InputError:
    return InputError(f"cannot journal this record: {reason}", code="JOURNAL_RECORD",
                      hint="check the values passed to JournalWriter.append")


def encode_record(record: JournalRecord) -> bytes:
    """The bytes of ``record`` (its own sequence included); see ``Encoder`` for repeated use."""
    return Encoder().encode(*record)


# ----------------------------------------------------------------------------- decoding


# What a record's shape implies (``Decoder._layout``): unpack the five texts (topic and type
# as one field), command, flags, record length less the payload, (topic, type) pairs, topic length.
_Layout = tuple[Callable[[bytes, int], tuple[bytes, ...]], Command, int, int, dict[bytes, tuple[str, str]], int]


class Decoder:
    """Turns record bytes into JournalRecords; remembers repeated shapes and strings. One per scan."""

    __slots__ = ("_layouts", "_texts", "_pairs")

    def __init__(self) -> None:
        self._layouts: dict[bytes, _Layout] = {}  # shape -> layout
        self._texts: dict[bytes, str] = {}  # client name bytes -> text
        self._pairs = 0  # how many (topic, type) pairs all layouts hold together

    def decode_records(self, data: bytes, start: int, end: int, out: list[JournalRecord]) -> int:
        """Append every whole record in ``data[start:end]`` to ``out``; return where the first
        incomplete record starts (``end`` when none).

        Raises RecordDefect for a damaged record, after ``out`` has received exactly the good
        records before it. ``incomplete`` defects are raised only for a length that cannot be
        right (too small); a record that merely runs past ``end`` stops the call instead.

        The loop is the scan's hot path (about 0.75 µs a record; building the JournalRecord and
        its objects is about half of it). A record's shape (command, flags, text lengths)
        repeats, so one cache lookup checks command and flags and gives the record length less
        the payload (the field lengths must add up to the record length) and a Struct for the
        five texts; topic and type are then one cached pair, the client name a cached string.
        Anything odd stops the loop; ``record_defect`` then names it.
        """
        head = _HEAD_SHAPE.unpack_from
        crc32 = zlib.crc32
        view = memoryview(data)
        append = out.append
        get_layout, get_text = self._layouts.get, self._texts.get
        new = tuple.__new__  # JournalRecord's own __new__ is a Python function; this skips it
        batch_start, batch_count = start, len(out)
        batch_end = start + BATCH_BYTES
        pos = start
        limit = end - HEAD_SIZE
        try:
            while pos <= limit:
                length, sequence, timestamp, shape, expiration, publisher_sequence, pl = head(data, pos)
                layout = get_layout(shape) or self._layout(shape)
                if layout is None:
                    break  # an unknown command or flag bit: damaged
                texts, command, flags, fixed, pairs, tl = layout
                stop = pos + length
                if stop > end or length - pl != fixed:
                    break  # incomplete here, or the lengths do not add up: decided after the loop
                names, sow_key, correlation_id, client_name = texts(data, pos + HEAD_SIZE)
                pair = pairs.get(names) or self._pair(pairs, names, tl)
                if flags == _KEYED:
                    sow_key = sow_key.decode()
                    client_name = get_text(client_name) or self._remember(client_name)
                    expiration = correlation_id = publisher_sequence = None
                elif flags:
                    sow_key = sow_key.decode() if flags & F_SOW_KEY else None
                    correlation_id = correlation_id.decode() if flags & F_CORRELATION_ID else None
                    client_name = (get_text(client_name) or self._remember(client_name)) if flags & F_CLIENT_NAME else None
                    if not flags & F_EXPIRATION:
                        expiration = None
                    if not flags & F_PUBLISHER_SEQUENCE:
                        publisher_sequence = None
                else:
                    sow_key = correlation_id = client_name = expiration = publisher_sequence = None
                append(new(JournalRecord, (sequence, timestamp, command, pair[0], pair[1], data[stop - 4 - pl:stop - 4],
                                           sow_key, expiration, correlation_id, client_name, publisher_sequence)))
                pos = stop
                if pos >= batch_end:
                    if crc32(view[batch_start:pos], RESIDUE) != RESIDUE:
                        raise _located(data, batch_start, pos, out, batch_count)
                    batch_start, batch_count = pos, len(out)
                    batch_end = pos + BATCH_BYTES
        except UnicodeDecodeError:
            pass  # a text field that is not UTF-8: record_defect below names the record
        if pos > batch_start and crc32(view[batch_start:pos], RESIDUE) != RESIDUE:
            raise _located(data, batch_start, pos, out, batch_count)
        if pos <= limit:
            # The loop stopped on a record with a whole head: incomplete, or damaged (say why).
            defect = record_defect(data, pos, end)
            if defect is None:  # cannot happen: the loop and record_defect test the same things
                raise RecordDefect(pos, "record could not be decoded")
            if not defect.incomplete:
                raise defect
        return pos

    def decode_one(self, data: bytes, offset: int = 0) -> JournalRecord:
        """The record at ``offset``; RecordDefect if it is damaged or incomplete."""
        out: list[JournalRecord] = []
        length = record_length(data, offset)
        if length is None:
            raise RecordDefect(offset, f"incomplete record header: {len(data) - offset} of {HEAD_SIZE} bytes", incomplete=True)
        defect = record_defect(data, offset, len(data))
        if defect is not None:
            raise defect
        self.decode_records(data, offset, offset + length, out)
        return out[0]

    def _layout(self, shape: bytes) -> _Layout | None:
        """What records of this shape look like; None for an unknown command or flag bit."""
        command, flags, tl, ml, sl, cl, nl = _SHAPE.unpack(shape)
        if not 0 < command < 5 or flags & ~KNOWN_FLAGS:
            return None
        if len(self._layouts) >= _CACHE_LIMIT:
            self._forget()
        texts = struct.Struct(f"<{tl + ml}s{sl}s{cl}s{nl}s").unpack_from  # topic and type as one field
        layout = self._layouts[shape] = (texts, Command(command), flags, MIN_RECORD + tl + ml + sl + cl + nl, {}, tl)
        return layout

    def _pair(self, pairs: dict[bytes, tuple[str, str]], names: bytes, topic_length: int) -> tuple[str, str]:
        if self._pairs >= _CACHE_LIMIT:
            self._forget()
            pairs.clear()  # the caller's layout: no longer in _layouts, but still in use
        self._pairs += 1
        pair = pairs[names] = (str(names[:topic_length], "utf-8"), str(names[topic_length:], "utf-8"))
        return pair

    def _remember(self, raw: bytes) -> str:
        if len(self._texts) >= _CACHE_LIMIT:
            self._texts.clear()
        text = self._texts[raw] = str(raw, "utf-8")
        return text

    def _forget(self) -> None:
        """Endless distinct shapes or topics must not grow memory: start the caches again."""
        self._layouts.clear()
        self._pairs = 0


def decode_record(data: bytes, offset: int = 0) -> JournalRecord:
    """The one record at ``offset`` of ``data``, checked; RecordDefect if it is bad."""
    return _ONE.decode_one(data, offset)


# One-record decodes share a decoder, so they reuse its shapes and strings; its state is only
# bounded caches, safe to share.
_ONE = Decoder()


def record_length(data: bytes, offset: int) -> int | None:
    """The declared length of the record at ``offset``, or None if its length field is cut off."""
    if offset + 4 > len(data):
        return None
    return int.from_bytes(data[offset:offset + 4], "little")


def record_defect(data: bytes, offset: int, end: int) -> RecordDefect | None:
    """Why the record at ``offset`` (inside ``data[:end]``) is bad, or None when it is good.

    An incomplete record (its head or its declared length runs past ``end``) is a defect with
    ``incomplete=True``: whether that is a torn tail is the caller's decision.
    """
    available = end - offset
    if available < HEAD_SIZE:
        return RecordDefect(offset, f"incomplete record header: {available} of {HEAD_SIZE} bytes", incomplete=True)
    (length, sequence, _timestamp, command, flags, tl, ml, sl, cl, nl,
     _expiration, _pseq, pl) = RECORD_HEAD.unpack_from(data, offset)
    if length < MIN_RECORD:
        return RecordDefect(offset, f"impossible record length {length} (at least {MIN_RECORD})", sequence=sequence)
    if length > available:
        return RecordDefect(offset, f"record length {length} runs past the end of the segment ({available} bytes left)",
                            incomplete=True, sequence=sequence)
    view = memoryview(data)
    stored = TRAILER.unpack_from(data, offset + length - 4)[0]
    if zlib.crc32(view[offset:offset + length - 4], RESIDUE) != stored:
        return RecordDefect(offset, f"checksum mismatch in a {length}-byte record", sequence=sequence)
    # The checksum is intact from here on: what follows is a structure no writer of this format
    # makes (another tool's, or crafted), never a torn write.
    if length != MIN_RECORD + tl + ml + sl + cl + nl + pl:
        return RecordDefect(offset, f"field lengths do not add up to the record length {length}", sequence=sequence,
                            intact=True)
    if not 0 < command < 5:
        return RecordDefect(offset, f"unknown command byte {command}", sequence=sequence, intact=True)
    if flags & ~KNOWN_FLAGS:
        return RecordDefect(offset, f"unknown flag bits {flags & ~KNOWN_FLAGS:#x}", sequence=sequence, intact=True)
    p = offset + HEAD_SIZE
    for name, size in (("topic", tl), ("message type", ml), ("sow key", sl), ("correlation id", cl), ("client name", nl)):
        try:
            str(data[p:p + size], "utf-8")
        except UnicodeDecodeError:
            return RecordDefect(offset, f"{name} is not valid UTF-8", sequence=sequence, intact=True)
        p += size
    return None


def _located(data: bytes, start: int, stop: int, out: list[JournalRecord], batch_count: int) -> RecordDefect:
    """The first bad record in ``data[start:stop]`` (a batch whose checksum failed).

    Trims ``out`` to the records before it. Walks record by record; the batch failed, so one
    of them is bad, unless the lengths themselves were damaged, which this also names.
    """
    pos, kept = start, batch_count
    while pos < stop:
        defect = record_defect(data, pos, stop)
        if defect is not None:
            del out[kept:]
            return defect
        pos += record_length(data, pos) or 0
        kept += 1
    del out[kept:]
    return RecordDefect(stop, "checksum mismatch in the records before this offset")

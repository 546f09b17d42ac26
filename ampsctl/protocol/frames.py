"""Framing of the AMPS ``amps`` protocol on a byte stream (spec/protocol.md §2).

A frame is a 4-byte big-endian length N, then N bytes: one JSON object (the header, UTF-8)
immediately followed by the body, with no separator. N counts header and body, not itself.
The body is not length-tagged, so the end of the header is found in the JSON itself (§2.2):
first by parsing up to the first '}' (every flat header without a '}' in a string), then by a
regular expression for flat objects, then by a bracket/string scanner for the rare header with
nested values (accepted: unknown keys are ignored, whatever they hold).

Theory of operation (FrameDecoder)
    The decoder owns one bytearray of unconsumed input that always starts at a frame boundary,
    and ``_need``, the number of buffered bytes without which nothing can be decided (4 for a
    length prefix, 5 for the first header byte, 4 + N for a whole frame). ``feed`` appends and
    returns at once while the buffer is shorter than ``_need``; otherwise it cuts every
    complete frame, parses each header and copies each body out, then drops the consumed
    prefix. Input that arrives while nothing is pending is cut without being copied first.

Invariants
    1. Split independence: the frames a stream yields, and the first error it raises, do not
       depend on how the stream is cut into ``feed`` calls. ``_need`` decides when work happens,
       never what it produces; the early checks in 4 fail exactly when the full check would.
    2. After ``feed`` returns, the buffer holds less than one frame.
    3. Linear work: a partial frame is never rescanned, so a 64 MiB frame fed in 1 KiB pieces
       costs O(64 MiB), not O(n²).
    4. Fail early: the length is checked as soon as its 4 bytes arrive (zero or over the cap),
       and the first header byte as soon as it arrives, so garbage (an HTTP request, TLS
       hello ...) is rejected without waiting for, or buffering, a body that may never come.
    5. Every error is a FrameError and fatal: the decoder keeps no input and every later
       ``feed`` raises DecoderFailed. The valid frames decoded before the bad one in the same
       call travel on ``error.frames``; none is lost or repeated.
    6. The body is opaque bytes: never decoded, never validated (binary message types exist).
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ampsctl.protocol.errors import (
    DecoderFailed,
    FrameError,
    FrameGarbage,
    FrameTooLarge,
    FrameTruncated,
    HeaderBadUtf8,
    HeaderNotJson,
    HeaderNotObject,
    SowBatchError,
)
from ampsctl.protocol.fastinit import fast_init

DEFAULT_MAX_FRAME_SIZE = 64 * 1024 * 1024
MAX_LENGTH = 0xFFFF_FFFF  # what a uint32 prefix can say

_PREFIX = struct.Struct(">I")
# A flat header: '{', then runs of non-structural bytes or complete strings, then '}'. Possessive
# quantifiers keep a failing match linear (a 64 MiB '{aaaa...' must not backtrack).
_FLAT_HEADER = re.compile(rb'[ \t\r\n]*\{(?:[^"{}\[\]]++|"(?:[^"\\]++|\\.)*+")*+\}', re.DOTALL)
_STRUCTURAL = re.compile(rb'["\\{}\[\]]')
_WHITESPACE = frozenset(b" \t\r\n")
_JSON_START = frozenset(b'{["-0123456789tfn') | _WHITESPACE
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_OPENERS, _CLOSERS = frozenset(b"{["), frozenset(b"}]")
_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


@fast_init
@dataclass(frozen=True, slots=True)
class Frame:
    """One decoded frame: the header as sent (wire keys, aliases not yet normalised) and the body."""

    header: dict[str, Any]
    body: bytes = b""

    def encode(self) -> bytes:
        return encode_frame(self.header, self.body)


# --------------------------------------------------------------------------------------
# encoding: strict in what we send (§2.2: compact JSON, integers as JSON numbers)
# --------------------------------------------------------------------------------------


def encode_header(header: Mapping[str, Any]) -> bytes:
    """Compact JSON for ``header``; a None value means "field absent" and is left out."""
    if None in header.values():
        header = {key: value for key, value in header.items() if value is not None}
    return orjson.dumps(header)


def _join(head: bytes, parts: Iterable[bytes], size: int) -> bytes:
    if size > MAX_LENGTH:
        raise FrameTooLarge(size, MAX_LENGTH)
    return b"".join((_PREFIX.pack(size), head, *parts))


def encode_frame(header: Mapping[str, Any], body: bytes = b"") -> bytes:
    """The wire bytes of one frame: length prefix, compact JSON header, body."""
    head = encode_header(header)
    return _join(head, (body,), len(head) + len(body))


def encode_bodiless(header: Mapping[str, Any]) -> bytes:
    """``encode_frame(header)`` for a small header that holds no None value (acks: one per publish)."""
    head = orjson.dumps(header)
    return _PREFIX.pack(len(head)) + head


def encode_sow_batch(header: Mapping[str, Any], records: Iterable[tuple[Mapping[str, Any], bytes]]) -> bytes:
    """A ``sow`` frame (§2.3): the outer header, then per record a header with ``l`` and the data.

    ``bs`` on the outer header is set to the number of records, and the outer header never
    carries ``l`` ([REC]: the "length of the first message" reading is not used).
    """
    parts: list[bytes] = []
    for record_header, data in records:
        inner = {key: value for key, value in record_header.items() if value is not None and key != "l"}
        inner["l"] = len(data)
        parts += (orjson.dumps(inner), data)
    return encode_sow_parts(header, parts)


def encode_sow_parts(header: Mapping[str, Any], parts: list[bytes]) -> bytes:
    """``encode_sow_batch`` for records encoded already: ``parts`` alternates each record's inner
    header (with its ``l``, no None value) and its data."""
    outer = {key: value for key, value in header.items() if value is not None and key != "l"}
    outer["bs"] = len(parts) // 2
    head = orjson.dumps(outer)
    return _join(head, parts, len(head) + sum(map(len, parts)))


# --------------------------------------------------------------------------------------
# decoding
# --------------------------------------------------------------------------------------


class FrameDecoder:
    """Incremental, sans-IO decoder: ``feed(bytes) -> list[Frame]`` (see the module docstring)."""

    __slots__ = ("max_frame_size", "_buffer", "_need", "_failed")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if not 1 <= max_frame_size <= MAX_LENGTH:
            raise ValueError(f"max_frame_size must be between 1 and {MAX_LENGTH}, not {max_frame_size}")
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._need = _PREFIX.size
        self._failed: FrameError | None = None

    @property
    def buffered(self) -> int:
        """Bytes of an incomplete frame held back (0 at a frame boundary)."""
        return len(self._buffer)

    @property
    def failed(self) -> FrameError | None:
        """The fatal error this stream hit, if any."""
        return self._failed

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        """Every frame completed by ``data``, in order. Raises FrameError (fatal) on bad input."""
        if self._failed is not None:
            raise DecoderFailed(f"the stream already failed ({self._failed.code}): {self._failed}")
        buffer = self._buffer
        if buffer:
            buffer += data
            if len(buffer) < self._need:
                return []
            source: bytes | bytearray = buffer
        else:  # nothing pending: cut frames straight from the caller's bytes
            source = data.tobytes() if isinstance(data, memoryview) else data
        frames: list[Frame] = []
        with memoryview(source) as view:
            try:
                consumed = self._cut(source, view, frames)
            except FrameError as error:
                error.frames = frames
                self._failed = error
                self._buffer = bytearray()
                raise
            if source is not buffer:
                buffer += view[consumed:]
                return frames
        del buffer[:consumed]  # only once the view is released: an exported bytearray cannot shrink
        return frames

    def finish(self) -> None:
        """The peer closed the stream: raise FrameTruncated if it stopped inside a frame."""
        if self._failed is None and self._buffer:
            error = FrameTruncated(f"the stream ended inside a frame ({len(self._buffer)} bytes of it arrived)")
            self._failed = error
            self._buffer = bytearray()
            raise error

    def _cut(self, data: bytes | bytearray, view: memoryview, frames: list[Frame]) -> int:
        """Append every complete frame of ``data`` to ``frames``; return the bytes consumed."""
        pos, end, limit = 0, len(view), self.max_frame_size
        unpack, find, loads, append = _PREFIX.unpack_from, data.find, orjson.loads, frames.append
        while True:
            available = end - pos
            if available < 4:
                self._need = 4
                return pos
            (size,) = unpack(view, pos)
            if size == 0:
                raise FrameGarbage("zero-length frame: a frame holds at least a JSON header")
            if size > limit:
                raise FrameTooLarge(size, limit)
            start = pos + 4
            stop = start + size
            if available < 4 + size:
                if available > 4:
                    _check_first_byte(view[start])
                    self._need = 4 + size
                else:
                    self._need = 5  # wake up for the first header byte (invariant 4)
                return pos
            # _read_header's fast path, inlined (once per frame): the header ends at the first '}'
            brace = find(b"}", start, stop)
            try:
                if brace < 0:
                    raise ValueError
                header, header_end = loads(view[start : brace + 1]), brace + 1
            except ValueError:  # orjson.JSONDecodeError is a ValueError
                header_end = _header_end(view, start, stop)
                header = _load_header(view, start, header_end)
            append(Frame(header, bytes(view[header_end:stop])))
            pos = stop


def decode_frames(data: bytes, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> list[Frame]:
    """Every frame of a complete byte string; FrameTruncated if it ends inside a frame."""
    decoder = FrameDecoder(max_frame_size)
    frames = decoder.feed(data)
    decoder.finish()
    return frames


def split_sow_records(body: bytes) -> list[tuple[dict[str, Any], bytes]]:
    """The (inner header, data) pairs of a ``sow`` frame body (§2.3), client side.

    Loops until the body is exhausted rather than trusting ``bs`` (§2.3 [REC]); ``l`` may be
    spelled ``msg_len`` and may be a string of digits, as everywhere in the headers.
    """
    records: list[tuple[dict[str, Any], bytes]] = []
    pos, end, view = 0, len(body), memoryview(body)
    while pos < end:
        try:
            header, header_end = _read_header(body, view, pos, end)
        except FrameError as exc:
            raise SowBatchError(f"record {len(records) + 1} of the sow batch: {exc}") from None
        length = header.get("l", header.get("msg_len"))
        if isinstance(length, str) and length.strip().isdigit():
            length = int(length)
        if not isinstance(length, int) or isinstance(length, bool) or length < 0:
            raise SowBatchError(f"record {len(records) + 1} of the sow batch has no valid l (length): {length!r}")
        if header_end + length > end:
            raise SowBatchError(
                f"record {len(records) + 1} of the sow batch says l={length} but only {end - header_end} bytes follow"
            )
        records.append((header, body[header_end : header_end + length]))
        pos = header_end + length
    return records


# --------------------------------------------------------------------------------------
# header location and parsing
# --------------------------------------------------------------------------------------


def _read_header(data: bytes | bytearray, view: memoryview, start: int, stop: int) -> tuple[dict[str, Any], int]:
    """The header object at ``start`` and the offset just past it.

    Fast path: nearly every header is flat with no '}' inside a string, so it ends at the first
    '}'. If the text up to there parses, that brace closes the header: lexing is decided by the
    prefix alone, and a JSON text that ends in '}' is an object closed by that brace. Anything
    else (a '}' in a string, nested values, a broken header) takes the careful path.
    """
    brace = data.find(b"}", start, stop)
    if brace >= 0:
        try:
            return orjson.loads(view[start : brace + 1]), brace + 1
        except orjson.JSONDecodeError:
            pass
    header_end = _header_end(view, start, stop)
    return _load_header(view, start, header_end), header_end


def _check_first_byte(byte: int) -> None:
    if byte not in _JSON_START:
        raise FrameGarbage(
            f"frame header starts with byte 0x{byte:02x}, not '{{': this is not an AMPS frame",
            hint="the amps protocol sends a 4-byte length, then a JSON header such as {\"c\":\"logon\"}",
        )


def _header_end(data: bytes | memoryview, start: int, stop: int) -> int:
    """The offset just past the header object that starts at ``start``."""
    flat = _FLAT_HEADER.match(data, start, stop)
    if flat is not None:
        return flat.end()
    _check_first_byte(data[start])
    first = start
    while first < stop and data[first] in _WHITESPACE:
        first += 1
    if first == stop:
        raise HeaderNotJson("frame header is empty (only whitespace)")
    if data[first] != ord("{"):
        raise _not_an_object(bytes(data[first:stop]))
    end = _scan_object_end(data, first, stop)
    if end is None:
        raise HeaderNotJson("frame header is not a complete JSON object: its '{' is never closed in the frame")
    return end


def _scan_object_end(data: bytes | memoryview, first: int, stop: int) -> int | None:
    """The end of a (possibly nested) object at ``first``: brackets counted outside strings."""
    depth, in_string, skip_to = 0, False, -1
    for found in _STRUCTURAL.finditer(data, first, stop):
        at = found.start()
        if at < skip_to:
            continue  # the character after a backslash inside a string
        byte = data[at]
        if in_string:
            if byte == _BACKSLASH:
                skip_to = at + 2
            elif byte == _QUOTE:
                in_string = False
        elif byte == _QUOTE:
            in_string = True
        elif byte in _OPENERS:
            depth += 1
        elif byte in _CLOSERS:
            depth -= 1
            if depth == 0:
                return at + 1
    return None


def _load_header(data: bytes | memoryview, start: int, end: int) -> dict[str, Any]:
    raw = data[start:end]
    try:
        header: dict[str, Any] = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            bytes(raw).decode("utf-8")
        except UnicodeDecodeError as bad:
            raise HeaderBadUtf8(f"frame header is not valid UTF-8 (byte {bad.start} of the header)") from None
        raise HeaderNotJson(f"frame header is not valid JSON: {exc}") from None
    return header  # the text is '{...}' and parsed, so it is an object


def _not_an_object(text: bytes) -> FrameError:
    """Classify a header that does not start with '{': another JSON value, or not JSON at all."""
    try:
        value, _ = json.JSONDecoder().raw_decode(text.decode("utf-8", errors="replace"))
    except ValueError:
        return HeaderNotJson("frame header is not JSON")
    kind = "null" if value is None else _KINDS.get(type(value), type(value).__name__)
    return HeaderNotObject(f"frame header is {kind}, not a JSON object")

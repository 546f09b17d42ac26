"""Bookmarks and timestamps: the two ways to name a place in the journal (spec/protocol.md §9).

* A bookmark has the AMPS shape ``<publisher-hash>|<sequence>|`` where the hash is FNV-1a 64 of
  the publishing client's name (UTF-8; an anonymous publisher hashes the empty name) and the
  sequence is the journal's own, strictly increasing across the whole journal (§9.1 [REC]).
  Clients treat bookmarks as opaque; ``parse_bookmark`` only needs the sequence.
* The special bookmarks are ``0`` (EPOCH: from the beginning) and ``0|1|`` (NOW: nothing
  already in the journal); lists ``b1,b2`` mean the earliest of them (§9.2).
* Timestamps are µs since the Unix epoch, UTC. Text forms: AMPS ``20261122T093000[.ffffff][Z]``
  (basic ISO-8601, always UTC) and extended ISO-8601 ``2026-11-22T09:30:00[.ffffff][Z|±hh:mm]``
  (an offset is converted to UTC; no zone means UTC, as in AMPS). Fractions have 1-6 digits.
  An offset is at most ±23:59 (minutes below 60), and the time in UTC must fall in the years
  1 to 9999 (what the text forms can express); anything else is an InputError, never an
  OverflowError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache

from ampsctl.errors import InputError

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
_MASK64 = (1 << 64) - 1
EPOCH = "0"
NOW = "0|1|"

_BOOKMARK = re.compile(r"([0-9]{1,20})\|([0-9]{1,20})\|", re.ASCII)
_AMPS_TIME = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})T([0-9]{2})([0-9]{2})([0-9]{2})(?:\.([0-9]{1,6}))?(Z?)", re.ASCII)
_ISO_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[T ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,6}))?(Z|[+-][0-9]{2}:?[0-9]{2})?",
    re.ASCII,
)
_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ONE_US = timedelta(microseconds=1)
_TIME_HINT = "write 20261122T093000.123456Z (AMPS) or 2026-11-22T09:30:00.123456Z (ISO-8601), UTC"
_BOOKMARK_HINT = "a bookmark looks like 12290412031115262887|42| (publisher hash, sequence, trailing |)"


@lru_cache(maxsize=4096)  # client names repeat on every record of a publisher
def publisher_hash(client_name: str) -> int:
    """FNV-1a 64 of the UTF-8 client name: the publisher part of a bookmark."""
    value = FNV_OFFSET
    for byte in client_name.encode("utf-8"):
        value = ((value ^ byte) * FNV_PRIME) & _MASK64
    return value


def format_bookmark(client_name: str, sequence: int) -> str:
    return f"{publisher_hash(client_name)}|{sequence}|"


def parse_bookmark(text: str) -> tuple[int, int]:
    """``"h|seq|"`` -> ``(h, seq)``; InputError for anything else (specials included)."""
    found = _BOOKMARK.fullmatch(text.strip())
    if found is None:
        raise InputError(f"invalid bookmark {text!r}", code="BOOKMARK", hint=_BOOKMARK_HINT)
    publisher, sequence = int(found[1]), int(found[2])
    if publisher > _MASK64 or sequence > _MASK64:
        raise InputError(f"invalid bookmark {text!r}: a part is larger than 64 bits", code="BOOKMARK", hint=_BOOKMARK_HINT)
    return publisher, sequence


def is_bookmark(text: str) -> bool:
    """Whether ``text`` has bookmark shape (``h|seq|``, a special, or a comma list of them)."""
    return all(part.strip() in (EPOCH, NOW) or _BOOKMARK.fullmatch(part.strip()) for part in text.split(","))


def parse_timestamp(text: str) -> int:
    """AMPS or ISO-8601 timestamp text -> µs since the epoch (UTC); InputError otherwise."""
    stripped = text.strip()
    for pattern in (_AMPS_TIME, _ISO_TIME):
        found = pattern.fullmatch(stripped)
        if found is not None:
            return _to_micros(text, found)
    raise InputError(f"invalid timestamp {text!r}", code="TIMESTAMP", hint=_TIME_HINT)


def _to_micros(text: str, found: re.Match[str]) -> int:
    year, month, day, hour, minute, second = (int(found[i]) for i in range(1, 7))
    micros = int((found[7] or "0").ljust(6, "0"))
    zone = found[8] or "Z"
    try:
        moment = datetime(year, month, day, hour, minute, second, micros, tzinfo=timezone.utc)
    except ValueError as exc:
        raise InputError(f"invalid timestamp {text!r}: {exc}", code="TIMESTAMP", hint=_TIME_HINT) from None
    if zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:])
        if hours > 23 or minutes > 59:
            raise InputError(f"invalid timestamp {text!r}: UTC offset {zone} is not -23:59 to +23:59 (minutes below 60)",
                             code="TIMESTAMP", hint=_TIME_HINT)
        try:
            moment -= sign * timedelta(hours=hours, minutes=minutes)
        except OverflowError:
            raise InputError(f"invalid timestamp {text!r}: out of range: in UTC it is outside the years 1 to 9999",
                             code="TIMESTAMP", hint=_TIME_HINT) from None
    return (moment - _UNIX_EPOCH) // _ONE_US


def is_timestamp_shaped(text: str) -> bool:
    """Whether ``text`` has the shape of a timestamp (its values may still be invalid)."""
    stripped = text.strip()
    return any(pattern.fullmatch(stripped) is not None for pattern in (_AMPS_TIME, _ISO_TIME))


def format_timestamp(us: int) -> str:
    """µs since the epoch -> ``20261122T093000.123456Z`` (always 6 fraction digits, UTC).

    OverflowError outside the years 1 to 9999, which the text form cannot express; callers
    that must show any stored value use ``timestamp_value``.
    """
    m = _UNIX_EPOCH + timedelta(microseconds=us)
    return f"{m.year:04d}{m.month:02d}{m.day:02d}T{m.hour:02d}{m.minute:02d}{m.second:02d}.{m.microsecond:06d}Z"


def timestamp_value(us: int) -> str | int:
    """The text form of a timestamp, or the µs integer itself when it has none."""
    try:
        return format_timestamp(us)
    except OverflowError:
        return us


@dataclass(frozen=True, slots=True)
class Position:
    """A place named on a command line: after a bookmark's sequence, or at a time."""

    sequence: int | None = None  # a bookmark's sequence (EPOCH is 0)
    timestamp: int | None = None  # µs
    now: bool = False  # the NOW bookmark: the end of the journal

    @property
    def is_bookmark(self) -> bool:
        return self.timestamp is None


def parse_position(text: str) -> Position:
    """A bookmark (``h|seq|``, ``0``, ``0|1|``, or a list meaning the earliest) or a timestamp."""
    stripped = text.strip()
    if not stripped:
        raise InputError("empty bookmark or timestamp", code="BOOKMARK", hint=_BOOKMARK_HINT + "; or " + _TIME_HINT)
    if is_bookmark(stripped):
        positions = [_single_bookmark(part.strip()) for part in stripped.split(",")]
        if any(p.sequence == 0 and not p.now for p in positions):
            return Position(sequence=0)
        bounded = [p for p in positions if not p.now]
        return min(bounded, key=lambda p: p.sequence or 0) if bounded else Position(now=True)
    if "|" in stripped:
        parse_bookmark(stripped)  # raises the bookmark error, which is what the user meant
    if is_timestamp_shaped(stripped):
        return Position(timestamp=parse_timestamp(stripped))  # its error says what is wrong with it
    try:
        return Position(timestamp=parse_timestamp(stripped))
    except InputError:
        raise InputError(
            f"{text!r} is neither a bookmark nor a timestamp", code="BOOKMARK", hint=_BOOKMARK_HINT + "; or " + _TIME_HINT
        ) from None


def _single_bookmark(text: str) -> Position:
    if text == EPOCH:
        return Position(sequence=0)
    if text == NOW:
        return Position(now=True)
    return Position(sequence=parse_bookmark(text)[1])

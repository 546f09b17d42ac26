"""SOW records and the changes the engine reports.

A ``SowRecord`` is one stored message with the bookkeeping the SOW keeps next to it. It is an
immutable value: an update replaces the record, it never edits it, so a caller may hold on to
the old one (the broker needs it for out-of-focus notifications and delta subscriptions).

Times are µs since the Unix epoch, UTC, always supplied by the caller (the journal record's
timestamp on replay); the SOW never reads a clock.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ampsctl.errors import InputError

MICROS = 1_000_000
LAST_MICROS = (1 << 63) - 1  # the last time a SOW file can store (µs in a signed 64-bit column): about the year 294,000


@dataclass(frozen=True, slots=True)
class SowRecord:
    """One message in a SOW topic."""

    topic: str  # the concrete topic (differs from the spec's Name for a Pattern topic)
    key: str  # the SOW key: generated from the Key fields, or the publisher's
    payload: bytes  # the message as stored: as published, or the merged result of a delta publish
    sequence: int  # journal sequence of the command that wrote it last (0: not from a journal)
    timestamp: int  # µs of that command
    expiration: int | None  # seconds as published (0 = never); None = the message gave none
    expires_at: int | None  # µs at which the record expires; None = never

    def expired(self, now: int) -> bool:
        return self.expires_at is not None and self.expires_at <= now


class ChangeKind(enum.Enum):
    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"
    EXPIRE = "expire"


@dataclass(frozen=True, slots=True)
class Change:
    """What one operation did to one record: ``old`` before, ``new`` after (None when gone)."""

    kind: ChangeKind
    topic: str
    key: str
    old: SowRecord | None
    new: SowRecord | None


def expiration_refused(timestamp: int, expiration: int | None) -> bool:
    """Whether a write at ``timestamp`` with the message's ``expiration`` is refused: negative, or
    ending past ``LAST_MICROS`` (a topic default cannot: intervals fit 64 bits of nanoseconds)."""
    return expiration is not None and (expiration < 0 or timestamp + expiration * MICROS > LAST_MICROS)


def expires_at(timestamp: int, expiration: int | None, topic_default: int | None) -> int | None:
    """When a record written at ``timestamp`` expires (spec/messages.md §5).

    The message's own expiration wins, then the topic default; 0 (either way) means never.
    The time is stored even when the topic does not process expiration (seed 003: AMPS saves
    it but does not act on it), so enabling expiration later acts on the stored times (E7).
    InputError for a time past ``LAST_MICROS``: the write is refused, as a negative expiration is.
    """
    seconds = expiration if expiration is not None else topic_default
    if not seconds:
        return None
    at = timestamp + seconds * MICROS
    if at > LAST_MICROS:
        raise InputError(f"expiration {seconds} s ends after the last time a SOW can store (2^63 µs: about the year 294,000)",
                         code="SOW_EXPIRATION", hint="use a shorter expiration, or 0 for never")
    return at

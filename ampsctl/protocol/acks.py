"""Acknowledgments (spec/protocol.md §7): ack types, statuses and the ``ack`` message.

A command asks for acks with a comma list in ``a`` (``"processed,completed"``); the server
answers with one ``ack`` frame per type, each carrying exactly one type in ``a`` (§6.1, §7.1).
``Ack`` is the builder (``Ack(...).encode()`` gives the frame bytes) and, through
``Ack.from_header``, the client's parser. Which extra fields an ack carries depends on the
command and the ack type (§6.1); the named constructors below fill them for the cases where
that is easy to get wrong: logon, conflated ``persisted`` and ``stats``.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ampsctl.protocol import headers as h
from ampsctl.protocol.errors import UnknownMessage
from ampsctl.protocol.fastinit import fast_init
from ampsctl.protocol.frames import encode_bodiless


class AckType(enum.StrEnum):
    RECEIVED = "received"
    PARSED = "parsed"
    PROCESSED = "processed"
    PERSISTED = "persisted"
    COMPLETED = "completed"
    STATS = "stats"


# §7.1 [REC]: the order a command's acks are sent in (results go between processed and the rest).
ACK_ORDER: tuple[AckType, ...] = tuple(AckType)
# Which requested ack carries a command's failure (see failure_ack_type).
_FAILURE_CARRIERS: tuple[AckType, ...] = (
    AckType.PROCESSED,
    AckType.PERSISTED,
    AckType.COMPLETED,
    AckType.PARSED,
    AckType.RECEIVED,
    AckType.STATS,
)


class Status(enum.StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    RETRY = "retry"  # logon challenge only; the local broker never sends it (§4.1)


@functools.lru_cache(maxsize=256)  # clients send the same few lists on every command
def parse_ack_types(value: str | None) -> frozenset[AckType]:
    """The ack types of an ``a`` header. ``none`` and unknown names are ignored (§7.2 [REC]):
    a misspelt type cannot be answered with a failure, since there is no ack to carry it."""
    found = set()
    for item in h.split_list(value):
        try:
            found.add(AckType(item.lower()))
        except ValueError:
            continue
    return frozenset(found)


def format_ack_types(acks: Iterable[AckType]) -> str | None:
    """The ``a`` header for ``acks`` in §7.1 order; None when there are none."""
    wanted = set(acks)
    return h.join_list([ack.value for ack in ACK_ORDER if ack in wanted])


def failure_ack_type(requested: frozenset[AckType]) -> AckType | None:
    """The one requested ack that reports a command's failure, or None if none was requested.

    ``processed`` is where the spec puts success/failure (§7.1); a client that asked only for
    ``persisted`` (publish stores), ``completed`` (flush, queries) or ``stats`` must still hear
    about the failure, or it would wait forever, so the failure rides on what it asked for.
    """
    return next((ack for ack in _FAILURE_CARRIERS if ack in requested), None)


@fast_init
@dataclass(frozen=True, slots=True)
class Ack:
    """An ``ack`` message (§6.1). ``None`` fields are absent from the header."""

    ack_type: AckType
    status: Status = Status.SUCCESS
    cid: str | None = None
    reason: str | None = None
    topic: str | None = None
    sub_id: str | None = None
    query_id: str | None = None
    client_name: str | None = None
    user_id: str | None = None
    password: str | None = None
    version: str | None = None
    seq: int | None = None
    bookmark: str | None = None
    options: str | None = None
    matches: int | None = None
    topic_matches: int | None = None
    records_returned: int | None = None
    records_inserted: int | None = None
    records_updated: int | None = None
    records_deleted: int | None = None

    @property
    def ok(self) -> bool:
        return self.status is Status.SUCCESS

    def header(self) -> dict[str, Any]:
        out: dict[str, Any] = {"c": "ack", "cid": self.cid, "a": self.ack_type, "status": self.status}
        if self.cid is None:
            del out["cid"]  # conflated persisted acks (§7.5)
        for attribute, key, _ in _OPTIONAL:
            value = getattr(self, attribute)
            if value is not None:
                out[key] = value
        return out

    def encode(self) -> bytes:
        return encode_bodiless(self.header())  # header() leaves None values out already

    @classmethod
    def from_header(cls, header: Mapping[str, Any]) -> Ack:
        """Client side: the Ack of a normalized ``c=ack`` header (unknown reasons kept as text)."""
        ack_name = (h.text(header, "a") or "").strip().lower()
        status_name = (h.text(header, "status") or "success").strip().lower()
        try:
            ack_type, status = AckType(ack_name), Status(status_name)
        except ValueError:
            raise UnknownMessage(f"ack with unknown type {ack_name!r} or status {status_name!r}") from None
        values: dict[str, Any] = {}
        for attribute, key, is_integer in _OPTIONAL:
            values[attribute] = h.integer(header, key) if is_integer else h.text(header, key)
        return cls(ack_type, status, h.text(header, "cid"), **values)


# (attribute, wire key, integer?) for every field after ack_type, status and cid, in header order.
_OPTIONAL: tuple[tuple[str, str, bool], ...] = (
    ("reason", "reason", False),
    ("topic", "t", False),
    ("sub_id", "sub_id", False),
    ("query_id", "query_id", False),
    ("client_name", "client_name", False),
    ("user_id", "user_id", False),
    ("password", "pw", False),
    ("version", "v", False),
    ("seq", "s", True),
    ("bookmark", "bm", False),
    ("options", "o", False),
    ("matches", "matches", True),
    ("topic_matches", "topic_matches", True),
    ("records_returned", "records_returned", True),
    ("records_inserted", "records_inserted", True),
    ("records_updated", "records_updated", True),
    ("records_deleted", "records_deleted", True),
)


# --------------------------------------------------------------------------------------
# named constructors for the acks whose extra fields are easy to get wrong
# --------------------------------------------------------------------------------------


def logon_ack(
    cid: str | None,
    *,
    status: Status = Status.SUCCESS,
    reason: str | None = None,
    client_name: str | None = None,
    user_id: str | None = None,
    version: str | None = None,
    seq: int | None = None,
    bookmark: str | None = None,
    password: str | None = None,
) -> Ack:
    """The ``processed`` ack of a logon (§5.1): the server ``v``, and for the client name the
    last sequence ``s`` (0 if none) and bookmark ``bm`` it published, so it knows what to resend.
    ``password`` only on ``retry`` (§4.1.5)."""
    return Ack(
        AckType.PROCESSED,
        status,
        cid,
        reason,
        client_name=client_name,
        user_id=user_id,
        version=version,
        seq=seq,
        bookmark=bookmark,
        password=password if status is Status.RETRY else None,
    )


def persisted_ack(
    *,
    seq: int | None = None,
    bookmark: str | None = None,
    cid: str | None = None,
    sub_id: str | None = None,
    status: Status = Status.SUCCESS,
    reason: str | None = None,
) -> Ack:
    """A ``persisted`` ack. Conflated (§7.5) when ``cid`` is None: ``s`` covers every earlier
    publish of the connection. On a bookmark subscription (§9.3) it carries ``sub_id`` and the
    last persisted ``bm``."""
    return Ack(AckType.PERSISTED, status, cid, reason, sub_id=sub_id, seq=seq, bookmark=bookmark)


def stats_ack(
    cid: str | None,
    *,
    matches: int,
    topic_matches: int,
    records_returned: int | None = None,
    records_deleted: int | None = None,
    records_inserted: int | None = None,
    records_updated: int | None = None,
    topic: str | None = None,
    sub_id: str | None = None,
    query_id: str | None = None,
) -> Ack:
    """The ``stats`` ack: queries report ``records_returned``, sow_delete ``records_deleted`` (§6.1)."""
    return Ack(
        AckType.STATS,
        Status.SUCCESS,
        cid,
        topic=topic,
        sub_id=sub_id,
        query_id=query_id,
        matches=matches,
        topic_matches=topic_matches,
        records_returned=records_returned,
        records_inserted=records_inserted,
        records_updated=records_updated,
        records_deleted=records_deleted,
    )

"""Server -> client messages other than acks (spec/protocol.md §6): delivered publishes,
SOW batches, out-of-focus notices, query delimiters and heartbeats.

Each is a frozen dataclass whose ``encode()`` returns the frame bytes (the broker's builders),
and ``parse_message`` turns a decoded frame back into one of them or an ``Ack`` (the client's
reader), so that ``parse_message(decode(m.encode())) == m`` for every message ``m``.

What goes on the wire [REC]: delivered publishes use ``c=p`` (clients must also accept
``publish``); ``sub_id`` is always the first receiving subscription and ``sids`` lists all of
them when there are several (§6.2, §13 #13); ``oof`` carries ``l``, the body length (§10); the
outer header of a ``sow`` batch carries ``bs`` and never ``l`` (§2.3).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ampsctl.protocol import headers as h
from ampsctl.protocol.acks import Ack
from ampsctl.protocol.errors import UnknownMessage
from ampsctl.protocol.fastinit import fast_init
from ampsctl.protocol.frames import Frame, encode_frame, encode_sow_parts, split_sow_records


class OofReason(enum.StrEnum):
    """Why a record left a subscription's focus (§10)."""

    DELETED = "deleted"
    EXPIRED = "expired"
    MATCH = "match"
    ENTITLEMENT = "entitlement"


_OOF_REASONS = {reason.value: reason for reason in OofReason}


def _receivers(sub_ids: tuple[str, ...]) -> dict[str, Any]:
    return {"sub_id": sub_ids[0] if sub_ids else None, "sids": h.join_list(sub_ids) if len(sub_ids) > 1 else None}


def _read_receivers(header: Mapping[str, Any]) -> tuple[str, ...]:
    sids = h.split_list(h.text(header, "sids"))
    if sids:
        return sids
    sub_id = h.text(header, "sub_id")
    return (sub_id,) if sub_id else ()


@fast_init  # built for every delivery the broker sends
@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """A publish delivered to subscriptions of one connection (``c=p``, §6.2)."""

    topic: str
    data: bytes = b""
    sub_ids: tuple[str, ...] = ()  # every subscription of the connection this message satisfies
    correlation_id: str | None = None
    sow_key: str | None = None  # omitted for no_sowkey subscriptions
    bookmark: str | None = None  # when the message is in the journal
    timestamp: str | None = None  # with the timestamp option
    seq: int | None = None
    lease_period: str | None = None  # queues

    def header(self) -> dict[str, Any]:
        return {
            "c": "p",
            "t": self.topic,
            **_receivers(self.sub_ids),
            "x": self.correlation_id,
            "k": self.sow_key,
            "bm": self.bookmark,
            "ts": self.timestamp,
            "s": self.seq,
            "lp": self.lease_period,
        }

    def encode(self) -> bytes:
        # header() without its None values, built directly: the broker encodes one per delivery.
        header: dict[str, Any] = {"c": "p", "t": self.topic}
        sub_ids = self.sub_ids
        if sub_ids:
            header["sub_id"] = sub_ids[0]
            if len(sub_ids) > 1:
                header["sids"] = h.join_list(sub_ids)
        for key, value in (("x", self.correlation_id), ("k", self.sow_key), ("bm", self.bookmark),
                           ("ts", self.timestamp), ("s", self.seq), ("lp", self.lease_period)):
            if value is not None:
                header[key] = value
        return encode_frame(header, self.data)


@fast_init  # one per record of a query result
@dataclass(frozen=True, slots=True, kw_only=True)
class SowRecord:
    """One record of a ``sow`` batch; its inner header gets ``l`` when encoded (§2.3, §6.3)."""

    data: bytes
    sow_key: str | None = None
    correlation_id: str | None = None
    bookmark: str | None = None
    timestamp: str | None = None

    def header(self) -> dict[str, Any]:
        return {"k": self.sow_key, "x": self.correlation_id, "bm": self.bookmark, "ts": self.timestamp}


@dataclass(frozen=True, slots=True, kw_only=True)
class SowBatch:
    """A ``sow`` frame: up to ``bs`` records of a query result (§2.3)."""

    topic: str
    records: tuple[SowRecord, ...]
    query_id: str | None = None
    sub_id: str | None = None  # sow_and_subscribe variants [REC]
    timestamp: str | None = None
    group_seq: int | None = None  # gseq: the batch's sequence within the response

    def header(self) -> dict[str, Any]:
        return {
            "c": "sow",
            "t": self.topic,
            "query_id": self.query_id,
            "sub_id": self.sub_id,
            "bs": len(self.records),
            "ts": self.timestamp,
            "gseq": self.group_seq,
        }

    def encode(self) -> bytes:
        """``encode_sow_batch(header, (record.header(), record.data) ...)``, with each record's
        inner header built without its None values directly (a query encodes one per record):
        the keys are ``SowRecord.header``'s in its order, then ``l``."""
        parts: list[bytes] = []
        dumps = orjson.dumps
        for record in self.records:
            inner: dict[str, Any] = {}
            if record.sow_key is not None:
                inner["k"] = record.sow_key
            if record.correlation_id is not None:
                inner["x"] = record.correlation_id
            if record.bookmark is not None:
                inner["bm"] = record.bookmark
            if record.timestamp is not None:
                inner["ts"] = record.timestamp
            data = record.data
            inner["l"] = len(data)
            parts += (dumps(inner), data)
        return encode_sow_parts(self.header(), parts)


def sow_batches(
    topic: str,
    records: Iterable[SowRecord],
    batch_size: int,
    *,
    query_id: str | None = None,
    sub_id: str | None = None,
    timestamp: str | None = None,
) -> Iterator[SowBatch]:
    """A query result cut into ``sow`` frames of at most ``batch_size`` records, numbered by gseq."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    batch: list[SowRecord] = []
    number = 0
    for record in records:
        batch.append(record)
        if len(batch) == batch_size:
            number += 1
            yield SowBatch(topic=topic, records=tuple(batch), query_id=query_id, sub_id=sub_id, timestamp=timestamp, group_seq=number)
            batch = []
    if batch:
        yield SowBatch(topic=topic, records=tuple(batch), query_id=query_id, sub_id=sub_id, timestamp=timestamp, group_seq=number + 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Oof:
    """An out-of-focus notice (§10): the body is the record's last state (``match``: its new state)."""

    topic: str
    reason: str  # an OofReason; kept as text when a server sends one we do not know
    sow_key: str | None = None
    sub_ids: tuple[str, ...] = ()
    data: bytes = b""
    correlation_id: str | None = None
    bookmark: str | None = None
    timestamp: str | None = None

    def header(self) -> dict[str, Any]:
        return {
            "c": "oof",
            "t": self.topic,
            "k": self.sow_key,
            "reason": str(self.reason),
            **_receivers(self.sub_ids),
            "x": self.correlation_id,
            "bm": self.bookmark,
            "ts": self.timestamp,
            "l": len(self.data),
        }

    def encode(self) -> bytes:
        return encode_frame(self.header(), self.data)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupBegin:
    """Opens a SOW query's results (§6.5); ``sub_id`` on the sow_and_subscribe variants."""

    query_id: str | None = None
    sub_id: str | None = None

    def encode(self) -> bytes:
        return encode_frame({"c": "group_begin", "query_id": self.query_id, "sub_id": self.sub_id})


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupEnd:
    """Closes a SOW query's results (§6.5)."""

    query_id: str | None = None
    sub_id: str | None = None

    def encode(self) -> bytes:
        return encode_frame({"c": "group_end", "query_id": self.query_id, "sub_id": self.sub_id})


@dataclass(frozen=True, slots=True)
class ServerHeartbeat:
    """``{"c":"heartbeat"}``, no body (§6.6); the client answers with a ``beat``."""

    def encode(self) -> bytes:
        return _HEARTBEAT


_HEARTBEAT = encode_frame({"c": "heartbeat"})

ServerMessage = Ack | Delivery | SowBatch | Oof | GroupBegin | GroupEnd | ServerHeartbeat


def parse_message(frame: Frame) -> ServerMessage:
    """Client side: the typed server message of ``frame`` (aliases and string numbers accepted).

    Raises UnknownMessage (not fatal) for a ``c`` this client does not know, and
    HeaderValueError / SowBatchError for malformed fields.
    """
    header = h.normalize(frame.header)
    kind = (h.text(header, "c") or "").strip().lower()
    text = h.text
    if kind == "ack":
        return Ack.from_header(header)
    if kind in ("p", "publish"):
        return Delivery(
            topic=text(header, "t") or "",
            data=frame.body,
            sub_ids=_read_receivers(header),
            correlation_id=text(header, "x"),
            sow_key=text(header, "k"),
            bookmark=text(header, "bm"),
            timestamp=text(header, "ts"),
            seq=h.integer(header, "s"),
            lease_period=text(header, "lp"),
        )
    if kind == "sow":
        return SowBatch(
            topic=text(header, "t") or "",
            records=tuple(_sow_record(h.normalize(inner), data) for inner, data in split_sow_records(frame.body)),
            query_id=text(header, "query_id"),
            sub_id=text(header, "sub_id"),
            timestamp=text(header, "ts"),
            group_seq=h.integer(header, "gseq"),
        )
    if kind == "oof":
        reason = text(header, "reason") or ""
        return Oof(
            topic=text(header, "t") or "",
            reason=_OOF_REASONS.get(reason, reason),
            sow_key=text(header, "k"),
            sub_ids=_read_receivers(header),
            data=frame.body,
            correlation_id=text(header, "x"),
            bookmark=text(header, "bm"),
            timestamp=text(header, "ts"),
        )
    if kind in ("group_begin", "group_end"):
        group = GroupBegin if kind == "group_begin" else GroupEnd
        return group(query_id=text(header, "query_id"), sub_id=text(header, "sub_id"))
    if kind == "heartbeat":
        return ServerHeartbeat()
    raise UnknownMessage(f"unknown server message {header.get('c')!r}")


def _sow_record(header: Mapping[str, Any], data: bytes) -> SowRecord:
    return SowRecord(
        data=data,
        sow_key=h.text(header, "k"),
        correlation_id=h.text(header, "x"),
        bookmark=h.text(header, "bm"),
        timestamp=h.text(header, "ts"),
    )

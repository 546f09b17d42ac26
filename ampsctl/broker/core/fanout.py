"""Fan-out: one change to a topic -> the ``p`` and ``oof`` frames for every subscriber.

Theory of operation. A publish, delta publish, delete or expiry becomes an ``Update`` (the
topic, the SOW key and the record's state before and after; for a topic without a SOW only
"after"). ``fan_out`` walks the matching subscriptions in creation order and, per connection:

* sends the new state to every subscription whose filter accepts it; with ``oof`` the key
  joins the subscription's focus;
* sends ``oof`` (§10) to every ``oof`` subscription that had the key in focus and no longer
  does: ``match`` (body: the new state), ``deleted`` / ``expired`` (body: the last state);
* renders each delivery for its subscription: full message, select list, or delta (§7.2,
  spec/messages.md §7): a delta subscription gets the full message for an insert, for a
  record coming back into focus, and whenever the same connection also has a non-delta
  subscription matching the message (§7.3: AMPS then sends one full message to both);
  otherwise key fields plus what changed (``no_empties``: nothing when nothing changed);
* sends one frame per distinct rendering, with ``sids`` listing every subscription it serves
  (§6.2 [REC]), so a connection never gets the same message twice.

Fast path: a topic with one subscription that takes every message as published (``_plain``)
gets its ``p`` frame built directly, without the per-connection grouping; the bytes are the
ones the general path makes (tests compare them).

Invariants: frames for one update are produced in subscription order; a subscription gets at
most one frame per update; focus sets change only here (and when a query result is sent).
Documents are parsed at most once per update, and only when some subscription needs them.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ampsctl.broker.core.actions import Send
from ampsctl.broker.core.subscriptions import Subscription
from ampsctl.errors import AmpsctlError
from ampsctl.messages.json_codec import JSON, JSON_TEXT
from ampsctl.protocol.errors import FrameTooLarge
from ampsctl.protocol.frames import MAX_LENGTH, encode_frame
from ampsctl.protocol.headers import format_timestamp
from ampsctl.protocol.messages import Delivery, Oof, OofReason

_UNPARSED: Any = object()
_P_HEADS: dict[tuple[str, str], bytes] = {}
_LENGTH = struct.Struct(">I")


class UpdateKind(enum.Enum):
    PUBLISH = "publish"  # an insert or update (or any publish to a topic without a SOW)
    DELETE = "delete"
    EXPIRE = "expire"


@dataclass(slots=True)
class Update:
    """One change to one record (or one message on a topic without a SOW)."""

    kind: UpdateKind
    topic: str
    new: bytes | None  # the state after (None: deleted/expired)
    old: bytes | None = None  # the state before (SOW topics)
    key: str | None = None  # the SOW key (None: not a SOW topic)
    key_fields: tuple[str, ...] = ()  # the topic's Key paths, for delta bodies
    correlation_id: str | None = None
    bookmark: str | None = None
    new_doc: Any = field(default=_UNPARSED)  # the parsed new state, when the caller has it
    old_doc: Any = field(default=_UNPARSED)
    span_delta: Any = None  # a conflation span's merged deltas, for the one subscription it is rendered for
    text_old: Any = field(default=_UNPARSED)  # the states read keeping number text (``texts``)
    text_new: Any = field(default=_UNPARSED)

    def parsed_new(self) -> Any:
        if self.new_doc is _UNPARSED:
            self.new_doc = _parse(self.new)
        return self.new_doc

    def parsed_old(self) -> Any:
        if self.old_doc is _UNPARSED:
            self.old_doc = _parse(self.old)
        return self.old_doc

    def texts(self) -> tuple[Any, Any]:
        """The old and new states read keeping each number's text (``JSON_TEXT``), for what the
        broker writes itself (deltas, select lists): a number goes out as it was published
        (``1.50``, ``1E5``), not as the parser writes it (docs/messages.md, "Number text")."""
        if self.text_new is _UNPARSED:  # from the parsed states: a message is read again only when it has such numbers
            self.text_old, self.text_new = _keeping_text(self.old, self.parsed_old()), _keeping_text(self.new, self.parsed_new())
        return self.text_old, self.text_new


def _parse(payload: bytes | None) -> Any:
    if payload is None:
        return None
    try:
        return JSON.parse(payload)
    except AmpsctlError:
        return None  # not JSON: filters cannot match it, unfiltered subscribers still get it


def _keeping_text(payload: bytes | None, doc: Any) -> Any:
    if payload is None or doc is None:
        return None
    try:
        return JSON_TEXT.keeping_text(payload, doc)
    except AmpsctlError:
        return None  # nested beyond what the text-keeping read takes: as if not JSON


_REASONS = {UpdateKind.DELETE: OofReason.DELETED, UpdateKind.EXPIRE: OofReason.EXPIRED}


def fan_out(update: Update, subs: Sequence[Subscription], now: int) -> list[Send]:
    """The frames ``update`` produces for ``subs`` (the subscriptions matching its topic).

    A subscription replaying the journal holds its frame (replay.py); a conflated one keeps the
    update for its interval (conflation.py). Neither shares a frame with other subscriptions.
    """
    if not subs:
        return []
    if len(subs) == 1 and _plain(subs[0]):  # the common case, short-cut (see _plain)
        sub = subs[0]
        new = update.new
        if new is None:
            return []  # a delete or expiry: only oof subscriptions hear of it
        return [Send(sub.conn, _plain_frame(update, new, sub))]
    by_conn: dict[int, list[Subscription]] = {}
    for sub in subs:
        if sub.replay is not None:
            data = _for_connection(update, [sub], now)
            if data:
                sub.replay.hold(data)
        elif sub.conflation is not None:
            sub.conflation.offer(sub, update, now)
        else:
            by_conn.setdefault(sub.conn, []).append(sub)
    sends = []
    for conn, conn_subs in by_conn.items():
        data = _for_connection(update, conn_subs, now)
        if data:
            sends.append(Send(conn, data))
    return sends


def _plain(sub: Subscription) -> bool:
    """A subscription that gets every message as published: no filter, select, delta, oof,
    timestamp, replay or conflation. For it ``_for_connection`` reduces to one ``p`` frame of
    the new state (nothing for a delete or expiry); ``_plain_frame`` builds that frame directly."""
    return (sub.predicate is None and sub.select is None and not sub.delta and sub.focus is None
            and sub.replay is None and sub.conflation is None and not sub.options.timestamp)


def fan_out_message(subs: Sequence[Subscription], topic: str, data: bytes, correlation_id: str | None,
                    bookmark: str | None, now: int) -> list[Send]:
    """``fan_out`` of a message published to a topic without a SOW (the publish's only update),
    building no ``Update`` in the common case of one plain subscription (same bytes)."""
    if len(subs) == 1 and _plain(subs[0]):
        sub = subs[0]
        return [Send(sub.conn, _p_frame(topic, sub.sub_id, correlation_id, None, bookmark, data))]
    return fan_out(Update(UpdateKind.PUBLISH, topic, data, None, None, (), correlation_id, bookmark), subs, now)


def _plain_frame(update: Update, new: bytes, sub: Subscription) -> bytes:
    key = None if sub.options.no_sowkey else update.key
    return _p_frame(update.topic, sub.sub_id, update.correlation_id, key, update.bookmark, new)


def _p_frame(topic: str, sub_id: str, correlation_id: str | None, key: str | None, bookmark: str | None,
             data: bytes) -> bytes:
    """``Delivery(...).encode()`` for one plain subscription: the same header keys in the same order.

    The usual header (a bookmark, no correlation id or key) is the subscription's cached head
    ``{"c":"p","t":..,"sub_id":..`` then ``,"bm":..}``: the bytes orjson writes for the dict."""
    if correlation_id is None and key is None and bookmark is not None:
        head = _P_HEADS.get((topic, sub_id))
        if head is None:
            if len(_P_HEADS) >= 4096:  # topics and ids are client-chosen: bounded
                _P_HEADS.clear()
            head = _P_HEADS[(topic, sub_id)] = orjson.dumps({"c": "p", "t": topic, "sub_id": sub_id})[:-1]
        text = b'%b,"bm":%b}' % (head, orjson.dumps(bookmark))
        size = len(text) + len(data)
        if size > MAX_LENGTH:
            raise FrameTooLarge(size, MAX_LENGTH)
        return b"".join((_LENGTH.pack(size), text, data))
    header: dict[str, Any] = {"c": "p", "t": topic, "sub_id": sub_id}
    if correlation_id is not None:
        header["x"] = correlation_id
    if key is not None:
        header["k"] = key
    if bookmark is not None:
        header["bm"] = bookmark
    return encode_frame(header, data)


def render(update: Update, subs: list[Subscription], now: int) -> bytes:
    """The frames of ``update`` for ``subs`` (all of one connection), sent now: replay, conflation."""
    return _for_connection(update, subs, now)


def _for_connection(update: Update, subs: list[Subscription], now: int) -> bytes:
    delivering: list[tuple[Subscription, bool]] = []  # (subscription, had the key in focus)
    oofs: dict[tuple[str, bytes], list[str]] = {}
    key = update.key
    for sub in subs:
        focus = sub.focus
        if update.new is not None:
            if sub.accepts(update.parsed_new() if sub.predicate is not None else None):
                seen = focus is not None and key is not None and key in focus
                if focus is not None and key is not None:
                    focus.add(key)
                delivering.append((sub, seen))
            elif focus is not None and key is not None and key in focus:
                focus.discard(key)
                oofs.setdefault((OofReason.MATCH, update.new), []).append(sub.sub_id)
        elif focus is not None and key is not None and key in focus:
            focus.discard(key)
            oofs.setdefault((_REASONS[update.kind], update.old or b""), []).append(sub.sub_id)
    frames: list[bytes] = []
    if delivering:
        frames += _deliveries(update, delivering, now)
    for (reason, body), sub_ids in oofs.items():
        frames.append(Oof(topic=update.topic, reason=reason, sow_key=key, sub_ids=tuple(sub_ids), data=body,
                          correlation_id=update.correlation_id, bookmark=update.bookmark).encode())
    return b"".join(frames)


def _deliveries(update: Update, delivering: list[tuple[Subscription, bool]], now: int) -> list[bytes]:
    # §7.3: a full subscription on the same connection turns its delta subscriptions full too.
    all_full = update.key is None or update.old is None or any(not sub.delta for sub, _ in delivering)
    groups: dict[tuple[bytes, bool, bool], list[str]] = {}
    for sub, seen in delivering:
        body = _body(update, sub, seen, all_full)
        if body is None:
            continue  # no_empties: nothing changed that this subscription sees
        options = sub.options
        groups.setdefault((body, options.no_sowkey, options.timestamp), []).append(sub.sub_id)
    timestamp = None
    frames = []
    for (body, no_sowkey, with_time), sub_ids in groups.items():
        if with_time and timestamp is None:
            timestamp = format_timestamp(now)
        frames.append(Delivery(
            topic=update.topic,
            data=body,
            sub_ids=tuple(sub_ids),
            correlation_id=update.correlation_id,
            sow_key=None if no_sowkey else update.key,
            bookmark=update.bookmark,
            timestamp=timestamp if with_time else None,
        ).encode())
    return frames


def _body(update: Update, sub: Subscription, seen: bool, all_full: bool) -> bytes | None:
    assert update.new is not None
    if sub.delta and not all_full:
        previously = seen if sub.focus is not None else sub.accepts(update.parsed_old())
        if previously:
            return _delta(update, sub)
    if sub.select is None:
        return update.new
    doc = update.texts()[1]
    return update.new if doc is None else JSON_TEXT.serialize(sub.select.apply(doc))


def _delta(update: Update, sub: Subscription) -> bytes | None:
    if update.span_delta is not None:  # conflation.py: the merge of the span's deltas, select applied
        return JSON_TEXT.serialize(update.span_delta)
    old, new = update.texts()
    if old is None or new is None:
        return update.new  # not JSON on one side: only the full message can be sent
    if sub.select is not None:
        old, new = sub.select.apply(old), sub.select.apply(new)
    delta = JSON_TEXT.diff(old, new, update.key_fields, no_empties=sub.options.no_empties, send_keys=True)
    return None if delta is None else JSON_TEXT.serialize(delta)

"""Compaction's fast path: last value per SOW record in one pass over lazy journal views.

``compact`` tries this first; it returns None (``Fallback``) whenever the journal holds
something it does not replay *exactly* as ``SowStore.apply`` does, and ``compact`` then runs
the reference replay from the start. Output, counts and errors are identical either way.

What it replays: publish and delta_publish (merged with ``Payloads.merged``, the codec's only
merge, JSON numbers keeping their text) on topics without History, per-message and
topic-default expiration (a write that finds its record due expires it first; the final sweep
at ``now``), as-of cut-offs (the reader's), refused records (the reference's own parse/key
functions make the error).
What sends it back to the reference: sow_delete, EXPIRE records, a record routed to a History
topic, a key domain with NUL, anything unexpected (an exception that is not an AmpsctlError,
a record the views cannot decode: a text that is not UTF-8, a bad command, flag bits or field
lengths, which the reference's decoder then reports as damage), and two records whose SOW keys
collide (see below).

Why it is fast. ``SowStore`` builds a JournalRecord, generates the CRC-64 key, a SowRecord, a
Change and hash-index tokens for *every* record. Here each record costs a header unpack, one
parse and a key *identity* (``messages.stream.key_function``: ``canon_id`` of the key values,
equal exactly when the key material is equal); the key, tokens and row CRC are computed once
per surviving record, and the file is written with bulk inserts (``bulkwrite``).

Identity versus key: keys are CRC-64 of the key material, so two different identities can
(in theory, or by construction) share a key, which the reference would treat as one record.
Before anything is written the keys of every identity ever stored are generated; a repeat
means ``Fallback``. Records are never removed before that check (a due record expired on
write is replaced by the same identity), so "every identity ever stored" is the state.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Callable, Iterator, Sequence
from operator import itemgetter
from typing import Any

import orjson

from ampsctl.errors import AmpsctlError
from ampsctl.journal.codec import F_EXPIRATION, F_SOW_KEY, HEAD_SIZE, KNOWN_FLAGS, RECORD_HEAD
from ampsctl.journal.record import Command
from ampsctl.messages.keys import check_supplied_key
from ampsctl.messages.stream import key_function
from ampsctl.sow.errors import ReplayError
from ampsctl.sow.payloads import json_plain
from ampsctl.sow.record import expiration_refused, expires_at
from ampsctl.sow.spec import TopicSpec
from ampsctl.sow.store import SowStore, TopicGroup

PROGRESS_EVERY = 0xFFFF  # as the reference: progress(scanned) every 65,536 records, and at the end
_PUBLISH, _DELTA = int(Command.PUBLISH), int(Command.DELTA_PUBLISH)
_FIELDS = struct.Struct("<BBHHHHHQ8xI")  # RECORD_HEAD from its command byte (offset 20): the expiration, the payload length
assert RECORD_HEAD.format[:1] + RECORD_HEAD.format[4:12] + "8x" + RECORD_HEAD.format[13:] == _FIELDS.format
assert struct.calcsize("<IQq") == 20


class Fallback(Exception):
    """The journal needs the reference replay (the reason is for debugging and tests)."""


class FastGroup:
    """One SOW topic's state: per concrete topic, identity -> (payload, doc, sequence, timestamp, expiration).

    ``doc`` is None when it is ``parse(payload)`` (a publish, a delta stored as it is): parsing
    is deterministic, so parsing again when needed gives the document the reference cached,
    and the scan keeps no million documents alive. A merged document is kept as it is (it keeps
    number text, so the next merge need not check it: ``Payloads.merged``)."""

    def __init__(self, group: TopicGroup) -> None:
        spec = group.spec
        self.group = group  # the real group: its concrete topics (order, count), timestamp, payloads, indexer
        self.spec = spec
        self.payloads = group.payloads
        self.hard = spec.history or (bool(spec.key_fields) and group.payloads.opaque)
        self.json = spec.message_type == "json" and not group.payloads.opaque
        self.key_of = key_function(group.payloads.codec, spec.key_fields) if spec.key_fields and not self.hard else None
        # SowTopic indexes each write's hash tokens; for JSON that cannot fail (orjson gives valid
        # text, value_token takes any JSON value), for other codecs it is checked on every write.
        self.check_tokens = bool(group.indexer.hash_fields) and not self.json
        self.entries: dict[str, dict[Any, tuple[Any, ...]]] = {}  # concrete topic -> identity -> entry
        # A Pattern topic's files are in first-store order across its concrete topics (topic.py
        # "order"): every (topic, identity) stored anew, in order; the last arrival of one counts.
        self.arrivals: list[tuple[str, Any]] | None = [] if spec.pattern else None

    def topic(self, name: str) -> dict[Any, tuple[Any, ...]]:
        found = self.entries.get(name)
        if found is None:
            if self.spec.key_fields and "\x00" in self.spec.domain(name):
                raise Fallback("a key domain with NUL")  # generate_key refuses it; identities do not
            self.group.topic(name)  # the concrete topic exists from its first record on, as in SowStore
            found = self.entries[name] = {}
        return found

    def doc(self, entry: tuple[Any, ...]) -> Any:
        return entry[1] if entry[1] is not None else self.payloads.parse(entry[0])

    def due(self, entry: tuple[Any, ...], now: int) -> bool:
        return _due(entry, now, self.spec.expiration)


class FastState:
    """The result of a fast scan, before keys are generated and files written."""

    def __init__(self, groups: list[FastGroup]) -> None:
        self.groups = groups
        self.scanned = self.applied = self.skipped = self.last_sequence = 0
        self.last_timestamp: int | None = None
        self.refused: list[ReplayError] = []  # delivered to on_error only once the fast path is sure to finish


def scan(reader: Any, specs: Sequence[TopicSpec], *, to_sequence: int | None, to_timestamp: int | None,
         keep_going: bool, progress: Callable[[int], None] | None) -> FastState:
    """Replay the journal into identity-keyed state; Fallback when it needs the reference.

    ``progress`` gets every 65,536th count; the final count is the caller's to report, once
    the keys are known to be unique (a fallback then does not report the end twice). The
    caller pauses the cyclic GC (``compact._compact_fast``): millions of short-lived documents."""
    store = SowStore(specs)  # for routing (first spec in config order) and the real TopicGroups
    state = FastState([FastGroup(group) for group in store.groups])
    by_group = {id(fast.group): fast for fast in state.groups}
    lanes: dict[tuple[int, bytes], Lane] = {}
    lane = IGNORED  # the previous record's: journals come in runs of one topic
    # The lane's fields as locals, bound when the lane changes: they are read for every record.
    lane_tl, lane_size, lane_names, fast, last = lane.tl, lane.size, lane.names, lane.fast, lane.last
    unpack = _FIELDS.unpack_from
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    scanned = applied = 0
    sequence = 0
    timestamp = None
    if to_sequence != 0:
        for view in reader.scan_views(to_sequence=to_sequence, to_timestamp=to_timestamp):
            data, offset, length, sequence, timestamp = view
            command, flags, tl, ml, sl, cl, nl, expiration, pl = unpack(data, offset + 20)
            scanned += 1
            if progress is not None and not scanned & PROGRESS_EVERY:
                progress(scanned)
            start = offset + HEAD_SIZE
            names = start + tl + ml
            if names + sl + cl + nl + pl + 4 != offset + length or flags > KNOWN_FLAGS or not 0 < command < 5:
                # The views trust the structure of a segment with an index file (journal/views.py);
                # one altered in place since is damage, which the reference reports with its offset.
                raise Fallback(f"record {sequence}: a structure that is not valid")
            if tl != lane_tl or names - start != lane_size or not data.startswith(lane_names, start):
                lane.last = last  # the lane left keeps the last record applied to it
                lane = lanes.get((tl, data[start:names]))  # not the previous record's (topic, type)
                if lane is None:
                    lane = lanes[(tl, data[start:names])] = _lane(store, by_group, data, start, tl, ml)
                lane_tl, lane_size, lane_names, fast, last = lane.tl, lane.size, lane.names, lane.fast, lane.last
                if fast is not None:
                    if lane.hard:
                        raise Fallback(f"record {sequence}: topic {lane.topic!r} needs the reference")
                    entries, json, parse, key_of = lane.entries, lane.json, lane.parse, lane.key_of
                    arrivals = lane.arrivals
                    expiring, default, check_tokens = lane.expiring, lane.default, lane.check_tokens
            if fast is None:
                continue
            applied += 1
            if command != _PUBLISH and command != _DELTA:
                raise Fallback(f"record {sequence}: command {command} on {lane.topic!r}")
            if not flags & F_EXPIRATION:
                expiration = None
            payload = data[names + sl + cl + nl:offset + length - 4]
            try:
                if expiration is not None and expiration_refused(timestamp, expiration):
                    raise _Refused
                if json:
                    doc = loads(payload)
                    if type(doc) is not dict:
                        raise _Refused
                else:
                    doc = parse(payload)
                if key_of is not None:  # Key fields: the journaled SowKey is not used
                    identity = key_of(doc)
                else:
                    identity = _supplied(data, names, sl, flags, entries)
                old = entries.get(identity)
                kept = None
                if old is not None:
                    if expiring and _due(old, timestamp, default):
                        del entries[identity]  # expired on write: the record goes, the new one is inserted
                        old = None
                    elif command == _DELTA:  # as SowTopic.delta_publish: JSON numbers keep their text
                        payload, doc = fast.payloads.merged(old[0], fast.doc(old), payload, doc,
                                                            base_keeps_text=old[1] is not None)
                        kept = doc
                if check_tokens:
                    _tokens(fast, doc, sequence)
            except (_Refused, decode_error, AmpsctlError):
                _refuse(state, lane, data, names, sl, flags, payload, sequence, command, keep_going)
                continue
            except Fallback:
                raise
            except Exception as exc:  # anything else: the reference raises it as it raises it
                raise Fallback(f"record {sequence}: {type(exc).__name__}") from None
            if old is None and arrivals is not None:
                arrivals.append((lane.topic, identity))
            entries[identity] = (payload, kept, sequence, timestamp, expiration)
            last = view  # of the last record applied: the group's sequence and timestamp
        lane.last = last
    for lane in lanes.values():
        if lane.fast is not None and lane.last is not None and lane.last[3] > lane.group.sequence:
            lane.group.sequence, lane.group.timestamp = lane.last[3], lane.last[4]
    state.scanned, state.applied, state.last_sequence, state.last_timestamp = scanned, applied, sequence, timestamp
    return state


class Lane:
    """What the scan needs for the records of one (topic, message type): looked up once."""

    __slots__ = ("tl", "size", "names", "fast", "group", "topic", "entries", "arrivals", "hard", "json", "parse", "key_of",
                 "expiring", "default", "check_tokens", "last")

    def __init__(self, names: bytes, tl: int, fast: FastGroup | None, topic: str) -> None:
        self.names, self.tl, self.size = names, tl, len(names)  # the topic and type bytes, as journaled
        self.fast = fast
        self.topic = topic
        self.last: tuple[Any, ...] | None = None
        if fast is None:
            return
        self.group = fast.group
        self.hard = fast.hard
        self.entries = fast.topic(topic) if not fast.hard else {}  # the concrete topic exists from its first record on
        self.json = fast.json
        self.parse = fast.payloads.parse
        self.key_of = fast.key_of
        self.expiring = fast.spec.expiration_enabled
        self.default = fast.spec.expiration
        self.check_tokens = fast.check_tokens
        self.arrivals = fast.arrivals


IGNORED = Lane(b"", -1, None, "")  # a (topic, message type) no SOW topic stores


def _lane(store: SowStore, by_group: dict[int, FastGroup], data: bytes, start: int, tl: int, ml: int) -> Lane:
    """The lane of a (topic, message type) seen for the first time: routed as ``SowStore.route``."""
    try:
        topic = str(data[start:start + tl], "utf-8")
        message_type = str(data[start + tl:start + tl + ml], "utf-8")
    except UnicodeDecodeError:
        raise Fallback("a topic that is not UTF-8") from None
    group = store.route(topic, message_type)
    names = data[start:start + tl + ml]
    return Lane(names, tl, by_group[id(group)], topic) if group is not None else Lane(names, tl, None, topic)


def _supplied(data: bytes, names: int, size: int, flags: int, entries: dict[Any, Any]) -> str:
    """The publisher's SowKey as the record's identity (topics without Key fields)."""
    if not flags & F_SOW_KEY:
        raise _Refused
    try:
        key = str(data[names:names + size], "utf-8")
    except UnicodeDecodeError:
        raise Fallback("a SowKey that is not UTF-8") from None
    return key if key in entries else check_supplied_key(key)  # a stored key was checked when stored


def _due(entry: tuple[Any, ...], now: int, default: int | None) -> bool:
    """``SowRecord.expired(now)`` of the record an entry stands for."""
    at = expires_at(entry[3], entry[4], default)
    return at is not None and at <= now


class _Refused(Exception):
    """A payload the fast checks refuse: the reference's functions then make the error."""


def _tokens(fast: FastGroup, doc: Any, sequence: int) -> None:
    try:
        fast.group.indexer.hash_tokens(fast.payloads.record(doc))
    except Exception:  # the reference fails half-way through its write: not replayed here
        raise Fallback(f"record {sequence}: its hash-index tokens cannot be computed") from None


def _refuse(state: FastState, lane: Lane, data: bytes, names: int, size: int, flags: int, payload: bytes,
            sequence: int, command: int, keep_going: bool) -> None:
    """The reference's error for a refused record, made by SowTopic.publish's own steps.

    Parse and key come before any change in the reference; a merge or serialize error comes
    only when the stored record was not due (nothing expired), so no state changed either way."""
    fast = lane.fast
    assert fast is not None
    spec = fast.spec
    try:
        sow_key = str(data[names:names + size], "utf-8") if flags & F_SOW_KEY else None
    except UnicodeDecodeError:
        raise Fallback("a SowKey that is not UTF-8") from None
    try:
        doc = fast.payloads.parse(payload)
        fast.payloads.key(doc, key_fields=spec.key_fields, domain=spec.domain(lane.topic), supplied=sow_key)
        error = _merge_error(fast, lane.topic, payload, doc, sow_key) if command == _DELTA else None
    except AmpsctlError as exc:
        error = exc
    if error is None:
        raise Fallback(f"record {sequence}: refused here, accepted by the reference")
    refused = ReplayError(sequence, lane.topic, error.message, hint=error.hint, code=error.code)
    if not keep_going:
        raise refused
    state.skipped += 1
    state.refused.append(refused)


def _merge_error(fast: FastGroup, topic: str, payload: bytes, delta: Any, sow_key: str | None) -> AmpsctlError | None:
    """The error of a delta's merge into its stored record (not due: a due one was expired first)."""
    old = fast.entries[topic].get(fast.key_of(delta) if fast.key_of is not None else sow_key)
    if old is None:
        return None
    try:
        fast.payloads.merged(old[0], fast.doc(old), payload, delta, base_keeps_text=old[1] is not None)
    except AmpsctlError as exc:
        return exc
    return None


# ------------------------------------------------------------------ keys, expiry, rows


Keyed = tuple[str, list[str], list[tuple[Any, ...]], list[int] | None]
"""(concrete topic, SOW keys, entries, their first-store ranks across the topics or None)."""


def keyed(state: FastState) -> list[list[Keyed]]:
    """Per group, per concrete topic: ``Keyed``; Fallback on a key collision.

    Generated before anything is written or reported: the check covers every identity stored."""
    found = []
    for fast in state.groups:
        spec, payloads = fast.spec, fast.payloads
        topics: list[Keyed] = []
        rank = {arrival: index for index, arrival in enumerate(fast.arrivals)} if fast.arrivals and len(fast.entries) > 1 else None
        for topic, entries in fast.entries.items():
            if spec.key_fields:
                domain = spec.domain(topic)
                # documents parsed once here, kept for the index columns of ``rows``
                stored = [entry if entry[1] is not None else (entry[0], fast.doc(entry), *entry[2:])
                          for entry in entries.values()]
                try:
                    keys = [payloads.key(entry[1], key_fields=spec.key_fields, domain=domain, supplied=None)
                            for entry in stored]
                except AmpsctlError:
                    raise Fallback(f"a key of topic {topic!r} is refused when generated") from None
                if len(set(keys)) != len(keys):
                    raise Fallback(f"two records of topic {topic!r} have the same SOW key")
            else:
                keys, stored = list(entries), list(entries.values())  # the publisher's keys, checked when stored
            topics.append((topic, keys, stored, [rank[(topic, identity)] for identity in entries] if rank else None))
        found.append(topics)
    return found


def sweep(state: FastState, keyed_groups: list[list[Keyed]], now: int | None) -> int:
    """``SowStore.sweep(now)``: drop what is due where expiration is processed; how many."""
    expired = 0
    if now is None:
        return 0
    for fast, topics in zip(state.groups, keyed_groups, strict=True):
        if not fast.spec.expiration_enabled:
            continue
        for position, (topic, keys, entries, ranks) in enumerate(topics):
            due = [fast.due(entry, now) for entry in entries]
            expired += sum(due)
            topics[position] = (topic, [key for key, gone in zip(keys, due, strict=True) if not gone],
                                [entry for entry, gone in zip(entries, due, strict=True) if not gone],
                                None if ranks is None else [rank for rank, gone in zip(ranks, due, strict=True) if not gone])
    return expired


def rows(fast: FastGroup, topics: list[Keyed]) -> Any:
    """The records table rows of one group, as ``checkpoint`` writes them (same columns, order, CRC)."""
    if any(ranks is not None for *_, ranks in topics):  # several concrete topics: first-store order across them
        ranked = (zip(ranks or (), _topic_rows(fast, topic, keys, entries)) for topic, keys, entries, ranks in topics)
        return (row for _, row in heapq.merge(*ranked, key=itemgetter(0)))
    return (row for topic, keys, entries, _ in topics for row in _topic_rows(fast, topic, keys, entries))


def _topic_rows(fast: FastGroup, topic: str, keys: list[str], entries: list[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    from ampsctl.sow.sowfile import row_crc

    indexer, payloads, default = fast.group.indexer, fast.payloads, fast.spec.expiration
    indexed = bool(indexer.hash_fields or indexer.memo_fields)
    memos = bool(indexer.memo_fields)
    plain = json_plain if payloads.message_type == "json" else None
    for key, (payload, doc, sequence, timestamp, expiration) in zip(keys, entries, strict=True):
        at = expires_at(timestamp, expiration, default)
        row: tuple[Any, ...] = (topic, key, payload, sequence, timestamp, expiration, at,
                                row_crc(topic, key, payload, sequence, timestamp, expiration, at))
        marked = 0 if plain is None else plain(payload)  # json_plain, the last column
        if indexed:
            fields = payloads.record(doc if doc is not None else payloads.parse(payload))
            memo, complex_ = indexer.memo_columns(fields) if memos else ([], False)
            row += (*indexer.hash_tokens(fields), *memo, 1 if complex_ else 0, marked)
        else:
            row += (0, marked)
        yield row

"""SOW queries for the broker core: which topics a command addresses, and running the query.

A thin adapter over ``ampsctl.sow`` (no second query engine): ``sow.query.plan`` compiles the
filter and order, ``memory_candidates`` narrows by SowKeys or hash index, ``execute`` filters
and orders. What the adapter adds is what only a live broker needs:

* topic resolution: a literal topic is a SOW topic when the store routes it (``None`` means "not
  a SOW topic": ``sow`` fails with ``invalid topic``, ``sow_and_subscribe`` succeeds with an
  empty result, §5.6/§5.7); a pattern addresses every concrete SOW topic of the broker's
  message type whose name it finds (unanchored, §5.4 [REC]);
* expiry per topic (a query across topics cannot pass one ``expiration_enabled`` flag);
* ``skip_n``/``top_n`` after ordering, and the counts of the stats ack.

The store does not keep a record's CorrelationId (``sow.SowRecord`` has no such field), so
query results and OOF notices carry no ``x``; live deliveries do (docs/broker.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ampsctl.broker.core.refusal import Refused
from ampsctl.broker.core.select import SelectList
from ampsctl.errors import InputError
from ampsctl.filter.errors import FilterError
from ampsctl.filter.regexes import compile_pattern, has_metachars, search_compiled
from ampsctl.messages.json_codec import JSON_TEXT
from ampsctl.protocol.cmdoptions import OrderKey, format_orderby
from ampsctl.protocol.errors import Reason
from ampsctl.protocol.frames import encode_sow_parts
from ampsctl.protocol.messages import SowBatch
from ampsctl.sow.indexing import Indexer
from ampsctl.sow.query import Plan, Query, Row, execute, memory_candidates, parse_order_by, plan
from ampsctl.sow.record import SowRecord
from ampsctl.sow.store import SowStore
from ampsctl.sow.topic import SowTopic

_NO_INDEX = Indexer((), (), ())


def sow_topics(store: SowStore, topic: str, message_type: str) -> list[SowTopic] | None:
    """The concrete SOW topics ``topic`` addresses; None for a literal topic without a SOW."""
    if not has_metachars(topic):
        group = store.route(topic, message_type)
        if group is None:
            return None
        found = group.topics.get(topic)
        return [found] if found is not None else []
    pattern = compile_pattern(topic)  # parse_command already proved it compiles
    out = []
    for group in store.groups:
        if group.spec.message_type == message_type:
            out += [t for name, t in group.topics.items() if _finds(pattern, name)]
    return out


def _finds(pattern: Any, name: str) -> bool:
    try:
        return search_compiled(pattern, name)
    except FilterError:
        return False


def is_sow_topic(store: SowStore, topic: str, message_type: str) -> bool:
    """Whether a literal topic is a SOW topic (patterns: whether any spec could hold it)."""
    if not has_metachars(topic):
        return store.route(topic, message_type) is not None
    return any(group.spec.message_type == message_type for group in store.groups)


@dataclass(slots=True)
class QueryResult:
    rows: list[Row]  # what is returned, in order (``row.record.topic`` is the concrete topic)
    matches: int  # records that passed the filter (and SowKeys)
    topic_matches: int  # records in the topics queried


def prepare(filter_text: str | None, sow_keys: Sequence[str], orderby: Sequence[OrderKey],
            topics: Sequence[SowTopic], *, as_of: int | None = None) -> Plan:
    """Compile a query; Refused with ``bad filter`` / ``invalid order by``. ``as_of`` (µs): the
    state of History topics at that time (a historical query, §9), not the current one."""
    order_text = format_orderby(tuple(orderby))
    try:
        if order_text is not None:
            parse_order_by(order_text)
    except InputError as exc:
        raise Refused(Reason.INVALID_ORDER_BY, f"orderby {order_text!r}: {exc.message}") from None
    indexers = {id(topic.indexer): topic.indexer for topic in topics}
    indexer = next(iter(indexers.values())) if len(indexers) == 1 else _NO_INDEX
    try:
        return plan(Query(filter=filter_text, keys=tuple(sow_keys) or None, order_by=order_text, as_of=as_of),
                    indexer)
    except InputError as exc:
        raise Refused(Reason.BAD_FILTER, f"filter {filter_text!r}: {exc.message}") from None


def run(chosen: Plan, topics: Sequence[SowTopic], *, now: int, top_n: int | None = None,
        skip_n: int | None = None, documents: bool = True) -> QueryResult:
    """Run a prepared query over ``topics`` as of ``now`` (records due to expire are left out).

    ``documents``: whether the rows need their parsed documents (a select list); without, the
    stored bytes are sent as they are and an unfiltered query parses nothing."""
    if not topics:
        return QueryResult([], 0, 0)

    def candidates() -> Iterator[tuple[SowRecord, Any]]:
        groups: dict[int, list[SowTopic]] = {}  # the concrete topics of one SOW topic share its spec and positions
        for topic in topics:
            groups.setdefault(id(topic.spec), []).append(topic)
        for members in groups.values():
            expiring = members[0].spec.expiration_enabled
            for record, doc in memory_candidates(chosen, members):  # first-store order across the members
                if not (expiring and record.expired(now)):
                    yield record, doc

    try:
        rows = execute(chosen, topics[0].payloads, candidates(), expiration_enabled=False, documents=documents)
    except FilterError as exc:  # e.g. a LIKE pattern that ran past its timeout
        raise Refused(Reason.BAD_FILTER, exc.message) from None
    except InputError as exc:  # a historical query before what the topic's History window keeps
        raise Refused(Reason.INVALID_BOOKMARK, exc.message) from None
    start = skip_n or 0
    returned = rows[start:] if top_n is None else rows[start:start + top_n]
    return QueryResult(returned, len(rows), sum(len(topic) for topic in topics))


def result_frames(rows: Sequence[Row], *, batch_size: int, query_id: str | None, sub_id: str | None,
                  select: SelectList | None, no_sowkey: bool) -> list[bytes]:
    """The ``sow`` frames of a result (§2.3): runs of one concrete topic, ``gseq`` from 1.

    The bytes of ``SowBatch.encode`` for batches of ``protocol.messages.sow_batches``, built
    without a ``SowRecord`` and a batch object per record (a 100k-record query spent half its
    time there): each record's inner header is ``{"k":KEY,"l":N}`` (``{"l":N}`` with
    ``no_sowkey``), the keys ``SowRecord.header`` keeps when only ``k`` is set (tested)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    frames: list[bytes] = []
    number = 0
    start = 0
    dumps, serialize = orjson.dumps, JSON_TEXT.serialize  # select lists keep the published number text
    while start < len(rows):
        topic = rows[start].record.topic
        end = start
        while end < len(rows) and rows[end].record.topic == topic:
            end += 1
        for first in range(start, end, batch_size):
            parts: list[bytes] = []
            for row in rows[first:min(first + batch_size, end)]:
                record = row.record
                data = record.payload if select is None else serialize(select.apply(_text_doc(record.payload, row.doc)))
                if no_sowkey:
                    parts += (b'{"l":%d}' % len(data), data)
                else:
                    parts += (b'{"k":%b,"l":%d}' % (dumps(record.key), len(data)), data)
            number += 1
            header = SowBatch(topic=topic, records=(), query_id=query_id, sub_id=sub_id, group_seq=number).header()
            frames.append(encode_sow_parts(header, parts))  # sets bs, in header()'s place
        start = end
    return frames


def _text_doc(payload: bytes, doc: Any) -> Any:
    """``payload`` read keeping each number's text (docs/messages.md, "Number text"); ``doc``
    (the store's reading) when it cannot be read so."""
    try:
        return JSON_TEXT.keeping_text(payload, doc)
    except InputError:
        return doc

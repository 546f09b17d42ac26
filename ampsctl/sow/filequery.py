"""Queries straight from a SOW file, without loading it (``ampsctl sow query``).

The plan is ``query.plan``'s and the results are ``query.execute``'s, so a file answers exactly
as the in-memory topic would. What the file adds is where candidates come from:

* SowKeys: ``sow_key IN (...)`` through the unique (topic, sow_key) index;
* a hash-index match: ``h<i> IN (tokens, ANY)`` through the SQL index on that column;
* otherwise a scan of the records table, narrowed by the memo-index pre-filter of
  ``sqlfilter.py`` when the filter touches memo-indexed fields, and for JSON topics by the
  JSON pre-filter of ``jsonfilter.py`` (SQLite's JSON functions), both sound narrowings;
* as-of queries read the history table.
A Pattern container's concrete topics can be limited with ``Query.topic`` (a regex, searched).
Rows are CRC-checked as they are turned into results.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from ampsctl.errors import InputError
from ampsctl.filter.errors import FilterError
from ampsctl.sow.history import Saved, as_of_order
from ampsctl.sow.indexing import ANY
from ampsctl.sow.jsonfilter import JsonPrefilter, json_prefilter
from ampsctl.sow.jsonscan import prefiltered_rows
from ampsctl.sow.payloads import Payloads
from ampsctl.sow.query import Plan, Query, Row, execute, naming_record, plan, topic_test
from ampsctl.sow.record import SowRecord
from ampsctl.sow.sowfile import RECORD_COLUMNS, SowFile, StoredRecord
from ampsctl.sow.sqlfilter import prefilter


@dataclass(frozen=True, slots=True)
class FileQueryResult:
    rows: list[Row]
    strategy: str  # "sow keys", "hash index /region", "memo pre-filter", "JSON pre-filter", "scan", "history"
    payloads: Payloads


def query_file(sow: SowFile, query: Query, *, progress: Callable[[int], None] | None = None) -> FileQueryResult:
    """Run ``query`` on an open SOW file; ``progress(rows)`` is called as rows are read."""
    meta = sow.meta
    indexer = meta.indexer()
    payloads = Payloads(meta.spec.message_type)
    chosen = plan(query, indexer)
    where, params, strategy = _where(chosen, meta.hash_paths, meta.memo_paths)
    json = None
    if not where and chosen.predicate is not None and chosen.expr is not None and payloads.message_type == "json":
        # A full scan of JSON is pre-filtered in SQLite: the footer says so, as for the memo pre-filter.
        json = json_prefilter(chosen.expr, plain_column=meta.format_version >= 2)
        if json is not None:
            strategy = "JSON pre-filter"
    pattern = meta.spec.pattern  # name the concrete topic in an evaluation error
    wanted = topic_test(query.topic)
    if query.as_of is not None:
        if not meta.spec.history:
            raise InputError(f"the SOW file of topic '{meta.spec.name}' keeps no history", code="SOW_HISTORY",
                             hint="as-of queries need a topic configured with <History>")
        source: Generator[tuple[SowRecord, Any], None, None] = _as_of(sow, query.as_of, meta.history_horizon)
        strategy = "history"
    else:
        source = _rows(sow, where, tuple(params), chosen, payloads, progress, json, pattern)
    candidates: Iterator[tuple[SowRecord, Any]] = source
    if wanted is not None:
        candidates = ((record, doc) for record, doc in source if wanted(record.topic))
    try:
        rows = execute(chosen, payloads, candidates, expiration_enabled=meta.spec.expiration_enabled, pattern=pattern)
    finally:
        source.close()  # a top-n may stop early: end the scan's transaction and helpers now
    for row in rows:
        if isinstance(row.record, StoredRecord):
            sow.check(row.record)
    return FileQueryResult(rows, strategy, payloads)


def _where(chosen: Plan, hash_paths: tuple[tuple[str, ...], ...], memo_paths: tuple[str, ...]) -> tuple[str, list[Any], str]:
    query = chosen.query
    if query.keys is not None:
        keys = list(dict.fromkeys(query.keys))
        return f"sow_key IN ({', '.join('?' * len(keys))})" if keys else "0", keys, "sow keys"
    if chosen.lookup is not None:
        number, tokens = chosen.lookup
        values = [*tokens, ANY]
        return f"h{number} IN ({', '.join('?' * len(values))})", values, "hash index " + ",".join(hash_paths[number])
    if chosen.expr is not None and memo_paths:
        found = prefilter(chosen.expr, memo_paths)
        if found is not None:
            return found[0], found[1], "memo pre-filter"
    return "", [], "scan"


def _rows(sow: SowFile, where: str, params: tuple[Any, ...], chosen: Plan, payloads: Payloads,
          progress: Callable[[int], None] | None, json: JsonPrefilter | None,
          pattern: bool) -> Generator[tuple[SowRecord, Any], None, None]:
    """Candidate rows; with a filter, only rows whose message passes it (execute checks again).

    With a filter the scan reads only (id, payload) and runs the filter on the raw message
    before any record object exists: on a full scan most rows fail, and fetching the other
    columns and building a record costs more than parsing a small message. The rows that pass
    are then read whole by id. A JSON-prefiltered scan (``jsonscan``) reads whole rows at once:
    SQLite has already dropped nearly every row that fails. Rows are CRC-checked once they are
    results (query_file): a damaged row that no longer matches cannot be told from one that never did.
    An evaluation error names the row's record (``naming_record``).
    """
    condition = f"WHERE {where}" if where else ""
    predicate = chosen.predicate
    if predicate is None:
        for count, row in enumerate(sow.select(f"SELECT {RECORD_COLUMNS} FROM records {condition} ORDER BY id", params), 1):
            if progress is not None and not count & 0xFFFF:
                progress(count)
            yield StoredRecord(*row), None
        return
    test = payloads.matcher(predicate)
    if json is not None:  # a full scan of JSON (query_file chose the JSON pre-filter)
        yield from _prefiltered(sow, json, test, progress, pattern)
        return
    batch: list[tuple[int, Any]] = []
    count = 0
    for rowid, payload in sow.select(f"SELECT id, payload FROM records {condition} ORDER BY id", params):
        count += 1
        try:
            found = test(payload)
        except FilterError as error:
            raise _named(sow, rowid, error, pattern) from None
        if found is not None:
            batch.append((rowid, found))
            if len(batch) >= 512:
                yield from _whole(sow, batch)
                batch.clear()
        if progress is not None and not count & 0xFFFF:
            progress(count)
    yield from _whole(sow, batch)
    if progress is not None:
        progress(count)


def _named(sow: SowFile, rowid: int, error: FilterError, pattern: bool) -> FilterError:
    """``error`` naming the record of row ``rowid`` (only the payload was read for the test)."""
    for topic, key in list(sow.select("SELECT topic, sow_key FROM records WHERE id = ?", (rowid,))):
        return naming_record(error, key, topic if pattern else None)
    return error


def _prefiltered(sow: SowFile, json: JsonPrefilter, test: Callable[[bytes], Any],
                 progress: Callable[[int], None] | None, pattern: bool) -> Iterator[tuple[SowRecord, Any]]:
    """The rows the JSON pre-filter passes that ``test`` accepts, read whole (``jsonscan``)."""
    count = 0
    for count, row in enumerate(prefiltered_rows(sow, json), 1):  # (id, *RECORD_COLUMNS)
        try:
            found = test(row[3])
        except FilterError as error:
            raise naming_record(error, row[2], row[1] if pattern else None) from None
        if found is not None:
            yield StoredRecord(*row[1:]), found
        if progress is not None and not count & 0xFFFF:
            progress(count)
    if progress is not None:
        progress(count)


def _whole(sow: SowFile, batch: list[tuple[int, Any]]) -> Iterator[tuple[SowRecord, Any]]:
    """The full rows of (id, document) pairs, in the same order."""
    if not batch:
        return
    ids = [rowid for rowid, _ in batch]
    rows = {row[0]: row[1:] for row in sow.select(
        f"SELECT id, {RECORD_COLUMNS} FROM records WHERE id IN ({', '.join('?' * len(ids))})", tuple(ids))}
    for rowid, doc in batch:
        if rowid in rows:
            yield StoredRecord(*rows[rowid]), doc


def _as_of(sow: SowFile, moment: int, horizon: int | None) -> Generator[tuple[SowRecord, Any], None, None]:
    if horizon is not None and moment < horizon:
        raise InputError("the as-of time is before the start of the kept history", code="SOW_HISTORY",
                         hint="History/Window limits how far back a SOW can be queried; pick a later time")
    present: list[tuple[tuple[int, int, str], SowRecord]] = []
    current: tuple[str, str] | None = None
    found: SowRecord | None = None
    order = (0, 0, "")
    for topic, key, timestamp, sequence, payload in sow.history():  # per key, in write order
        if (topic, key) != current:
            if found is not None:
                present.append((order, found))
            current, found = (topic, key), None
            order = as_of_order(key, Saved(timestamp, sequence, payload))
        if timestamp <= moment:
            found = SowRecord(topic, key, payload, sequence, timestamp, None, None) if payload is not None else None
    if found is not None:
        present.append((order, found))
    present.sort(key=itemgetter(0))  # the in-memory History's order
    for _, record in present:
        yield record, None

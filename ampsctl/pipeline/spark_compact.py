"""Journal compaction on Spark: the same SOW state as ``ampsctl.sow.compact``, key by key.

Theory of operation (docs/pipeline.md has the long form):

1. Read the journal with the ``ampsctl-journal`` source (one task per segment) up to the
   as-of point: a bookmark names a sequence (looked up with ``JournalReader``, as the local
   engine does); a timestamp T stops *before the first record stamped after T*, which is not
   the same as ``timestamp <= T`` because journal timestamps need not increase. The source's
   ``to_sequence`` option leaves later segments unread, so damage after the point does not
   fail the job, as it does not fail the local scan.
2. Key (``keying.Keyer`` in ``mapInArrow``): each record becomes one row per SOW key it
   touches; deletes by filter become ``filter`` rows; refused records ``error`` rows; each
   task adds one ``stats`` row per (group, topic) it saw, for the counts and the file meta,
   and one ``scan`` row (records read, the last sequence and its time), so the journal is
   read once.
3. Collect the few filter deletes on the driver and broadcast them; shuffle the key rows by
   (group, topic, key), sort each partition by key then sequence, and replay every key
   (``replay.replay_key``, in ``mapInArrow``) with the filter deletes of its topic merged in
   by sequence. The result rows are the surviving records, History states, counters and errors.
4. Errors: without ``keep_going`` the record with the lowest sequence fails the job, as the
   first failing record stops the local engine; with it, every refused record is reported.
5. Write: the SOW files are built on the driver into the same ``TopicGroup`` objects and
   written with ``sow.checkpoint.write_group``, so they are the local engine's files (same
   rows, same meta), under scratch names renamed into place once all are written
   (``sow.compact.staged_files``). Parquet/JSONL are written by ``output.py``.

The journal must be readable at the same path from the driver and every executor.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from operator import itemgetter
from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ampsctl.journal.record import Command, JournalRecord
from ampsctl.pipeline.errors import translated
from ampsctl.pipeline.jobs import CompactJob, CompactOutcome, Engine, OutputFormat
from ampsctl.pipeline.journal_source import NAME, UINT64, scan_damage
from ampsctl.pipeline.keying import Keyer, Kind
from ampsctl.pipeline.replay import FilterDelete, replay_key
from ampsctl.sow.compact import CompactedFile, CompactResult
from ampsctl.sow.errors import ReplayError
from ampsctl.sow.history import Saved
from ampsctl.sow.record import SowRecord, expiration_refused
from ampsctl.sow.spec import TopicSpec
from ampsctl.sow.store import TopicGroup

_RECORD_FIELDS = [
    pa.field("sequence", pa.int64()), pa.field("ts", pa.int64()), pa.field("command", pa.string()),
    pa.field("topic", pa.string()), pa.field("message_type", pa.string()), pa.field("payload", pa.binary()),
    pa.field("sow_key", pa.string()), pa.field("expiration", UINT64), pa.field("correlation_id", pa.string()),
    pa.field("client_name", pa.string()), pa.field("publisher_sequence", UINT64),
]
_ERROR_FIELDS = [pa.field("message", pa.string()), pa.field("code", pa.string()), pa.field("hint", pa.string())]
KEYED = pa.schema([pa.field("kind", pa.string()), pa.field("grp", pa.int32()), pa.field("key", pa.string()),
                   pa.field("count", pa.int64()), *_RECORD_FIELDS, *_ERROR_FIELDS])
RESULT = pa.schema([
    pa.field("kind", pa.string()), pa.field("grp", pa.int32()), pa.field("topic", pa.string()), pa.field("key", pa.string()),
    pa.field("payload", pa.binary()), pa.field("sequence", pa.int64()), pa.field("ts", pa.int64()),
    pa.field("expiration", pa.int64()), pa.field("expires_at", pa.int64()), pa.field("count", pa.int64()),
    pa.field("first", pa.int64()), *_ERROR_FIELDS,
])
_RECORD_COLUMNS = [f.name for f in _RECORD_FIELDS]
_SPARK_TYPES = {pa.int64(): "BIGINT", pa.int32(): "INT", pa.string(): "STRING", pa.binary(): "BINARY", UINT64: "DECIMAL(20,0)"}


def ddl(schema: pa.Schema) -> str:
    """The Spark DDL of an Arrow schema (mapInArrow takes Spark types, the functions build Arrow)."""
    return ", ".join(f"`{f.name}` {_SPARK_TYPES[f.type]}" for f in schema)



def compact(spark: SparkSession, job: CompactJob, *, shuffle_partitions: int | None = None,
            on_error: Callable[[ReplayError], None] | None = None,
            progress: AbstractContextManager[Any] | None = None) -> CompactOutcome:
    """Run ``job`` on ``spark``; ``on_error`` receives each refused record with ``keep_going``."""
    from ampsctl.pipeline.output import check_compact_out

    specs = job.specs
    targets = check_compact_out(job)  # run_compact checked it before Spark started; a caller's session did not
    with progress or nullcontext(), translated():
        state = _run(spark, job, shuffle_partitions)
    errors = sorted(state["errors"], key=lambda exc: exc.sequence)
    if errors and not job.keep_going:
        raise errors[0]
    for exc in errors:
        if on_error is not None:
            on_error(exc)
    corrupt = scan_damage(spark, job.journal, to_sequence=state["stop"]) if job.skip_corrupt else []
    groups = _groups(specs, state)
    if job.output is OutputFormat.SOW:
        from ampsctl.sow.checkpoint import write_group
        from ampsctl.sow.compact import staged_files

        with staged_files(targets) as staged:  # all files or none, as the local engine writes them
            files = [CompactedFile(group.spec.name, group.spec.message_type, str(target),
                                   write_group(scratch, group, sequence=state["last_sequence"]), len(group.topics))
                     for group, target, scratch in zip(groups, targets, staged, strict=True)]
    else:
        from ampsctl.pipeline.output import write_groups

        files = write_groups(groups, job.out, job.output, overwrite=job.overwrite)
    result = CompactResult(files, state["scanned"], state["applied"], state["last_sequence"], state["now"],
                           state["expired"], len(errors))
    return CompactOutcome(result, Engine.SPARK, corrupt)


def records(spark: SparkSession, journal: str, *, skip_corrupt: bool = False, to_sequence: int | None = None) -> DataFrame:
    """The journal's records (up to ``to_sequence``) with ``ts`` (µs) in place of the TIMESTAMP column."""
    reader = spark.read.format(NAME).option("skip_corrupt", str(skip_corrupt).lower())
    if to_sequence is not None:
        reader = reader.option("to_sequence", str(to_sequence))
    frame = reader.load(str(journal))
    columns = [F.unix_micros("timestamp").alias("ts") if name == "ts" else F.col(name) for name in _RECORD_COLUMNS]
    return frame.select(*columns)


def stop_sequence(spark: SparkSession, journal: str, as_of: str | None) -> tuple[int | None, int | None]:
    """``(last sequence to read or None for all, the as-of timestamp or None)``, as ``sow.compact`` reads ``as_of``.

    A timestamp T stops before the first record stamped after T. That record is looked for
    past any damage (``skip_corrupt``): the main read, cut at the sequence found, then fails
    at the damage exactly when the local scan would have reached it before stopping.
    """
    from ampsctl.journal.bookmarks import parse_position

    if as_of is None:
        return None, None
    position = parse_position(as_of)
    if position.timestamp is not None:
        frame = records(spark, journal, skip_corrupt=True)
        first_after = frame.where(F.col("ts") > position.timestamp).agg(F.min("sequence")).first()[0]
        return (None if first_after is None else first_after - 1), position.timestamp
    from ampsctl.journal.reader import JournalReader

    return JournalReader(journal).seek_bookmark(as_of), None


def _run(spark: SparkSession, job: CompactJob, shuffle_partitions: int | None) -> dict[str, Any]:
    stop, as_of_time = stop_sequence(spark, job.journal, job.as_of)
    frame = records(spark, job.journal, skip_corrupt=job.skip_corrupt, to_sequence=stop)
    # One pass over the journal: the keying tasks also count what they read (``scan`` rows),
    # so the records are neither cached nor read twice.
    keyed = frame.mapInArrow(_keying(job.specs), ddl(KEYED)).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        small = keyed.where(F.col("kind") != "target").toArrow().to_pylist()
        filters: dict[tuple[int, str], list[FilterDelete]] = defaultdict(list)
        errors: list[ReplayError] = []
        seen: dict[int, dict[str, int]] = defaultdict(dict)  # group -> topic -> first sequence
        applied = scanned = last_sequence = 0
        last_ts: int | None = None
        for row in small:
            if row["kind"] == "filter":
                filters[(row["grp"], row["topic"])].append(FilterDelete(row["sequence"], row["ts"], row["topic"], row["message"]))
            elif row["kind"] == "error":
                errors.append(ReplayError(row["sequence"], row["topic"], row["message"], hint=row["hint"], code=row["code"]))
            elif row["kind"] == "stats":
                applied += row["count"]
                topics = seen[row["grp"]]
                topics[row["topic"]] = min(topics.get(row["topic"], row["sequence"]), row["sequence"])
            elif row["kind"] == "scan":
                scanned += row["count"]
                if row["sequence"] > last_sequence:
                    last_sequence, last_ts = row["sequence"], row["ts"]
        now = job.now if job.now is not None else (as_of_time if as_of_time is not None else last_ts)
        for deletes in filters.values():
            deletes.sort(key=lambda delete: delete.sequence)
        shared = spark.sparkContext.broadcast(dict(filters))
        partitions = shuffle_partitions or max(2 * spark.sparkContext.defaultParallelism, 2)
        replayed = (keyed.where(F.col("kind") == "target")
                    .repartition(partitions, "grp", "topic", "key")
                    .sortWithinPartitions("grp", "topic", "key", "sequence")
                    .mapInArrow(_replay(job.specs, shared, now), ddl(RESULT))).toArrow().to_pylist()
        records_out: list[dict[str, Any]] = []
        history: list[dict[str, Any]] = []
        expired = 0
        for row in replayed:
            if row["kind"] == "record":
                records_out.append(row)
            elif row["kind"] == "history":
                history.append(row)
            elif row["kind"] == "expired":
                expired += row["count"]
            elif row["kind"] == "error":
                errors.append(ReplayError(row["sequence"], row["topic"], row["message"], hint=row["hint"], code=row["code"]))
        failed = sorted({exc.sequence for exc in errors})
        stamps = (keyed.where(F.col("kind").isin("target", "filter", "noop") & ~F.col("sequence").isin(failed))
                  .groupBy("grp").agg(F.max_by("ts", "sequence").alias("ts")).collect())
        shared.unpersist()
    finally:
        keyed.unpersist()
    return {"stop": stop, "scanned": scanned, "last_sequence": last_sequence, "now": now,
            "applied": applied, "expired": expired, "errors": _unique(errors), "records": records_out, "history": history,
            "topics": seen, "timestamps": {row["grp"]: row["ts"] for row in stamps}}


def _unique(errors: list[ReplayError]) -> list[ReplayError]:
    """One error per record (a record refused for several keys is still one record)."""
    found: dict[int, ReplayError] = {}
    for exc in errors:
        found.setdefault(exc.sequence, exc)
    return list(found.values())


def _groups(specs: tuple[TopicSpec, ...], state: dict[str, Any]) -> list[TopicGroup]:
    """The driver-side TopicGroups holding the replayed records, as the local store would."""
    groups = [TopicGroup(spec) for spec in specs]
    for position, group in enumerate(groups):
        for topic in sorted(state["topics"].get(position, {}), key=state["topics"][position].get):
            group.topic(topic)  # a concrete topic exists once a record reached it, even if it is empty now
        group.timestamp = state["timestamps"].get(position)
        group.sequence = state["last_sequence"]
    for row in sorted(state["records"], key=itemgetter("grp", "first")):  # first-store order, as the local engine's
        group = groups[row["grp"]]
        group.topic(row["topic"]).load(SowRecord(row["topic"], row["key"], row["payload"], row["sequence"], row["ts"],
                                                 row["expiration"], row["expires_at"]))
    for row in sorted(state["history"], key=lambda row: (row["grp"], row["topic"], row["key"], row["count"])):
        groups[row["grp"]].topic(row["topic"]).load_history(row["key"], Saved(row["ts"], row["sequence"], row["payload"]))
    now = state["now"]
    for group in groups:
        for topic in group.topics.values():
            if topic.history is not None and topic.history.window and now is not None:
                topic.history.horizon = now - topic.history.window  # where the local sweep(now) prunes to
    return groups


def row_record(row: dict[str, Any]) -> JournalRecord:
    """A journal record from a row of the journal source with ``ts`` in µs (the compaction and export projection)."""
    expiration, publisher_sequence = row["expiration"], row["publisher_sequence"]  # Decimal (UINT64) or None
    return JournalRecord(row["sequence"], row["ts"], Command.from_label(row["command"]), row["topic"], row["message_type"],
                         row["payload"], row["sow_key"], None if expiration is None else int(expiration),
                         row["correlation_id"], row["client_name"],
                         None if publisher_sequence is None else int(publisher_sequence))


def _keying(specs: tuple[TopicSpec, ...]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        keyer = Keyer(specs)
        seen: dict[tuple[int, str], list[int]] = {}  # (group, topic) -> [records, first sequence]
        scanned, last_sequence, last_ts = 0, 0, 0  # every record read, SOW topic or not
        for batch in batches:
            out: list[dict[str, Any]] = []
            for row in batch.to_pylist():
                scanned += 1
                if row["sequence"] > last_sequence:
                    last_sequence, last_ts = row["sequence"], row["ts"]
                targets = keyer.targets(row_record(row))
                if targets.kind is Kind.IGNORED:
                    continue
                counts = seen.setdefault((targets.group, row["topic"]), [0, row["sequence"]])
                counts[0] += 1
                counts[1] = min(counts[1], row["sequence"])
                if targets.kind is Kind.TARGETS:
                    out.extend({**row, "kind": "target", "grp": targets.group, "key": key} for key in targets.keys)
                    if not targets.keys:
                        out.append({**row, "kind": "noop", "grp": targets.group, "payload": None})
                elif targets.kind is Kind.FILTER:
                    out.append({**row, "kind": "filter", "grp": targets.group, "payload": None, "message": targets.filter})
                else:
                    error = targets.error
                    assert error is not None
                    out.append({**row, "kind": "error", "grp": targets.group, "payload": None,
                                "message": _bare(error), "code": error.code, "hint": error.hint})
            if out:
                yield pa.RecordBatch.from_pylist(out, schema=KEYED)
        stats = [{"kind": "stats", "grp": group, "topic": topic, "count": count, "sequence": first}
                 for (group, topic), (count, first) in seen.items()]
        if scanned:
            stats.append({"kind": "scan", "count": scanned, "sequence": last_sequence, "ts": last_ts})
        if stats:
            yield pa.RecordBatch.from_pylist(stats, schema=KEYED)
    return run


def _replay(specs: tuple[TopicSpec, ...], shared: Any, now: int | None) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        filters: dict[tuple[int, str], list[FilterDelete]] = shared.value
        expired = 0
        current: tuple[int, str, str] | None = None
        pending: list[JournalRecord] = []

        def flush() -> list[dict[str, Any]]:
            nonlocal expired
            assert current is not None
            group, topic, key = current
            deletes = filters.get((group, topic), ())
            run_records, starts = (pending, None) if deletes or not _plain(specs[group]) else _superseded_dropped(pending)
            merged = heapq.merge(run_records, deletes, key=lambda item: item.sequence)
            result = replay_key(specs[group], key, merged, now, starts)
            expired += result.expired
            rows = [{"kind": "error", "grp": group, "topic": exc.topic, "sequence": exc.sequence, "message": _bare(exc),
                     "code": exc.code, "hint": exc.hint} for exc in result.errors]
            rows += [{"kind": "history", "grp": group, "topic": topic, "key": key, "count": position, "ts": saved.timestamp,
                      "sequence": saved.sequence, "payload": saved.payload} for position, saved in enumerate(result.history)]
            stored = result.record
            if stored is not None:
                rows.append({"kind": "record", "grp": group, "topic": stored.topic, "key": stored.key, "payload": stored.payload,
                             "sequence": stored.sequence, "ts": stored.timestamp, "expiration": stored.expiration,
                             "expires_at": stored.expires_at, "first": result.first})
            return rows

        for batch in batches:
            out: list[dict[str, Any]] = []
            for row in batch.to_pylist():
                ident = (row["grp"], row["topic"], row["key"])
                if ident != current:
                    if current is not None:
                        out.extend(flush())
                    current, pending = ident, []
                pending.append(row_record(row))
            if out:
                yield pa.RecordBatch.from_pylist(out, schema=RESULT)
        tail = flush() if current is not None else []
        tail.append({"kind": "expired", "count": expired})
        yield pa.RecordBatch.from_pylist(tail, schema=RESULT)
    return run


def _plain(spec: TopicSpec) -> bool:
    """A topic where a publish followed by a publish can be skipped (``_superseded_dropped``): no
    History, and no expiry on write (which would store the record anew inside the run)."""
    return not spec.history and spec.message_type == "json" and not spec.expiration_enabled


def _superseded_dropped(records: list[JournalRecord]) -> tuple[list[JournalRecord], dict[int, int]]:
    """A key's run without the publishes the very next record republishes (a run of plain
    publishes is most of a journal). Replaying them changes nothing the next one leaves: it
    replaces the whole record and restarts its lifetime, nothing expires it in between, and
    neither can be refused (keying parsed and keyed them; a JSON topic's index tokens cannot
    fail; an expiration the SOW refuses, ``record.expiration_refused``, keeps both for the
    replay to refuse). Not for History topics
    (each write is a state) nor for keys with filter deletes of their topic (the caller).
    Also returns, for each record kept right after left-out ones, the first left out: where
    the record was first stored, if the run stored it anew (``replay_key``'s ``starts``)."""
    publish = Command.PUBLISH
    kept: list[JournalRecord] = []
    starts: dict[int, int] = {}  # a kept record -> the first of the publishes left out right before it
    run_start = None
    for record, following in zip(records, records[1:]):
        if (record.command is publish and following.command is publish
                and not expiration_refused(record.timestamp, record.expiration)
                and not expiration_refused(following.timestamp, following.expiration)):
            run_start = record.sequence if run_start is None else run_start
            continue
        if run_start is not None:
            starts[record.sequence], run_start = run_start, None
        kept.append(record)
    if run_start is not None:
        starts[records[-1].sequence] = run_start
    kept.append(records[-1])
    return kept, starts


def _bare(error: ReplayError) -> str:
    """The message without the ``journal record N (topic 'T'): `` prefix ReplayError adds again."""
    prefix = f"journal record {error.sequence} (topic '{error.topic}'): "
    return error.message[len(prefix):] if error.message.startswith(prefix) else error.message

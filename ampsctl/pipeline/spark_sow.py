"""``ampsctl sow query --engine spark``: a SOW file or a Parquet export queried through Spark.

Theory of operation. The query is planned with ``sow.query.plan`` exactly as the local engine
plans it (same errors for a bad filter, order-by, select or top-n). Then:

* source: a SOW file is opened on the driver for its checks and meta only (a missing file,
  not a SOW file, another version: the local engine's errors, before any Spark job); its
  records are read by the ``ampsctl-sow`` data source (``sow_source.py``) in ``id`` ranges,
  a couple per core, each range read by an executor that opens the file read-only itself, so
  the driver never holds the whole table. The file must therefore be readable at the same
  (absolute) path on every executor, as for any local-path Spark source: on a cluster, a
  shared file system. A damaged page met by an executor comes back with the local engine's
  message, code and exit code (3), naming the file as it was given. A Parquet file or directory
  (``journal compact --out-format parquet``: topic, sow_key, payload, sequence, timestamp,
  expiration, expires_at) is read by Spark, its row order numbered as it is read. The
  message type of a Parquet file comes from its name (``orders.json.parquet``), else
  ``--message-type``;
* SowKeys, ``--now`` (when the topic processes expiration) and ``--topic`` narrow in Spark
  (the topic regex is evaluated on the driver over the distinct topic names, with the local
  engine's ``topic_test``);
* the filter runs in Spark through ``spark_query.filter_frame``: compiled, or the stated
  fallback (``on_fallback``);
* the matching rows come back in source order, ordered by ``id`` (a SOW file's first-insert
  order, the local engine's file order; the row number for Parquet), only the first N when
  there is a top-n and no order-by, and go through ``sow.query.execute`` without its
  predicate: order-by, top-n and select are the local engine's code, so both engines print
  the same records. Rows from a SOW file are CRC-checked as results, as the local engine
  does (the source does not check the rows no query returns, nor does the local engine);
* a row whose filter evaluation fails comes back marked (``filter_frame``'s error column),
  ordered before the others: the first is raised, naming its record, as the local scan in
  file order raises it.
As-of queries read the History table, which only the local engine does (a UsageError).
``run_query`` raises every usage error (``check_request``) and plans the query before it
starts a session, so none of them waits for a JVM.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ampsctl.errors import UsageError
from ampsctl.filter.errors import FilterError
from ampsctl.pipeline.errors import translated
from ampsctl.sow.payloads import Payloads
from ampsctl.sow.query import Query, Row, execute, naming_record, plan, topic_test
from ampsctl.sow.record import SowRecord
from ampsctl.sow.spec import TopicSpec

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

_COLUMNS = ("topic", "sow_key", "payload", "sequence", "timestamp", "expiration", "expires_at")
_FAILED = "__ampsctl_failed"  # the filter's evaluation error on a row, NULL on the rows it selects
_PARQUET_TYPE = re.compile(r"\.([A-Za-z0-9_-]+)\.parquet$")


@dataclass(frozen=True, slots=True)
class SparkQueryResult:
    rows: list[Row]
    strategy: str  # "spark" or "spark, Python evaluator" (the fallback)
    payloads: Payloads
    pattern: bool  # the topic is a Pattern topic (the table shows the concrete topic)
    fallback: str | None  # why the filter ran on the Python evaluator, if it did


def is_parquet(path: str) -> bool:
    target = Path(path)
    return target.suffix == ".parquet" or (target.is_dir() and any(target.glob("*.parquet")))


def run_query(path: str, request: Query, *, options: Any = None, spark: SparkSession | None = None,
              message_type: str | None = None, on_fallback: Callable[[str], None] | None = None) -> SparkQueryResult:
    """``query`` on ``spark``, or on a session started from ``options`` (``jobs.SparkOptions``) and stopped after."""
    if spark is not None:
        return query(spark, path, request, message_type=message_type, on_fallback=on_fallback)
    from ampsctl.pipeline.jobs import SparkOptions
    from ampsctl.sow.indexing import Indexer

    check_request(path, request, message_type)
    plan(request, Indexer((), (), ()))  # a bad filter, order-by or select fails before a JVM starts
    from ampsctl.pipeline.session import SessionOptions, session

    options = options or SparkOptions()
    with session(SessionOptions(master=options.master, conf=dict(options.conf),
                                shuffle_partitions=options.shuffle_partitions or 4)) as started:
        return query(started, path, request, message_type=message_type, on_fallback=on_fallback)


def check_request(path: str, request: Query, message_type: str | None) -> None:
    """What makes ``request`` impossible on Spark whatever the data: a UsageError (or an
    invalid --topic regex), checked by ``run_query`` before a session starts."""
    if request.as_of is not None:
        raise UsageError("--as-of reads a History topic's saved states, which only the local engine does",
                         hint="drop --engine spark for as-of queries")
    if message_type is not None and not is_parquet(path):
        raise UsageError("--message-type is for Parquet input; a SOW file names its own type",
                         hint="drop --message-type, or give a Parquet file of `journal compact --out-format parquet`")
    topic_test(request.topic)
    if request.now is not None and is_parquet(path) and parquet_spec(path) is None:
        raise UsageError(f"{path} does not say whether its topic processes expiration, which --now depends on",
                         hint="compact again with this ampsctl (its Parquet keeps the topic's spec), or query the SOW file")


def query(spark: SparkSession, path: str, request: Query, *, message_type: str | None = None,
          on_fallback: Callable[[str], None] | None = None) -> SparkQueryResult:
    """Run ``request`` on the SOW file or Parquet export at ``path`` through ``spark``."""
    check_request(path, request, message_type)
    if is_parquet(path):
        return _query_parquet(spark, path, request, message_type, on_fallback)
    from ampsctl.sow.sowfile import SowFile, StoredRecord

    with SowFile.open(path) as sow:  # the checks and the meta here; the rows in the executors
        meta = sow.meta
        chosen = plan(request, meta.indexer())
        payloads = Payloads(meta.spec.message_type)
        with translated(path):
            frame = _sow_frame(spark, path)
            narrowed = _narrow(frame, request, lambda: [row[0] for row in sow.select("SELECT DISTINCT topic FROM records")],
                               meta.spec.expiration_enabled)
            rows, fallback = _run(narrowed, chosen, payloads, request, on_fallback, meta.spec.pattern)
        records = [StoredRecord(row[1], row[2], bytes(row[3]), *row[4:9]) for row in rows]
        for record in records:
            sow.check(record)
        return _finish(chosen, payloads, records, meta.spec.pattern, fallback)


def _query_parquet(spark: SparkSession, path: str, request: Query, message_type: str | None,
                   on_fallback: Callable[[str], None] | None) -> SparkQueryResult:
    from pyspark.sql import functions as F

    from ampsctl.sow.indexing import Indexer

    found = _PARQUET_TYPE.search(Path(path).name)
    kind = message_type or (found.group(1) if found else "json")
    spec = parquet_spec(path)
    chosen = plan(request, Indexer((), (), ()))
    payloads = Payloads(kind)
    raw = spark.read.parquet(path)
    missing = [name for name in _COLUMNS if name not in raw.columns]
    if missing:
        from ampsctl.errors import InputError

        raise InputError(f"{path} lacks the columns {', '.join(missing)}", code="PARQUET",
                         hint="give a Parquet file written by `ampsctl journal compact --out-format parquet`")
    micros = {name: F.unix_micros(F.col(name)) if dict(raw.dtypes)[name].startswith("timestamp") else F.col(name)
              for name in ("timestamp", "expires_at")}
    frame = raw.select(F.monotonically_increasing_id().alias("id"), "topic", "sow_key", "payload", "sequence",
                       micros["timestamp"].alias("timestamp"), "expiration", micros["expires_at"].alias("expires_at"))
    topics = [row[0] for row in frame.select("topic").distinct().collect()]
    narrowed = _narrow(frame, request, lambda: topics, expiration_enabled=spec is not None and spec.expiration_enabled)
    pattern = spec.pattern if spec is not None else len(topics) > 1
    rows, fallback = _run(narrowed, chosen, payloads, request, on_fallback, pattern)
    records = [SowRecord(*(bytes(value) if name == "payload" else value for name, value in zip(_COLUMNS, row[1:8])))
               for row in rows]
    return _finish(chosen, payloads, records, pattern, fallback)


def parquet_spec(path: str) -> TopicSpec | None:
    """The topic's spec that ``journal compact --out-format parquet`` keeps in the file's schema
    metadata (the SOW file's meta has it too), or None for a Parquet file without it."""
    import pyarrow.parquet as pq

    from ampsctl.errors import InputError
    from ampsctl.pipeline.output import SPEC_METADATA

    target = Path(path)
    files = [target] if target.is_file() else sorted(target.glob("*.parquet"))
    raw = (pq.read_schema(files[0]).metadata or {}).get(SPEC_METADATA) if files else None
    if raw is None:
        return None
    try:
        return TopicSpec.from_json(json.loads(raw))
    except (ValueError, TypeError, KeyError):
        raise InputError(f"{path}: the topic spec in its Parquet metadata is damaged", code="PARQUET",
                         hint="compact the journal again") from None


def _sow_frame(spark: SparkSession, path: str) -> DataFrame:
    """id, the record columns and crc, read by the ``ampsctl-sow`` source in ``id`` ranges."""
    from ampsctl.pipeline.sow_source import NAME

    # A couple of ranges per core, so one slow range does not leave a core idle to the end.
    partitions = 2 * spark.sparkContext.defaultParallelism
    return spark.read.format(NAME).option("partitions", str(partitions)).load(os.path.abspath(path))


def _narrow(frame: DataFrame, request: Query, topics: Callable[[], list[str]], expiration_enabled: bool) -> DataFrame:
    from pyspark.sql import functions as F

    if request.keys is not None:
        frame = frame.where(F.col("sow_key").isin(list(dict.fromkeys(request.keys))))
    if request.now is not None and expiration_enabled:
        frame = frame.where(F.col("expires_at").isNull() | (F.col("expires_at") > F.lit(request.now)))
    wanted = topic_test(request.topic)
    if wanted is not None:
        frame = frame.where(F.col("topic").isin([topic for topic in topics() if wanted(topic)]))
    return frame


def _run(frame: DataFrame, chosen: Any, payloads: Payloads, request: Query,
         on_fallback: Callable[[str], None] | None, pattern: bool) -> tuple[list[Any], str | None]:
    from pyspark.sql import functions as F

    from ampsctl.pipeline.spark_query import collect, failure_of, filter_frame

    reasons: list[str] = []

    def fell_back(reason: str) -> None:
        reasons.append(reason)
        if on_fallback is not None:
            on_fallback(reason)

    if chosen.expr is None:
        frame = frame.withColumn(_FAILED, F.lit(None).cast("string"))
    else:
        frame, _ = filter_frame(frame, request.filter or "", payload="payload", message_type=payloads.message_type,
                                on_fallback=fell_back, error_column=_FAILED)
    # Rows whose evaluation failed come first, in file order: the first is the one the local
    # engine's scan fails on (it evaluates every candidate of a small file, top-n or not).
    frame = frame.orderBy(F.col(_FAILED).isNull(), "id")
    if request.top_n is not None and not chosen.order:
        frame = frame.limit(request.top_n)
    rows = collect(frame)
    if rows and rows[0][_FAILED] is not None:
        failure = failure_of(rows[0][_FAILED])
        if isinstance(failure, FilterError):  # the local engine names the record of a filter's failure only
            raise naming_record(failure, rows[0]["sow_key"], rows[0]["topic"] if pattern else None)
        raise failure
    return rows, (reasons[0] if reasons else None)


def _finish(chosen: Any, payloads: Payloads, records: list[SowRecord], pattern: bool,
            fallback: str | None) -> SparkQueryResult:
    unfiltered = dataclasses.replace(chosen, predicate=None)
    rows = execute(unfiltered, payloads, ((record, None) for record in records), expiration_enabled=False)
    strategy = "spark, Python evaluator" if fallback is not None else "spark"
    return SparkQueryResult(rows, strategy, payloads, pattern, fallback)

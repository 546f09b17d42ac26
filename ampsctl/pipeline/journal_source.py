"""The ``ampsctl-journal`` PySpark data source: one row per journal record.

``spark.read.format("ampsctl-journal").load(PATH)`` (PATH: a journal directory or one segment
file) after ``session.register_sources(spark)`` (``session.start`` does it). Options:
``skip_corrupt`` (``true``: leave damaged regions out instead of failing; ``scan_damage``
lists them); ``to_sequence`` (read records up to this sequence only: later segments are not
planned, and damage after it is not reached, as in ``JournalReader.scan``).

Theory of operation: ``partitions`` runs on the driver and plans one Spark partition per
segment file (headers only, ``segments.plan_segments``); ``read`` runs in a Python worker and
yields the rows of one segment as Arrow record batches (``segments.read_segment``), so a
journal's work splits across executors by segment and the rows reach the JVM without a
per-row conversion. A damaged record fails the task with the segment and the byte offset,
carried back to the driver as a JournalCorruptError (``errors.py``).

Schema (``SCHEMA``): sequence, timestamp (UTC TIMESTAMP, microseconds), command (publish,
delta_publish, sow_delete, expire), topic, message_type, sow_key, expiration (seconds, 0:
never, null: not given; DECIMAL(20,0): unsigned 64-bit), correlation_id, client_name,
publisher_sequence (DECIMAL(20,0)), payload (binary),
segment (the segment number), offset (byte offset of the record in its segment file).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import BinaryType, DecimalType, LongType, StringType, StructField, StructType, TimestampType

from ampsctl.errors import AmpsctlError
from ampsctl.pipeline.errors import to_task_error
from ampsctl.pipeline.segments import SegmentTask, Skipped, damage, plan_segments, read_segment

NAME = "ampsctl-journal"
# expiration and publisher_sequence are unsigned 64-bit in a journal record (journal.codec):
# DECIMAL(20,0) holds every value, where BIGINT failed the task on one from 2^63 up.
UINT64 = pa.decimal128(20, 0)
BATCH_ROWS = 10_000

_COLUMNS = [  # (name, Spark type, nullable): the schema in the module docstring
    ("sequence", LongType(), False), ("timestamp", TimestampType(), False), ("command", StringType(), False),
    ("topic", StringType(), False), ("message_type", StringType(), False), ("sow_key", StringType(), True),
    ("expiration", DecimalType(20, 0), True), ("correlation_id", StringType(), True), ("client_name", StringType(), True),
    ("publisher_sequence", DecimalType(20, 0), True), ("payload", BinaryType(), False), ("segment", LongType(), False),
    ("offset", LongType(), False),
]
# Built from types, not DDL text: parsing DDL needs a running SparkContext, which the Python
# worker that plans the source does not have.
SCHEMA = StructType([StructField(name, kind, nullable) for name, kind, nullable in _COLUMNS])

_ARROW = pa.schema([
    pa.field("sequence", pa.int64(), False), pa.field("timestamp", pa.timestamp("us", tz="UTC"), False),
    pa.field("command", pa.string(), False), pa.field("topic", pa.string(), False),
    pa.field("message_type", pa.string(), False), pa.field("sow_key", pa.string()),
    pa.field("expiration", UINT64), pa.field("correlation_id", pa.string()), pa.field("client_name", pa.string()),
    pa.field("publisher_sequence", UINT64), pa.field("payload", pa.binary(), False),
    pa.field("segment", pa.int64(), False), pa.field("offset", pa.int64(), False),
])


class SegmentPartition(InputPartition):
    """One segment file (``SegmentTask``) as a Spark input partition."""

    def __init__(self, task: SegmentTask) -> None:
        super().__init__(task)
        self.task = task


class JournalDataSource(DataSource):
    """``format("ampsctl-journal")``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return JournalSourceReader(dict(self.options))


class JournalSourceReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.path = options.get("path")
        if not self.path:
            raise ValueError('the ampsctl-journal source needs a path: spark.read.format("ampsctl-journal").load(PATH)')
        self.skip_corrupt = options.get("skip_corrupt", "false").strip().lower() in ("true", "1", "yes")
        stop = options.get("to_sequence")
        self.to_sequence = int(stop) if stop not in (None, "") else None

    def partitions(self) -> list[InputPartition]:
        try:
            tasks = plan_segments(self.path, to_sequence=self.to_sequence)
        except AmpsctlError as exc:
            raise to_task_error(exc) from None
        return [SegmentPartition(task) for task in tasks]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        task: SegmentTask | None = getattr(partition, "task", None)
        if task is None:  # no segment planned (an empty journal, or an as-of point of 0): Spark
            return        # still runs one task with a plain InputPartition
        number = task.number if task.number >= 0 else 0
        rows: list[tuple[int, Any]] = []
        try:
            for item in read_segment(task, skip_corrupt=self.skip_corrupt):
                rows.append(item)
                if len(rows) >= BATCH_ROWS:
                    yield _batch(rows, number)
                    rows = []
        except AmpsctlError as exc:
            if rows:
                yield _batch(rows, number)
            raise to_task_error(exc) from None
        if rows:
            yield _batch(rows, number)


def _batch(rows: list[tuple[int, Any]], segment: int) -> pa.RecordBatch:
    records = [record for _, record in rows]
    columns = [
        [r.sequence for r in records],
        pa.array([r.timestamp for r in records], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        [r.command.label for r in records],
        [r.topic for r in records],
        [r.message_type for r in records],
        [r.sow_key for r in records],
        [r.expiration for r in records],
        [r.correlation_id for r in records],
        [r.client_name for r in records],
        [r.publisher_sequence for r in records],
        [bytes(r.payload) for r in records],
        [segment] * len(rows),
        [offset for offset, _ in rows],
    ]
    arrays = [column if isinstance(column, pa.Array) else pa.array(column, field.type)
              for column, field in zip(columns, _ARROW, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=_ARROW)


def register(spark: SparkSession) -> None:
    spark.dataSource.register(JournalDataSource)


def scan_damage(spark: SparkSession, path: str, *, to_sequence: int | None = None) -> list[Skipped]:
    """Every damaged region ``skip_corrupt`` leaves out (up to ``to_sequence``), found by a Spark job (one task per segment)."""
    tasks = plan_segments(path, to_sequence=to_sequence)
    if not tasks:
        return []
    found = spark.sparkContext.parallelize(tasks, len(tasks)).flatMap(damage).collect()
    return sorted(found, key=lambda skipped: (skipped.path, skipped.offset))


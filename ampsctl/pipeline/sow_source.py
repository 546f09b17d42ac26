"""The ``ampsctl-sow`` PySpark data source: the records of a SOW file, read in ``id`` ranges.

``spark.read.format("ampsctl-sow").load(PATH)`` (PATH: a SOW file, docs/formats.md "SOW
file") after ``session.register_sources(spark)`` (``session.start`` does it). Option:
``partitions`` (at most this many id ranges; default ``DEFAULT_PARTITIONS``).

Theory of operation: ``partitions`` runs on the driver. It opens the file with every check of
``SowFile.open`` (missing, not a SOW file, another version, damaged meta or tables), takes the
smallest and largest ``id`` (the rowid: two B-tree lookups, no scan) and the meta's CRC, and
cuts the id span into ranges of at least ``MIN_ROWS`` ids. ``read`` runs in a Python worker:
it opens the file read-only itself and, inside one read transaction, checks that the meta CRC
is still the planner's (a checkpoint or a rewrite in between would mix two states of the
file) and yields its range's rows in ``id`` order as Arrow batches. So executors read in
parallel and no process holds every row. Rows are not CRC-checked here: like the local
engine, a query checks the rows it returns (``spark_sow``). A damaged page fails the task
with the file's ``SowFileError``, carried to the driver (``errors.py``).

Schema (``SCHEMA``): id (first-insert order; ranges follow it, gaps are fine), topic,
sow_key, payload (binary), sequence, timestamp (µs), expiration, expires_at (µs), crc.

The file must be readable at the same path on the driver and on every executor (give an
absolute path; on a cluster, a shared file system), as for any local-path Spark source.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

from ampsctl.errors import AmpsctlError
from ampsctl.pipeline.errors import to_task_error
from ampsctl.sow.errors import SowFileError
from ampsctl.sow.sowfile import RECORD_COLUMNS, SowFile, damaged

NAME = "ampsctl-sow"
DEFAULT_PARTITIONS = 4
MIN_ROWS = 4096  # ids per range at least: a task costs more than reading a few thousand rows
BATCH_ROWS = 10_000

_COLUMNS = [  # (name, Spark type, Arrow type, nullable): the schema in the module docstring
    ("id", LongType(), pa.int64(), False), ("topic", StringType(), pa.string(), False),
    ("sow_key", StringType(), pa.string(), False), ("payload", BinaryType(), pa.binary(), False),
    ("sequence", LongType(), pa.int64(), False), ("timestamp", LongType(), pa.int64(), False),
    ("expiration", LongType(), pa.int64(), True), ("expires_at", LongType(), pa.int64(), True),
    ("crc", LongType(), pa.int64(), False),
]
# Built from types, not DDL text: the Python worker that plans the source has no SparkContext.
SCHEMA = StructType([StructField(name, kind, nullable) for name, kind, _, nullable in _COLUMNS])
_ARROW = pa.schema([pa.field(name, kind, nullable) for name, _, kind, nullable in _COLUMNS])


@dataclass(frozen=True, slots=True)
class IdRange:
    """Rows ``first``..``last`` (ids, inclusive) of the SOW file at ``path``, as planned at ``meta_crc``."""

    path: str
    first: int
    last: int
    meta_crc: str


class IdRangePartition(InputPartition):
    """One ``IdRange`` as a Spark input partition."""

    def __init__(self, task: IdRange) -> None:
        super().__init__(task)
        self.task = task


def id_ranges(path: str, first: int, last: int, meta_crc: str, partitions: int) -> list[IdRange]:
    """``first``..``last`` cut into at most ``partitions`` contiguous ranges of at least MIN_ROWS ids."""
    span = last - first + 1
    count = max(1, min(partitions, -(-span // MIN_ROWS)))
    step = -(-span // count)
    return [IdRange(path, start, min(start + step - 1, last), meta_crc) for start in range(first, last + 1, step)]


class SowDataSource(DataSource):
    """``format("ampsctl-sow")``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return SowSourceReader(dict(self.options))


class SowSourceReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.path = options.get("path")
        if not self.path:
            raise ValueError('the ampsctl-sow source needs a path: spark.read.format("ampsctl-sow").load(PATH)')
        self.partitions_wanted = int(options.get("partitions") or DEFAULT_PARTITIONS)
        if self.partitions_wanted < 1:
            raise ValueError(f"the ampsctl-sow option partitions must be at least 1, not {self.partitions_wanted}")

    def partitions(self) -> list[InputPartition]:
        try:
            with SowFile.open(self.path) as sow:
                sow.connection.execute("BEGIN")  # one snapshot: the meta and the id span it plans on
                crc = _meta_crc(sow)
                # one aggregate per statement: SQLite then reads the rowid b-tree's edge, not every row
                (first,), (last,) = (next(sow.select(f"SELECT {edge}(id) FROM records")) for edge in ("min", "max"))
                sow.connection.rollback()
        except AmpsctlError as exc:
            raise to_task_error(exc) from None
        if first is None:  # no records: Spark still runs one task, with a plain InputPartition
            return []
        return [IdRangePartition(task) for task in id_ranges(self.path, first, last, crc, self.partitions_wanted)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        task: IdRange | None = getattr(partition, "task", None)
        if task is None:
            return
        try:
            yield from _read_range(task)
        except AmpsctlError as exc:
            raise to_task_error(exc) from None


def _read_range(task: IdRange) -> Iterator[pa.RecordBatch]:
    with SowFile.open(task.path) as sow:
        sow.connection.execute("BEGIN")  # one snapshot: the meta checked below and the rows read after it
        if _meta_crc(sow) != task.meta_crc:  # a healthy file, checkpointed: not damage
            raise SowFileError(task.path, "the SOW file changed while Spark was reading it (a checkpoint or a rewrite)",
                               code="SOW_CHANGED", hint="run the query again")
        rows: list[tuple[Any, ...]] = []
        sql = f"SELECT id, {RECORD_COLUMNS} FROM records WHERE id BETWEEN ? AND ? ORDER BY id"
        for row in sow.select(sql, (task.first, task.last)):
            rows.append(row)
            if len(rows) >= BATCH_ROWS:
                yield _batch(task.path, rows)
                rows = []
        if rows:
            yield _batch(task.path, rows)
        sow.connection.rollback()  # read-only: nothing to keep; ends the transaction


def _meta_crc(sow: SowFile) -> str:
    return str(next(sow.select("SELECT value FROM meta WHERE name = 'meta_crc'"))[0])


def _batch(path: str, rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
    try:
        arrays = [pa.array(column, field.type) for column, field in zip(zip(*rows), _ARROW, strict=True)]
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # a value SQLite stored with another type
        raise damaged(path, f"a record row holds a value of the wrong type ({exc})") from None
    return pa.RecordBatch.from_arrays(arrays, schema=_ARROW)


def register(spark: SparkSession) -> None:
    spark.dataSource.register(SowDataSource)

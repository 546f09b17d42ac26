"""Pipeline job specs and results: what to run, independent of the engine that runs it.

Jobs are frozen values, so the same job can be handed to either engine (``engines.py``) and a
differential test can run one job twice. Times are µs since the Unix epoch, UTC.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ampsctl.pipeline.segments import Skipped
from ampsctl.sow.compact import CompactResult
from ampsctl.sow.spec import TopicSpec


class Engine(str, enum.Enum):
    LOCAL = "local"  # pure Python, the reference semantics (ampsctl.sow.compact)
    SPARK = "spark"  # PySpark; local[*] unless a master is given


class OutputFormat(str, enum.Enum):
    SOW = "sow"  # one SQLite SOW file per SOW topic, as `ampsctl journal compact` writes
    PARQUET = "parquet"
    JSONL = "jsonl"


@dataclass(frozen=True, slots=True)
class SparkOptions:
    """How to reach Spark (ignored by the local engine)."""

    master: str = "local[*]"
    conf: tuple[tuple[str, str], ...] = ()
    shuffle_partitions: int | None = None  # None: 2 x the default parallelism


@dataclass(frozen=True, slots=True)
class CompactJob:
    """Journal -> the SOW state of ``specs`` as of a point, written to ``out``."""

    journal: str
    specs: tuple[TopicSpec, ...]
    out: str
    as_of: str | None = None  # a bookmark or a timestamp (journal.bookmarks.parse_position)
    now: int | None = None  # expire what is due at this time (default: see sow.compact)
    overwrite: bool = False
    keep_going: bool = False  # skip records the SOW cannot apply (reported), instead of failing
    skip_corrupt: bool = False  # skip damaged journal regions (reported), instead of failing
    output: OutputFormat = OutputFormat.SOW


@dataclass(frozen=True, slots=True)
class ExportJob:
    """Journal -> one row per record in Parquet or JSONL files under ``out``."""

    journal: str
    out: str
    output: OutputFormat = OutputFormat.PARQUET
    overwrite: bool = False
    skip_corrupt: bool = False


@dataclass(frozen=True, slots=True)
class CompactOutcome:
    result: CompactResult
    engine: Engine
    corrupt: list[Skipped] = field(default_factory=list)  # regions skipped with skip_corrupt


@dataclass(frozen=True, slots=True)
class ExportOutcome:
    out: str
    records: int
    files: list[str]
    engine: Engine
    corrupt: list[Skipped] = field(default_factory=list)

"""Running a pipeline job on an engine: ``local`` (the reference) or ``spark``.

The local engine *is* ``ampsctl.sow.compact`` (no second implementation); the Spark engine
is ``spark_compact`` / ``export``. ``run_compact`` and ``run_export`` take the job and, for
Spark, either a running session (tests, notebooks) or ``SparkOptions`` to start one; a
session this module starts it also stops, after the job's usage errors (an output that
exists, a file for a directory) have been checked: those never wait for a JVM.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ampsctl.errors import UsageError
from ampsctl.pipeline.jobs import CompactJob, CompactOutcome, Engine, ExportJob, ExportOutcome, OutputFormat, SparkOptions
from ampsctl.sow.errors import ReplayError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


def run_compact(job: CompactJob, engine: Engine = Engine.LOCAL, *, spark: SparkSession | None = None,
                options: SparkOptions | None = None, on_error: Callable[[ReplayError], None] | None = None,
                progress: Callable[[int], None] | None = None,
                spark_progress: Callable[[SparkSession], AbstractContextManager[Any]] | None = None) -> CompactOutcome:
    """Compact ``job.journal`` into ``job.out`` on ``engine``."""
    if engine is Engine.LOCAL:
        return _compact_local(job, on_error, progress)
    if spark is None:
        from ampsctl.pipeline.output import check_compact_out

        check_compact_out(job)  # usage errors before pyspark is imported and a JVM started
    options = options or SparkOptions()
    with _session(spark, options) as session:  # checks --master and --conf before importing pyspark
        from ampsctl.pipeline import spark_compact

        return spark_compact.compact(session, job, shuffle_partitions=options.shuffle_partitions, on_error=on_error,
                                     progress=spark_progress(session) if spark_progress else None)


def run_export(job: ExportJob, engine: Engine = Engine.SPARK, *, spark: SparkSession | None = None,
               options: SparkOptions | None = None,
               spark_progress: Callable[[SparkSession], AbstractContextManager[Any]] | None = None) -> ExportOutcome:
    """Write every record of ``job.journal`` as Parquet or JSONL under ``job.out``."""
    from ampsctl.pipeline import output

    if engine is Engine.LOCAL:
        return output.export_local(job)
    if spark is None:
        output.check_export_out(Path(job.out), job.overwrite)  # before a JVM starts: it replaces nothing
    with _session(spark, options or SparkOptions()) as session:
        return output.export_spark(session, job, progress=spark_progress(session) if spark_progress else None)


def _compact_local(job: CompactJob, on_error: Callable[[ReplayError], None] | None,
                   progress: Callable[[int], None] | None) -> CompactOutcome:
    from ampsctl.sow.compact import compact

    if job.skip_corrupt:
        raise UsageError("--skip-corrupt needs --engine spark",
                         hint="the local engine stops at damage, as `ampsctl journal verify` reports it; "
                              "rerun with --engine spark --skip-corrupt to leave damaged regions out")
    handler = (on_error or _ignore) if job.keep_going else None
    if job.output is OutputFormat.SOW:
        result = compact(job.journal, job.specs, job.out, as_of=job.as_of, now=job.now, overwrite=job.overwrite,
                         on_error=handler, progress=progress)
        return CompactOutcome(result, Engine.LOCAL)
    from ampsctl.pipeline.output import check_groups_out, groups_from_files, write_groups

    check_groups_out(job.specs, job.out, job.output, overwrite=job.overwrite)  # before the work, as for SOW files
    # Parquet/JSONL: compact into SOW files in a scratch directory, then convert them, so the
    # records are exactly those of the SOW files.
    with tempfile.TemporaryDirectory(prefix="ampsctl-compact-") as scratch:
        result = compact(job.journal, job.specs, scratch, as_of=job.as_of, now=job.now, on_error=handler, progress=progress)
        files = write_groups(groups_from_files(job.specs, [f.path for f in result.files]), job.out, job.output,
                             overwrite=job.overwrite)
    return CompactOutcome(result.__class__(files, result.scanned, result.applied, result.last_sequence, result.now,
                                           result.expired, result.skipped), Engine.LOCAL)


@contextmanager
def _session(spark: SparkSession | None, options: SparkOptions) -> Iterator[SparkSession]:
    if spark is not None:
        yield spark
        return
    from ampsctl.pipeline.session import SessionOptions, session

    with session(SessionOptions(master=options.master, conf=dict(options.conf),
                                shuffle_partitions=options.shuffle_partitions)) as started:
        yield started



def _ignore(error: ReplayError) -> None:
    """``keep_going`` without a reporter: the refused records are still counted in ``skipped``."""

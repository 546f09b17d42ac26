"""CLI pieces shared by the pipeline commands: engine and Spark options, reports, ``journal export``.

``journal compact --engine spark`` (compact_cmd.py) and ``journal export`` take the same
``--master`` / ``--conf`` / ``--shuffle-partitions`` options and report skipped damage the
same way. Nothing here imports pyspark at import time (``ampsctl --help`` stays light).
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ampsctl.errors import ExitCode

if TYPE_CHECKING:  # pragma: no cover
    from ampsctl.pipeline.jobs import SparkOptions
    from ampsctl.pipeline.segments import Skipped


class EngineName(str, Enum):
    local = "local"
    spark = "spark"


class ExportFormat(str, Enum):
    parquet = "parquet"
    jsonl = "jsonl"


MASTER_HELP = "Spark master URL (Spark engine): local[*] (default), local[N], spark://HOST:PORT, yarn, k8s://..."
CONF_HELP = "A Spark conf KEY=VALUE (repeatable), e.g. --conf spark.executor.memory=4g."
SHUFFLE_HELP = "Shuffle partitions of the Spark engine (default: twice the default parallelism)."
SKIP_HELP = "Spark engine: leave damaged journal regions out and report them (exit 1) instead of failing (exit 3)."


def spark_options(master: str | None, conf: list[str] | None, shuffle_partitions: int | None) -> SparkOptions:
    from ampsctl.pipeline.jobs import SparkOptions
    from ampsctl.pipeline.session import DEFAULT_MASTER, parse_conf

    return SparkOptions(master=master or DEFAULT_MASTER, conf=tuple(parse_conf(conf).items()),
                        shuffle_partitions=shuffle_partitions)


def check_spark_only(engine: EngineName, master: str | None, conf: list[str] | None) -> None:
    from ampsctl.errors import UsageError

    if engine is EngineName.local and (master or conf):
        raise UsageError("--master and --conf need --engine spark", hint="add --engine spark, or drop them")


def corrupt_lines(skipped: list[Skipped]) -> list[str]:
    return [f"ampsctl: skipped damaged journal region: {region}" for region in skipped]


def export(
    path: Path = typer.Argument(..., metavar="PATH", help="The journal directory (or one segment file)."),
    format: ExportFormat = typer.Option(..., "--format", "-f", help="parquet (through Spark) or jsonl (journal dump lines)."),
    out: Path = typer.Option(..., "--out", "-o", metavar="DIR", help="Directory to create for the part files."),
    engine: EngineName | None = typer.Option(None, "--engine", help="local (jsonl only) or spark; default: spark for parquet, local for jsonl."),
    master: str | None = typer.Option(None, "--master", metavar="URL", help=MASTER_HELP),
    conf: list[str] | None = typer.Option(None, "--conf", metavar="KEY=VALUE", help=CONF_HELP),
    skip_corrupt: bool = typer.Option(False, "--skip-corrupt", help=SKIP_HELP),
    force: bool = typer.Option(False, "--force", help="Replace DIR if it exists."),
) -> None:
    """Export every journal record as Parquet or JSONL part files in DIR.

    Parquet has the columns of the ampsctl-journal Spark data source (docs/pipeline.md);
    JSONL lines are `journal dump --format jsonl` lines, which `journal import` reads back.
    Exit codes: 0 ok, 1 damaged regions skipped (--skip-corrupt), 2 usage, 3 invalid input
    (damaged journal), 4 environment (no Java or pyspark, unreachable --master).
    """
    from ampsctl.cli.output import write_lines
    from ampsctl.pipeline.engines import run_export
    from ampsctl.pipeline.jobs import Engine, ExportJob, OutputFormat
    from ampsctl.pipeline.progress import spark_progress

    chosen = engine or (EngineName.spark if format is ExportFormat.parquet or skip_corrupt or master else EngineName.local)
    check_spark_only(chosen, master, conf)
    job = ExportJob(str(path), str(out), OutputFormat(format.value), overwrite=force, skip_corrupt=skip_corrupt)
    outcome = run_export(job, Engine(chosen.value), options=spark_options(master, conf, None),
                         spark_progress=spark_progress)
    for line in corrupt_lines(outcome.corrupt):
        sys.stderr.write(line + "\n")
    files = len(outcome.files)
    write_lines([f"exported {outcome.records} journal record{'s' if outcome.records != 1 else ''} from {path} to {outcome.out} "
                 f"({files} {format.value} file{'s' if files != 1 else ''}, {outcome.engine.value} engine)"])
    if outcome.corrupt:
        raise typer.Exit(ExitCode.FINDINGS)


def summary_extra(outcome: Any) -> dict[str, Any]:
    return {"engine": outcome.engine.value,
            "corrupt_skipped": [{"path": s.path, "offset": s.offset, "length": s.length, "reason": s.reason,
                                 "records": s.records} for s in outcome.corrupt]}

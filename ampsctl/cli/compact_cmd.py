"""``ampsctl journal compact``: the SOW files a journal implies, per configured SOW topic.

Registered by cli/app.py as ``ampsctl journal compact``. A thin command over
``ampsctl.pipeline.engines.run_compact``: load the config, replay the journal up to
``--as-of`` on the local engine (``ampsctl.sow.compact``, the reference) or on Spark
(``--engine spark``, docs/pipeline.md) and write one ``<Name>.<MessageType>.sow`` per SOW topic
into ``--out`` (or ``.parquet``/``.jsonl`` with ``--out-format``). The SOW files are ordinary
SOW files: ``ampsctl sow query|dump|stats`` read them.

Exit codes: 0 ok, 1 records or damaged regions were skipped (``--keep-going``,
``--skip-corrupt``), 2 usage (an output file exists without ``--force``, a bad option or
master URL, an --as-of or --now that is not a bookmark or timestamp), 3 invalid input (bad
config, damaged journal, a record that cannot be applied, an unknown bookmark), 4 environment (the output directory cannot be written; no Java or
pyspark; an unreachable --master).
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Any

import typer

from ampsctl.cli.pipeline_cli import CONF_HELP, MASTER_HELP, SHUFFLE_HELP, SKIP_HELP, EngineName
from ampsctl.errors import ExitCode


class CompactFormat(str, Enum):
    text = "text"
    json = "json"


class OutFormat(str, Enum):
    sow = "sow"
    parquet = "parquet"
    jsonl = "jsonl"


def compact(
    path: Path = typer.Argument(..., metavar="PATH", help="The journal directory (or one segment file)."),
    config: Path = typer.Option(..., "--config", "-c", metavar="CFG", help="The AMPS config whose SOW topics to build."),
    out: Path = typer.Option(..., "--out", "-o", metavar="DIR", help="Directory for the SOW files (created if missing)."),
    as_of: str | None = typer.Option(None, "--as-of", metavar="TIMESTAMP|BOOKMARK",
                                     help="Stop at this bookmark (h|seq|, included) or UTC timestamp (records at or before it). Default: the whole journal."),
    now: str | None = typer.Option(None, "--now", metavar="TIMESTAMP",
                                   help="Expire records due at this time (default: the --as-of time, else the last record's time)."),
    force: bool = typer.Option(False, "--force", help="Replace SOW files that already exist in DIR."),
    keep_going: bool = typer.Option(False, "--keep-going", help="Report records that cannot be applied, skip them, exit 1 at the end."),
    env: list[str] | None = typer.Option(None, "--env", help="Define NAME=VALUE for ${NAME} expansion in the config (repeatable)."),
    format: CompactFormat = typer.Option(CompactFormat.text, "--format", "-f", help="Summary format."),
    out_format: OutFormat = typer.Option(OutFormat.sow, "--out-format",
                                         help="Files to write: SOW files (sow), or one Parquet/JSONL file per SOW topic."),
    engine: EngineName = typer.Option(EngineName.local, "--engine", help="local (the reference) or spark."),
    master: str | None = typer.Option(None, "--master", metavar="URL", help=MASTER_HELP),
    conf: list[str] | None = typer.Option(None, "--conf", metavar="KEY=VALUE", help=CONF_HELP),
    shuffle_partitions: int | None = typer.Option(None, "--shuffle-partitions", min=1, help=SHUFFLE_HELP),
    skip_corrupt: bool = typer.Option(False, "--skip-corrupt", help=SKIP_HELP),
) -> None:
    """Build the SOW files of every SOW topic from a journal, as of a point in time.

    Replays publish, delta_publish (merged), sow_delete and expire records in order,
    processes expirations due at --now, and writes <Name>.<MessageType>.sow per
    SOW/Topic of the config (a Pattern topic's concrete topics share one file).
    --engine spark runs the same compaction on Spark (same result; docs/pipeline.md).
    Exit codes: 0 ok, 1 records or damaged regions skipped (--keep-going, --skip-corrupt),
    2 usage, 3 invalid input, 4 environment (output not writable, no Java/pyspark, bad master).
    """
    from ampsctl.cli.config_cmd import parse_env
    from ampsctl.cli.journal_cmd import _position
    from ampsctl.cli.output import json_text, terminal_text, write_lines
    from ampsctl.cli.pipeline_cli import check_spark_only, corrupt_lines, spark_options, summary_extra
    from ampsctl.cli.sow_cmd import _time, progress_bar
    from ampsctl.config.loader import load_config
    from ampsctl.config.model import ConfigModel
    from ampsctl.journal.bookmarks import format_timestamp
    from ampsctl.journal.reader import JournalReader
    from ampsctl.pipeline.engines import run_compact
    from ampsctl.pipeline.jobs import CompactJob, Engine, OutputFormat
    from ampsctl.pipeline.progress import spark_progress
    from ampsctl.sow.errors import ReplayError
    from ampsctl.sow.spec import topic_specs

    check_spark_only(engine, master, conf)
    if as_of is not None:
        _position("--as-of", as_of)  # a malformed value is a usage error naming the option; the engine parses it again
    specs = topic_specs(ConfigModel(load_config(str(config), parse_env(env))))
    skipped: list[ReplayError] = []

    def report(exc: ReplayError) -> None:
        skipped.append(exc)
        # escaped as every error is (a topic or key may hold terminal controls)
        sys.stderr.write(terminal_text(f"ampsctl: skipped: {exc.message}", lines=True, soh=None) + "\n")

    job = CompactJob(str(path), tuple(specs), str(out), as_of=as_of, now=_time("--now", now), overwrite=force,
                     keep_going=keep_going, skip_corrupt=skip_corrupt, output=OutputFormat(out_format.value))
    if engine is EngineName.spark:
        outcome = run_compact(job, Engine.SPARK, options=spark_options(master, conf, shuffle_partitions), on_error=report,
                              spark_progress=spark_progress)
    else:
        total = sum(segment.records for segment in JournalReader(path).segments) if sys.stdout.isatty() else 0
        with progress_bar(total, "compacting") as advance:
            outcome = run_compact(job, Engine.LOCAL, on_error=report, progress=advance)
    _note_missing_start(path)
    result = outcome.result
    for line in corrupt_lines(outcome.corrupt):
        sys.stderr.write(line + "\n")
    summary: dict[str, Any] = {
        "journal": str(path),
        "out": str(out),
        "records_read": result.scanned,
        "records_applied": result.applied,
        "last_sequence": result.last_sequence,
        "now": format_timestamp(result.now) if result.now is not None else None,
        "expired": result.expired,
        "skipped": result.skipped,
        "files": [{"topic": f.name, "message_type": f.message_type, "path": f.path, "records": f.records,
                   "concrete_topics": f.topics} for f in result.files],
        **summary_extra(outcome),
    }
    if format is CompactFormat.json:
        write_lines([json_text(summary)])
    else:
        write_lines(terminal_text(line, soh=None) for line in _text(summary))  # paths and topics, escaped
    if result.skipped or outcome.corrupt:
        raise typer.Exit(ExitCode.FINDINGS)


def _note_missing_start(path: Path) -> None:
    """A note on stderr when the journal does not start at sequence 1: segments removed from its
    front (archived) held records the SOW files therefore lack, as AMPS would rebuild them."""
    from ampsctl.errors import AmpsctlError
    from ampsctl.journal.reader import JournalReader

    try:
        first = JournalReader(path).first_sequence
    except AmpsctlError:  # damage the run skipped (--skip-corrupt) or reported already
        return
    if first > 1:
        sys.stderr.write(f"ampsctl: note: the journal starts at sequence {first}: records written before it "
                         "(in segments removed since) are not in the SOW files\n")


def _text(summary: dict[str, Any]) -> list[str]:
    lines = [
        f"read {_records(summary['records_read'], 'journal record')} from {summary['journal']} (through sequence {summary['last_sequence']}), "
        f"{summary['records_applied']} for SOW topics",
    ]
    if summary["now"] is not None:
        lines.append(f"expired {_records(summary['expired'])} due at {summary['now']}")
    if summary["skipped"]:
        lines.append(f"skipped {_records(summary['skipped'])} that could not be applied")
    if summary["corrupt_skipped"]:
        regions = len(summary["corrupt_skipped"])
        lines.append(f"skipped {regions} damaged journal region{'s' if regions != 1 else ''} (--skip-corrupt; listed on stderr)")
    if summary["engine"] != "local":
        lines.append(f"compacted on {summary['engine']}")
    if not summary["files"]:
        lines.append("the config has no SOW topics: no files written")
    for file in summary["files"]:
        records = _records(file["records"])
        topics = f" in {file['concrete_topics']} topics" if file["concrete_topics"] > 1 else ""
        lines.append(f"  {file['path']}  {records}{topics}  ({file['topic']}, {file['message_type']})")
    return lines


def _records(count: int, word: str = "record") -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")

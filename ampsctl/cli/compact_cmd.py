"""``ampsctl journal compact``: the SOW files a journal implies, per configured SOW topic.

Registered by cli/app.py as ``ampsctl journal compact``. A thin command over
``ampsctl.sow.compact`` (the local engine): load the config, replay the journal up to
``--as-of`` and write one ``<Name>.<MessageType>.sow`` per SOW topic into ``--out``. The
files are ordinary SOW files: ``ampsctl sow query|dump|stats`` read them.

Exit codes: 0 ok, 1 records were skipped (``--keep-going``), 2 usage (an output file exists
without ``--force``, a bad option), 3 invalid input (bad config, damaged journal, a record
that cannot be applied, an unknown bookmark), 4 the output directory cannot be written.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Any

import typer

from ampsctl.errors import ExitCode


class CompactFormat(str, Enum):
    text = "text"
    json = "json"


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
) -> None:
    """Build the SOW files of every SOW topic from a journal, as of a point in time.

    Replays publish, delta_publish (merged), sow_delete and expire records in order,
    processes expirations due at --now, and writes <Name>.<MessageType>.sow per
    SOW/Topic of the config (a Pattern topic's concrete topics share one file).
    Exit codes: 0 ok, 1 records skipped (--keep-going), 2 usage, 3 invalid input,
    4 the output cannot be written.
    """
    from ampsctl.cli.config_cmd import parse_env
    from ampsctl.cli.output import json_text, write_lines
    from ampsctl.cli.sow_cmd import _time, progress_bar
    from ampsctl.config.loader import load_config
    from ampsctl.config.model import ConfigModel
    from ampsctl.journal.bookmarks import format_timestamp
    from ampsctl.journal.reader import JournalReader
    from ampsctl.sow.compact import compact as run
    from ampsctl.sow.errors import ReplayError
    from ampsctl.sow.spec import topic_specs

    specs = topic_specs(ConfigModel(load_config(str(config), parse_env(env))))
    skipped: list[ReplayError] = []

    def report(exc: ReplayError) -> None:
        skipped.append(exc)
        sys.stderr.write(f"ampsctl: skipped: {exc.message}\n")

    total = sum(segment.records for segment in JournalReader(path).segments) if sys.stdout.isatty() else 0
    with progress_bar(total, "compacting") as advance:
        result = run(path, specs, out, as_of=as_of, now=_time("--now", now), overwrite=force,
                     on_error=report if keep_going else None, progress=advance)
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
    }
    if format is CompactFormat.json:
        write_lines([json_text(summary)])
    else:
        write_lines(_text(summary))
    if result.skipped:
        raise typer.Exit(ExitCode.FINDINGS)


def _text(summary: dict[str, Any]) -> list[str]:
    lines = [
        f"read {_records(summary['records_read'], 'journal record')} from {summary['journal']} (through sequence {summary['last_sequence']}), "
        f"{summary['records_applied']} for SOW topics",
    ]
    if summary["now"] is not None:
        lines.append(f"expired {_records(summary['expired'])} due at {summary['now']}")
    if summary["skipped"]:
        lines.append(f"skipped {_records(summary['skipped'])} that could not be applied")
    if not summary["files"]:
        lines.append("the config has no SOW topics: no files written")
    for file in summary["files"]:
        records = _records(file["records"])
        topics = f" in {file['concrete_topics']} topics" if file["concrete_topics"] > 1 else ""
        lines.append(f"  {file['path']}  {records}{topics}  ({file['topic']}, {file['message_type']})")
    return lines


def _records(count: int, word: str = "record") -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")

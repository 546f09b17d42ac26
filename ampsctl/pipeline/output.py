"""Writing pipeline results: compacted SOW topics as Parquet/JSONL, and journal exports.

Compaction output (``write_groups``): one file per SOW topic, named like its SOW file with
``.parquet`` or ``.jsonl`` instead of ``.sow`` (``orders.json.parquet``), one row per stored
record: topic (the concrete topic), sow_key, payload, sequence, timestamp, expiration,
expires_at. Both engines write it on the driver from the same ``TopicGroup`` objects they
would write a SOW file from, so the engines cannot differ here. Parquet keeps the payload as
bytes and times as UTC TIMESTAMP(µs); JSONL gives the payload as text (``payload_base64``
when it is not UTF-8) and times as AMPS timestamps (``20260101T000000.000000Z``).

Journal export (``export_*``): every record, the columns of the ``ampsctl-journal`` source.
Parquet goes through Spark (a directory of part files, one or more per segment). JSONL lines
are exactly ``journal dump --format jsonl`` lines (``journal.jsonl.record_to_json``), so an
export imports back with ``journal import``; the local engine writes ``part-00000.jsonl``,
Spark one ``part-*.txt`` per task.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ampsctl.errors import EnvironmentProblem, UsageError
from ampsctl.journal.bookmarks import timestamp_value
from ampsctl.pipeline.jobs import CompactJob, Engine, ExportJob, ExportOutcome, OutputFormat
from ampsctl.sow.compact import CompactedFile, check_targets, file_name
from ampsctl.sow.spec import TopicSpec
from ampsctl.sow.store import TopicGroup

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


def check_groups_out(specs: Sequence[TopicSpec], out: str | os.PathLike[str], output: OutputFormat, *,
                     overwrite: bool) -> list[Path]:
    """The files ``write_groups`` will write; a UsageError, before any work, when ``out`` is a
    file or a target exists without ``overwrite`` (both engines call it before compacting)."""
    if Path(out).exists() and not Path(out).is_dir():
        raise UsageError(f"--out {out} is a file, not a directory",
                         hint=f"give a directory for the {output.value} files (it is created if missing)")
    suffix = "." + output.value
    targets = [Path(out) / (file_name(spec)[: -len(".sow")] + suffix) for spec in specs]
    for target in targets:
        if target.exists() and not overwrite:
            raise UsageError(f"{target} already exists", hint="pass --force to replace existing files, or pick another --out")
    return targets


def check_compact_out(job: CompactJob) -> list[Path]:
    """The files compacting ``job`` writes (SOW files, or what ``write_groups`` writes); a
    UsageError when ``out`` is a file or a target exists without ``overwrite``. Light (no
    pyspark), so the Spark engine calls it before Spark is imported or started."""
    if job.output is not OutputFormat.SOW:
        return check_groups_out(job.specs, job.out, job.output, overwrite=job.overwrite)
    if Path(job.out).exists() and not Path(job.out).is_dir():
        raise UsageError(f"--out {job.out} is a file, not a directory", hint="give a directory for the SOW files (it is created if missing)")
    targets = [Path(job.out) / file_name(spec) for spec in job.specs]
    check_targets(targets, job.overwrite)
    return targets


def write_groups(groups: Sequence[TopicGroup], out: str | os.PathLike[str], output: OutputFormat, *,
                 overwrite: bool) -> list[CompactedFile]:
    """Write each group's records to ``out/<Name>.<MessageType>.<parquet|jsonl>``."""
    targets = check_groups_out([group.spec for group in groups], out, output, overwrite=overwrite)
    try:
        Path(out).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(Path(out), exc) from None
    files = []
    for group, target in zip(groups, targets, strict=True):
        rows = sorted(_rows(group), key=lambda row: (row["topic"], row["sow_key"]))
        temporary = target.with_name(target.name + ".tmp")
        try:
            if output is OutputFormat.PARQUET:
                _write_parquet(temporary, rows, group.spec)
            else:
                _write_jsonl(temporary, rows)
            temporary.replace(target)
        except OSError as exc:
            temporary.unlink(missing_ok=True)
            raise _unwritable(target, exc) from None
        files.append(CompactedFile(group.spec.name, group.spec.message_type, str(target), len(rows), len(group.topics)))
    return files


def _unwritable(path: Path, exc: OSError) -> EnvironmentProblem:
    reason = "a part of the path is a file, not a directory" if isinstance(exc, (FileExistsError, NotADirectoryError)) \
        else exc.strerror or str(exc)
    return EnvironmentProblem(f"cannot write {path}: {reason}", code="IO",
                              hint="check that --out is a directory you can write to (or a path where one can be created)")


def groups_from_files(specs: Sequence[TopicSpec], paths: Sequence[str]) -> list[TopicGroup]:
    """TopicGroups loaded back from the SOW files the local engine wrote."""
    from ampsctl.sow.checkpoint import load_group

    groups = []
    for spec, path in zip(specs, paths, strict=True):
        group = TopicGroup(spec)
        load_group(path, group)
        groups.append(group)
    return groups


def _rows(group: TopicGroup) -> Iterator[dict[str, Any]]:
    for topic in group.topics.values():
        for record in topic.records():
            yield {"topic": record.topic, "sow_key": record.key, "payload": record.payload, "sequence": record.sequence,
                   "timestamp": record.timestamp, "expiration": record.expiration, "expires_at": record.expires_at}


SPEC_METADATA = b"ampsctl.spec"  # the topic's spec (TopicSpec.to_json), as a SOW file's meta keeps it


def _write_parquet(path: Path, rows: list[dict[str, Any]], spec: TopicSpec) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise EnvironmentProblem("Parquet output needs pyarrow, which is not installed", code="NO_PYARROW",
                                 hint="pip install 'ampsctl[spark]'") from None
    schema = pa.schema([
        pa.field("topic", pa.string(), False), pa.field("sow_key", pa.string(), False), pa.field("payload", pa.binary(), False),
        pa.field("sequence", pa.int64(), False), pa.field("timestamp", pa.timestamp("us", tz="UTC"), False),
        pa.field("expiration", pa.int64()), pa.field("expires_at", pa.timestamp("us", tz="UTC")),
    ], metadata={SPEC_METADATA: json.dumps(spec.to_json(), sort_keys=True).encode()})  # sow query reads it (spark_sow)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with open(path, "wb") as stream:
        for row in rows:
            stream.write(orjson.dumps(jsonl_row(row)) + b"\n")


def jsonl_row(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    payload = out.pop("payload")
    try:
        out["payload"] = payload.decode("utf-8")
    except UnicodeDecodeError:
        out["payload_base64"] = base64.b64encode(payload).decode("ascii")
    out["timestamp"] = timestamp_value(row["timestamp"])
    out["expires_at"] = timestamp_value(row["expires_at"]) if row["expires_at"] is not None else None
    return out


# ------------------------------------------------------------------ journal export


def check_export_out(out: Path, overwrite: bool) -> None:
    """UsageError when ``out`` exists without ``overwrite``; EnvironmentProblem when it cannot
    be created. Replaces nothing, so the Spark engine checks it before Spark starts."""
    if out.exists():
        if not overwrite:
            raise UsageError(f"{out} already exists", hint="pass --force to replace it, or pick another --out")
        return  # _prepare replaces it when the export starts
    _probe(out)


def _prepare(out: Path, overwrite: bool) -> None:
    check_export_out(out, overwrite)
    if out.exists():
        if out.is_dir():
            shutil.rmtree(out)
        else:
            out.unlink()
        _probe(out)


def _probe(out: Path) -> None:
    try:  # made and removed again: Spark wants to create it, and fails with a Java stack trace where it cannot
        out.parent.mkdir(parents=True, exist_ok=True)
        out.mkdir()
        out.rmdir()
    except OSError as exc:
        raise _unwritable(out, exc) from None


@contextmanager
def _removed_on_failure(out: Path) -> Iterator[None]:
    """A failed export (damage, Ctrl-C) leaves no half-written directory behind."""
    try:
        yield
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise


def export_local(job: ExportJob) -> ExportOutcome:
    """JSONL export without Spark: the records of ``JournalReader.scan`` as dump lines."""
    from ampsctl.journal.jsonl import record_to_json
    from ampsctl.journal.reader import JournalReader

    if job.output is not OutputFormat.JSONL:
        raise UsageError("the local engine exports JSONL only", hint="use --engine spark for Parquet")
    if job.skip_corrupt:
        raise UsageError("--skip-corrupt needs --engine spark", hint="the local reader stops at damage")
    reader = JournalReader(job.journal)  # opened first: a bad journal leaves no half-made output
    out = Path(job.out)
    _prepare(out, job.overwrite)
    out.mkdir()
    target = out / "part-00000.jsonl"
    count = 0
    with _removed_on_failure(out), open(target, "wb") as stream:
        for record in reader.scan():
            stream.write(orjson.dumps(record_to_json(record)) + b"\n")
            count += 1
    return ExportOutcome(str(out), count, [str(target)], Engine.LOCAL)


def export_spark(spark: SparkSession, job: ExportJob, *, progress: AbstractContextManager[Any] | None = None) -> ExportOutcome:
    """Parquet or JSONL export through the ``ampsctl-journal`` source, one task per segment."""
    from pyspark.sql import functions as F

    from ampsctl.pipeline.journal_source import NAME, scan_damage
    from ampsctl.pipeline.errors import translated

    out = Path(job.out)
    _prepare(out, job.overwrite)
    frame = spark.read.format(NAME).option("skip_corrupt", str(job.skip_corrupt).lower()).load(str(job.journal))
    with _removed_on_failure(out), progress or nullcontext(), translated():
        if job.output is OutputFormat.PARQUET:
            frame.write.parquet(str(out))
        else:
            frame.select(F.col("sequence"), F.unix_micros("timestamp").alias("ts"), "command", "topic", "message_type",
                         "payload", "sow_key", "expiration", "correlation_id", "client_name", "publisher_sequence"
                         ).mapInArrow(_jsonl_lines, "value STRING").write.text(str(out))
        count = spark.read.parquet(str(out)).count() if job.output is OutputFormat.PARQUET else spark.read.text(str(out)).count()
    files = sorted(str(path) for path in out.iterdir() if path.name.startswith("part-"))
    corrupt = scan_damage(spark, job.journal) if job.skip_corrupt else []
    return ExportOutcome(str(out), count, files, Engine.SPARK, corrupt)


def _jsonl_lines(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    from ampsctl.journal.jsonl import record_to_json
    from ampsctl.pipeline.spark_compact import row_record

    for batch in batches:
        lines = [orjson.dumps(record_to_json(row_record(row))).decode() for row in batch.to_pylist()]
        yield pa.RecordBatch.from_pydict({"value": lines}, schema=pa.schema([pa.field("value", pa.string())]))

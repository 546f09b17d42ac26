"""``ampsctl journal import|dump|verify|replay``: write, read, check and replay transaction logs (journals).

Thin commands over ``ampsctl.journal``, imported inside each command so ``ampsctl --help``
stays cheap (tests/cli/test_startup.py). ``journal compact`` lives in compact_cmd.py.

Output contract (golden files in tests/cli/golden/journal/):
* ``import`` writes a new journal from JSON Lines (``ampsctl.journal.jsonl``) and prints a
  summary; a bad line stops it with ``FILE:LINE`` (exit 3) and leaves no journal behind.
* ``dump`` prints records in sequence order: text (two lines per record), ``json`` (an array)
  or ``jsonl`` (the import format, so a dump imports back). Damage stops it with the segment
  and offset after the records before it were printed (exit 3).
* ``verify`` prints every problem with its file and offset and exits 1 if there is any; a torn
  tail is a note, not a problem (the writer cuts it when it next opens the journal).
* ``replay`` republishes records to a broker (``ampsctl.client.replay``, paced by
  ``ampsctl.client.pacing``) and prints a summary; ``--to`` is the broker's URI there, and the
  end position is ``--until`` (``dump``'s ``--to``).
* Rich progress (on stderr) only when stdout is a terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import typer

from ampsctl.cli import pipeline_cli
from ampsctl.cli.client_cmd import seconds_not_nan as _seconds_not_nan
from ampsctl.cli.output import json_array, json_text, terminal_text, write_lines

from ampsctl.errors import AmpsctlError, EnvironmentProblem, ExitCode, InputError, UsageError
from ampsctl.lines import stdin_bytes

if TYPE_CHECKING:
    from ampsctl.journal.reader import JournalReader
    from ampsctl.journal.record import JournalRecord

app = typer.Typer(help="Import, dump, verify and compact ampsctl transaction logs (journals).", no_args_is_help=True)

PATH_HELP = "A journal directory, or one NNNNNNNN.journal segment file."
POSITION_HELP = (
    "a bookmark (h|seq|; 0 is the beginning, 0|1| the end) or a UTC timestamp "
    "(20261122T093000.123456Z or 2026-11-22T09:30:00Z)"
)


class DumpFormat(str, Enum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


class ReportFormat(str, Enum):
    text = "text"
    json = "json"


# --------------------------------------------------------------------------------- import


@app.command("import")
def import_command(
    source: str = typer.Argument(..., metavar="FILE.jsonl", help="JSON Lines input, one record per line (- is stdin)."),
    out: Path = typer.Option(..., "--out", "-o", metavar="DIR", help="Directory for the new journal: must not exist or be empty."),
    start: str = typer.Option("20260101T000000Z", "--start", metavar="TIMESTAMP", help="Timestamp of the first record when it has none."),
    step_us: int = typer.Option(1000, "--step-us", min=0, help="µs added to the previous timestamp for a record without one."),
    segment_size: str = typer.Option("64MB", "--segment-size", metavar="SIZE", help="Start a new segment file at this size (64MB = 64 MiB)."),
    format: ReportFormat = typer.Option(ReportFormat.text, "--format", "-f", help="Summary format."),
) -> None:
    """Write a new journal from JSON Lines (demos, tests, migrations).

    Each non-blank line is one JSON object:

    \b
      {"command":"publish","topic":"orders","message_type":"json",
       "data":{"id":1,"qty":5},"sow_key":"1","client_name":"pub-1"}
      {"command":"delta_publish","topic":"orders","data":{"id":1,"qty":6}}
      {"command":"publish","topic":"fix-orders","message_type":"fix",
       "payload":"35=D\\u000155=IBM\\u0001"}
      {"command":"sow_delete","topic":"orders","filter":"/qty > 100"}
      {"command":"sow_delete","topic":"orders","keys":["1","2"]}
      {"command":"expire","topic":"orders","sow_key":"1"}

    command: publish (default), delta_publish, sow_delete or expire. topic is
    required; message_type defaults to json. A publish or delta_publish has
    exactly one of data (a JSON object), payload (message text) or
    payload_base64; json, xml, fix and nvfix messages are checked. A
    sow_delete has one of filter, keys or data (the message whose keys name
    the record). Optional: sow_key, expiration (seconds, 0 = never),
    correlation_id, client_name, publisher_sequence, timestamp (µs since the
    epoch, or AMPS/ISO-8601 text, UTC). A record without a timestamp gets the
    previous one's plus --step-us, the first one --start: the same file always
    gives the same journal. sequence and bookmark (from `journal dump --format
    jsonl`) are ignored; any other field is an error. See docs/formats.md.

    Exit codes: 0 ok, 2 usage (DIR not empty), 3 invalid input (the line is
    named; nothing is written), 4 the directory cannot be written.
    """
    from ampsctl.gcpause import paused_gc
    from ampsctl.journal.jsonl import Clock, parse_lines
    from ampsctl.journal.writer import FsyncPolicy, JournalWriter

    clock = Clock(_option_time("--start", start), step_us)
    size = _option_size(segment_size)
    created = _new_directory(out)
    name = "<stdin>" if source == "-" else source
    writer = None
    try:
        with _input(source) as stream, _progress(_size_of(source), "importing") as advance:
            writer = JournalWriter.open(out, segment_bytes=size, fsync=FsyncPolicy.GROUP)
            with paused_gc():
                count = 0
                for batch in _batched(parse_lines(_counted(stream, advance), name, clock), 1000):
                    writer.append_many(batch)
                    count += len(batch)
            if not count:
                raise InputError(f"no records in {name}", code="JOURNAL_JSONL",
                                 hint='give one JSON object per line, e.g. {"topic":"orders","data":{"id":1}}')
            writer.close()
    except BaseException as exc:
        if writer is not None:
            _abandon(writer)
        _remove_journal(out, created)
        # a write failed: the writer's message speaks of records kept, but none are (an open that
        # failed, such as an --out under a file, keeps its own message and hint: no journal was made)
        if writer is not None and isinstance(exc, EnvironmentProblem):
            raise EnvironmentProblem(f"{exc.message.split('; records up to')[0]}; nothing was imported (the partial "
                                     "journal was removed)", code=exc.code,
                                     hint="fix the cause (free disk space, permissions) or give another --out, and run the import again") from None
        raise
    _import_summary(out, format)


def _import_summary(out: Path, format: ReportFormat) -> None:
    from ampsctl.journal.reader import JournalReader

    reader = JournalReader(out)
    segments = reader.segments
    summary = {
        "directory": str(out),
        "records": sum(s.records for s in segments),
        "first_sequence": reader.first_sequence,
        "last_sequence": reader.last_sequence,
        "segments": len(segments),
        "bytes": sum(s.bytes for s in segments),
    }
    if format is ReportFormat.json:
        _write_line(json_text(summary))
        return
    _write_text(f"imported {_plural(summary['records'], 'record')} into {out}: sequences {summary['first_sequence']} to "
                f"{summary['last_sequence']}, {_plural(summary['segments'], 'segment')}, {summary['bytes']} bytes")


# --------------------------------------------------------------------------------- dump


@app.command("dump")
def dump_command(
    path: str = typer.Argument(..., metavar="PATH", help=PATH_HELP),
    from_: str | None = typer.Option(None, "--from", metavar="BOOKMARK|TIMESTAMP",
                                     help=f"Start after this bookmark, or at the first record at or after this time: {POSITION_HELP}."),
    to: str | None = typer.Option(None, "--to", metavar="BOOKMARK|TIMESTAMP",
                                  help="Stop after this bookmark's record, or before the first record later than this time."),
    topic: str | None = typer.Option(None, "--topic", metavar="REGEX", help="Only topics this regular expression finds (unanchored, as in AMPS)."),
    filter_: str | None = typer.Option(None, "--filter", metavar="EXPR", help="Only publish and delta_publish records whose message matches this AMPS filter."),
    format: DumpFormat = typer.Option(DumpFormat.text, "--format", "-f", help="text (two lines per record), json (an array) or jsonl (the import format)."),
) -> None:
    """Print journal records in sequence order.

    The text format shows FIX field separators as |. --filter reads each
    message with its type's codec (json, xml, fix, nvfix); records it cannot
    parse do not match and are counted on stderr. A torn tail (an incomplete
    last record) is noted on stderr and not printed. Exit codes: 0 ok, 2 a
    --from or --to that is neither a bookmark nor a timestamp, or a --to before
    --from, 3 the journal is damaged (after the records before the damage are printed), a bookmark is
    not in it, or the regex or filter is invalid.
    """
    from ampsctl.journal.jsonl import record_to_json
    from ampsctl.journal.matching import PayloadFilter

    reader = _open_reader(path)
    bounds = _bounds(reader, from_, to, "--to")
    topics = _topics(topic)
    selector = PayloadFilter(filter_) if filter_ and not filter_.isspace() else None  # blank: none, as sow query
    records: Iterable[JournalRecord] = reader.scan(topics=topics, **bounds)
    if selector is not None:
        records = filter(selector, records)
    if format is DumpFormat.text:
        write_lines(_text_record(record) for record in records)
    elif format is DumpFormat.jsonl:
        write_lines(json_text(record_to_json(record)) for record in records)
    else:
        write_lines(json_array(json_text(record_to_json(record)) for record in records))
    if selector is not None and selector.untested:
        reasons = ", ".join(f"{why}: {count}" for why, count in sorted(selector.untested.items()))
        untested = _plural(sum(selector.untested.values()), "record")
        _write_text(f"note: {untested} could not be tested by --filter ({reasons})", err=True)
    _torn_note(reader)


def _bounds(reader: JournalReader, start: str | None, stop: str | None, option: str) -> dict[str, Any]:
    """The scan bounds of --from and --to (--until); a range that ends before it starts is a
    usage error, not an empty answer that reads like "no such records"."""
    bounds = {**_start(reader, start), **_stop(reader, stop, option)}
    after, end = bounds.get("after_sequence"), bounds.get("to_sequence")
    since, until = bounds.get("from_timestamp"), bounds.get("to_timestamp")
    if (after is not None and end is not None and end < after) or (since is not None and until is not None and until < since):
        raise UsageError(f"{option} {stop} is before --from {start}: the range holds nothing",
                         hint=f"--from is where the records start (after that bookmark), {option} where they end; swap them")
    return bounds


def _start(reader: JournalReader, text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    position = _position("--from", text)
    if position.timestamp is not None:
        return {"from_timestamp": position.timestamp}
    if position.now:
        return {"after_sequence": reader.last_sequence}
    return {"after_sequence": reader.seek_bookmark(text)}


def _stop(reader: JournalReader, text: str | None, option: str = "--to") -> dict[str, Any]:
    if text is None:
        return {}
    position = _position(option, text)
    if position.timestamp is not None:
        return {"to_timestamp": position.timestamp}
    if position.now:
        return {"to_sequence": reader.last_sequence}
    return {"to_sequence": reader.seek_bookmark(text)}


def _position(option: str, text: str) -> Any:
    from ampsctl.journal.bookmarks import parse_position

    try:
        return parse_position(text)
    except InputError as exc:
        raise UsageError(f"{option}: {exc.message}", hint=exc.hint) from None


def _topics(pattern: str | None) -> Callable[[str], bool] | None:
    """The --topic test, or None; an invalid regex is an InputError (exit 3) naming --topic."""
    if pattern is None:
        return None
    from ampsctl.filter.errors import FilterError
    from ampsctl.journal.matching import topic_matcher

    try:
        return topic_matcher(pattern)
    except FilterError as exc:
        raise InputError(f"--topic: {exc.message}", code="TOPIC",
                         hint="--topic takes a PCRE-style regex, searched anywhere in the topic name: escape literal "
                              "metacharacters such as ( [ . * + ? with a backslash") from None


def _text_record(record: JournalRecord) -> str:
    from ampsctl.journal.bookmarks import timestamp_value
    from ampsctl.journal.jsonl import delete_criteria
    from ampsctl.journal.record import Command

    # The first line's fields escape newlines and tabs too: a record is at most two lines.
    parts = [str(record.sequence), str(timestamp_value(record.timestamp)), record.command.label,
             _shown(record.topic, lines=False), _shown(record.message_type, lines=False)]
    for label, value in (("sow_key", record.sow_key), ("expiration", record.expiration), ("correlation_id", record.correlation_id),
                         ("client_name", record.client_name), ("publisher_sequence", record.publisher_sequence)):
        if value is not None:
            parts.append(f"{label}={_shown(str(value), lines=False)}")
    parts.append(f"bm={record.bookmark}")
    body = _payload_text(record.payload)
    if record.command is Command.SOW_DELETE:
        criteria = delete_criteria(record.payload)
        if criteria is not None and criteria.filter is not None:
            body = "filter " + _shown(criteria.filter).replace("\n", "\n    ")
        elif criteria is not None and criteria.keys is not None:
            body = "keys " + ", ".join(_shown(key, lines=False) for key in criteria.keys)
        elif criteria is not None:
            body = f"data {_payload_text(criteria.data or b'')}"
    head = " ".join(parts)
    return f"{head}\n    {body}" if body else head


def _payload_text(payload: bytes) -> str:
    return _shown(payload.decode("utf-8", "backslashreplace")).replace("\n", "\n    ")


def _shown(text: str, *, lines: bool = True) -> str:
    """Text of a record for a terminal (``output.terminal_text``), newlines and tabs kept when ``lines``."""
    return terminal_text(text, lines=lines)


# --------------------------------------------------------------------------------- replay


@app.command("replay")
def replay_command(
    path: str = typer.Argument(..., metavar="PATH", help=PATH_HELP),
    to: str = typer.Option(..., "--to", metavar="URI", help="The broker to publish to: tcp://host:port/amps/json."),
    speed: float | None = typer.Option(None, "--speed", metavar="X",
                                       help="Replay the recorded pacing X times as fast (default 1; inf: no waiting)."),
    rate: float | None = typer.Option(None, "--rate", metavar="N", help="Send N records per second instead of the recorded pacing."),
    max_gap: float = typer.Option(1.0, "--max-gap", metavar="SECONDS", help="With --speed, wait at most this long between two records."),
    from_: str | None = typer.Option(None, "--from", metavar="BOOKMARK|TIMESTAMP",
                                     help=f"Start after this bookmark, or at the first record at or after this time: {POSITION_HELP}."),
    until: str | None = typer.Option(None, "--until", metavar="BOOKMARK|TIMESTAMP",
                                     help="Stop after this bookmark's record, or before the first record later than this time."),
    topic: str | None = typer.Option(None, "--topic", metavar="REGEX", help="Only topics this regular expression finds (unanchored)."),
    name: str | None = typer.Option(None, "--name", "-n", help="Client name; default ampsctl-replay-HOST-PID."),
    window: int = typer.Option(1000, "--window", min=1, help="Most records sent and not yet acknowledged."),
    connect_timeout: float = typer.Option(10.0, "--connect-timeout", min=0.001, metavar="SECONDS", callback=_seconds_not_nan,
                                          help="Give up connecting after this long (exit 4)."),
    format: ReportFormat = typer.Option(ReportFormat.text, "--format", "-f", help="Summary format."),
) -> None:
    """Republish a journal's records to a broker, paced like the original.

    publish and delta_publish records are published again (topic, data,
    SowKey, expiration, CorrelationId); sow_delete records become
    sow_delete commands of the same form; expire records and records of
    other message types than json are skipped (and counted). Pacing: the
    recorded gaps divided by --speed (default 1), each cut to --max-gap
    seconds, or a fixed --rate. Everything asks for a persisted ack and the
    run ends with a flush, so exit 0 means the broker persisted every record.
    Exit codes: 0 ok, 1 the broker refused a record (named), 2 usage (URI,
    --from/--until), 3 the journal is damaged or a bookmark not in it, 4 the
    broker cannot be reached.
    """
    from ampsctl.client.pacing import Pace
    from ampsctl.client.replay import replay
    from ampsctl.client.session import Target

    target = Target(to, name, connect_timeout)
    pace = Pace(speed=1.0 if speed is None and rate is None else speed, rate=rate, max_gap=max_gap)
    reader = _open_reader(path)
    bounds = _bounds(reader, from_, until, "--until")
    topics = _topics(topic)
    total = sum(1 for _ in reader.scan_views(topics=topics, **bounds)) if sys.stdout.isatty() else 0
    with _progress(total, "replaying", bytes_=False) as advance:
        summary = replay(reader.scan(topics=topics, **bounds), target, pace, window=window, progress=advance)
    if format is ReportFormat.json:
        _write_line(json_text({
            "to": target.shown, "records": summary.total, "sent": dict(summary.sent), "skipped": dict(summary.skipped),
            "first_sequence": summary.first_sequence, "last_sequence": summary.last_sequence,
            "elapsed_s": round(summary.elapsed, 6), "rate": round(summary.rate, 1),
        }))
    else:
        kinds = ", ".join(f"{count} {label}" for label, count in sorted(summary.sent.items()))
        skipped = "; skipped " + ", ".join(f"{count} {why}" for why, count in sorted(summary.skipped.items())) \
            if summary.skipped else ""
        _write_text(f"replayed {_plural(summary.total, 'record')} ({kinds or 'none'}) to {target.shown} in {summary.elapsed:.3f} s, "
                    f"{summary.rate:.0f} records/s{skipped}")
    _torn_note(reader)


# --------------------------------------------------------------------------------- verify


@app.command("verify")
def verify_command(
    path: str = typer.Argument(..., metavar="PATH", help=PATH_HELP),
    format: ReportFormat = typer.Option(ReportFormat.text, "--format", "-f", help="Report format."),
) -> None:
    """Check every segment, record and index file of a journal.

    Reads every byte: checksums, lengths, sequence order within and across
    segments, headers and index files. Every problem is printed with its file
    and byte offset; after damage the check goes on from the next intact
    record. A torn tail (an incomplete last record left by a crash) is noted
    but is not a problem. Exit codes: 0 no problems, 1 problems found, 3 the
    path is not a journal (for example a text file or an unsupported format
    version).
    """
    reader = _open_reader(path)
    segments = reader.segments
    total = sum(s.bytes for s in segments)
    with _progress(total, "verifying") as advance:
        problems = reader.verify(progress=advance)
    torn = reader.torn_tail
    if format is ReportFormat.json:
        _write_line(json_text({
            "path": path,
            "ok": not problems,
            "segments": len(segments),
            "records": sum(s.records for s in segments) if not problems else None,  # unknown past damage
            "first_sequence": reader.first_sequence,
            "last_sequence": reader.last_sequence,
            "bytes": total,
            "problems": [{"path": p.path, "offset": p.offset, "kind": p.kind.value, "reason": p.reason, "length": p.length}
                         for p in problems],
            "torn_tail": None if torn is None else {"path": torn.path, "offset": torn.offset, "length": torn.length,
                                                     "reason": torn.reason},
        }))
    else:
        for problem in problems:
            _write_text(f"{problem.path}: offset {problem.offset}: {problem.kind.value}: {problem.reason}")
        if problems:
            _write_text(f"{_plural(len(problems), 'problem')} in {_plural(len(segments), 'segment')} ({total} bytes)")
        else:
            _write_text(f"ok: {_plural(sum(s.records for s in segments), 'record')} in {_plural(len(segments), 'segment')} "
                        f"(sequences {reader.first_sequence} to {reader.last_sequence}, {total} bytes)")
        _torn_note(reader, err=False)
    if problems:
        raise typer.Exit(ExitCode.FINDINGS)


# --------------------------------------------------------------------------------- helpers


def _open_reader(path: str) -> JournalReader:
    from ampsctl.journal.reader import JournalReader

    reader = JournalReader(path)
    if not reader.segments and reader.torn_tail is None:
        raise InputError(f"no journal segments in '{path}'", code="JOURNAL_EMPTY",
                         hint="a journal directory holds NNNNNNNN.journal files written by the broker or `ampsctl journal import`")
    return reader


def _torn_note(reader: JournalReader, *, err: bool = True) -> None:
    torn = reader.torn_tail
    if torn is not None:
        _write_text(f"note: {torn}; it is not part of the journal (the writer cuts it when it next opens the journal)", err=err)


def _option_time(option: str, text: str) -> int:
    from ampsctl.journal.bookmarks import parse_timestamp

    try:
        return parse_timestamp(text)
    except InputError as exc:
        raise UsageError(f"{option}: {exc.message}", hint=exc.hint) from None


def _option_size(text: str) -> int:
    from ampsctl.journal.writer import MIN_SEGMENT_BYTES
    from ampsctl.units import parse_bytes

    try:
        size = parse_bytes(text).high
    except AmpsctlError as exc:
        raise UsageError(f"--segment-size: {exc.message}", hint=exc.hint) from None
    if size < MIN_SEGMENT_BYTES:
        raise UsageError(f"--segment-size: {text} is too small", hint=f"give at least {MIN_SEGMENT_BYTES} bytes, e.g. 64MB")
    return size


def _new_directory(out: Path) -> bool:
    """Check that ``out`` can take a new journal; True when it does not exist yet."""
    if not out.exists():
        return True
    if not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory", hint="give a new directory for the journal")
    if any(out.iterdir()):
        raise UsageError(f"--out {out} is not empty", hint="import writes a new journal: give a new or empty directory")
    return False


def _abandon(writer: Any) -> None:
    try:
        writer.close()
    except AmpsctlError:
        pass


def _remove_journal(out: Path, created: bool) -> None:
    """Remove what a failed import wrote (``out`` was new or empty before)."""
    if not out.is_dir():
        return
    for entry in out.iterdir():
        if entry.suffix in (".journal", ".index", ".tmp") or entry.name == "journal.lock":
            entry.unlink(missing_ok=True)
    if created:
        try:
            out.rmdir()
        except OSError:
            pass


@contextmanager
def _input(source: str) -> Iterator[BinaryIO]:
    if source == "-":
        yield stdin_bytes()
        return
    try:
        stream = open(source, "rb")
    except OSError as exc:
        raise InputError(f"cannot read '{source}': {exc.strerror}", code="IO", hint="give an existing JSONL file, or - for stdin") from None
    with stream:
        yield stream


def _size_of(source: str) -> int:
    if source == "-":
        return 0
    try:
        return Path(source).stat().st_size
    except OSError:
        return 0


def _counted(stream: BinaryIO, advance: Callable[[int], None]) -> Iterator[bytes]:
    for line in stream:
        advance(len(line))
        yield line


def _batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


@contextmanager
def _progress(total: int, what: str, *, bytes_: bool = True) -> Iterator[Callable[[int], None]]:
    """``advance(n)`` for a rich progress bar on stderr (n bytes, or n records with ``bytes_=False``),
    shown only when stdout is a terminal."""
    if not total or not sys.stdout.isatty():
        yield lambda done: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    amount = DownloadColumn() if bytes_ else MofNCompleteColumn()
    with Progress(f"[progress.description]{what}", BarColumn(), amount, TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(what, total=total)
        yield lambda done: progress.advance(task, done)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _write_line(text: str, *, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")


def _write_text(text: str, *, err: bool = False) -> None:
    """A line of the text formats: paths, topics and message types from the journal escaped for
    the terminal (``output.terminal_text``), as errors and record dumps are."""
    _write_line(terminal_text(text, lines=True, soh=None), err=err)


# The pipeline's export (Parquet/JSONL, local or Spark) is defined with the other pipeline options.
app.command("export")(pipeline_cli.export)

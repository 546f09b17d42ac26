"""``ampsctl sow query|dump|stats``: SOW files offline, without a broker.

Thin commands over ``ampsctl.sow`` (imported inside each command so ``ampsctl --help`` stays
cheap). Output contract (golden files in tests/cli/golden/sow/):

* A record is shown as ``sow_key``, ``topic``, ``sequence`` (journal sequence of its last
  write), ``timestamp``, ``expiration`` (seconds as published), ``expires_at`` and
  ``message``: the JSON object itself for json topics, else the message text as stored (FIX/NVFIX SOH
  characters are printed as ``|`` in table and text output, kept in json/jsonl/csv). In json and
  jsonl a message that is not UTF-8 text is ``message_base64`` instead, as ``journal dump`` does.
* ``query`` formats: ``table`` (rich, the default; the last line says how many records and
  which index answered), ``json`` (an array), ``jsonl`` (one object per line), ``csv`` (a
  header; with ``--select`` one column per selected field, else a ``message`` column; cells
  exactly as stored, no spreadsheet-formula escaping, which would alter data).
* ``dump``: every record in file order, CRC-checked (``text``, ``json`` with the meta,
  ``jsonl``). ``stats``: what the file holds; ``--verify`` checks every row's CRC and every
  index column against its message.
* Exit codes: 0 ok (also when nothing matches), 2 usage, 3 invalid input (a bad filter, a
  file that is not a SOW file, an unsupported version, a damaged file), 4 an unreadable file.
* Rich progress (on stderr) on long scans only when stdout is a terminal.
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, contextmanager
from enum import Enum
from typing import TYPE_CHECKING, Any

import typer

from ampsctl.cli.output import json_array, json_text, write_lines

from ampsctl.errors import UsageError

if TYPE_CHECKING:
    from ampsctl.sow.payloads import Payloads
    from ampsctl.sow.query import Row
    from ampsctl.sow.record import SowRecord
    from ampsctl.sow.sowfile import SowFile, SowMeta

app = typer.Typer(help="Query, dump and describe SOW files without a broker.", no_args_is_help=True)

FILE_HELP = "A SOW file written by the broker or by `ampsctl journal compact`."
TIME_HELP = "UTC timestamp: 20261122T093000[.123456][Z] or 2026-11-22T09:30:00[Z]."
PROGRESS_ROWS = 200_000  # files with more records than this show a progress bar on a terminal


class QueryFormat(str, Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"


class DumpFormat(str, Enum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


class StatsFormat(str, Enum):
    text = "text"
    json = "json"


@app.command("query")
def query_command(
    file: str = typer.Argument(..., metavar="FILE", help=FILE_HELP),
    filter: str | None = typer.Option(None, "--filter", "-F", metavar="EXPR", help="AMPS filter, e.g. \"/region = 'EMEA' AND /qty > 100\" (default: every record)."),
    select: str | None = typer.Option(None, "--select", "-s", metavar="/a,/b", help="Only these fields of each message (comma-separated paths)."),
    order_by: str | None = typer.Option(None, "--order-by", "-o", metavar="ORDER", help="\"/x DESC, /y\": /field [ASC|DESC] [TEXT], comma-separated."),
    top_n: int | None = typer.Option(None, "--top-n", "-n", min=0, help="At most this many records (after ordering)."),
    key: list[str] | None = typer.Option(None, "--key", "-k", metavar="SOW_KEY", help="Only records with this SOW key (repeatable, or comma-separated)."),
    topic: str | None = typer.Option(None, "--topic", metavar="REGEX", help="Pattern topics: only concrete topics this regex finds."),
    as_of: str | None = typer.Option(None, "--as-of", metavar="TIMESTAMP", help="History topics: the SOW as it was at this time. " + TIME_HELP),
    now: str | None = typer.Option(None, "--now", metavar="TIMESTAMP", help="Leave out records due to expire at this time. " + TIME_HELP),
    format: QueryFormat = typer.Option(QueryFormat.table, "--format", "-f", help="Output format."),
    engine: str = typer.Option("local", "--engine", metavar="local|spark", help="local (default) or spark: filter in Spark (a SOW file, or a Parquet export of `journal compact`)."),
    master: str | None = typer.Option(None, "--master", metavar="URL", help="Spark master URL (Spark engine): local[*] (default), local[N], spark://HOST:PORT, yarn, k8s://..."),
    conf: list[str] | None = typer.Option(None, "--conf", metavar="KEY=VALUE", help="A Spark conf KEY=VALUE (repeatable)."),
    message_type: str | None = typer.Option(None, "--message-type", metavar="TYPE", help="Spark engine, Parquet input: the message type when the file name (NAME.TYPE.parquet) does not say."),
) -> None:
    """Select records of a SOW file with an AMPS filter, like a `sow` query.

    An exact match on the fields of a hash index (the Key fields have one) is an
    indexed lookup; a filter on memo-indexed fields (Index) is pre-filtered in
    SQLite; anything else scans the file. Unordered results come in file order.
    With --engine spark the filter runs in Spark, compiled to Spark SQL; a filter
    Spark cannot express exactly runs on ampsctl's evaluator inside Spark, and a
    note on stderr says so. CSV cells hold the values exactly: one that starts
    with =, +, - or @ is not escaped, so import the file into a spreadsheet as
    text. Exit codes: 0 ok (also when nothing matches), 2 usage,
    3 invalid input (bad filter, not a SOW file, damaged file), 4 the file cannot
    be read, or no Java/pyspark for --engine spark.
    """
    from ampsctl.sow.filequery import query_file
    from ampsctl.sow.query import Query

    keys = tuple(part.strip() for value in key or () for part in value.split(",") if part.strip()) if key else None
    paths = tuple(part.strip() for part in select.split(",") if part.strip()) if select is not None else None
    if paths is not None and not paths:
        raise UsageError("--select needs at least one field path", hint="--select /id,/qty")
    if keys is not None and not keys:
        raise UsageError("--key needs at least one SOW key", hint="--key 635386503454194442 (the sow_key of `sow dump`)")
    query = Query(filter=filter, keys=keys, order_by=order_by, top_n=top_n, select=paths,
                  as_of=_time("--as-of", as_of), now=_time("--now", now), topic=topic)
    if engine not in ("local", "spark"):
        raise UsageError(f"--engine {engine!r} is not local or spark", hint="--engine spark")
    if engine == "local" and (master or conf or message_type):
        raise UsageError("--master, --conf and --message-type need --engine spark", hint="add --engine spark, or drop them")
    if engine == "spark":
        _spark_query(file, query, master, conf, message_type, format, paths)
        return
    with _open(file) as sow, progress_bar(sow.count() if sys.stdout.isatty() else 0, "scanning") as advance:
        result = query_file(sow, query, progress=advance)
        pattern = sow.meta.spec.pattern
    rows = result.rows
    if format is QueryFormat.table:
        _table(rows, result.payloads, pattern, paths)
        _write(f"{_plural(len(rows), 'record')} ({result.strategy})")
    elif format is QueryFormat.csv:
        _csv(rows, result.payloads, paths)
    else:
        objects = (record_object(row.record, row.doc, result.payloads, paths) for row in rows)
        write_lines(json_array(map(json_text, objects)) if format is QueryFormat.json else map(json_text, objects))


def _spark_query(file: str, query: Any, master: str | None, conf: list[str] | None, message_type: str | None,
                 format: QueryFormat, paths: tuple[str, ...] | None) -> None:
    from ampsctl.cli.pipeline_cli import spark_options
    from ampsctl.pipeline.spark_query import fallback_note
    from ampsctl.pipeline.spark_sow import run_query

    def note(reason: str) -> None:
        sys.stderr.write(f"ampsctl: note: {fallback_note(reason)}\n")

    result = run_query(file, query, options=spark_options(master, conf, None), message_type=message_type, on_fallback=note)
    rows = result.rows
    if format is QueryFormat.table:
        _table(rows, result.payloads, result.pattern, paths)
        _write(f"{_plural(len(rows), 'record')} ({result.strategy})")
    elif format is QueryFormat.csv:
        _csv(rows, result.payloads, paths)
    else:
        objects = (record_object(row.record, row.doc, result.payloads, paths) for row in rows)
        write_lines(json_array(map(json_text, objects)) if format is QueryFormat.json else map(json_text, objects))


@app.command("dump")
def dump_command(
    file: str = typer.Argument(..., metavar="FILE", help=FILE_HELP),
    format: DumpFormat = typer.Option(DumpFormat.text, "--format", "-f", help="Output format."),
) -> None:
    """Print every record of a SOW file in file order, each checked against its CRC.

    Exit codes: 0 ok, 3 not a SOW file or damaged (the records before the damage
    are printed), 4 the file cannot be read.
    """
    from ampsctl.sow.payloads import Payloads

    # closing: a reader that leaves early (| head) stops the record generator with the file still
    # open, not later in garbage collection ("Exception ignored ... closed database" on stderr)
    with _open(file) as sow, progress_bar(sow.count() if sys.stdout.isatty() else 0, "dumping") as advance, \
            closing(sow.records()) as stored:
        payloads = Payloads(sow.meta.spec.message_type)
        records = _counted(stored, advance)
        if format is DumpFormat.text:
            write_lines(_text_lines(sow.meta, records, payloads))
        elif format is DumpFormat.jsonl:
            write_lines(json_text(record_object(record, None, payloads)) for record in records)
        else:
            meta = json_text(meta_object(sow.meta, sow.count()))
            body = json_array(json_text(record_object(record, None, payloads)) for record in records)
            write_lines(['{"meta": ' + meta + ',', '"records":', *body, "}"])


@app.command("stats")
def stats_command(
    file: str = typer.Argument(..., metavar="FILE", help=FILE_HELP),
    verify: bool = typer.Option(False, "--verify", help="Also check every record's CRC and index columns (reads the whole file)."),
    format: StatsFormat = typer.Option(StatsFormat.text, "--format", "-f", help="Output format."),
) -> None:
    """Describe a SOW file: its topic, keys, indexes, sequence and record counts.

    Exit codes: 0 ok, 3 not a SOW file, unsupported version or damaged (with
    --verify, any row that fails its check), 4 the file cannot be read.
    """
    import os

    from ampsctl.sow.stats import file_stats

    with _open(file) as sow, progress_bar(sow.count() if verify and sys.stdout.isatty() else 0, "verifying") as advance:
        stats = file_stats(sow, verify=verify, progress=advance)
    stats["bytes"] = os.path.getsize(file)
    if format is StatsFormat.json:
        write_lines([json_text(stats)])
        return
    write_lines(_stats_lines(stats))


# ------------------------------------------------------------------ shared with compact_cmd








@contextmanager
def progress_bar(total: int, what: str) -> Iterator[Callable[[int], None]]:
    """``advance(done)`` for a rich progress bar on stderr when stdout is a terminal and the job is long."""
    if total < PROGRESS_ROWS or not sys.stdout.isatty():
        yield lambda done: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(f"[progress.description]{what}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(what, total=total)
        yield lambda done: progress.update(task, completed=done)


def record_object(record: SowRecord, doc: Any, payloads: Payloads, paths: tuple[str, ...] | None = None) -> dict[str, Any]:
    """A record as the json/jsonl outputs show it (``paths``: the --select that reduced ``doc``).
    A message that is not UTF-8 text (binary types) is ``message_base64``, as ``journal dump``
    writes such a payload: escaped text could not be told apart from a message holding the escape."""
    from ampsctl.journal.bookmarks import format_timestamp

    shown: dict[str, Any] = {
        "sow_key": record.key,
        "topic": record.topic,
        "sequence": record.sequence,
        "timestamp": format_timestamp(record.timestamp),
        "expiration": record.expiration,
        "expires_at": format_timestamp(record.expires_at) if record.expires_at is not None else None,
    }
    if payloads.message_type == "json":
        shown["message"] = _message(record, doc, payloads, paths)
        return shown
    raw = _raw_message(record, doc, payloads, paths)
    try:
        shown["message"] = raw.decode("utf-8")
    except UnicodeDecodeError:
        import base64

        shown["message_base64"] = base64.b64encode(raw).decode("ascii")
    return shown


def meta_object(meta: SowMeta, records: int) -> dict[str, Any]:
    from ampsctl.journal.bookmarks import format_timestamp

    return {
        "path": meta.path,
        "format_version": meta.format_version,
        "spec": meta.spec.to_json(),
        "last_sequence": meta.last_sequence,
        "last_timestamp": format_timestamp(meta.last_timestamp) if meta.last_timestamp is not None else None,
        "history_horizon": format_timestamp(meta.history_horizon) if meta.history_horizon is not None else None,
        "hash_indexes": [list(paths) for paths in meta.hash_paths],
        "memo_indexes": list(meta.memo_paths),
        "records": records,
    }


# ------------------------------------------------------------------ internals


@contextmanager
def _open(path: str) -> Iterator[SowFile]:
    from ampsctl.sow.sowfile import SowFile

    sow = SowFile.open(path)
    try:
        yield sow
    finally:
        sow.close()


def _time(option: str, text: str | None) -> int | None:
    if text is None:
        return None
    from ampsctl.errors import AmpsctlError
    from ampsctl.journal.bookmarks import parse_timestamp

    try:
        return parse_timestamp(text)
    except AmpsctlError as exc:
        raise UsageError(f"{option}: {exc.message}", hint=exc.hint) from None


def _message(record: SowRecord, doc: Any, payloads: Payloads, paths: tuple[str, ...] | None = None) -> Any:
    if payloads.message_type == "json":
        if doc is not None:
            return _exact(record, doc, payloads, paths)
        from ampsctl.errors import InputError

        try:
            return _exact(record, payloads.parse(record.payload), payloads, None)
        except InputError as exc:  # the CRC matched: the file was written with it (not by ampsctl's SOW)
            raise InputError(f"the message of record {record.key!r} (topic {record.topic!r}) is not a JSON object: "
                             f"{exc.message}", code="SOW_MESSAGE",
                             hint="the file holds a message ampsctl would not have stored; rebuild the file from its "
                             "journal (`ampsctl journal compact`)") from None
    return _raw_message(record, doc, payloads, paths).decode("utf-8", "backslashreplace")


def _raw_message(record: SowRecord, doc: Any, payloads: Payloads, paths: tuple[str, ...] | None) -> bytes:
    """The stored message; a document is serialised only when --select reduced it (serialising a
    parsed XML message again would change its quotes, CDATA and declaration)."""
    return payloads.serialize(doc) if doc is not None and paths else record.payload


def _exact(record: SowRecord, doc: Any, payloads: Payloads, paths: tuple[str, ...] | None) -> Any:
    """``doc``, or for a JSON message with a number orjson would write with other text (``1.50``,
    ``1E5``, an integer beyond 64 bits) the stored payload read keeping that text, reduced to
    ``paths`` as ``doc`` was: the output shows numbers as they were published."""
    from ampsctl.messages.json_codec import JSON_EXACT

    if payloads.message_type != "json" or doc is None:
        return doc
    # A --select reduced doc is not what orjson writes for the payload: the byte screen decides.
    exact = JSON_EXACT.keeping_text(record.payload, doc)  # loads_as_written's reading, doc already parsed
    if exact is doc:
        return doc
    return payloads.select(exact, list(paths)) if paths else exact


def _shown(text: str) -> str:
    """Text for the terminal table: FIX's SOH as |, what a terminal would act on escaped (``output.terminal_text``)."""
    from ampsctl.cli.output import terminal_text

    return terminal_text(text)


def _counted(records: Iterable[Any], advance: Callable[[int], None]) -> Iterator[Any]:
    count = 0
    for record in records:
        yield record
        count += 1
        if not count & 0xFFFF:
            advance(count)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _field_value(payloads: Payloads, doc: Any, path: str) -> Any:
    from ampsctl.sow.indexing import field_of

    return payloads.record(doc).get(field_of(path))


def _cell(value: Any) -> str:
    from ampsctl.messages.json_numbers import FloatText, IntText

    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict | FloatText | IntText):
        return json_text(value)  # a number as it was published (1.50, 1E5)
    return str(value)


def _table(rows: list[Row], payloads: Payloads, pattern: bool, paths: tuple[str, ...] | None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(soft_wrap=False, highlight=False)
    if not rows:
        return
    table = Table(box=None, header_style="bold")
    table.add_column("sow_key", no_wrap=True)
    if pattern:
        table.add_column("topic", overflow="fold")
    for column in paths or ("message",):
        table.add_column(column, overflow="fold")
    for row in rows:
        cells = [_shown(row.record.key)] + ([_shown(row.record.topic)] if pattern else [])
        if paths:
            doc = _exact(row.record, row.doc, payloads, paths)
            cells += [_shown(_cell(_field_value(payloads, doc, path))) for path in paths]
        else:
            message = _message(row.record, row.doc, payloads)
            cells.append(_shown(message if isinstance(message, str) else json_text(message)))
        table.add_row(*cells)
    console.print(table, markup=False)


def _csv(rows: list[Row], payloads: Payloads, paths: tuple[str, ...] | None) -> None:
    """Rows end with \n; cells are written exactly, spreadsheet formulas (=, +, -, @) included.

    The csv module quotes a cell holding a character of its line terminator, so with \n a
    lone \r went out unquoted and a reader ended the row there: a row with one is written
    by a writer whose terminator is \r\n, which is then replaced by \n."""
    from ampsctl.journal.bookmarks import format_timestamp

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    spare = io.StringIO()
    careful = csv.writer(spare, lineterminator="\r\n")

    def write(cells: list[Any]) -> None:
        if not any(isinstance(cell, str) and "\r" in cell for cell in cells):
            writer.writerow(cells)
            return
        careful.writerow(cells)
        out.write(spare.getvalue()[:-2] + "\n")
        spare.seek(0)
        spare.truncate()

    write(["sow_key", "topic", "sequence", "timestamp", *(paths or ("message",))])
    for row in rows:
        record = row.record
        cells = [record.key, record.topic, record.sequence, format_timestamp(record.timestamp)]
        if paths:
            doc = _exact(record, row.doc, payloads, paths)
            cells += [_cell(_field_value(payloads, doc, path)) for path in paths]
        else:
            message = _message(record, row.doc, payloads)
            cells.append(message if isinstance(message, str) else json_text(message))
        write(cells)
    sys.stdout.write(out.getvalue())


def _text_lines(meta: SowMeta, records: Iterable[SowRecord], payloads: Payloads) -> Iterator[str]:
    from ampsctl.journal.bookmarks import format_timestamp

    spec = meta.spec
    yield _shown(f"# {meta.path}: topic {spec.name} ({spec.message_type}), format {meta.format_version}, "
                 f"last sequence {meta.last_sequence}")
    for record in records:
        expires = f" expires {format_timestamp(record.expires_at)}" if record.expires_at is not None else ""
        topic = f" {_shown(record.topic)}" if spec.pattern else ""
        message = _message(record, None, payloads)
        text = message if isinstance(message, str) else json_text(message)
        yield f"{_shown(record.key)}{topic} seq {record.sequence} {format_timestamp(record.timestamp)}{expires}  {_shown(text)}"


def _stats_lines(stats: dict[str, Any]) -> Iterator[str]:
    spec = stats["spec"]
    expiration = spec["expiration"]
    rows = [
        ("file", f"{stats['path']} ({_plural(stats['bytes'], 'byte')})"),
        ("format", f"ampsctl-sow version {stats['format_version']}"),
        ("topic", f"{spec['name']} ({spec['message_type']})" + (f", Pattern {spec['regex'] or spec['name']}" if spec["pattern"] else "")),
        ("key fields", ", ".join(spec["key_fields"]) or "none (publishers supply SowKeys)"),
        ("key domain", spec["key_domain"] or "the topic name"),
        ("hash indexes", "; ".join(", ".join(index) for index in stats["hash_indexes"]) or "none"),
        ("memo indexes", ", ".join(stats["memo_indexes"]) or "none"),
        ("expiration", "disabled" if expiration is None else ("enabled (per message only)" if expiration == 0 else f"{expiration}s default")),
        ("history", "none" if spec["history_window"] is None else f"window {spec['history_window']}s, granularity {spec['history_granularity']}s"),
        ("durability", f"{'persistent' if spec['persistent'] else 'transient'}, recovery point {spec['recovery_point']}"),
        ("last sequence", str(stats["last_sequence"])),
        ("last write", stats["last_timestamp"] or "none"),
        ("records", str(stats["records"])),
    ]
    if spec["pattern"]:
        rows.append(("topics", ", ".join(f"{name}: {count}" for name, count in stats["topics"].items()) or "none"))
    rows.append(("expiring", str(stats["expiring"]) + (f" (next {stats['next_expiry']})" if stats["next_expiry"] else "")))
    if spec["history_window"] is not None:
        rows.append(("history states", str(stats["history_states"])))
    if stats.get("verified") is not None:
        rows.append(("verified", stats["verified"]))
    width = max(len(name) for name, _ in rows)
    return (f"{name:<{width}}  {_shown(value)}" for name, value in rows)  # a path, a Pattern: escaped for the terminal


def _write(text: str) -> None:
    sys.stdout.write(text + "\n")

"""``ampsctl affinity simulate``: replay subscription events through the faucet engine.

The settings come from a config's amps-action-on-manifold-affinity action, or from flags
(which also override the config's values). Output is one record per affinity event, in the
format of docs/affinity.md; the summary goes to stderr with ``--format jsonl`` so stdout stays
a clean event file.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any, BinaryIO

import typer

from ampsctl.cli.output import terminal_text
from ampsctl.errors import InputError, Location, UsageError
from ampsctl.lines import stdin_bytes

app = typer.Typer(help="Simulate amps-action-on-manifold-affinity (faucet) assignments.", no_args_is_help=True)


class OutputFormat(str, Enum):
    table = "table"
    jsonl = "jsonl"
    json = "json"


class AnnouncementsChoice(str, Enum):
    default = "default"
    all = "all"


@app.command("simulate")
def simulate(
    events: str = typer.Option(..., "--events", "-e", help="JSONL subscription events (- is stdin); see docs/affinity.md."),
    config: Path | None = typer.Option(None, "--config", "-c", help="Take the settings from this config's manifold-affinity action."),
    action: str | None = typer.Option(None, "--action", help="Which manifold-affinity action of --config: its number (1 = first) or its ControlTopic."),
    env: list[str] | None = typer.Option(None, "--env", help="Define NAME=VALUE for ${NAME} expansion in --config (repeatable)."),
    control_topic: str | None = typer.Option(None, "--control-topic", help="ControlTopic (without --config: required)."),
    subscription_topic: str | None = typer.Option(None, "--subscription-topic", help="SubscriptionTopic PCRE (without --config: required)."),
    announcements: AnnouncementsChoice | None = typer.Option(None, "--announcements", help="Announcements mode [default: default]."),
    coverage_option: str | None = typer.Option(None, "--coverage-option", help="CoverageSubsetOption: the control-subscription option holding a coverage PCRE, e.g. udo_coverage."),
    output_format: OutputFormat = typer.Option(OutputFormat.table, "--format", "-f", help="table (human), jsonl (the event-file contract) or json (events and summary in one object)."),
    render: bool = typer.Option(False, "--render", help="Also show each Do step's options with the event's {{VARIABLES}} substituted (needs --config)."),
    summary: bool = typer.Option(True, "--summary/--no-summary", help="Print topics per publisher, no_handlers and reassignment counts."),
    chart: bool = typer.Option(False, "--chart", help="Add a bar chart of topics per publisher to the summary."),
) -> None:
    """Replay subscribe/unsubscribe/disconnect events and print the assign, unassign and no_handlers events."""
    from ampsctl.affinity.engine import FaucetEngine
    from ampsctl.affinity.eventfile import read_events
    from ampsctl.gcpause import paused_gc

    settings, do_steps, context = _settings(config, action, env, control_topic, subscription_topic, announcements, coverage_option)
    if render and do_steps is None:
        raise UsageError("--render needs --config: the Do steps to render come from the config's action", code="USAGE")
    engine = FaucetEngine(settings)
    source = _name(events)
    counts: Counter[str] = Counter()
    rows = _simulate(engine, read_events(_lines(events), source), source, do_steps if render else None, context, counts)
    # The engine holds no reference cycles it would need collected; the cyclic collector would
    # rescan its millions of live objects (measured: +15-30% on 1M events).
    with paused_gc():
        if output_format is OutputFormat.jsonl:
            _write_jsonl(rows)
            if summary:
                _print_summary(engine, counts, chart, err=True)
        elif output_format is OutputFormat.json:
            import orjson

            document: dict[str, Any] = {"events": list(rows)}
            if summary:
                document["summary"] = _summary(engine, counts)
            _stdout_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
        else:
            _print_table(rows, settings.announcements.value == "all", render)
            if summary:
                _print_summary(engine, counts, chart, err=False)


def _settings(config, action, env, control_topic, subscription_topic, announcements, coverage_option):  # type: ignore[no-untyped-def]
    """The engine settings and the Do steps (None without --config), flags overriding the config."""
    from dataclasses import replace

    from ampsctl.affinity.model import AffinitySettings, Announcements

    do_steps, context = None, {}
    if config is not None:
        from ampsctl.actions.manifold import manifold_actions, pick_action
        from ampsctl.cli.config_cmd import parse_env
        from ampsctl.config.loader import load_config
        from ampsctl.config.model import ConfigModel

        model = ConfigModel(load_config(str(config), parse_env(env)))
        chosen = pick_action(manifold_actions(model), action, str(config))
        context = {"AMPS_INSTANCE_NAME": model.instance_name or ""}  # as the broker renders it (its other variables are the run's time)
        settings = chosen.settings
        do_steps = chosen.do
    else:
        if action is not None or env:
            raise UsageError("--action and --env need --config", code="USAGE")
        missing = [flag for flag, value in (("--control-topic", control_topic), ("--subscription-topic", subscription_topic)) if not value]
        if missing:
            raise UsageError(
                f"without --config, {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} required",
                code="USAGE",
                hint="pass --config CFG to use a config's amps-action-on-manifold-affinity action, or give the settings as flags",
            )
        settings = AffinitySettings(control_topic, subscription_topic)  # type: ignore[arg-type]
    overrides: dict[str, Any] = {}
    if control_topic:
        overrides["control_topic"] = control_topic
    if subscription_topic:
        overrides["subscription_topic"] = subscription_topic
    if announcements is not None:
        overrides["announcements"] = Announcements(announcements.value)
    if coverage_option:
        overrides["coverage_option"] = coverage_option
    return replace(settings, **overrides), do_steps, context


def _simulate(engine, events, source, do_steps, context, counts: Counter[str]) -> Iterator[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """One output record per affinity event, counted by action; warnings go to stderr as they happen."""
    from ampsctl.affinity.eventfile import event_record

    handle, warnings = engine.handle, engine.warnings
    for line, event in events:
        try:
            produced = handle(event)
        except InputError as exc:
            raise InputError(exc.message, code=exc.code, hint=exc.hint, location=Location(source, line)) from None
        if warnings:
            for warning in warnings:
                print(f"ampsctl: warning: {source}:{line}: {warning}", file=sys.stderr)
            warnings.clear()
        for affinity_event in produced:
            counts[affinity_event.action._value_] += 1  # not .value: a Python-level property
            record = event_record(affinity_event, line)
            if do_steps is not None:
                record["rendered"] = [{"module": step.module, **step.render(affinity_event, context)} for step in do_steps]
            yield record


# ---------------------------------------------------------------------------- input


def _lines(path: str) -> Iterator[bytes]:
    if path == "-":
        yield from stdin_bytes()
        return
    try:
        stream: BinaryIO = open(path, "rb")  # noqa: SIM115 (closed below, after the generator ends)
    except OSError as exc:
        raise InputError(f"cannot read '{path}': {exc.strerror}", code="IO", hint="give an existing file, or - for stdin") from None
    with stream:
        yield from stream


def _name(path: str) -> str:
    return "<stdin>" if path == "-" else path


# --------------------------------------------------------------------------- output


def _write_jsonl(rows: Iterator[dict[str, Any]]) -> None:
    """Stream the records, in batches: an event file can hold millions of events."""
    import orjson

    batch: list[bytes] = []
    dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    try:
        for row in rows:
            batch.append(dumps(row, option=newline))
            if len(batch) >= 4096:
                _stdout_bytes(b"".join(batch))
                batch.clear()
    finally:  # what was produced before an error is still written
        if batch:
            _stdout_bytes(b"".join(batch))


def _stdout_bytes(data: bytes) -> None:
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # an in-process capture (tests) has no byte buffer
        sys.stdout.write(data.decode("utf-8", "replace"))
    else:
        sys.stdout.flush()
        buffer.write(data)
        buffer.flush()


def _print_table(rows: Iterator[dict[str, Any]], per_subscriber: bool, render: bool) -> None:
    """Stream the table in batches of plain padded text, in rich's layout for a borderless table.

    rich's Table took about 0.5 ms a row (47 s for 100,000 events) and printed nothing before
    its last row, so an error on line 900,000 showed no event at all. Column widths come from
    the rows so far and only grow. With --render, each batch's payload blocks follow it, and
    the next batch repeats the header.
    """
    columns = ["line", "action", "topic", "publisher", *(("subscriber",) if per_subscriber else ())]
    widths = [len(name) for name in columns]
    batch: list[list[str]] = []
    blocks: list[str] = []
    header: list[str] | None = columns  # None once written, unless --render repeats it
    empty = True
    try:
        for row in rows:
            cells = [str(row["input_line"]), row["AMPS_AFFINITY_ACTION"], terminal_text(row["AMPS_TOPIC"]),
                     _who(row, "AMPS_CLIENT_NAME", "AMPS_CONNECTION_NAME")]
            if per_subscriber:
                cells.append(_who(row, "AMPS_SUBSCRIBER_CLIENT_NAME", "AMPS_SUBSCRIBER_CONNECTION_NAME"))
            batch.append(cells)
            empty = False
            if render:
                blocks.append(_render_block(row))
            if len(batch) >= _TABLE_BATCH:
                _write_rows(header, batch, widths, blocks)
                header = columns if render else None
    finally:  # on an error too: the events before it are shown, as with --format jsonl
        if batch:
            _write_rows(header, batch, widths, blocks)
    if empty:
        _stdout_text("no affinity events\n")


_TABLE_BATCH = 1000  # rows per write; widths are settled per batch


def _write_rows(header: list[str] | None, batch: list[list[str]], widths: list[int], blocks: list[str]) -> None:
    """One batch: each cell padded to its column's width and framed by one space."""
    from rich.cells import cell_len  # terminal cells: a wide character takes two

    sized = [[(cell, cell_len(cell)) for cell in cells] for cells in batch]
    for cells in sized:
        for index, (_, width) in enumerate(cells):
            if width > widths[index]:
                widths[index] = width
    if header is not None:
        sized.insert(0, [(name, len(name)) for name in header])
    lines = ["".join(f" {cell}{' ' * (width - size)} " for (cell, size), width in zip(cells, widths, strict=True))
             for cells in sized]
    _stdout_text("\n".join(lines) + "\n" + "".join(blocks))
    batch.clear()
    blocks.clear()


def _render_block(row: dict[str, Any]) -> str:
    """The Do steps of one event, one option a line (payloads are long and multi-line)."""
    lines = ["", f"line {row['input_line']}, {row['AMPS_AFFINITY_ACTION']} {terminal_text(row['AMPS_TOPIC'])}:"]
    for step in row["rendered"]:
        lines.append(f"  {terminal_text(step['module'])}")
        for name, value in step.items():
            if name != "module":
                lines.append(f"    {terminal_text(name)}: " + terminal_text(value, lines=True).replace("\n", "\n      "))
    return "\n".join(lines) + "\n"


def _stdout_text(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _who(row: dict[str, Any], client: str, connection: str) -> str:
    return f"{terminal_text(row[client])} ({terminal_text(row[connection])})" if client in row else "-"


def _summary(engine, counts: Counter[str]) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    assignments = engine.assignments()
    return {
        "events": {action: counts[action] for action in ("assign", "unassign", "no_handlers")},
        "reassignments": engine.reassignments,
        "interested_topics": len(assignments),
        "unassigned_topics": sum(1 for publisher in assignments.values() if publisher is None),
        "publishers": [
            {"client": p.client, "connection": p.connection, "activation": p.activation, "topics": p.load}
            for p in engine.publishers()
        ],
    }


def _print_summary(engine, counts: Counter[str], chart: bool, *, err: bool) -> None:  # type: ignore[no-untyped-def]
    from rich.console import Console
    from rich.table import Table

    facts = _summary(engine, counts)
    console = Console(stderr=err, soft_wrap=True)
    events = facts["events"]
    console.print(
        f"summary: {events['assign']} assign, {events['unassign']} unassign, {events['no_handlers']} no_handlers; "
        f"{_count(facts['reassignments'], 'reassignment')}; {_count(facts['interested_topics'], 'interested topic')}, "
        f"{facts['unassigned_topics']} without a publisher",
        highlight=False,
    )
    publishers = facts["publishers"]
    if not publishers:
        console.print("no eligible publishers", highlight=False)
        return
    table = Table(box=None, header_style="bold")
    for column in ("publisher", "connection", "activation", "topics"):
        table.add_column(column, justify="right" if column in ("activation", "topics") else "left")
    if chart:
        table.add_column("load")
    most = max(p["topics"] for p in publishers) or 1
    for p in publishers:
        cells = [terminal_text(p["client"]), terminal_text(p["connection"]), str(p["activation"]), str(p["topics"])]
        if chart:
            cells.append("█" * round(30 * p["topics"] / most) or "·")
        table.add_row(*cells)
    console.print(table, markup=False)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"

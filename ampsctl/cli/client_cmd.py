"""``ampsctl client publish|subscribe|sow|sow-delete|ping URI``: a network client like AMPS's spark.

Thin commands over ``ampsctl.client.tool`` (imported inside each command, so ``ampsctl --help``
never loads asyncio or the client, tests/cli/test_startup.py). Output contract:

* ``subscribe`` and ``sow``, ``--format text`` (default): stdout carries only message data, one
  message per line, so it pipes into a file or jq; their notes and counts (``subscribed to ...``,
  ``N records``) go to stderr. ``publish``, ``sow-delete`` and ``ping`` receive no messages: their
  one-line result (``published N messages ...``, ``deleted N records ...``, ``ok URI: ...``) goes
  to stdout (docs/broker.md). ``--format json``: one JSON object per line on stdout, the
  message's headers (``c``, ``t``, ``k``, ``bm``, ...) plus ``data`` (the parsed JSON message, or
  its text when it is not JSON); ``publish``, ``sow-delete`` and ``ping`` print one summary object.
* A URI is printed with its password as ``***`` (``client/uri.py``); ``tcp://user@...`` takes the
  password from ``AMPSCTL_PASSWORD`` (``client/session.py``).
* Exit codes: 0 ok, 1 the broker refused a command (its reason is printed) or ``--count`` was
  not reached before ``--timeout``, 2 usage (bad URI, options), 3 invalid input (a bad line in
  the messages file), 4 the broker cannot be reached or dropped the connection, 130 Ctrl-C,
  141 the reader closed stdout early (``subscribe``: 0, the end of a stream that never ends).
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import TYPE_CHECKING, Any

import typer

from ampsctl.errors import ExitCode

if TYPE_CHECKING:
    from ampsctl.client.session import Target
    from ampsctl.protocol.messages import Delivery, Oof

app = typer.Typer(help="Publish, subscribe, query and delete on an AMPS broker (like AMPS's spark).",
                  no_args_is_help=True)

URI_HELP = ("The broker: tcp://[user[:password]@]host:port/amps/json. With a user and no password, "
            "the password is read from AMPSCTL_PASSWORD (not visible in ps).")


class Format(str, Enum):
    text = "text"
    json = "json"


class PublishAck(str, Enum):
    persisted = "persisted"
    processed = "processed"
    none = "none"


def _uri() -> Any:
    return typer.Argument(..., metavar="URI", help=URI_HELP)


def _topic(help: str = "The topic.") -> Any:
    return typer.Option(..., "--topic", "-t", help=help)


def _name() -> Any:
    return typer.Option(None, "--name", "-n", help="Client name (unique per broker); default ampsctl-COMMAND-HOST-PID.")


def _timeout() -> Any:
    return typer.Option(10.0, "--connect-timeout", min=0.001, metavar="SECONDS", callback=seconds_not_nan,
                        help="Give up connecting and logging on after this long (exit 4).")


def seconds_not_nan(value: float | None) -> float | None:
    """The option's value; nan is a usage error (it passes click's range check, then no timer works)."""
    if value is not None and value != value:
        raise typer.BadParameter("nan is not a number of seconds (inf waits for ever)")
    return value


def _format() -> Any:
    return typer.Option(Format.text, "--format", "-f", help="text (message data only) or json (headers and data, one object per line).")


def _target(uri: str, name: str | None, connect_timeout: float) -> Target:
    from ampsctl.client.session import Target

    return Target(uri, name, connect_timeout)


# --------------------------------------------------------------------------------- publish


@app.command("publish")
def publish_command(
    uri: str = _uri(),
    topic: str = _topic("The topic to publish to (a plain name, no regex)."),
    data: str | None = typer.Option(None, "--data", "-d", metavar="MESSAGE", help="One message, inline."),
    file: str | None = typer.Option(None, "--file", metavar="FILE", help="JSON Lines, one message per line (- is stdin)."),
    delta: bool = typer.Option(False, "--delta", help="delta_publish: merge each message into the SOW record."),
    expiration: int | None = typer.Option(None, "--expiration", min=0, max=2**64 - 1, metavar="SECONDS",
                                          help="SOW lifetime of each message (0 = never)."),
    sow_key: str | None = typer.Option(None, "--sow-key", metavar="KEY", help="Explicit SowKey (topics configured without Key fields)."),
    correlation_id: str | None = typer.Option(None, "--correlation-id", metavar="ID", help="CorrelationId sent with every message."),
    ack: PublishAck = typer.Option(PublishAck.persisted, "--ack", help="Ack to wait for per message; every run ends with a flush."),
    window: int = typer.Option(1000, "--window", min=1, help="Most messages sent and not yet acknowledged."),
    name: str | None = _name(),
    connect_timeout: float = _timeout(),
    format: Format = _format(),
) -> None:
    """Publish messages and wait until the broker has them all.

    Messages come from --data (one) or --file (JSON Lines, - for stdin),
    each a JSON object; the whole input is checked before anything is sent,
    so a bad line publishes nothing (exit 3). Every message asks for --ack
    (persisted by default) and the run ends with a flush, so exit 0 means
    the broker persisted (or with --ack processed, processed) every message.
    A failure ack stops the run: its reason is printed, exit 1.
    """
    from ampsctl.client.outgoing import read_messages
    from ampsctl.client.tool import publish

    target = _target(uri, name, connect_timeout)
    messages = read_messages(data=data, file=file)
    summary = publish(target, topic, messages, delta=delta, expiration=expiration, sow_key=sow_key,
                      correlation_id=correlation_id, ack=ack.value, window=window)
    if format is Format.json:
        _line(_json({"topic": summary.topic, "published": summary.published, "ack": summary.ack,
                     "elapsed_s": round(summary.elapsed, 6)}))
    else:
        rate = summary.published / summary.elapsed if summary.elapsed > 0 else 0.0
        done = "processed" if summary.ack == "processed" else "persisted"
        _line(f"published {_plural(summary.published, 'message')} to {summary.topic} ({done}) "
              f"in {summary.elapsed:.3f} s, {rate:.0f} msgs/s")


# --------------------------------------------------------------------------------- subscribe


@app.command("subscribe")
def subscribe_command(
    uri: str = _uri(),
    topic: str = _topic("Topic or regular expression."),
    filter: str | None = typer.Option(None, "--filter", metavar="EXPR", help="Content filter, e.g. \"/qty > 5\"."),
    bookmark: str | None = typer.Option(None, "--bookmark", "-b", metavar="BOOKMARK",
                                        help="Replay from the transaction log: 0 (the beginning), 0|1| (now), HASH|SEQ| or a timestamp."),
    delta: bool = typer.Option(False, "--delta", help="delta_subscribe: only keys and changed fields of updates."),
    oof: bool = typer.Option(False, "--oof", help="Also print out-of-focus notices (the oof option)."),
    options: str | None = typer.Option(None, "--options", "-o", metavar="OPTIONS", help="Subscription options, e.g. 'no_sowkey,timestamp'."),
    sub_id: str | None = typer.Option(None, "--sub-id", metavar="ID", help="Subscription id."),
    count: int | None = typer.Option(None, "--count", min=1, metavar="N", help="Stop after N messages."),
    timeout: float | None = typer.Option(None, "--timeout", min=0, metavar="SECONDS", callback=seconds_not_nan,
                                         help="Stop after this long (exit 1 if --count was not reached)."),
    name: str | None = _name(),
    connect_timeout: float = _timeout(),
    format: Format = _format(),
) -> None:
    """Print messages as they arrive, until Ctrl-C, --count N or --timeout.

    Text prints each message's data on one line (an OOF notice as
    `oof REASON k=KEY DATA`); json prints headers and data. A line
    `subscribed to TOPIC (sub_id ID)` on stderr says the broker accepted
    the subscription. Without
    --count, --timeout ends the run with exit 0; with --count, reaching
    --timeout first is exit 1. Ctrl-C is exit 130 after the messages so far;
    a reader that closes the pipe (| head -3) ends it with exit 0.
    """
    from ampsctl.client.tool import subscribe

    target = _target(uri, name, connect_timeout)
    render = _json_message if format is Format.json else _text_message
    try:
        summary = subscribe(target, topic, lambda message: _line(render(message), flush=True), filter=filter,
                            options=options, bookmark=bookmark, delta=delta, oof=oof, sub_id=sub_id, count=count,
                            timeout=timeout,
                            on_subscribed=lambda sub_id: _line(f"subscribed to {topic} (sub_id {sub_id})", err=True, flush=True))
    except BrokenPipeError:
        from ampsctl.cli.stdout import quiet_after_broken_pipe

        quiet_after_broken_pipe()  # `... | head -3`: the reader has what it wanted (exit 0: the stream never ends)
        return
    if count is not None and summary.received < count:
        _line(f"ampsctl: error: received {summary.received} of {count} messages within {timeout:g} s", err=True)
        raise typer.Exit(ExitCode.FINDINGS)


# --------------------------------------------------------------------------------- sow


@app.command("sow")
def sow_command(
    uri: str = _uri(),
    topic: str = _topic("SOW topic or regular expression."),
    filter: str | None = typer.Option(None, "--filter", metavar="EXPR", help="Content filter."),
    orderby: str | None = typer.Option(None, "--orderby", metavar="ORDER", help="e.g. '/qty DESC, /id'."),
    top_n: int | None = typer.Option(None, "--top-n", min=0, metavar="N", help="Return at most N records."),
    batch_size: int = typer.Option(10, "--batch-size", min=1, max=10000, help="Records per sow frame."),
    options: str | None = typer.Option(None, "--options", "-o", metavar="OPTIONS", help="Query options, e.g. 'skip_n=10,select=[-/big]'."),
    name: str | None = _name(),
    connect_timeout: float = _timeout(),
    format: Format = _format(),
) -> None:
    """Query a SOW topic: print the records, then their count.

    Text prints each record's data on one line and the count on stderr;
    json prints each record (c=sow, t, k, data ...) and, last, the stats
    ack (matches, topic_matches, records_returned).
    """
    from ampsctl.client.tool import query

    result = query(_target(uri, name, connect_timeout), topic, filter=filter, orderby=orderby, top_n=top_n,
                   batch_size=batch_size, options=options)
    lines = []
    for batch in result.batches:
        for record in batch.records:
            if format is Format.json:
                lines.append(_json({"c": "sow", "t": batch.topic, **_present(record.header()), "data": _data(record.data)}))
            else:
                lines.append(record.data.decode("utf-8", "replace"))
    if format is Format.json:
        lines.append(_json(_present(result.stats.header()) if result.stats else {"c": "stats", "records_returned": result.count}))
    _lines(lines)
    if format is Format.text:
        matches = result.stats.topic_matches if result.stats and result.stats.topic_matches is not None else None
        of = f" (of {matches} in the topic)" if matches is not None else ""
        _line(f"{_plural(result.count, 'record')}{of}", err=True)


# --------------------------------------------------------------------------------- sow-delete


@app.command("sow-delete")
def sow_delete_command(
    uri: str = _uri(),
    topic: str = _topic("SOW topic or regular expression."),
    filter: str | None = typer.Option(None, "--filter", metavar="EXPR", help="Delete every record matching this filter ('1=1': all)."),
    keys: str | None = typer.Option(None, "--keys", metavar="K1,K2", help="Delete these SowKeys (the k values the broker returns)."),
    data: str | None = typer.Option(None, "--data", "-d", metavar="MESSAGE", help="Delete the record this message's key names."),
    name: str | None = _name(),
    connect_timeout: float = _timeout(),
    format: Format = _format(),
) -> None:
    """Delete SOW records by filter, keys or message, and print how many went.

    Give exactly one of --filter, --keys and --data. Text prints
    `deleted N records`; json prints the stats ack (records_deleted,
    matches, topic_matches).
    """
    from ampsctl.client.tool import sow_delete

    key_list = tuple(key.strip() for key in keys.split(",") if key.strip()) if keys is not None else ()
    if keys is not None and not key_list:
        from ampsctl.errors import UsageError

        raise UsageError("--keys needs at least one SowKey", hint="--keys K1,K2 (the k values `client sow --format json` prints)")
    ack = sow_delete(_target(uri, name, connect_timeout), topic, filter=filter, keys=key_list,
                     data=data.encode("utf-8") if data is not None else None)
    if format is Format.json:
        _line(_json(_present(ack.header())))
    else:
        _line(f"deleted {_plural(ack.records_deleted or 0, 'record')} from {topic}")


# --------------------------------------------------------------------------------- ping


@app.command("ping")
def ping_command(
    uri: str = _uri(),
    name: str | None = _name(),
    connect_timeout: float = _timeout(),
    format: Format = _format(),
) -> None:
    """Log on, make one round trip (a flush) and print its time and the server version."""
    from ampsctl.client.tool import ping

    result = ping(_target(uri, name, connect_timeout))
    if format is Format.json:
        _line(_json({"uri": result.uri, "client_name": result.client_name, "server_version": result.server_version,
                     "connect_ms": round(result.connect_ms, 3), "round_trip_ms": round(result.round_trip_ms, 3)}))
    else:
        _line(f"ok {result.uri}: round trip {result.round_trip_ms:.2f} ms (connect and logon {result.connect_ms:.2f} ms), "
              f"server version {result.server_version or 'unknown'}")


# --------------------------------------------------------------------------------- rendering


def _text_message(message: Delivery | Oof) -> str:
    from ampsctl.protocol.messages import Oof

    text = message.data.decode("utf-8", "replace")
    if isinstance(message, Oof):
        return f"oof {message.reason} k={message.sow_key or ''} {text}".rstrip()
    return text


def _json_message(message: Delivery | Oof) -> str:
    header = _present(message.header())
    header.pop("l", None)  # the body length says nothing once the body is printed
    return _json({**header, "data": _data(message.data)})


def _present(header: dict[str, Any]) -> dict[str, Any]:
    return {key: str(value) if isinstance(value, Enum) else value for key, value in header.items() if value is not None}


def _data(data: bytes) -> Any:
    """A message's data to nest in a json line: its JSON with numbers as written (1.50, 1E5,
    integers beyond 64 bits), else its text."""
    import orjson

    from ampsctl.messages.json_codec import loads_as_written

    try:
        return loads_as_written(data)
    except orjson.JSONDecodeError:
        return data.decode("utf-8", "replace")


def _json(value: Any) -> str:
    from ampsctl.messages.json_codec import dumps_exact

    return dumps_exact(value).decode("utf-8")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _line(text: str, *, err: bool = False, flush: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")
    if flush:
        stream.flush()


def _lines(lines: list[str]) -> None:
    from ampsctl.cli.output import write_lines

    write_lines(lines)

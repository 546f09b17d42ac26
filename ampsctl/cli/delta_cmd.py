"""``ampsctl delta merge|diff|conflate``: delta publish and delta subscribe from the shell.

Thin commands over the codecs of ``ampsctl.messages`` (one merge/diff per type, DESIGN.md),
imported inside each command so ``ampsctl --help`` stays cheap (tests/cli/test_startup.py).

Input and output contract (golden files in tests/cli/golden/delta/):
* A whole-file input (``merge BASE DELTA...``, ``diff OLD NEW``) is one message; a trailing
  newline is not part of it, so a FIX file saved by an editor still parses. ``-`` is stdin.
* A stream (``merge --stream``, ``conflate``) has one message per line; blank lines are skipped
  and line numbers are kept for errors (``FILE:LINE: ...``).
* The type comes from ``--type``, else from each input's extension or content; inputs of
  different types are a usage error. Output is in the same type, one message per line.
* A bad message stops the command (exit 3) unless ``--keep-going``: then it is reported, the
  rest is processed, a count is printed at the end and the exit code is 1.
* Stream keys are compared like SOW keys (ampsctl.messages.keys): JSON 1 and "1" are one record.
* ``conflate`` takes the first message of each key as the state before the conflation interval
  (seed 004's example starts from the stored record) and prints, per key, the merge of the
  deltas between successive messages; a key seen once has no update and prints nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import typer

from ampsctl.errors import AmpsctlError, ExitCode, InputError, Location, UsageError
from ampsctl.gcpause import paused_gc

app = typer.Typer(help="Merge delta publishes, compute delta-subscribe updates, conflate deltas.", no_args_is_help=True)

TYPE_HELP = "Message type of every input: json, xml, fix or nvfix (default: by extension, then content)."
KEY_HELP = "A key field path such as /id or /55; repeat for a composite key."
KEEP_GOING_HELP = "Report bad messages and go on; exit 1 at the end if any were skipped."


@dataclass(slots=True)
class _Skips:
    """Bad stream messages seen so far under --keep-going (a per-command counter, not global)."""

    keep_going: bool
    count: int = 0
    seen: int = 0  # non-blank lines read, counted by the stream reader

    def handle(self, exc: AmpsctlError) -> None:
        if not self.keep_going:
            raise exc
        self.count += 1
        _report(exc)

    def on_error(self, where: tuple[str, int], exc: AmpsctlError) -> None:
        """The library's per-message error callback: place the error, then stop or count it."""
        self.handle(_at(exc, Location(*where)))

    def finish(self) -> None:
        if self.count:
            _write_text(f"ampsctl: {self.count} of {self.seen} messages skipped (invalid input)", err=True)
            raise typer.Exit(ExitCode.FINDINGS)


@app.command("merge")
def merge_command(
    inputs: list[str] = typer.Argument(..., metavar="BASE DELTA...", help="The stored message, then deltas applied in order (- is stdin). With --stream: JSONL files."),
    stream: bool = typer.Option(False, "--stream", help="Read one message per line and fold each key's updates in order."),
    key: list[str] = typer.Option(None, "--key", "-k", help=KEY_HELP + " Required with --stream."),
    all_: bool = typer.Option(False, "--all", help="With --stream: print every intermediate record, not only the final one per key."),
    type_: str | None = typer.Option(None, "--type", "-t", help=TYPE_HELP),
    keep_going: bool = typer.Option(False, "--keep-going", help=KEEP_GOING_HELP + " Stream mode only."),
) -> None:
    """Apply delta publishes: fields in a delta replace, absent fields stay, objects merge.

    Arrays (repeated elements) are replaced whole and a delta cannot delete a field
    (spec/messages.md §6). Exit codes: 0 ok, 1 messages were skipped (--keep-going),
    2 usage, 3 invalid input.
    """
    if not stream:
        if key or all_ or keep_going:
            raise UsageError("--key, --all and --keep-going need --stream", hint="ampsctl delta merge --stream --key /id FILE")
        if len(inputs) < 2:
            raise UsageError("give BASE and at least one DELTA", hint="ampsctl delta merge base.json delta1.json [delta2.json ...]")
        codec, docs = _whole_files(inputs, type_)
        result = docs[0]
        for delta in docs[1:]:
            result = codec.merge(result, delta)
        _emit(codec, result)
        return
    if not key:
        raise UsageError("--stream needs --key", hint="ampsctl delta merge --stream --key /id updates.jsonl")
    from ampsctl.messages.stream import fold

    skips = _Skips(keep_going)
    codec, messages = _stream(inputs, type_, skips)
    with paused_gc():
        _emit_all(codec, fold(codec, messages, key, every=all_, on_error=skips.on_error))
    skips.finish()


@app.command("diff")
def diff_command(
    old: str = typer.Argument(..., help="The previous state of the record (- is stdin)."),
    new: str = typer.Argument(..., help="The new state of the record."),
    key: list[str] = typer.Option(None, "--key", "-k", help=KEY_HELP),
    no_empties: bool = typer.Option(False, "--no-empties", help="Print nothing when no field other than the keys changed."),
    no_keys: bool = typer.Option(False, "--no-keys", help="Leave the key fields out (send_keys off)."),
    select: list[str] = typer.Option(None, "--select", help="Only this field is sent and counts as a change; repeat for more."),
    type_: str | None = typer.Option(None, "--type", "-t", help=TYPE_HELP),
) -> None:
    """Print the update a delta subscriber receives: the key fields plus the changed fields.

    Nested objects are compared field by field; arrays are compared and sent whole
    (spec/messages.md §7). Exit codes: 0 ok (also when --no-empties prints nothing),
    2 usage, 3 invalid input (for example a key field missing from NEW).
    """
    codec, (before, after) = _whole_files([old, new], type_)
    if key:
        try:  # a missing or array key field is a clear error, not a silent gap in the delta
            from ampsctl.messages.stream import record_key_values

            record_key_values(codec, after, key)
        except AmpsctlError as exc:
            raise _at(exc, Location(_name(new))) from None
    delta = codec.diff(before, after, key or (), no_empties=no_empties, send_keys=not no_keys, select=select or None)
    if delta is not None:
        _emit(codec, delta)


@app.command("conflate")
def conflate_command(
    inputs: list[str] = typer.Argument(..., metavar="FILE...", help="Successive full updates, one message per line (- is stdin)."),
    key: list[str] = typer.Option(..., "--key", "-k", help=KEY_HELP),
    no_empties: bool = typer.Option(False, "--no-empties", help="Updates that change nothing contribute nothing."),
    type_: str | None = typer.Option(None, "--type", "-t", help=TYPE_HELP),
    keep_going: bool = typer.Option(False, "--keep-going", help=KEEP_GOING_HELP),
) -> None:
    """Turn a sequence of full updates into the conflated delta per key.

    The first message of each key is the state before the conflation interval; each later
    one is diffed against the one before it and the deltas are merged (union of fields, last
    value wins: spec/messages.md §7.4). Exit codes: 0 ok, 1 messages were skipped
    (--keep-going), 2 usage, 3 invalid input.
    """
    from ampsctl.messages.stream import conflate

    skips = _Skips(keep_going)
    codec, messages = _stream(inputs, type_, skips)
    with paused_gc():
        _emit_all(codec, conflate(codec, messages, key, no_empties=no_empties, on_error=skips.on_error))
    skips.finish()


# --------------------------------------------------------------------------------- inputs


def _whole_files(paths: list[str], type_: str | None) -> tuple[Any, list[Any]]:
    """One codec and one parsed message per input file."""
    if sum(path == "-" for path in paths) > 1:
        raise UsageError("stdin (-) can be read only once", hint="give the other messages as files")
    raws = [_read(path).rstrip(b"\r\n") for path in paths]
    codec = _codec_for(paths, raws, type_)
    docs = []
    for path, raw in zip(paths, raws, strict=True):
        try:
            docs.append(codec.parse(raw))
        except AmpsctlError as exc:
            raise _at(exc, Location(_name(path))) from None
    return codec, docs


def _stream(paths: list[str], type_: str | None, skips: _Skips) -> tuple[Any, Iterator[tuple[tuple[str, int], Any]]]:
    """A codec and the parsed messages of every line of every input, tagged (file name, line).

    The tag is a plain tuple, made into a Location only for an error: a stream can have
    millions of lines.
    """
    if sum(path == "-" for path in paths) > 1:
        raise UsageError("stdin (-) can be read only once", hint="give the other streams as files")
    contents = [_read(path) for path in paths]  # read first: the type may need the content
    firsts = [next((line for line in raw.splitlines() if line.strip()), b"") for raw in contents]
    codec = _codec_for(paths, firsts, type_)

    def messages() -> Iterator[tuple[tuple[str, int], Any]]:
        parse = codec.parse
        seen = 0
        try:
            for path, raw in zip(paths, contents, strict=True):
                name = _name(path)
                for number, line in enumerate(raw.split(b"\n"), 1):
                    if line.endswith(b"\r"):
                        line = line.rstrip(b"\r")
                    if not line or line.isspace():
                        continue
                    seen += 1
                    try:
                        doc = parse(line)
                    except AmpsctlError as exc:
                        skips.seen = seen
                        skips.handle(_at(exc, Location(name, number)))
                        continue
                    yield (name, number), doc
        finally:
            skips.seen = seen

    return codec, messages()


def _codec_for(paths: list[str], samples: list[bytes], type_: str | None) -> Any:
    from ampsctl.messages import types

    if type_ is not None:
        return types.codec(type_)
    kinds = [types.detect(path, sample) for path, sample in zip(paths, samples, strict=True)]
    if len(set(kinds)) > 1:
        described = ", ".join(f"{_name(path)} is {kind}" for path, kind in zip(paths, kinds, strict=True))
        raise UsageError(f"inputs have different message types ({described})", hint="give inputs of one type, or force one with --type")
    return types.codec(kinds[0])


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as stream:
            return stream.read()
    except OSError as exc:
        raise InputError(f"cannot read '{path}': {exc.strerror}", code="IO", hint="give an existing file, or - for stdin") from None


# --------------------------------------------------------------------------------- output


def _emit(codec: Any, doc: Any) -> None:
    data = codec.serialize(doc) + b"\n"
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # an in-process capture (tests) has no byte buffer
        sys.stdout.write(data.decode("utf-8", "replace"))
    else:
        sys.stdout.flush()
        buffer.write(data)


def _emit_all(codec: Any, docs: Iterator[Any]) -> None:
    """``_emit`` for every document, written in batches: a stream can yield millions."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        for doc in docs:
            _emit(codec, doc)
        return
    sys.stdout.flush()
    serialize = codec.serialize
    batch: list[bytes] = []
    try:
        for doc in docs:
            batch.append(serialize(doc))
            if len(batch) >= 4096:
                batch.append(b"")
                buffer.write(b"\n".join(batch))
                batch.clear()
    finally:  # what was produced before an error is still written, as _emit would have
        if batch:
            batch.append(b"")
            buffer.write(b"\n".join(batch))
        buffer.flush()


def _name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _at(exc: AmpsctlError, where: Location) -> AmpsctlError:
    """The same error, placed at ``where`` (codecs do not know file names or line numbers)."""
    if exc.location is not None:
        return exc
    return type(exc)(exc.message, code=exc.code, hint=exc.hint, location=where)


def _report(exc: AmpsctlError) -> None:
    _write_text(f"ampsctl: error: {exc}", err=True)


def _write_text(text: str, *, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")

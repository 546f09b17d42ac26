"""``ampsctl delta merge|diff|conflate``: delta publish and delta subscribe from the shell.

Thin commands over the codecs of ``ampsctl.messages`` (one merge/diff per type, DESIGN.md),
imported inside each command so ``ampsctl --help`` stays cheap (tests/cli/test_startup.py).

Input and output contract (golden files in tests/cli/golden/delta/):
* A whole-file input (``merge BASE DELTA...``, ``diff OLD NEW``) is one message; a trailing
  newline is not part of it, so a FIX file saved by an editor still parses. ``-`` is stdin.
* A stream (``merge --stream``, ``conflate``) has one message per line; blank lines are skipped
  and line numbers are kept for errors (``FILE:LINE: ...``). Streams are read line by line,
  never whole; ``merge --stream`` of one large file is folded by two processes when there are
  two CPUs (``_fold_in_two``), with exactly the output and errors of one.
* The type comes from ``--type``, else from each input's extension or content; inputs of
  different types are a usage error. Output is in the same type, one message per line.
* A bad message stops the command (exit 3) unless ``--keep-going``: then it is reported, the
  rest is processed, a count is printed at the end and the exit code is 1.
* Stream keys are compared like SOW keys (ampsctl.messages.keys): JSON 1 and "1" are one record.
* JSON integers beyond 64 bits are read, compared and written exactly (``JSON_EXACT``), not as
  the floats orjson makes of them; so are documents nested deeper than orjson writes (255).
  Every JSON number is written with the text it was read with (``1E5`` stays ``1E5``), while
  comparisons stay by value (docs/messages.md, "Number text").
* ``conflate`` takes the first message of each key as the state before the conflation interval
  (seed 004's example starts from the stored record) and prints, per key, the merge of the
  deltas between successive messages; a key seen once has no update and prints nothing.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from itertools import chain
from typing import Any, BinaryIO

import typer

from ampsctl.errors import AmpsctlError, ExitCode, InputError, Location, UsageError
from ampsctl.gcpause import paused_gc
from ampsctl.lines import UTF8_BOM, stdin_bytes

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
        for path, delta in zip(inputs[1:], docs[1:], strict=True):
            try:
                result = codec.merge(result, delta)
            except AmpsctlError as exc:  # e.g. an XML delta with another root element
                raise _at(exc, Location(_name(path))) from None
        _emit(codec, result)
        return
    if not key:
        raise UsageError("--stream needs --key", hint="ampsctl delta merge --stream --key /id updates.jsonl")
    from ampsctl.messages.stream import fold

    skips = _Skips(keep_going)
    codec, sources, opened = _open_streams(inputs, type_)
    with opened, paused_gc():
        split = None if all_ else _split_point(sources)
        if split is None:
            _emit_all(codec, fold(codec, _messages(codec, sources, skips), key, every=all_, on_error=skips.on_error))
        else:
            _emit_all(codec, *_fold_in_two(codec, sources[0], split, key, skips))
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
    try:
        delta = codec.diff(before, after, key or (), no_empties=no_empties, send_keys=not no_keys, select=select or None)
    except AmpsctlError as exc:  # e.g. XML messages with different root elements
        raise _at(exc, Location(_name(new))) from None
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
    codec, sources, opened = _open_streams(inputs, type_)
    with opened, paused_gc():
        _emit_all(codec, conflate(codec, _messages(codec, sources, skips), key, no_empties=no_empties, on_error=skips.on_error))
    skips.finish()


# --------------------------------------------------------------------------------- inputs


def _whole_files(paths: list[str], type_: str | None) -> tuple[Any, list[Any]]:
    """One codec and one parsed message per input file."""
    if sum(path == "-" for path in paths) > 1:
        raise UsageError("stdin (-) can be read only once", hint="give the other messages as files")
    raws = [_read(path).rstrip(b"\r\n") for path in paths]
    codec = _codec_for(paths, raws, type_)
    raws = [_without_bom(codec, raw) for raw in raws]
    docs = []
    for path, raw in zip(paths, raws, strict=True):
        try:
            docs.append(codec.parse(raw))
        except AmpsctlError as exc:
            raise _at(exc, Location(_name(path))) from None
    return codec, docs


@dataclass(slots=True)
class _Source:
    """One opened stream input: the lines read ahead to tell its type, then the rest."""

    path: str
    head: list[bytes]
    stream: BinaryIO

    @property
    def name(self) -> str:
        return _name(self.path)

    def lines(self) -> Iterator[bytes]:
        return chain(self.head, self.stream)


def _open_streams(paths: list[str], type_: str | None) -> tuple[Any, list[_Source], ExitStack]:
    """A codec and every input opened for reading line by line, with the stack that closes them.

    Inputs are read while they are folded, never whole (a stream can be larger than memory);
    only each input's first non-blank line is read ahead, as the type may need the content.
    Every input is opened first, so a missing file is reported before any message is read.
    """
    if sum(path == "-" for path in paths) > 1:
        raise UsageError("stdin (-) can be read only once", hint="give the other streams as files")
    opened = ExitStack()
    try:
        sources = []
        for path in paths:
            stream = stdin_bytes() if path == "-" else opened.enter_context(_open(path))
            sources.append(_Source(path, _head(stream), stream))
        firsts = [next((line for line in b"".join(source.head).splitlines() if line.strip()), b"") for source in sources]
        codec = _codec_for(paths, firsts, type_)
        for source in sources:
            if source.head:
                source.head[0] = _without_bom(codec, source.head[0])
        return codec, sources, opened
    except BaseException:
        opened.close()
        raise


def _without_bom(codec: Any, data: bytes) -> bytes:
    """``data`` without a UTF-8 byte order mark at its start (editors on Windows write one).

    Detection already looks past it; left in, JSON refuses it and FIX reads it as part of the
    first tag. XML keeps it: the XML parser reads it itself, with the encoding declaration.
    """
    return data.removeprefix(UTF8_BOM) if codec.name != "xml" else data


def _head(stream: BinaryIO) -> list[bytes]:
    """The lines of ``stream`` up to its first non-blank one (all of them if there is none)."""
    head = []
    for line in stream:
        head.append(line)
        if line.strip():
            break
    return head


def _messages(codec: Any, sources: list[_Source], skips: _Skips) -> Iterator[tuple[tuple[str, int], Any]]:
    """The parsed messages of every line of every input, tagged (file name, line)."""
    return chain.from_iterable(_parsed(codec, source.name, enumerate(source.lines(), 1), skips) for source in sources)


def _parsed(codec: Any, name: str, lines: Iterable[tuple[int, bytes]], skips: _Skips) -> Iterator[tuple[tuple[str, int], Any]]:
    """The messages of numbered lines, tagged (name, number); counted in ``skips.seen``.

    Blank lines are skipped; a bad message goes to ``skips``. The tag is a plain tuple, made
    into a Location only for an error: a stream can have millions of lines.
    """
    parse = codec.parse
    seen = 0
    try:
        for number, line in lines:
            line = line.rstrip(b"\r\n")  # lines end at \n; a \r before it is not content
            if not line or line.isspace():
                continue
            seen += 1
            try:
                doc = parse(line)
            except AmpsctlError as exc:
                skips.handle(_at(exc, Location(name, number)))
                continue
            yield (name, number), doc
    finally:
        skips.seen += seen


def _codec_for(paths: list[str], samples: list[bytes], type_: str | None) -> Any:
    from ampsctl.messages import types

    if type_ is not None:
        return _exact(types.codec(type_))
    kinds = [types.detect(path, sample) for path, sample in zip(paths, samples, strict=True)]
    if len(set(kinds)) > 1:
        described = ", ".join(f"{_name(path)} is {kind}" for path, kind in zip(paths, kinds, strict=True))
        raise UsageError(f"inputs have different message types ({described})", hint="give inputs of one type, or force one with --type")
    return _exact(types.codec(kinds[0]))


def _exact(codec: Any) -> Any:
    """JSON integers beyond 64 bits are read and written exactly here (``JSON_EXACT``)."""
    if codec.name != "json":
        return codec
    from ampsctl.messages.json_codec import JSON_EXACT

    return JSON_EXACT


def _read(path: str) -> bytes:
    if path == "-":
        return stdin_bytes().read()
    with _open(path) as stream:
        return stream.read()


def _open(path: str) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read '{path}': {exc.strerror}", code="IO", hint="give an existing file, or - for stdin") from None


# ------------------------------------------------------------- merge --stream on two CPUs

# Below this a second process costs more than it saves (fork, sending its records back).
_PARALLEL_MIN_BYTES = 32 << 20
# The share of the input folded here: the worker also serializes and sends its records
# before this process can go on, so it gets a little less.
_FIRST_PART = 0.55


def _split_point(sources: list[_Source]) -> int | None:
    """Where a second process can start folding a ``merge --stream`` input, or None.

    Only one large regular file is split, at the first line start after ``_FIRST_PART`` of
    it, and only when a second CPU and ``fork`` are there.
    """
    if len(sources) != 1 or sources[0].path == "-":
        return None
    descriptor = sources[0].stream.fileno()
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode) or info.st_size < _PARALLEL_MIN_BYTES:
        return None
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    import multiprocessing  # here, not at the top: only a large stream merge needs it

    if cpus < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return None
    offset = int(info.st_size * _FIRST_PART)
    while chunk := os.pread(descriptor, 1 << 16, offset):  # pread: the stream's own position stays put
        newline = chunk.find(b"\n")
        if newline >= 0:
            split = offset + newline + 1
            return split if sum(map(len, sources[0].head)) < split < info.st_size else None
        offset += len(chunk)
    return None


def _fold_in_two(codec: Any, source: _Source, split: int, key_paths: list[str], skips: _Skips) -> tuple[Iterable[Any], list[Any]]:
    """``fold`` of one input by two processes: (the records to serialize, then serialized ones).

    This process folds the lines before ``split`` while a forked worker folds the rest
    (``_fold_worker``). Merging is not associative (a scalar then an object replaces; an object
    then an object merges), so the worker's records are used only for keys it alone has; the
    few messages of the keys both parts have are folded here, in line order, into this part's
    records, as ``fold`` would. If the worker met a bad message it gives up and its part is
    read here too, so errors, --keep-going and line numbers are exactly those of ``fold``.
    """
    import multiprocessing

    from ampsctl.messages.stream import fold_into

    context = multiprocessing.get_context("fork")
    here, there = context.Pipe()
    info = os.fstat(source.stream.fileno())
    sys.stdout.flush()  # the worker must not inherit pending output (it flushes when it exits)
    sys.stderr.flush()
    worker = context.Process(target=_fold_worker, args=(there, codec, source.path, (info.st_dev, info.st_ino), split, key_paths), daemon=True)
    with suppress(OSError):  # no second process after all (out of processes or memory): all is read here
        worker.start()
    there.close()  # this process's copy: recv() then ends (EOFError) if the worker dies or never started
    try:
        state: dict[Any, Any] = {}
        numbered = enumerate(source.lines(), 1)
        fold_into(state, codec, _parsed(codec, source.name, _until(numbered, split), skips), key_paths, on_error=skips.on_error)
        try:
            result = here.recv()
            if result is not None:
                seen, identities, ends = result
                serialized = here.recv_bytes()  # not pickled: it is large
                shared = [index for index, identity in enumerate(identities) if identity in state]
                here.send(shared)
                lines = here.recv()  # the worker's line numbers (from 1 at split) of the shared keys' messages
        except (EOFError, OSError):  # no worker, or it died
            result = None
        if result is None:
            fold_into(state, codec, _parsed(codec, source.name, numbered, skips), key_paths, on_error=skips.on_error)
            return state.values(), []
        if shared:
            counted = skips.seen  # the worker counted these messages already
            fold_into(state, codec, _parsed(codec, source.name, _picked(numbered, lines), skips), key_paths, on_error=skips.on_error)
            skips.seen = counted
        skips.seen += seen
        return state.values(), _without(serialized, ends, shared)
    except BaseException:
        if worker.is_alive():
            worker.terminate()  # before closing the pipe: a worker still sending must not report a broken pipe
            worker.join()
        raise
    finally:
        # Otherwise the worker has sent its last message and is ending: not waiting for it here
        # lets it give back its memory while this process writes (it is reaped at exit).
        here.close()


def _fold_worker(conn: Any, codec: Any, path: str, file_id: tuple[int, int], start: int, key_paths: list[str]) -> None:
    """The forked half of ``_fold_in_two``: fold the lines from byte ``start`` on.

    Sends (messages read, record identities in first-seen order, where each record ends in the
    bytes sent next: the records serialized one per line); then, for the records the parent
    names (by index), the line numbers of their messages. Sends None instead at the first bad
    message or any failure.
    """
    from ampsctl.messages.stream import fold_into

    try:
        tags: dict[Any, list[tuple[str, int]]] = {}
        skips = _Skips(keep_going=False)  # the first bad message raises
        with open(path, "rb") as stream:
            if (os.fstat(stream.fileno()).st_dev, os.fstat(stream.fileno()).st_ino) != file_id:
                raise OSError("the file was replaced")
            stream.seek(start)
            state = fold_into({}, codec, _parsed(codec, path, enumerate(stream, 1), skips), key_paths, tags=tags)
        serialized, ends = bytearray(), []
        for record in state.values():
            serialized += codec.serialize(record)  # copied at once (see _emit_all)
            serialized += b"\n"
            ends.append(len(serialized))
        identities = list(state)
        conn.send((skips.seen, identities, ends))
        conn.send_bytes(serialized)
    except BaseException:  # noqa: BLE001 - any failure: the parent reads this part itself
        with suppress(BaseException):
            conn.send(None)
        return
    with suppress(BaseException):  # the parent is gone or has stopped us
        conn.send({number for index in conn.recv() for _, number in tags[identities[index]]})


def _until(numbered: Iterator[tuple[int, bytes]], end: int) -> Iterator[tuple[int, bytes]]:
    """The numbered lines that start before byte offset ``end`` (a line start); the rest stay in ``numbered``."""
    offset = 0
    for pair in numbered:
        yield pair
        offset += len(pair[1])
        if offset >= end:
            return


def _picked(numbered: Iterator[tuple[int, bytes]], wanted: set[int]) -> Iterator[tuple[int, bytes]]:
    """The lines of ``numbered`` whose position in it (from 1) is in ``wanted``."""
    last = max(wanted, default=0)
    for position, pair in enumerate(numbered, 1):
        if position > last:
            return
        if position in wanted:
            yield pair


def _without(serialized: bytes, ends: list[int], dropped: list[int]) -> list[Any]:
    """The records in ``serialized`` (record i ends at ``ends[i]``) except the ``dropped`` ones (ascending)."""
    view = memoryview(serialized)
    pieces = []
    kept_from = 0
    for index in dropped:
        pieces.append(view[kept_from : ends[index - 1] if index else 0])
        kept_from = ends[index]
    pieces.append(view[kept_from:])
    return pieces


# --------------------------------------------------------------------------------- output


def _emit(codec: Any, doc: Any) -> None:
    data = codec.serialize(doc) + b"\n"
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # an in-process capture (tests) has no byte buffer
        sys.stdout.write(data.decode("utf-8", "replace"))
    else:
        sys.stdout.flush()
        buffer.write(data)


def _emit_all(codec: Any, docs: Iterable[Any], serialized: Iterable[Any] = ()) -> None:
    """``_emit`` for every document, written in batches (a stream can yield millions), then
    the ``serialized`` chunks (bytes-like, whole lines) as they are."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        for doc in docs:
            _emit(codec, doc)
        for chunk in serialized:
            sys.stdout.write(bytes(chunk).decode("utf-8", "replace"))
        return
    sys.stdout.flush()
    serialize = codec.serialize
    # Copied into one bytearray at once: holding thousands of serializer results alive made
    # orjson's allocations several times slower (they start at 1 KiB and shrink in place).
    batch = bytearray()
    try:
        for doc in docs:
            batch += serialize(doc)
            batch += b"\n"
            if len(batch) >= 1 << 20:
                buffer.write(batch)
                batch.clear()
    finally:  # what was produced before an error is still written, as _emit would have
        buffer.write(batch)
        buffer.flush()
    for chunk in serialized:
        buffer.write(chunk)
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

"""``ampsctl filter check|test|functions``: the AMPS filter language from the shell.

Thin commands: parse options, call ``ampsctl.filter``, render. The library is imported
inside each command so ``ampsctl --help`` stays cheap (tests/cli/test_startup.py).

Output contract (docs/filter-language.md; golden files in tests/cli/golden/filter/):
``check`` prints the canonical form (exit 0) or the diagnosis with a caret (stdout, exit 3);
``test`` prints one verdict per message from the compiled fast path (exit 0 all matched,
1 some did not, 3 the filter or a message is invalid: a bad message is reported on stderr
with its line number and the others are still tested); ``--format json`` is JSON Lines.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
from collections.abc import Iterator
from enum import Enum
from typing import TYPE_CHECKING, Any

import typer

from ampsctl.errors import AmpsctlError, EnvironmentProblem, ExitCode, InputError, UsageError
from ampsctl.lines import UTF8_BOM, not_utf8

if TYPE_CHECKING:
    from ampsctl.filter.ast import Expr
    from ampsctl.filter.catalog import FunctionSpec
    from ampsctl.filter.errors import FilterError

app = typer.Typer(help="Check AMPS filter expressions and try them on JSON messages.", no_args_is_help=True)

MB = 1024 * 1024
WINDOW = 60  # characters shown either side of the caret when the offending line is long
SHOWN = 120  # longest node text or value that --explain prints before eliding the rest
DEEPEST = 16  # nesting of a message value that --explain still spells out

# Lone surrogates are argv bytes that were not UTF-8 (PEP 383) and cannot be written to a
# UTF-8 stream; other control characters would break the caret line.
_SURROGATES = re.compile("[\ud800-\udfff]")
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f]")


class Format(str, Enum):
    text = "text"
    json = "json"


class CatalogFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


EXPR_HELP = "The filter, e.g. \"/symbol = 'MSFT' AND /qty > 100\". Put -- before a filter that starts with '-'."


@app.command("check")
def check_command(
    expr: str = typer.Argument(..., help=EXPR_HELP),
    format: Format = typer.Option(Format.text, "--format", "-f", help="Output format."),
) -> None:
    """Parse a filter and print its canonical form, or the error with a caret under it.

    The filter is also compiled, as `filter test` would, so an invalid LIKE pattern or an
    aggregate function (views only) is reported too.
    Exit codes: 0 the filter is valid, 3 it is not (the diagnosis is printed on stdout).
    """
    from ampsctl.filter.compiler import compile_filter
    from ampsctl.filter.errors import FilterError
    from ampsctl.filter.parser import with_position
    from ampsctl.filter.printer import to_text

    try:
        tree = _parse(expr)
        compile_filter(tree)
        canonical = to_text(tree)
    except FilterError as error:
        exc = with_position(error, expr)  # the compiler's errors come without a column
        _write(_dumps(_error_object(exc)) if format is Format.json else _error_text(exc))
        raise typer.Exit(ExitCode.INVALID_INPUT) from None
    _write(_dumps({"valid": True, "canonical": canonical}) if format is Format.json else canonical)


@app.command("test")
def test_command(
    expr: str = typer.Argument(..., help=EXPR_HELP),
    data: str = typer.Option(
        ..., "--data", "-d", metavar="MESSAGE|@FILE|-",
        help="One JSON message, or @FILE / - (stdin) with one JSON message per line.",
    ),
    explain: bool = typer.Option(False, "--explain", help="Show every node of the filter with its value."),
    format: Format = typer.Option(Format.text, "--format", "-f", help="Output format (json: one object per message)."),
    max_message_size: int = typer.Option(16, "--max-message-size", min=1, help="Refuse messages longer than this many MB."),
) -> None:
    """Test a filter on JSON messages and print true or false for each one.

    Each message is one JSON object. Messages from a file or stdin are numbered
    by line; blank lines are skipped. Exit codes: 0 every message matched, 1 at
    least one did not, 3 the filter or a message is invalid, or a message is not
    a JSON object (the other messages are still tested).
    """
    from ampsctl.filter.compiler import compile_filter
    from ampsctl.filter.errors import FilterError
    from ampsctl.filter.parser import with_position

    try:
        tree = _parse(expr)
        predicate = compile_filter(tree)
    except FilterError as error:
        exc = with_position(error, expr)
        as_json = format is Format.json  # JSON goes to stdout like check's; text is a diagnostic
        _write(_dumps(_error_object(exc)) if as_json else _error_text(exc, prefix="ampsctl: error: "), err=not as_json)
        raise typer.Exit(ExitCode.INVALID_INPUT) from None

    # A limit beyond what readline() takes (sys.maxsize) is no limit at all: it was an OverflowError.
    source, messages = _open_messages(data, min(max_message_size * MB, sys.maxsize - 1))
    numbered = source != "--data"  # an inline message needs no line number
    seen = matched = bad = 0
    for line, raw, problem in messages:
        seen += 1
        verdict, rows = False, None
        if problem is None:
            verdict, rows, problem = _judge(tree, predicate, raw, explain)
        if problem is not None:
            bad += 1
            _write(f"ampsctl: error: {source}{f':{line}' if numbered else ''}: {problem}", err=True)
            if format is Format.json:
                _write(_dumps({"line": line, "error": problem}))
            continue
        matched += verdict
        if format is Format.json:
            extra = {} if rows is None else {"explain": [_row_object(*row) for row in rows]}
            _write(_dumps({"line": line, "match": verdict, **extra}))
        else:
            _write(f"{f'{line}: ' if numbered else ''}{'true' if verdict else 'false'}")
            for row in rows or ():
                _write(_row_text(*row))
        if source == "<stdin>":
            sys.stdout.flush()  # one verdict per message as it arrives: `tail -f | ampsctl ...`
    if not seen:
        raise InputError(f"no messages in {source}", hint="give one JSON message per line, e.g. {\"symbol\": \"MSFT\"}")
    if bad:
        raise typer.Exit(ExitCode.INVALID_INPUT)
    if matched < seen:
        raise typer.Exit(ExitCode.FINDINGS)


@app.command("functions")
def functions_command(
    format: CatalogFormat = typer.Option(CatalogFormat.text, "--format", "-f", help="Output format."),
) -> None:
    """List the functions of the filter language: arity, kind and Spark mapping."""
    specs = _catalog()
    if format is CatalogFormat.markdown:
        sys.stdout.write(functions_markdown(specs))
    elif format is CatalogFormat.json:
        sys.stdout.write(json.dumps([dataclasses.asdict(s) for s in specs], indent=2) + "\n")
    else:
        rows = [(s.name, _arity(s), _kind(s), str(s.spark), s.summary) for s in specs]
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        for row in rows:
            _write("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[4])


def functions_markdown(specs: list[FunctionSpec] | None = None) -> str:
    """The function table of docs/filter-language.md (`ampsctl filter functions -f markdown`)."""
    specs = _catalog() if specs is None else specs
    out = ["| Function | Arguments | Kind | Spark | Summary |", "| --- | --- | --- | --- | --- |"]
    for s in specs:
        summary = " ".join(s.summary.split()).replace("|", "\\|")
        out.append(f"| `{s.signature or s.name}` | {_arity(s)} | {_kind(s)} | {s.spark} | {summary} |")
    return "\n".join(out) + "\n"


def _catalog() -> list[FunctionSpec]:
    from ampsctl.filter.catalog import FUNCTIONS

    return sorted(FUNCTIONS.values(), key=lambda s: s.name)


def _arity(spec: FunctionSpec) -> str:
    if spec.max_args is None:
        return f"{spec.min_args}+"
    return str(spec.min_args) if spec.min_args == spec.max_args else f"{spec.min_args}-{spec.max_args}"


def _kind(spec: FunctionSpec) -> str:
    kind = "aggregate (views only)" if spec.aggregate else "scalar"
    return kind if spec.deterministic else f"{kind}, non-deterministic"



def _parse(expr: str) -> Expr:
    from ampsctl.filter.parser import parse

    # Give the parser the bytes the user typed, so it reports invalid UTF-8 itself.
    return parse(_as_bytes(expr) if _SURROGATES.search(expr) else expr)


def _as_bytes(text: str) -> bytes:
    """The original bytes of a command-line argument, including bytes that were not UTF-8."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that did not come from argv decoding
        return text.encode("utf-8", "surrogatepass")


def _error_object(exc: FilterError) -> dict[str, Any]:
    return {"valid": False, "error": exc.message, "position": exc.position, "hint": exc.hint}


def _error_text(exc: FilterError, prefix: str = "") -> str:
    lines = [f"{prefix}invalid filter: {exc.message}{_where(exc.expression, exc.position)}"]
    lines += [f"  {line}" for line in _caret(exc.expression, exc.position)]
    if exc.hint:
        lines.append(f"  hint: {exc.hint}")
    return "\n".join(lines)


def _where(expression: str, position: int | None) -> str:
    if position is None or not expression:
        return ""
    position = max(0, min(position, len(expression)))
    column = position - expression.rfind("\n", 0, position)
    line = f"line {expression.count(chr(10), 0, position) + 1}, " if "\n" in expression else ""
    return f" ({line}column {column})"


def _caret(expression: str, position: int | None) -> list[str]:
    """The offending line (a window of it when long) and a caret under the character.

    Unlike FilterError.caret() this keeps tabs in the padding and masks control characters,
    so the caret stays aligned in a terminal, and it never prints a megabyte-long line.
    """
    if position is None or not expression:
        return []
    position = max(0, min(position, len(expression)))
    start = expression.rfind("\n", 0, position) + 1
    end = expression.find("\n", position)
    line = expression[start : len(expression) if end < 0 else end]
    column = position - start
    low, high = max(0, column - WINDOW), min(len(line), column + WINDOW)
    head, tail = ("..." if low else ""), ("..." if high < len(line) else "")
    shown = _UNPRINTABLE.sub("\ufffd", line[low:high])
    pad = "".join("\t" if ch == "\t" else " " for ch in head + shown[: column - low])
    return [head + shown + tail, pad + "^"]



def _open_messages(data: str, limit: int) -> tuple[str, Iterator[tuple[int, bytes, str | None]]]:
    """(source name, messages as (line number, raw bytes, problem or None))."""
    if data == "-":
        return "<stdin>", _lines(sys.stdin.buffer, limit, "<stdin>")
    if data.startswith("@"):
        path = data[1:]
        if not path:
            raise UsageError("--data @ needs a file name", hint="for example --data @messages.jsonl")
        try:
            stream = open(path, "rb")  # noqa: SIM115  (closed by _lines)
        except OSError as exc:
            raise InputError(f"cannot read '{path}': {exc.strerror}", hint="give an existing file after @") from None
        return path, _lines(stream, limit, path, close=True)
    raw = _as_bytes(data)
    problem = "the message is empty" if not raw.strip() else (_too_long(limit) if len(raw) > limit else None)
    return "--data", iter([(1, raw, problem)])


def _lines(stream, limit: int, name: str, *, close: bool = False) -> Iterator[tuple[int, bytes, str | None]]:  # noqa: ANN001
    """One message per line; a line longer than ``limit`` is reported, never held in memory.
    A read that fails (EIO, a file that cannot be read as a stream) is exit 4, not a traceback."""
    try:
        number = 0
        while chunk := _read_line(stream, limit + 1, name):
            number += 1
            if len(chunk) > limit and not chunk.endswith(b"\n"):
                while chunk and not chunk.endswith(b"\n"):  # skip the rest of the line
                    chunk = _read_line(stream, MB, name)
                yield number, b"", _too_long(limit)
                continue
            if number == 1:
                chunk = chunk.removeprefix(UTF8_BOM)
            if chunk.strip():
                yield number, chunk, None
    finally:
        if close:
            stream.close()


def _read_line(stream, size: int, name: str) -> bytes:  # noqa: ANN001
    try:
        return stream.readline(size)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read '{name}': {exc.strerror or exc}",
                                 hint="check the file or device; messages before this point were tested") from None


def _too_long(limit: int) -> str:
    return f"the message is longer than {limit // MB} MB (--max-message-size)"


def _judge(tree: Expr, predicate: Any, raw: bytes, explain: bool) -> tuple[bool, list | None, str | None]:
    """(verdict from the compiled predicate, --explain rows, or the reason it cannot be tested)."""
    from ampsctl.filter.errors import FilterError
    from ampsctl.messages.json_codec import JSON
    from ampsctl.messages.json_record import JsonRecord

    try:
        # The json codec, as delta merge and journal import read a message: one JSON object.
        record = JsonRecord(JSON.parse(raw))
    except (ValueError, AmpsctlError) as exc:  # orjson's JSONDecodeError is a ValueError
        reason = exc.message if isinstance(exc, AmpsctlError) else f"invalid JSON message: {exc}"
        return False, None, not_utf8(raw) or reason
    try:
        return bool(predicate(record)), (_explain(tree, record) if explain else None), None
    except FilterError as exc:  # e.g. a LIKE pattern that ran past its timeout
        return False, None, exc.message



def _explain(tree: Expr, record: Any) -> list[tuple[int, Expr, bool, Any]]:
    """(depth, node, evaluated, value) for every node, parents first, from the evaluator's trace.

    Nodes are matched by identity: hashing a deep tree would recurse, and a node the
    evaluator skipped (short-circuit, the branch IF did not take) has no entry.
    """
    from typing import get_args

    from ampsctl.filter import ast
    from ampsctl.filter.evaluate import evaluate

    trace: list[tuple[Expr, Any]] = []
    evaluate(tree, record, trace=trace)
    values = {id(node): value for node, value in trace}
    kinds = get_args(ast.Expr)
    rows = []
    stack: list[tuple[int, Expr]] = [(0, tree)]
    while stack:  # iterative, so no recursion limit applies to the walk
        depth, node = stack.pop()
        rows.append((depth, node, id(node) in values, values.get(id(node))))
        children: list[Expr] = []
        for value in (getattr(node, spec.name) for spec in dataclasses.fields(node)):
            children.extend(item for item in (value if isinstance(value, tuple) else (value,)) if isinstance(item, kinds))
        stack.extend((depth + 1, child) for child in reversed(children))
    return rows


def _row_text(depth: int, node: Expr, evaluated: bool, value: Any) -> str:
    from ampsctl.filter.printer import to_text

    return f"{'  ' * (depth + 1)}{_clip(to_text(node))} -> {_clip(_show(value)) if evaluated else '(not evaluated)'}"


def _row_object(depth: int, node: Expr, evaluated: bool, value: Any) -> dict[str, Any]:
    from ampsctl.filter.printer import to_text

    value = _jsonable(value) if evaluated else None
    return {"depth": depth, "node": type(node).__name__, "text": to_text(node), "evaluated": evaluated, "value": value}


def _show(value: Any, depth: int = 0) -> str:
    """A value as the filter language would write it: NULL, numbers, 'quoted' strings."""
    if value is None or isinstance(value, bool):
        return "NULL" if value is None else ("true" if value else "false")
    if isinstance(value, (int, float)):
        return "NaN" if value != value else repr(value)  # Python's repr: 24.0 stays "24.0" (A8)
    if isinstance(value, str):
        return _quote(value)
    if depth >= DEEPEST:
        return "..."
    if isinstance(value, list):
        return "[" + ", ".join(_show(v, depth + 1) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_quote(str(k))}: {_show(v, depth + 1)}" for k, v in value.items()) + "}"
    return repr(value)


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    return "'" + _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", escaped) + "'"


def _clip(text: str) -> str:
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(text)} characters)"


def _jsonable(value: Any, depth: int = 0) -> Any:
    """JSON has no NaN and this output must stay valid JSON; deep nesting is elided."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, (list, dict)) and depth >= DEEPEST:
        return "..."
    if isinstance(value, list):
        return [_jsonable(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    return value



def _dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _write(text: str, *, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(_SURROGATES.sub("\ufffd", text) + "\n")

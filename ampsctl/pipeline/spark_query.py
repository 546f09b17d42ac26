"""An AMPS filter over a Spark DataFrame of messages: compiled to Spark SQL, or the stated fallback.

Theory of operation. ``filter_frame(df, text)`` parses the filter and compiles it with the
Python compiler first, so a bad filter fails exactly as with the local engine (FilterError,
exit 3). Then:

* compiled: the JVM keeps the rows the condition accepts plus the unsure rows (``spark_filter``
  guards rows whose data Spark would treat differently, and every message Spark cannot
  read, or may read where orjson refuses it: ``_message``), and a ``mapInArrow`` step runs
  ampsctl's evaluator on the unsure rows only (the sure ones pass through). The answer is
  exact on every row;
* ``UnsupportedFilterError`` (a construct Spark cannot express): every row goes through
  ``mapInArrow`` with ampsctl's evaluator, and ``on_fallback(reason)`` is called so the
  caller states it (the CLI prints it on stderr and in the result's strategy). The second
  value returned is True in that case.
For message types other than JSON the compiler does not apply: always the fallback, stated.
With ``error_column``, a row whose evaluation fails (a LIKE past its timeout, a CONCAT too
long, a message that does not parse) is kept, marked with its error (``failure_of`` reads it
back), instead of failing
the job in whichever task meets it first: the caller raises the failure the local engine's
scan in file order meets first, naming its record.
The Python side is ``filter.compiler.compile_filter``, the closure the local engine runs,
which the filter tests keep equal to ``filter.evaluate``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ampsctl.errors import InputError
from ampsctl.filter import ast
from ampsctl.filter.errors import FilterError

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

_MESSAGE = "__ampsctl_message"
_SURE = "__ampsctl_sure"
_BLANK = " \t\r\n"  # JSON's whitespace
# A closing bracket followed by anything but a comma or another closing bracket: in one JSON
# document only inside a string; otherwise text after the document, which parse_json ignores.
_AFTER_CLOSE = r"[}\]][ \t\r\n]*[^ \t\r\n,}\]]"
# A number orjson would read as infinity (an error) and parse_json keeps: an exponent of 100 or
# more, or 300 digits in a row (also inside strings: those rows just go to the evaluator).
_HUGE_NUMBER = r"[0-9][eE]\+?0*[1-9][0-9]{2}|[0-9]{300}"


def fallback_note(reason: str) -> str:
    """The sentence the CLI prints when a filter runs on the Python evaluator inside Spark."""
    return f"filter not compiled to Spark SQL ({reason}); evaluating it with ampsctl's Python evaluator inside Spark (mapInArrow)"


def parse_checked(filter_text: str) -> ast.Expr:
    """The AST, after the same checks the local engine makes (FilterError on a bad filter)."""
    from ampsctl.filter.compiler import compile_filter
    from ampsctl.filter.parser import parse

    expr = parse(filter_text)
    compile_filter(expr)  # invalid LIKE patterns, aggregates, ... fail here as they do locally
    return expr


def filter_frame(df: DataFrame, filter_text: str, *, payload: str = "payload", message_type: str = "json",
                 on_fallback: Callable[[str], None] | None = None,
                 error_column: str | None = None) -> tuple[DataFrame, bool]:
    """``df`` narrowed to the rows whose ``payload`` the filter selects; True when it fell back.

    ``error_column``: add this string column, NULL on selected rows and the FilterError (see
    ``failure_of``) on the rows whose evaluation failed, which are kept too."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    from ampsctl.pipeline.spark_filter import UnsupportedFilterError, compile_filter, with_bindings

    expr = parse_checked(filter_text)
    names = df.columns
    schema = df.schema if error_column is None else StructType([*df.schema.fields, StructField(error_column, StringType())])
    if message_type != "json":
        reason = f"the Spark compiler reads JSON messages, this topic holds {message_type}"
    else:
        framed = df.withColumn(_MESSAGE, _message(F.col(payload).cast("string")))
        try:
            compiled = compile_filter(expr, F.col(_MESSAGE))
        except UnsupportedFilterError as exc:
            reason = f"{exc.construct}: {exc.reason}"
        else:
            framed = with_bindings(framed, compiled)
            sure = compiled.exact & F.col(_MESSAGE).isNotNull()  # orjson decides what an unread message is
            candidates = (framed.withColumn(_SURE, sure)
                          .where(~F.col(_SURE) | compiled.condition).select(*names, _SURE))
            run = _python_filter(filter_text, message_type, payload, _SURE, names, error_column)
            return candidates.mapInArrow(run, schema), False
    if on_fallback is not None:
        on_fallback(reason)
    return df.mapInArrow(_python_filter(filter_text, message_type, payload, None, names, error_column), schema), True


def _message(text: Column) -> Column:
    """The message as a VARIANT, NULL where parse_json fails and where it may read what orjson
    refuses (the rows then go to the evaluator, which raises the local engine's error). parse_json
    reads the first document and ignores the rest, takes any top-level value, infinite numbers and
    bytes that are not UTF-8. The checks are cheap, not a parser: text after the object that
    ends with '}' and keeps the brackets balanced, with every closing bracket followed by a comma
    or another closing bracket (``{"a":[1]}],[{}``), is not caught (docs/pipeline.md)."""
    from pyspark.sql import functions as F

    def count(char: str) -> Column:
        return F.char_length(text) - F.char_length(F.replace(text, F.lit(char), F.lit("")))

    body = F.btrim(text, F.lit(_BLANK))
    plausible = (F.call_function("is_valid_utf8", text) & body.startswith("{") & body.endswith("}")
                 & (count("{") == count("}")) & (count("[") == count("]"))
                 & ~text.rlike(_AFTER_CLOSE) & ~text.rlike(_HUGE_NUMBER))
    return F.when(plausible, F.try_parse_json(text))


def failure_of(marked: str) -> InputError:
    """The error a row of ``error_column`` carries: a FilterError, or the message's InputError."""
    fields = json.loads(marked)
    if fields["kind"] == "filter":
        return FilterError(fields["message"], expression=fields["expression"], position=fields["position"],
                           hint=fields["hint"], code=fields["code"])
    return InputError(fields["message"], hint=fields["hint"], code=fields["code"])


def _marked(error: InputError) -> str:
    filtering = isinstance(error, FilterError)
    return json.dumps({"kind": "filter" if filtering else "input", "message": error.message, "hint": error.hint,
                       "code": error.code, "expression": error.expression if filtering else None,
                       "position": error.position if filtering else None})


def _python_filter(filter_text: str, message_type: str, payload: str, sure: str | None, names: list[str],
                   error_column: str | None) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function: ampsctl's evaluator on every row not already decided (``sure``)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from ampsctl.filter.compiler import compile_filter
        from ampsctl.filter.parser import parse
        from ampsctl.sow.payloads import Payloads

        predicate = compile_filter(parse(filter_text))
        payloads = Payloads(message_type)

        def outcome(raw: Any) -> tuple[bool, str | None]:
            """(keep the row, its marked failure)."""
            data = raw.encode("utf-8") if isinstance(raw, str) else raw
            if error_column is None:
                return bool(predicate(payloads.record(payloads.parse(data)))), None
            try:
                return bool(predicate(payloads.record(payloads.parse(data)))), None
            except InputError as error:  # kept and marked: the driver decides which failure counts
                return True, _marked(error)

        for batch in batches:
            raws = batch.column(batch.schema.get_field_index(payload)).to_pylist()
            decided = [False] * len(raws) if sure is None else batch.column(batch.schema.get_field_index(sure)).to_pylist()
            outcomes = [(True, None) if ok else outcome(raw) for ok, raw in zip(decided, raws)]
            if error_column is not None:
                batch = batch.append_column(error_column, pa.array([failure for _, failure in outcomes], type=pa.string()))
            kept = batch.filter(pa.array([keep for keep, _ in outcomes], type=pa.bool_()))
            yield kept.select(names if error_column is None else [*names, error_column])

    return run


def collect(frame: DataFrame) -> list[Any]:
    """``frame.collect()``, with an evaluation error raised by ampsctl's evaluator in a Spark
    worker (a LIKE past its timeout, a message that does not parse) turned back into the typed
    error the local engine raises (exit 3) instead of Spark's PythonException."""
    try:
        return frame.collect()
    except Exception as exc:
        text = str(exc)
        for marker in ("ampsctl.filter.errors.FilterError: ", "ampsctl.errors.InputError: "):
            if marker in text:
                from ampsctl.errors import InputError

                message = text.split(marker, 1)[1].strip().splitlines()[0]
                raise InputError(f"while evaluating the filter in Spark: {message}", code="FILTER") from None
        raise

"""An AMPS filter over a Spark DataFrame of messages: compiled to Spark SQL, or the stated fallback.

Theory of operation. ``filter_frame(df, text)`` parses the filter and compiles it with the
Python compiler first, so a bad filter fails exactly as with the local engine (FilterError,
exit 3). Then:

* compiled, no guards: ``df.where(condition)``, all in the JVM;
* compiled with guards (``spark_filter`` guards rows whose data Spark would treat
  differently): the JVM keeps the rows the condition accepts plus the unsure rows, and a
  ``mapInArrow`` step runs ampsctl's evaluator on the unsure rows only (the sure ones pass
  through). The answer is exact on every row;
* ``UnsupportedFilterError`` (a construct Spark cannot express): every row goes through
  ``mapInArrow`` with ampsctl's evaluator, and ``on_fallback(reason)`` is called so the
  caller states it (the CLI prints it on stderr and in the result's strategy). The second
  value returned is True in that case.
For message types other than JSON the compiler does not apply: always the fallback, stated.
With ``error_column``, a row whose evaluation fails (a LIKE past its timeout, a CONCAT too
long) is kept, marked with its FilterError (``failure_of`` reads it back), instead of failing
the job in whichever task meets it first: the caller raises the failure the local engine's
scan in file order meets first, naming its record.
The Python side is ``filter.compiler.compile_filter``, the closure the local engine runs,
which the filter tests keep equal to ``filter.evaluate``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ampsctl.filter import ast
from ampsctl.filter.errors import FilterError

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame

_MESSAGE = "__ampsctl_message"
_SURE = "__ampsctl_sure"


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
    extra = [] if error_column is None else [F.lit(None).cast("string").alias(error_column)]
    schema = df.schema if error_column is None else StructType([*df.schema.fields, StructField(error_column, StringType())])
    if message_type != "json":
        reason = f"the Spark compiler reads JSON messages, this topic holds {message_type}"
    else:
        framed = df.withColumn(_MESSAGE, F.try_parse_json(F.col(payload).cast("string")))
        try:
            compiled = compile_filter(expr, F.col(_MESSAGE))
        except UnsupportedFilterError as exc:
            reason = f"{exc.construct}: {exc.reason}"
        else:
            framed = with_bindings(framed, compiled)
            if not compiled.guarded:
                return framed.where(compiled.condition).select(*names, *extra), False
            candidates = (framed.withColumn(_SURE, compiled.exact)
                          .where(~F.col(_SURE) | compiled.condition).select(*names, _SURE))
            run = _python_filter(filter_text, message_type, payload, _SURE, names, error_column)
            return candidates.mapInArrow(run, schema), False
    if on_fallback is not None:
        on_fallback(reason)
    return df.mapInArrow(_python_filter(filter_text, message_type, payload, None, names, error_column), schema), True


def failure_of(marked: str) -> FilterError:
    """The FilterError a row of ``error_column`` carries."""
    fields = json.loads(marked)
    return FilterError(fields["message"], expression=fields["expression"], position=fields["position"],
                       hint=fields["hint"], code=fields["code"])


def _marked(error: FilterError) -> str:
    return json.dumps({"message": error.message, "expression": error.expression, "position": error.position,
                       "hint": error.hint, "code": error.code})


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
            record = payloads.record(payloads.parse(data))
            if error_column is None:
                return bool(predicate(record)), None
            try:
                return bool(predicate(record)), None
            except FilterError as error:  # kept and marked: the driver decides which failure counts
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

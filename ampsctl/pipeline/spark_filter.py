"""The filter AST compiled to Spark ``Column`` expressions over a JSON message (issue 8 item 4).

``filter/evaluate.py`` is THE semantics; this module emits Spark SQL that gives the same
answer, or raises ``UnsupportedFilterError`` (what and why). It never approximates.

Theory of operation.

* The message is one ``VARIANT`` column (``try_parse_json`` of the payload), which keeps
  JSON's dynamic types: a field is read with ``try_variant_get(v, "$['a']['b'][0]",
  'variant')`` and classified per row by ``schema_of_variant``.
* Every AMPS value is carried as an *element*: ``struct<t, n, s, i>`` where ``t`` is the kind
  (``b`` boolean, ``i`` integer, ``f`` float, ``z`` integral JSON decimal, ``s`` string,
  NULL for NULL: missing, JSON null, ``''``, an object), ``n`` the numeric value as a double
  (a string's number by the §4.4 grammar, else NULL), ``s`` the text form (NULL for floats)
  and ``i`` whether the number is integral-typed (int/int division truncates). A float's
  text is known only for a literal (Python ``repr`` at compile time).
  A field also has its ``elems`` (array of elements: an array field's values, a scalar as
  one) for the array-aware predicates, and its own IS NULL test (an object is not NULL, an
  empty array is).
* Predicates are Spark booleans, whose three-valued AND/OR/NOT and ``exists`` (true if any,
  else NULL if any NULL, else false) are SQL's, as ``values.or3``/``and3``. Empty element
  lists give NULL, as ``values.compare``.
* Exactness has two levels. A construct Spark cannot express raises UnsupportedFilterError
  at compile time (a function without a faithful mapping, a LIKE pattern outside the
  ``spark_regex`` core, an integer literal beyond 2^53). Values that Spark would handle
  differently only on some rows are *guards*: ``Compiled.exact`` is false on a row where any
  guard holds, and the caller evaluates that row with the Python evaluator instead. Guards:
  a path through an array of objects or a nested array (A10); a subscript on a non-array; an
  integer (or integral numeric string, or integral JSON decimal: 2^63 to 2^64 are DECIMAL(19|20,0)
  in a VARIANT) of 2^53 or more, where a double is no longer exact; a
  float used as text (Python ``repr`` is not Spark's cast); an integral JSON decimal (``1.0``
  parses to ``DECIMAL(1,0)``, losing float-ness) in arithmetic or text; an integer result of
  2^53 or more; a CONCAT result beyond ``MAX_TEXT`` characters (an evaluation error in
  ampsctl); a message ``try_parse_json`` rejects (orjson decides what the error is).
* The compiler is side-effect free and the columns it returns are deterministic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ampsctl.errors import InputError
from ampsctl.filter import ast
from ampsctl.filter.regexes import MAX_TEXT
from ampsctl.filter.values import parse_number
from ampsctl.pipeline.spark_regex import UnsupportedRegex, to_java

EXACT_LIMIT = float(2**53)  # beyond this an integer is not exact as a double
# values._NUMBER_RE, anchored. \z, not $: Java's $ also matches before a final line terminator
# ('5\n' would be a number, and Spark's cast of '5\u2028' fails the whole query)
_NUMBER_RE = r"^-?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?\z"
_INT_RE = r"^-?[0-9]+\z"
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_UPPER = _LOWER.upper()
_INT_KINDS = ("BIGINT", "INT", "SMALLINT", "TINYINT")
_SQL_CMP: dict[str, Callable[[Column, Column], Column]] = {
    "=": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}
# What `op` gives when the left side is greater (1) or smaller (-1) than the right.
_ORDERED = {op: {1: op in ("!=", ">", ">="), -1: op in ("!=", "<", "<=")} for op in _SQL_CMP}
SUPPORTED_FUNCTIONS = frozenset({
    "UPPER", "LOWER", "CONCAT", "INSTR", "INSTR_I", "STREQUAL_I", "SUBSTR", "REVERSE", "LENGTH", "LEN",
    "ABS", "IF", "COALESCE", "TRUE_VALUE", "FALSE_VALUE", "NAN_VALUE",
})
def _null_bool() -> Column:
    return F.lit(None).cast("boolean")


class UnsupportedFilterError(InputError):
    """A filter construct Spark SQL cannot express exactly: ``construct`` and ``reason``."""

    def __init__(self, construct: str, reason: str) -> None:
        super().__init__(f"cannot compile {construct} to Spark SQL: {reason}", code="SPARK_UNSUPPORTED",
                         hint="the filter is evaluated with the Python evaluator inside Spark instead")
        self.construct = construct
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Compiled:
    """``condition``: the row matches; only meaningful where ``exact`` (never NULL) is true."""

    bindings: tuple[tuple[str, Column], ...]  # add these columns, in order, before using the others
    condition: Column
    exact: Column
    guarded: bool  # False: ``exact`` is constant true, no row needs the Python evaluator


@dataclass(frozen=True, slots=True)
class _Val:
    scalar: Column  # the element a scalar context sees (first element of an array)
    elems: Column | None = None  # array<element> for array-aware predicates; None: [scalar]
    isnull: Column | None = None  # IS NULL; None: scalar.t IS NULL


@dataclass(slots=True)
class _Compiler:
    message: Column
    prefix: str = "__ampsctl_b"
    guards: list[Column] = field(default_factory=list)
    bindings: list[tuple[str, Column]] = field(default_factory=list)
    fields: dict[ast.Field, _Val] = field(default_factory=dict)

    def bind(self, column: Column) -> Column:
        """``column`` computed once per row as a named column: references stay small (no blow-up)."""
        name = f"{self.prefix}{len(self.bindings)}"
        self.bindings.append((name, column))
        return F.col(name)

    def bound(self, val: _Val) -> _Val:
        return _Val(self.bind(val.scalar), val.elems, val.isnull)

    # ----------------------------------------------------------------- entry points

    def value(self, expr: ast.Expr) -> _Val | Column:
        """A _Val for values, a boolean Column for predicates."""
        method = getattr(self, "_" + type(expr).__name__.lower(), None)
        if method is None:
            raise UnsupportedFilterError(type(expr).__name__, "not a filter expression node")
        result = method(expr)
        if isinstance(expr, (ast.Negate, ast.Arithmetic, ast.Call)):
            return self.bound(result)
        if isinstance(result, Column) and not isinstance(expr, (ast.Literal, ast.Field)):
            return self.bind(result)
        return result

    def val(self, expr: ast.Expr) -> _Val:
        result = self.value(expr)
        return result if isinstance(result, _Val) else _Val(self.bind(_boolean(result).scalar))

    def truth(self, expr: ast.Expr) -> Column:
        result = self.value(expr)
        return result if isinstance(result, Column) else _truth(result.scalar)

    def guard(self, condition: Column) -> None:
        self.guards.append(F.coalesce(condition, F.lit(False)))

    # ----------------------------------------------------------------- leaves

    def _literal(self, node: ast.Literal) -> _Val:
        return _Val(_constant(node.value))

    def _field(self, node: ast.Field) -> _Val:
        if node not in self.fields:
            self.fields[node] = self._read_field(node)
        return self.fields[node]

    def _read_field(self, node: ast.Field) -> _Val:
        steps = node.steps
        if not node.bracketed and any(step.name.startswith("@") for step in steps):
            return _Val(_null_elem(), F.array().cast(f"array<{_ELEM_TYPE}>"), F.lit(True))  # XML attribute
        path = "$"
        for number, step in enumerate(steps):
            if any(char in step.name for char in "'\\[]"):
                raise UnsupportedFilterError(f"the field name {step.name!r}", "quotes, backslashes and brackets cannot be written in a Spark JSON path")
            if number:  # stepping into an array maps over its elements (A10): Python decides
                self.guard(_is_array(self.message, path))
            path += f"['{step.name}']"
            if step.index is not None:  # a subscript on a scalar is the scalar itself (A11): Python decides
                base = F.try_variant_get(self.message, path, "variant")
                self.guard(base.isNotNull() & ~_is_array(self.message, path) & ~_is_void(base))
                path += f"[{step.index}]"
        self.guard(self.message.isNull())  # not JSON for Spark: the evaluator reports or decides
        raw = self.bind(F.try_variant_get(self.message, path, "variant"))
        items = self.bind(F.try_variant_get(raw, "$", "array<variant>"))
        self.guard(F.exists(items, lambda item: F.try_variant_get(item, "$", "array<variant>").isNotNull()))
        elems = self.bind(_elements(F.when(items.isNotNull(), items).otherwise(F.array(raw))))
        self.guard(F.exists(elems, _big_int))
        kind = F.schema_of_variant(raw)
        isnull = self.bind(raw.isNull() | (kind == "VOID") | (F.coalesce(F.size(items), F.lit(1)) == 0)
                           | ((kind == "STRING") & (F.try_variant_get(raw, "$", "string") == "")))
        return _Val(self.bind(F.try_element_at(elems, F.lit(1))), elems, isnull)

    # ----------------------------------------------------------------- arithmetic

    def _negate(self, node: ast.Negate) -> _Val:
        a = self.val(node.operand).scalar
        number = -a["n"]
        kind = F.when(a["n"].isNull(), None).when(a["t"] == "z", "z").when(a["i"], "i").otherwise("f")
        return _Val(_make(kind, number, F.when(a["i"], _int_text(number)), a["i"]))

    def _arithmetic(self, node: ast.Arithmetic) -> _Val:
        a, b = self.val(node.left).scalar, self.val(node.right).scalar
        self.guard((a["t"] == "z") | (b["t"] == "z"))  # int or float? the JSON text decided, the variant forgot
        x, y, both = a["n"], b["n"], a["i"] & b["i"]
        op = node.op
        if op in ("+", "-", "*"):
            number = x + y if op == "+" else x - y if op == "-" else x * y
        else:
            # try_cast: an integral numeric string beyond 2^63 ('1' and 40 zeros) is guarded (the
            # evaluator decides), but a plain cast would fail the whole query under ANSI mode
            whole_x, whole_y = x.try_cast("bigint"), y.try_cast("bigint")
            if op == "/":
                # -2^63 div -1 overflows bigint and fails the whole query under ANSI mode; its row is
                # guarded (an operand beyond 2^53), so NULL here is never used
                overflow = (whole_x == F.lit(-(2**63))) & (whole_y == -1)
                integral = F.when(~overflow, F.call_function("div", whole_x, whole_y).cast("double"))
                number = F.when(y == 0, None).when(both, integral).otherwise(F.try_divide(x, y))
            else:
                number = F.when(y == 0, None).when(both, (whole_x % whole_y).cast("double")).otherwise(x % y)
        number = self.bind(number)
        self.guard(both & (F.abs(number) >= EXACT_LIMIT))
        kind = F.when(number.isNull(), None).when(both, "i").otherwise("f")
        return _Val(_make(kind, number, F.when(both, _int_text(number)), both))

    # ----------------------------------------------------------------- predicates

    def _comparison(self, node: ast.Comparison) -> Column:
        return self.compare(node.op, self.val(node.left), self.val(node.right))

    def compare(self, op: str, left: _Val, right: _Val) -> Column:
        """values.compare: true if some pair of elements satisfies ``op`` (3VL, NULL when empty)."""
        if left.elems is None and right.elems is None:
            return _compare_scalars(op, left.scalar, right.scalar)
        if right.elems is None:
            return _any(left.elems, lambda a: _compare_scalars(op, a, right.scalar))
        if left.elems is None:
            return _any(right.elems, lambda b: _compare_scalars(op, left.scalar, b))
        return F.when((F.size(left.elems) == 0) | (F.size(right.elems) == 0), _null_bool()).otherwise(
            F.exists(left.elems, lambda a: F.exists(right.elems, lambda b: _compare_scalars(op, a, b))))

    def _between(self, node: ast.Between) -> Column:
        value, low, high = self.val(node.value), self.val(node.low), self.val(node.high)

        def inside(element: Column) -> Column:
            one = _Val(element)
            return self.compare(">=", one, low) & self.compare("<=", one, high)

        result = _any(value.elems, inside) if value.elems is not None else inside(value.scalar)
        return ~result if node.negated else result

    def _in(self, node: ast.In) -> Column:
        value = self.val(node.value)
        result = reduce(lambda a, b: a | b, (self.compare("=", value, self.val(option)) for option in node.options))
        return ~result if node.negated else result

    def _like(self, node: ast.Like) -> Column:
        try:
            pattern = to_java(node.pattern)
        except UnsupportedRegex as exc:
            raise UnsupportedFilterError(f"LIKE {node.pattern!r} ({exc.construct})", exc.reason) from None
        value = self.val(node.value)
        self.text_guard(value)
        result = _over(value, lambda e: e["s"].rlike(pattern))
        return ~result if node.negated else result

    def _stringmatch(self, node: ast.StringMatch) -> Column:
        value = self.val(node.value)
        self.text_guard(value)
        options = [self.text(self.val(option).scalar) for option in node.options]
        test = F.startswith if node.kind == "BEGINS" else F.endswith

        def matches(element: Column) -> Column:
            return reduce(lambda a, b: a | b, (test(element["s"], option) for option in options))

        result = _over(value, matches)
        return ~result if node.negated else result

    def _isnull(self, node: ast.IsNull) -> Column:
        value = self.val(node.value)
        null = value.isnull if value.isnull is not None else value.scalar["t"].isNull()
        return ~null if node.negated else null

    def _not(self, node: ast.Not) -> Column:
        return ~self.truth(node.operand)

    def _and(self, node: ast.And) -> Column:
        return reduce(lambda a, b: a & b, (self.truth(operand) for operand in node.operands))

    def _or(self, node: ast.Or) -> Column:
        return reduce(lambda a, b: a | b, (self.truth(operand) for operand in node.operands))

    # ----------------------------------------------------------------- text

    def text(self, element: Column) -> Column:
        """values.to_text of a scalar element; a float's text is Python's repr: guarded."""
        self.guard(element["t"].isin("f", "z") & element["s"].isNull())
        return element["s"]

    def text_guard(self, value: _Val) -> None:
        if value.elems is None:
            self.guard(value.scalar["t"].isin("f", "z") & value.scalar["s"].isNull())
        else:
            self.guard(F.exists(value.elems, lambda e: e["t"].isin("f", "z") & e["s"].isNull()))

    def text_value(self, text: Column) -> _Val:
        """A function's text result as a value: '' is NULL, numeric text is a number (guarded when big)."""
        element = _text_element(self.bind(text))
        self.guard(_big_int(element))
        return _Val(element)

    # ----------------------------------------------------------------- functions

    def _call(self, node: ast.Call) -> _Val:
        name = node.name
        if name not in SUPPORTED_FUNCTIONS:
            raise UnsupportedFilterError(f"{name}()", _UNSUPPORTED_WHY.get(name, "no exact Spark SQL mapping"))
        if name == "IF":
            condition = self.truth(node.args[0])
            when_true, when_false = self.val(node.args[1]).scalar, self.val(node.args[2]).scalar
            return _Val(F.when(F.coalesce(condition, F.lit(False)), when_true).otherwise(when_false))
        if name == "COALESCE":
            scalars = [self.val(arg).scalar for arg in node.args]
            chosen = F.when(scalars[0]["t"].isNotNull(), scalars[0])
            for candidate in scalars[1:]:
                chosen = chosen.when(candidate["t"].isNotNull(), candidate)
            return _Val(chosen.otherwise(_null_elem()))
        if name in ("TRUE_VALUE", "FALSE_VALUE", "NAN_VALUE"):
            return _Val(_constant({"TRUE_VALUE": True, "FALSE_VALUE": False, "NAN_VALUE": math.nan}[name]))
        args = [self.val(arg).scalar for arg in node.args]
        if name == "ABS":
            a = args[0]
            kind = F.when(a["n"].isNull(), None).when(a["t"] == "z", "z").when(a["i"], "i").otherwise("f")
            return _Val(_make(kind, F.abs(a["n"]), F.when(a["i"], _int_text(F.abs(a["n"]))), a["i"]))
        texts = [self.text(arg) for arg in args]
        if name == "CONCAT":
            # functions.concat refuses a result beyond MAX_TEXT characters (an evaluation error):
            # such a row goes to the evaluator, and Spark does not build the text
            size = self.bind(reduce(lambda a, b: a + b, (F.coalesce(F.char_length(text).cast("bigint"), F.lit(0))
                                                         for text in texts)))
            self.guard(size > MAX_TEXT)
            return self.text_value(F.when(size <= MAX_TEXT, F.concat_ws("", *texts)))
        if name == "UPPER":
            return self.text_value(F.translate(texts[0], _LOWER, _UPPER))
        if name == "LOWER":
            return self.text_value(F.translate(texts[0], _UPPER, _LOWER))
        if name == "REVERSE":
            return self.text_value(F.reverse(texts[0]))
        if name in ("LENGTH", "LEN"):
            return _Val(_int_element(F.octet_length(texts[0])))
        if name == "INSTR":
            return _Val(_int_element(F.call_function("instr", texts[0], texts[1])))
        if name == "INSTR_I":
            lowered = [F.translate(text, _UPPER, _LOWER) for text in texts]
            return _Val(_int_element(F.call_function("instr", *lowered)))
        if name == "STREQUAL_I":
            lowered = [F.translate(text, _UPPER, _LOWER) for text in texts]
            return _Val(_int_element(F.when(lowered[0] == lowered[1], 1).when(lowered[0] != lowered[1], 0)))
        if len(args) == 3:  # start + length must be exact: the evaluator decides beyond the clamp
            self.guard(reduce(lambda a, b: a | b, (F.abs(_integer(arg, math.inf)) >= _CLAMP for arg in args[1:])))
        return self.text_value(_substr(texts[0], [_integer(arg) for arg in args[1:]]))


_UNSUPPORTED_WHY = {
    "UNIX_TIMESTAMP": "Spark reads the clock once per query, AMPS at each evaluation",
    "ROUND": "Python rounds the decimal text of a float half away from zero; Spark's round differs on halfway cases",
    "CEILING": "the integral result of a huge float is an unbounded Python integer",
    "FLOOR": "the integral result of a huge float is an unbounded Python integer",
    "TRIM": "the default set is ASCII whitespace and the optional set is any text; Spark's trim differs",
    "LTRIM": "the default set is ASCII whitespace and the optional set is any text; Spark's trim differs",
    "RTRIM": "the default set is ASCII whitespace and the optional set is any text; Spark's trim differs",
    "REPLACE": "a NULL replacement deletes in ampsctl and gives NULL in Spark (not translated yet)",
    "REGEXP_MATCH": "the pattern is a run-time value, so it cannot be checked against the Java regex core",
    "REGEXP_REPLACE": "the pattern is a run-time value, so it cannot be checked against the Java regex core",
    "CHAR_VALUE": "Spark's chr() takes n modulo 256 and encodes 128-255 as two bytes",
    "STRFTIME": "needs a strftime to Java pattern translation with the same output",
    "STRPTIME": "needs a strptime to Java pattern translation with the same parsing",
}


# ----------------------------------------------------------------------- elements

_ELEM_TYPE = "struct<t:string,n:double,s:string,i:boolean>"


def _make(kind: Column, number: Column, text: Column, integral: Column) -> Column:
    return F.struct(kind.cast("string").alias("t"), number.cast("double").alias("n"), text.cast("string").alias("s"),
                    integral.cast("boolean").alias("i"))


def _null_elem() -> Column:
    return F.lit(None).cast(_ELEM_TYPE)


def _constant(value: object) -> Column:
    """A literal as an element: the kind, number and text are known now."""
    if value is None or value == "":
        return _null_elem()
    if isinstance(value, bool):
        return _make(F.lit("b"), F.lit(1.0 if value else 0.0), F.lit("true" if value else "false"), F.lit(True))
    if isinstance(value, int):
        if abs(value) >= EXACT_LIMIT:
            raise UnsupportedFilterError(f"the integer {value}", "beyond 2^53 a Spark double is not exact")
        return _make(F.lit("i"), F.lit(float(value)), F.lit(str(value)), F.lit(True))
    if isinstance(value, float):
        return _make(F.lit("f"), F.lit(value), F.lit(repr(value)), F.lit(False))  # a literal's text is known: repr
    assert isinstance(value, str)
    number = parse_number(value)
    if isinstance(number, int) and abs(number) >= EXACT_LIMIT:
        raise UnsupportedFilterError(f"the string {value!r}", "its integer beyond 2^53 is not exact as a Spark double")
    integral = None if number is None else isinstance(number, int)
    return _make(F.lit("s"), F.lit(None if number is None else float(number)), F.lit(value), F.lit(integral))


def _elements(items: Column) -> Column:
    """An array of scalar VARIANTs as elements (objects and nested arrays are NULL elements here).

    Three transforms, so that each per-item value (the variant's kind, its text, the kind
    letter) is computed once and referenced by field, not repeated as a whole expression.
    """
    read = F.transform(items, lambda item: F.struct(
        F.schema_of_variant(item).alias("k"), F.try_variant_get(item, "$", "string").alias("x"),
        F.try_variant_get(item, "$", "double").alias("d")))

    def kind(r: Column) -> Column:
        k, string, decimal = r["k"], r["k"] == "STRING", r["k"].startswith("DECIMAL")
        t = (F.when(string, F.when(r["x"] != "", "s")).when(k == "BOOLEAN", "b").when(k.isin(*_INT_KINDS), "i")
             .when(k.isin("DOUBLE", "FLOAT"), "f").when(decimal & k.endswith(",0)"), "z").when(decimal, "f"))
        numeric = string & r["x"].rlike(_NUMBER_RE)
        return F.struct(t.alias("t"), r["x"].alias("x"), r["d"].alias("d"), numeric.alias("num"))

    def element(r: Column) -> Column:
        t, x = r["t"], r["x"]
        n = (F.when(t == "s", F.when(r["num"], x.cast("double"))).when(t == "b", F.when(x == "true", 1.0).otherwise(0.0))
             .when(t.isin("i", "f", "z"), r["d"]))
        i = F.when(t == "s", F.when(r["num"], x.rlike(_INT_RE))).when(t.isin("b", "i"), True).when(t == "f", False)
        return _make(t, n, F.when(t.isin("s", "b", "i"), x), i)

    return F.transform(F.transform(read, kind), element)


def _text_element(text: Column) -> Column:
    numeric = text.rlike(_NUMBER_RE)
    return _make(F.when(text != "", "s"), F.when(numeric, text.cast("double")), F.when(text != "", text),
                 F.when(numeric, text.rlike(_INT_RE)))


def _int_element(number: Column) -> Column:
    return _make(F.when(number.isNotNull(), "i"), number, number.cast("string"), F.when(number.isNotNull(), True))


def _int_text(number: Column) -> Column:
    return number.try_cast("bigint").cast("string")  # beyond 2^63: NULL on a guarded row, not an error


def _big_int(element: Column) -> Column:
    # 'z' too: an integer from 2^63 to 2^64 is DECIMAL(19|20,0) in a VARIANT, an exact integer locally
    integral = F.coalesce(element["i"], F.lit(False)) | F.coalesce(element["t"] == "z", F.lit(False))
    return integral & (F.abs(element["n"]) >= EXACT_LIMIT)


def _boolean(predicate: Column) -> _Val:
    """A predicate's True/False/NULL as a value (booleans are 1/0, text true/false)."""
    return _Val(_make(F.when(predicate.isNotNull(), "b"), F.when(predicate, 1.0).when(~predicate, 0.0),
                      F.when(predicate, "true").when(~predicate, "false"), F.when(predicate.isNotNull(), True)))


def _truth(element: Column) -> Column:
    """values.truth: non-zero numbers are true, NaN false, NULL and non-numeric text unknown."""
    n = element["n"]
    return F.when(n.isNull(), _null_bool()).otherwise(~F.isnan(n) & (n != 0))


def _compare_scalars(op: str, a: Column, b: Column) -> Column:
    """values.compare_scalars on two elements."""
    sql = _SQL_CMP[op]
    a_text, b_text = a["t"] == "s", b["t"] == "s"
    numeric = F.when(F.isnan(a["n"]) | F.isnan(b["n"]), F.lit(False)).otherwise(sql(a["n"], b["n"]))
    return (F.when(a["t"].isNull() | b["t"].isNull(), _null_bool())
            .when(a_text & b_text, sql(a["s"], b["s"]))
            .when(a_text & a["n"].isNull(), F.lit(_ORDERED[op][1]))
            .when(b_text & b["n"].isNull(), F.lit(_ORDERED[op][-1]))
            .otherwise(numeric))


def _any(elems: Column, test: Callable[[Column], Column]) -> Column:
    """values.any_element: 3VL OR over the elements, NULL when there are none."""
    return F.when(F.size(elems) == 0, _null_bool()).otherwise(F.exists(elems, test))


def _over(value: _Val, test: Callable[[Column], Column]) -> Column:
    if value.elems is not None:
        return _any(value.elems, test)
    return F.when(value.scalar["t"].isNull(), _null_bool()).otherwise(test(value.scalar))


def _is_array(message: Column, path: str) -> Column:
    return F.try_variant_get(message, path, "array<variant>").isNotNull()


def _is_void(item: Column) -> Column:
    return F.schema_of_variant(item) == "VOID"


_CLAMP = float(2**52)  # SUBSTR arguments are clamped here: sums stay exact bigints


def _integer(element: Column, bound: float = _CLAMP) -> Column:
    """functions._integer: a float truncates, NaN/inf are NULL; clamped to +-``bound``.

    A clamped start alone, or a length alone, gives the slice the evaluator gives (both are
    beyond any string); a start and a length that are both used can cancel out (start -2^60,
    length 2^60 + 3), so SUBSTR guards a row where either reaches the clamp."""
    n = element["n"]
    return F.when(n.isNull() | F.isnan(n) | (F.abs(n) == math.inf), None).otherwise(
        F.greatest(F.least(n, F.lit(bound)), F.lit(-bound)).cast("double" if bound == math.inf else "bigint"))


def _substr(text: Column, ints: list[Column]) -> Column:
    """functions.substr: 1-based, 0 acts as 1, a negative start counts from the end."""
    pos = ints[0]
    size = F.char_length(text).cast("bigint")
    begin = F.when(pos > 0, pos - 1).when(pos < 0, size + pos).otherwise(0)
    first = F.least(F.greatest(begin, F.lit(0)), size)  # beyond the end: '' (and an int for substring)
    if len(ints) == 1:
        result = F.call_function("substring", text, (first + 1).cast("int"))
    else:
        end = begin + ints[1]
        count = (F.least(F.greatest(end, F.lit(0)), size) - first).cast("int")
        result = F.when(end > begin, F.call_function("substring", text, (first + 1).cast("int"), count)).otherwise(F.lit(""))
    return F.when(text.isNotNull() & pos.isNotNull() & (ints[1].isNotNull() if len(ints) > 1 else F.lit(True)), result)


# ----------------------------------------------------------------------- entry point


def compile_filter(expr: ast.Expr, message: Column, *, prefix: str = "__ampsctl_b") -> Compiled:
    """``expr`` as a Spark condition over ``message`` (a VARIANT column), or UnsupportedFilterError.

    The bindings are named ``prefix`` + a number: give each filter its own prefix when several
    are compiled over one DataFrame.
    """
    compiler = _Compiler(message, prefix)
    condition = F.coalesce(compiler.truth(expr), F.lit(False))
    bindings = tuple(compiler.bindings)
    if not compiler.guards:
        return Compiled(bindings, condition, F.lit(True), False)
    unsure = reduce(lambda a, b: a | b, compiler.guards)
    return Compiled(bindings, condition, ~unsure, True)


def with_bindings(frame: DataFrame, compiled: Compiled) -> DataFrame:
    """``frame`` with the compiled filter's bindings, one ``withColumns`` per dependency level.

    A binding refers to earlier ones by name; adding them one ``withColumn`` at a time makes
    Spark re-analyse a growing plan each time, so they are grouped: level 0 needs no binding,
    level k needs one of level k-1 at most. The names are found in each column's text form.
    """
    levels: dict[str, int] = {}
    groups: list[dict[str, Column]] = []
    for name, column in compiled.bindings:
        prefix = name.rstrip("0123456789")
        used = re.findall(re.escape(prefix) + r"[0-9]+\b", str(column))
        level = 1 + max((levels[ref] for ref in used if ref in levels), default=-1)
        levels[name] = level
        while len(groups) <= level:
            groups.append({})
        groups[level][name] = column
    for group in groups:
        frame = frame.withColumns(group)
    return frame

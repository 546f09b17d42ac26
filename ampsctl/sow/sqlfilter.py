"""SQL pre-filters on memo-indexed columns: a sound narrowing of a filter, never a second semantics.

Theory of operation. ``prefilter(expr, memo_paths)`` returns an SQL condition on the records
table (or None: no narrowing) with one guarantee:

    every row whose record the filter accepts makes the condition TRUE.

The filter itself (``compile_filter``) still runs on every row the condition lets through,
so the condition may let too many through but never too few. It is built only from what can be
translated exactly or safely widened:

* ``/f op literal`` (and ``literal op /f``), ``BETWEEN`` and ``IN`` with literals, ``IS [NOT]
  NULL``, on a memo-indexed field ``f``, following ``values.compare_scalars`` case by case on
  the typed columns ``num``/``txt`` of ``indexing.memo_value``: text against text compares in
  code-point order (SQLite compares UTF-8 bytes, which is the same order), numbers against
  numbers numerically (exact, since larger integers are marked complex), text without a
  number against a number is greater than it;
* ``AND`` keeps the parts it can translate (dropping one only widens); ``OR`` needs all of them;
  ``NOT`` and everything else (functions, arithmetic, LIKE, fields compared with fields) are not
  translated: TRUE;
* rows flagged ``memo_complex`` (arrays, objects, NaN, huge integers) always pass.
SQL's three-valued AND/OR/NULL agree with the filter's (``values.and3``/``or3``), and a row
passes only on TRUE, as a record matches only on true.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from typing import Any, Protocol

from ampsctl.filter import ast
from ampsctl.filter.values import parse_number
from ampsctl.sow.indexing import EXACT_FLOAT_INT
from ampsctl.sow.query import constant, field_key

_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_SQL_OP = {"=": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_TRUE_IF_GREATER = {"=": False, "!=": True, "<": False, "<=": False, ">": True, ">=": True}
_Condition = tuple[str, list[Any]]


class Target(Protocol):
    """Where the atoms of a narrowing come from: the memo columns, or (``jsonfilter``) JSON values."""

    def column(self, field: ast.Field) -> Any | None:
        """A handle for ``field``, or None when it cannot be narrowed."""

    def compare(self, column: Any, op: str, value: Any) -> _Condition | None:
        """TRUE for every row where ``field op value`` can be true (None: cannot translate)."""

    def is_null(self, column: Any, negated: bool) -> _Condition | None: ...


def prefilter(expr: ast.Expr, memo_paths: Sequence[str]) -> _Condition | None:
    """An SQL condition with ``?`` parameters, or None when nothing narrows."""
    from ampsctl.messages.paths import split_path

    columns = {tuple(split_path(path)): number for number, path in enumerate(memo_paths)}
    found = bounded(narrowing(expr, _MemoColumns(columns)))
    if found is None:
        return None
    sql, params = found
    return f"(memo_complex OR {sql})", params


def narrowing(expr: ast.Expr, target: Target) -> _Condition | None:
    """A sound SQL narrowing of ``expr`` from ``target``'s atoms (the module docstring's rules)."""
    if isinstance(expr, ast.And):
        parts = [part for part in (narrowing(operand, target) for operand in expr.operands) if part is not None]
        return join(parts, "AND") if parts else None
    if isinstance(expr, ast.Or):
        parts = [narrowing(operand, target) for operand in expr.operands]
        return None if any(part is None for part in parts) else join(parts, "OR")  # type: ignore[arg-type]
    if isinstance(expr, ast.Comparison):
        for side, other, op in ((expr.left, expr.right, expr.op), (expr.right, expr.left, _FLIP[expr.op])):
            column = _column(target, side)
            known, value = constant(other)
            if column is not None and known:
                return target.compare(column, op, value)
        return None
    if isinstance(expr, ast.Between) and not expr.negated:
        column = _column(target, expr.value)
        (low_known, low), (high_known, high) = constant(expr.low), constant(expr.high)
        if column is None or not low_known or not high_known:
            return None
        parts = [target.compare(column, ">=", low), target.compare(column, "<=", high)]
        return None if any(part is None for part in parts) else join(parts, "AND")  # type: ignore[arg-type]
    if isinstance(expr, ast.In) and not expr.negated:
        column = _column(target, expr.value)
        options = [constant(option) for option in expr.options]
        if column is None or not all(known for known, _ in options):
            return None
        parts = [target.compare(column, "=", value) for _, value in options]
        return None if any(part is None for part in parts) else join(parts, "OR")  # type: ignore[arg-type]
    if isinstance(expr, ast.IsNull):
        column = _column(target, expr.value)
        return None if column is None else target.is_null(column, expr.negated)
    return None


class _MemoColumns:
    """The typed memo columns ``m<i>n``/``m<i>t`` of ``indexing.memo_value``."""

    def __init__(self, columns: dict[tuple[str, ...], int]) -> None:
        self.columns = columns

    def column(self, field: ast.Field) -> int | None:
        path = field_key(field)
        return self.columns.get(path) if path is not None else None

    def compare(self, column: int, op: str, value: Any) -> _Condition | None:
        return _compare(column, op, value)

    def is_null(self, column: int, negated: bool) -> _Condition:
        num, txt = f"m{column}n", f"m{column}t"
        if negated:
            return f"({num} IS NOT NULL OR {txt} IS NOT NULL)", []
        return f"({num} IS NULL AND {txt} IS NULL)", []


def _compare(column: int, op: str, value: Any) -> _Condition | None:
    """``compare_scalars(op, stored, value)`` over the typed columns (None: cannot translate)."""
    num, txt, sql_op = f"m{column}n", f"m{column}t", _SQL_OP[op]
    if isinstance(value, bool):
        value = 1 if value else 0
    if value is None or value == "":
        return "0", []  # a comparison with NULL is never true
    if isinstance(value, int | float):
        if isinstance(value, float) and math.isnan(value):
            return "0", []
        if not _exact(value):
            return None
        greater = 1 if _TRUE_IF_GREATER[op] else 0  # non-numeric text is greater than every number
        return (f"(CASE WHEN {num} IS NOT NULL THEN {num} {sql_op} ? WHEN {txt} IS NOT NULL THEN {greater} "
                "ELSE NULL END)"), [value]
    if isinstance(value, str):
        if not storable(value):
            return None
        number = parse_number(value)
        if number is None:
            smaller = 1 if _TRUE_IF_GREATER[_FLIP[op]] else 0  # a number is smaller than this text
            return (f"(CASE WHEN {txt} IS NOT NULL THEN {txt} {sql_op} ? WHEN {num} IS NOT NULL THEN {smaller} "
                    "ELSE NULL END)"), [value]
        if not _exact(number):
            return None
        return (f"(CASE WHEN {txt} IS NOT NULL THEN {txt} {sql_op} ? WHEN {num} IS NOT NULL THEN {num} {sql_op} ? "
                "ELSE NULL END)"), [value, number]
    return None


def _exact(number: int | float) -> bool:
    return not isinstance(number, int) or -EXACT_FLOAT_INT <= number <= EXACT_FLOAT_INT


def storable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def join(parts: list[_Condition], word: str) -> _Condition:
    """``parts`` joined with AND/OR in parenthesised chains of at most ``_CHAIN`` parts: SQLite
    parses ``a OR b OR c ...`` into a tree as deep as the chain is long and refuses more than
    1000 levels ("Expression tree is too large"), which an IN list of 1000 options reached.
    Longer lists become chains of chains, a few levels deep."""
    if len(parts) == 1:
        return parts[0]
    if len(parts) > _CHAIN:
        return join([join(parts[start : start + _CHAIN], word) for start in range(0, len(parts), _CHAIN)], word)
    params: list[Any] = []
    for _, part_params in parts:
        params += part_params
    return "(" + f" {word} ".join(sql for sql, _ in parts) + ")", params


# Every chain is parenthesised, so a tree path crosses at most _MAX_NESTING chains of at most
# _CHAIN parts: 20 x 32 levels stay below SQLite's 1000. Nesting past 20 parentheses overflows
# its parser stack ("parser stack overflow", near 30 levels of a nested filter).
_CHAIN = 32
_MAX_NESTING = 20


def _variable_limit() -> int:
    """How many ``?`` parameters one statement of this SQLite may have (999 before 3.32)."""
    try:
        connection = sqlite3.connect(":memory:")
    except sqlite3.Error:  # pragma: no cover - no SQLite at all: the file cannot be opened either
        return 999
    try:
        return connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    finally:
        connection.close()


MAX_PARAMS = _variable_limit()


def bounded(found: _Condition | None) -> _Condition | None:
    """``found``, or None (no narrowing: a plain scan, still exact) when SQLite would refuse it:
    more parameters than a statement takes, or parentheses nested too deep. Either used to
    fail the whole query, reported as a damaged SOW file."""
    if found is None or len(found[1]) > MAX_PARAMS - 8 or _nesting(found[0]) > _MAX_NESTING:  # 8: the query's own
        return None
    return found


def _nesting(sql: str) -> int:
    """The deepest parenthesis level of ``sql`` outside its '...' literals."""
    deepest = depth = 0
    quoted = False
    for char in sql:
        if char == "'":
            quoted = not quoted  # '' inside a literal toggles twice: still quoted
        elif not quoted:
            if char == "(":
                depth += 1
                deepest = max(deepest, depth)
            elif char == ")":
                depth -= 1
    return deepest


def _column(target: Any, expr: Any) -> Any:
    """The target's column for a field operand (None for anything else, or a field it lacks)."""
    return target.column(expr) if isinstance(expr, ast.Field) else None

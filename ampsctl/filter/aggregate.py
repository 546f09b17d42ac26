"""Aggregation for views and aggregated subscriptions (spec/expressions.md §9.6).

A projection field is ``expr AS /alias`` (or a bare field, which names itself). Records are
grouped by the values of the grouping expressions, in order of first appearance. For each
group, every aggregate call in a projection (SUM, COUNT, ...) is computed over the group's
records and replaced by its result; what remains is evaluated on the group's last record,
so a projected field that is neither aggregated nor grouped shows the last value, as AMPS
documents. NULL values are skipped by every aggregate, as in ANSI SQL.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from ampsctl.filter import ast
from ampsctl.filter.catalog import AGGREGATES
from ampsctl.filter.errors import FilterSyntaxError
from ampsctl.filter.evaluate import evaluate
from ampsctl.filter.parser import parse
from ampsctl.filter.record import Record
from ampsctl.filter.tokens import Kind, tokenize
from ampsctl.filter.values import compare_scalars, fit_int, is_null, scalar, to_number, to_text


@dataclass(frozen=True, slots=True)
class Projection:
    expr: ast.Expr
    alias: tuple[str, ...]  # output path steps


def parse_projection(text: str) -> Projection:
    """``SUM(/qty) AS /total`` or a bare field such as ``/oid`` (its own alias)."""
    depth = 0
    split = None
    for token in tokenize(text):
        if token.kind is Kind.SYMBOL and token.key in "()":
            depth += 1 if token.key == "(" else -1
        elif token.kind is Kind.KEYWORD and token.key == "AS" and depth == 0:
            split = token
    source = text[: split.pos] if split else text
    expr = parse(source)
    target = parse(text[split.end :]) if split else expr
    if not isinstance(target, ast.Field) or target.qualifier:
        where = split.end if split else 0
        raise FilterSyntaxError("a projection needs an output field", expression=text, position=where,
                                hint="write expr AS /name, or project a field such as /region")
    return Projection(expr, tuple(step.name for step in target.steps))


def aggregate(projections: Sequence[Projection], grouping: Sequence[ast.Expr], records: Iterable[Record]) -> list[dict]:
    """One output object per distinct combination of grouping values."""
    groups: dict[tuple, list[Record]] = {}
    for record in records:
        key = tuple(_hashable(evaluate(expr, record)) for expr in grouping)
        groups.setdefault(key, []).append(record)
    out = []
    for members in groups.values():
        row: dict = {}
        for projection in projections:
            value = evaluate(_fold_aggregates(projection.expr, members), members[-1])
            _put(row, projection.alias, value)
        out.append(row)
    return out


def _fold_aggregates(expr: ast.Expr, members: list[Record]) -> ast.Expr:
    """``expr`` with every aggregate call replaced by its value over ``members``."""
    if isinstance(expr, ast.Call) and expr.name in AGGREGATES:
        values = [scalar(evaluate(expr.args[0], r)) for r in members] if expr.args else []
        return ast.Literal(_AGGREGATORS[expr.name]([v for v in values if not is_null(v)]))
    changes = {}
    for field in fields(expr):
        child = getattr(expr, field.name)
        if isinstance(child, tuple) and child and isinstance(child[0], ast.NODES):
            folded = tuple(_fold_aggregates(c, members) for c in child)
            if folded != child:
                changes[field.name] = folded
        elif isinstance(child, ast.NODES):
            folded_child = _fold_aggregates(child, members)
            if folded_child is not child:
                changes[field.name] = folded_child
    return replace(expr, **changes) if changes else expr


def _numbers(values: list[Any]) -> list[int | float]:
    return [n for n in (to_number(v) for v in values) if n is not None]


def _total(values: list[Any]) -> int | float | None:
    numbers = _numbers(values)
    if not numbers:
        return None
    total = sum(numbers)
    return fit_int(total) if isinstance(total, int) else total  # beyond 64 bits: a float, as `+` gives


def _mean(values: list[Any]) -> float | None:
    numbers = _numbers(values)
    return sum(numbers) / len(numbers) if numbers else None


def _extreme(op: str) -> Callable[[list[Any]], Any]:
    def pick(values: list[Any]) -> Any:
        best = None
        for value in values:
            if _is_nan(value):
                return math.nan  # NaN compares false with everything: the answer would depend on the order
            if best is None or compare_scalars(op, value, best):
                best = value
        return best

    return pick


def _spread(sample: bool) -> Callable[[list[Any]], float | None]:
    def spread(values: list[Any]) -> float | None:
        numbers = _numbers(values)
        if len(numbers) < (2 if sample else 1):
            return None
        if not all(math.isfinite(number) for number in numbers):
            return math.nan  # statistics cannot take NaN or infinity (AttributeError)
        return statistics.stdev(numbers) if sample else statistics.pstdev(numbers)

    return spread


_AGGREGATORS: dict[str, Callable[[list[Any]], Any]] = {
    "SUM": _total,
    "COUNT": len,
    "AVG": _mean,
    "MIN": _extreme("<"),
    "MAX": _extreme(">"),
    "ANY": lambda v: v[0] if v else None,
    "COUNT_DISTINCT": lambda v: len({to_text(x) for x in v}),
    "STDDEV_POP": _spread(sample=False),
    "STDDEV_SAMP": _spread(sample=True),
}


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _hashable(value: Any) -> Any:
    value = scalar(value)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def _put(row: dict, path: tuple[str, ...], value: Any) -> None:
    for step in path[:-1]:
        row = row.setdefault(step, {})
    row[path[-1]] = value

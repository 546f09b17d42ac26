"""The reference semantics of the AMPS filter language: a tree-walking evaluator.

This module is THE definition (DESIGN.md): the compiled closures and the Spark compiler are
tested against it. It stays short because the value rules live in ``values.py``, functions in
``functions.py`` and regular expressions in ``regexes.py``; this file only decides which rule
each node applies and in what order its children are evaluated.

Invariants:
* ``evaluate`` returns a plain value: ``True``/``False`` for predicates, ``None`` for NULL,
  numbers or strings for the rest; ``matches`` applies §4.6 (true or non-zero only).
* Predicates follow SQL three-valued logic; NOT, NOT IN, NOT LIKE, NOT BETWEEN and NOT
  BEGINS/ENDS WITH are the 3VL negation of the positive predicate, whereas ``!=`` is its own
  existential comparison over arrays (§7, A16).
* AND/OR stop at the first operand that decides the result (allowed by §3.3) and IF/COALESCE
  evaluate lazily, so only the nodes actually evaluated reach ``trace``.
* ``trace``, when a list, receives ``(node, value)`` for every evaluated node in post-order
  (children before their parent).
* Depth: AND/OR are n-ary and iterated; a left-deep chain ``a + b + c + ...`` is folded in a
  loop; every other nesting is bounded at 200 levels by the parser, so plain recursion is safe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ampsctl.filter import ast, regexes, values
from ampsctl.filter.catalog import AGGREGATES
from ampsctl.filter.errors import FilterError
from ampsctl.filter.functions import IMPLEMENTATIONS
from ampsctl.filter.record import Record

Trace = list[tuple[ast.Expr, Any]]
_Handler = Callable[[Any, Record, "Trace | None"], Any]

AGGREGATE_MESSAGE = "aggregate functions are only allowed in view projections"


def evaluate(expr: ast.Expr, record: Record, *, trace: Trace | None = None) -> Any:
    """The value of ``expr`` for ``record``; raises FilterError for what cannot be evaluated."""
    return _eval(expr, record, trace)


def matches(expr: ast.Expr, record: Record) -> bool:
    """Whether ``record`` is selected by the filter ``expr`` (boolean true or a non-zero number)."""
    return values.is_match(_eval(expr, record, None))


def _eval(expr: ast.Expr, record: Record, trace: Trace | None) -> Any:
    handler = _HANDLERS.get(type(expr))
    if handler is None:
        raise FilterError(f"not a filter expression node: {type(expr).__name__}")
    result = handler(expr, record, trace)
    if trace is not None:
        trace.append((expr, result))
    return result


def _field(node: ast.Field, record: Record, trace: Trace | None) -> Any:
    return record.get(node)


def _literal(node: ast.Literal, record: Record, trace: Trace | None) -> Any:
    return node.value


def _negate(node: ast.Negate, record: Record, trace: Trace | None) -> Any:
    return values.negate(_eval(node.operand, record, trace))


def _arithmetic(node: ast.Arithmetic, record: Record, trace: Trace | None) -> Any:
    # Walk down the left spine so `1 + 1 + ... + 1` (a long, unparenthesised, left-deep chain)
    # costs no recursion; the trace still comes out in post-order.
    spine = [node]
    while isinstance(spine[-1].left, ast.Arithmetic):
        spine.append(spine[-1].left)
    accumulated = _eval(spine[-1].left, record, trace)
    for index in range(len(spine) - 1, -1, -1):
        step = spine[index]
        accumulated = values.arithmetic(step.op, accumulated, _eval(step.right, record, trace))
        if trace is not None and index:  # the outermost node is recorded by _eval
            trace.append((step, accumulated))
    return accumulated


def _comparison(node: ast.Comparison, record: Record, trace: Trace | None) -> Any:
    left = _eval(node.left, record, trace)
    right = _eval(node.right, record, trace)
    return values.compare(node.op, left, right)


def _between(node: ast.Between, record: Record, trace: Trace | None) -> Any:
    # Array-aware per element: some element lies in [low, high] (not "some element >= low and
    # some, maybe other, element <= high").
    value = _eval(node.value, record, trace)
    low = _eval(node.low, record, trace)
    high = _eval(node.high, record, trace)
    result = values.within(value, low, high)
    return values.not3(result) if node.negated else result


def _in(node: ast.In, record: Record, trace: Trace | None) -> Any:
    # IN is exactly the OR of `=` comparisons (§6.4): every option is evaluated, in order.
    value = _eval(node.value, record, trace)
    options = [_eval(option, record, trace) for option in node.options]
    result = values.member(value, options)
    return values.not3(result) if node.negated else result


def _like(node: ast.Like, record: Record, trace: Trace | None) -> Any:
    value = _eval(node.value, record, trace)
    items = values.elements(value)
    # One timeout for all the elements (regexes.search_elements); no elements is NULL.
    result = regexes.search_elements(regexes.compile_pattern(node.pattern), map(values.to_text, items)) if items else None
    return values.not3(result) if node.negated else result


def _string_match(node: ast.StringMatch, record: Record, trace: Trace | None) -> Any:
    value = _eval(node.value, record, trace)
    options = [values.to_text(_eval(option, record, trace)) for option in node.options]
    test = str.startswith if node.kind == "BEGINS" else str.endswith

    def element_matches(element: Any) -> bool | None:
        text = values.to_text(element)
        if text is None:
            return None
        return values.or3(None if option is None else test(text, option) for option in options)

    result = values.any_element(value, element_matches)
    return values.not3(result) if node.negated else result


def _is_null(node: ast.IsNull, record: Record, trace: Trace | None) -> Any:
    null = values.is_null(_eval(node.value, record, trace))
    return not null if node.negated else null


def _not(node: ast.Not, record: Record, trace: Trace | None) -> Any:
    return values.not3(values.truth(_eval(node.operand, record, trace)))


def _and(node: ast.And, record: Record, trace: Trace | None) -> Any:
    unknown = False
    for operand in node.operands:
        truth = values.truth(_eval(operand, record, trace))
        if truth is False:
            return False
        unknown = unknown or truth is None
    return None if unknown else True


def _or(node: ast.Or, record: Record, trace: Trace | None) -> Any:
    unknown = False
    for operand in node.operands:
        truth = values.truth(_eval(operand, record, trace))
        if truth is True:
            return True
        unknown = unknown or truth is None
    return None if unknown else False


def _call(node: ast.Call, record: Record, trace: Trace | None) -> Any:
    name = node.name
    if name in AGGREGATES:
        raise FilterError(
            AGGREGATE_MESSAGE,
            hint=f"{name}() needs a group of messages: use it in a view Projection or an aggregated subscription",
            code="FILTER_AGGREGATE",
        )
    if name == "IF":  # lazy since AMPS 5.3.4: only the chosen branch is evaluated
        if len(node.args) != 3:
            raise FilterError("IF takes 3 arguments: IF(condition, value_if_true, value_if_false)")
        condition, when_true, when_false = node.args
        chosen = when_true if values.truth(_eval(condition, record, trace)) is True else when_false
        return values.scalar(_eval(chosen, record, trace))
    if name == "COALESCE":  # stops at the first non-NULL argument
        for arg in node.args:
            first = values.scalar(_eval(arg, record, trace))
            if not values.is_null(first):
                return first
        return None
    implementation = IMPLEMENTATIONS.get(name)
    if implementation is None:
        raise FilterError(f"unknown function {name}()", hint="docs/filter-language.md lists the supported functions")
    return implementation(*(_eval(arg, record, trace) for arg in node.args))


_HANDLERS: dict[type, _Handler] = {
    ast.Field: _field,
    ast.Literal: _literal,
    ast.Negate: _negate,
    ast.Arithmetic: _arithmetic,
    ast.Comparison: _comparison,
    ast.Between: _between,
    ast.In: _in,
    ast.Like: _like,
    ast.StringMatch: _string_match,
    ast.IsNull: _is_null,
    ast.Not: _not,
    ast.And: _and,
    ast.Or: _or,
    ast.Call: _call,
}

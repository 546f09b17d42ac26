"""The per-record closures of the compiled predicates: comparison, BETWEEN, IN, LIKE and
BEGINS/ENDS WITH (issue 3 item 3), with their exact-type fast paths.

Theory of operation. ``compiler.py`` walks the tree: it compiles each operand, knows which are
constant, and folds what we return when every input is constant. Here each builder gets one
``Operand`` per input (its closure, its AST, its value when constant) and returns a closure
that gives ``evaluate``'s value for the node, calling the same ``values``/``regexes`` helpers:

* generic: the helpers, applied as ``evaluate.py`` applies them. IN, BETWEEN and BEGINS/ENDS
  WITH evaluate every operand, in order.
* exact-type fast paths: a non-empty ``str`` against text constants, or an ``int``/non-NaN
  ``float`` against number constants, is one Python operation (comparison, BETWEEN, an IN list
  as a set), because ``values.compare_scalars`` reduces to it there. Anything else (arrays,
  booleans, '', NaN, text against numbers: the coercion rule) goes to the helpers.
* inline field read: a one-step plain field on a ``JsonRecord`` over a dict is read with
  ``dict.get`` right in the fast path (what ``JsonRecord.get`` does), saving a call.
* LIKE: the pattern is compiled and validated once, when the filter is compiled; each search
  goes through ``regexes.search_compiled``, so a timeout is the evaluator's own error.
* ``field_test``: a comparison of a one-step field with a constant carries its fast path as
  an attribute; ``compiler._logic2_filter`` runs two of them inline in an AND/OR.

Invariants: each closure returns True, False or None as ``evaluate`` does for its node
(``tests/filter/test_differential.py`` checks both paths agree); nothing here reads the clock
or keeps state between records.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ampsctl.filter import ast, regexes, values
from ampsctl.messages.json_record import JsonRecord

Compiled = Callable[[Any], Any]

# What values.compare_scalars reduces to for two non-empty strings or two non-NaN numbers:
# both orders are total there, so `op(a, b)` is `_order(op, sign(a, b))`.
_PY_OPS = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_SWAPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True, slots=True)
class Operand:
    """One compiled input of a predicate: ``get(record)`` is its value; ``known`` says it is
    a compile-time constant, then ``value`` is that constant."""

    expr: ast.Expr
    get: Compiled
    known: bool = False
    value: Any = None

    @property
    def kind(self) -> type | None:
        """The constant's fast kind (see ``fast_kind``); None when it varies or has none."""
        return fast_kind(self.value) if self.known else None


def fast_kind(value: Any) -> type | None:
    """``str`` for non-empty text, ``float`` for an int (not bool) or non-NaN float, else None."""
    if type(value) is str:
        return str if value else None
    return float if type(value) is int or (type(value) is float and value == value) else None


def _inline_key(expr: ast.Expr) -> str | None:
    """The dict key a one-step plain field reads from a JsonRecord (as ``JsonRecord.get``),
    else None. Fast paths read such a field inline, saving the call to its closure."""
    if type(expr) is not ast.Field or len(expr.steps) != 1 or expr.steps[0].index is not None:
        return None
    name = expr.steps[0].name
    return name if expr.bracketed or not name.startswith("@") else None


# --- comparisons -----------------------------------------------------------------------------


def comparison(op: str, left: Operand, right: Operand) -> Compiled:
    compare = values.compare
    if right.kind and not left.known:
        c = right.value
        return _compare_to_constant(op, left, c, lambda value: compare(op, value, c))
    if left.kind and not right.known:  # `c < v` is `v > c` in a total order
        c = left.value
        return _compare_to_constant(_SWAPPED[op], right, c, lambda value: compare(op, c, value))
    get_left, get_right = left.get, right.get
    return lambda record: compare(op, get_left(record), get_right(record))


def _compare_to_constant(fast_op: str, operand: Operand, c: Any, slow: Callable[[Any], Any]) -> Compiled:
    """``value fast_op c`` when the value has the constant's exact kind, NULL for a NULL value
    (``values.elements(None)`` is empty: nothing to compare, so ``compare`` is NULL), else
    ``slow(value)``: ``values.compare`` with the operands in their written order."""
    python_op, key, get = _PY_OPS[fast_op], _inline_key(operand.expr), operand.get
    if type(c) is str:

        def compare_text(record: Any) -> Any:
            if key is not None and type(record) is JsonRecord and type(data := record.data) is dict:
                value = data.get(key)
            else:
                value = get(record)
            if type(value) is str:
                return python_op(value, c) if value else None  # '' is NULL: elements('') is empty
            return None if value is None else slow(value)

        return _with_field_test(compare_text, key, str, python_op, c)

    def compare_number(record: Any) -> Any:
        if key is not None and type(record) is JsonRecord and type(data := record.data) is dict:
            value = data.get(key)
        else:
            value = get(record)
        kind = type(value)
        if kind is int or (kind is float and value == value):
            return python_op(value, c)
        return None if value is None else slow(value)

    return _with_field_test(compare_number, key, int, python_op, c)


def _with_field_test(closure: Compiled, key: str | None, kind: type, python_op: Any, c: Any) -> Compiled:
    """Tag a comparison of a one-step field with its fast path, for _logic2_filter to inline:
    ``python_op(data.get(key), c)`` when that value is a truthy ``kind``, else ``closure``."""
    if key is not None:
        closure.field_test = (key, kind, python_op, c)  # type: ignore[attr-defined]
    return closure


def between(value: Operand, low: Operand, high: Operand, negated: bool) -> Compiled:
    get, get_low, get_high = value.get, low.get, high.get
    within, not3 = values.within, values.not3

    def slow(v: Any, lo: Any, hi: Any) -> Any:  # evaluate's rule: some element lies in [lo, hi]
        result = within(v, lo, hi)
        return not3(result) if negated else result

    if value.known or low.kind is not float or high.kind is not float:
        return lambda record: slow(get(record), get_low(record), get_high(record))
    lo, hi, key = low.value, high.value, _inline_key(value.expr)

    def between_numbers(record: Any) -> Any:
        if key is not None and type(record) is JsonRecord and type(data := record.data) is dict:
            v = data.get(key)
        else:
            v = get(record)
        kind = type(v)
        if kind is int or kind is float:  # a NaN fails both bounds here as in compare_scalars
            return (lo <= v <= hi) is not negated
        return slow(v, lo, hi)

    return between_numbers


def in_list(value: Operand, options: list[Operand], negated: bool) -> Compiled:
    get, member, not3 = value.get, values.member, values.not3

    def slow(v: Any, found: Any) -> Any:  # IN is the OR of `=` comparisons (§6.4)
        result = member(v, list(found))
        return not3(result) if negated else result

    if not all(option.known for option in options):
        getters = tuple(option.get for option in options)
        return lambda record: slow(get(record), [option(record) for option in getters])
    constants = tuple(option.value for option in options)
    if value.known:
        return lambda record: slow(get(record), constants)
    # A non-empty string equals a text option only by string equality, an int/non-NaN float
    # equals a number option only numerically (int and float hash alike): sets decide those.
    # The other options (text against a number needs the coercion rule; booleans, NULLs, NaN)
    # still go through values.compare.
    texts = frozenset(c for c in constants if fast_kind(c) is str)
    numbers = frozenset(c for c in constants if fast_kind(c) is float)
    not_texts = tuple(c for c in constants if fast_kind(c) is not str)
    not_numbers = tuple(c for c in constants if fast_kind(c) is not float)
    hit, key = not negated, _inline_key(value.expr)

    def in_constants(record: Any) -> Any:
        if key is not None and type(record) is JsonRecord and type(data := record.data) is dict:
            v = data.get(key)
        else:
            v = get(record)
        kind = type(v)
        if kind is str and v:
            return hit if v in texts else slow(v, not_texts)
        if kind is int or (kind is float and v == v):
            return hit if v in numbers else slow(v, not_numbers)
        return slow(v, constants)

    return in_constants


# --- string predicates -----------------------------------------------------------------------


def like(value: Operand, pattern: str, negated: bool) -> Compiled:
    """LIKE with ``pattern`` compiled and validated now, once (an invalid one raises here)."""
    compiled, timeout, search = regexes.compile_pattern(pattern), regexes.DEFAULT_TIMEOUT, regexes.search_compiled
    get, to_text, elements, not3 = value.get, values.to_text, values.elements, values.not3
    search_elements = regexes.search_elements

    def like_closure(record: Any) -> Any:
        v = get(record)
        if type(v) is str and v:  # a non-empty string is its own only element and text
            return search(compiled, v, timeout=timeout) is not negated
        items = elements(v)  # one timeout for all of them, as evaluate's _like
        result = search_elements(compiled, map(to_text, items), timeout=timeout) if items else None
        return not3(result) if negated else result

    return like_closure


def string_match(kind: str, value: Operand, options: list[Operand], negated: bool) -> Compiled:
    """BEGINS WITH (``kind`` "BEGINS") or ENDS WITH over the option list."""
    get, to_text, any_element, or3, not3 = value.get, values.to_text, values.any_element, values.or3, values.not3
    test = str.startswith if kind == "BEGINS" else str.endswith

    def slow(v: Any, texts: list[str | None]) -> Any:
        def element(e: Any) -> bool | None:
            text = to_text(e)
            return None if text is None else or3(None if o is None else test(text, o) for o in texts)

        result = any_element(v, element)
        return not3(result) if negated else result

    if not all(option.known for option in options):
        getters = tuple(option.get for option in options)
        return lambda record: slow(get(record), [to_text(option(record)) for option in getters])
    # Constant options: the OR over them is one startswith/endswith on a tuple of their texts,
    # then NULL if an option was NULL and none matched (what or3 gives).
    texts = [to_text(option.value) for option in options]
    present = tuple(text for text in texts if text is not None)
    missed: bool | None = None if len(present) < len(texts) else False

    def string_match_closure(record: Any) -> Any:
        v = get(record)
        if type(v) is str and v:
            result = True if test(v, present) else missed
            return not3(result) if negated else result
        return slow(v, texts)

    return string_match_closure

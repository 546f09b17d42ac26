"""The fast path: a filter AST compiled once into nested Python closures (issue 3 item 3).

``evaluate.py`` is the semantics. The closures call the same helpers (``values``,
``functions``, ``regexes``); only the per-record overhead goes:

* dispatch: the tree walk and the ``type(node) -> handler`` lookup happen once; each node is
  one closure calling its children's closures;
* constants: a node whose inputs are all constant and that reads neither the record nor the
  clock is computed once by its own closure (so the folded value is by construction the one
  it gives per record); a fold that raises is not folded and raises per evaluation, as in
  ``evaluate``;
* fields: a plain path (no subscript, no ``@``) on a ``JsonRecord`` over a dict is read with
  ``dict.get`` on its data, which is what ``JsonRecord.get`` does for such a path (an array or
  scalar on the way falls back to ``record.get``); other records get ``record.get(field)``;
* predicates: comparison, BETWEEN, IN, LIKE and BEGINS/ENDS WITH get their per-record
  closures, with the exact-type fast paths, from ``compiled_predicates.py``; this module
  compiles their operands, tells it which are constant (an ``Operand``) and folds the result;
* AND/OR of two comparisons of one-step fields with constants (the shape of most filters)
  runs both comparisons' fast paths inline (``_logic2_filter``).
  ``tests/filter/test_differential.py`` checks that every path agrees with ``evaluate``.

Order and laziness are ``evaluate``'s: AND/OR stop at the first deciding operand, IF and
COALESCE evaluate what they need, IN, BETWEEN and BEGINS/ENDS WITH evaluate every operand.
What ``evaluate`` refuses only when it reaches a node (unknown node or function, aggregate,
wrong argument count, invalid LIKE pattern) is refused here at compile time, anywhere in the
tree. Recursion is as deep as the nesting the parser bounds (grammar.MAX_DEPTH); a left-deep
arithmetic chain (``1 + 1 + ... + 1``) compiles and runs in a loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ampsctl.filter import ast, values
from ampsctl.filter import compiled_predicates as predicates
from ampsctl.filter.catalog import AGGREGATES, FUNCTIONS
from ampsctl.filter.errors import FilterError
from ampsctl.filter.evaluate import AGGREGATE_MESSAGE
from ampsctl.filter.functions import IMPLEMENTATIONS
from ampsctl.filter.compiled_predicates import Compiled, Operand
from ampsctl.messages.json_record import JsonRecord
from ampsctl.filter.record import Record

# Nodes whose value is always True, False or None, so `is_match(value)` is `value is True`.
_PREDICATES = (ast.Comparison, ast.Between, ast.In, ast.Like, ast.StringMatch, ast.IsNull, ast.Not, ast.And, ast.Or)


@dataclass(frozen=True, slots=True)
class _Const:
    """A value known at compile time: a literal, or a node folded from constant inputs."""

    value: Any


_Node = Compiled | _Const


def compile_value(expr: ast.Expr) -> Callable[[Record], Any]:
    """A function that returns ``evaluate(expr, record)`` for any record."""
    return _closure(_root(expr, as_filter=False))


def compile_filter(expr: ast.Expr) -> Callable[[Record], bool]:
    """A function that returns ``matches(expr, record)`` for any record."""
    logic = isinstance(expr, (ast.And, ast.Or))
    node = _root(expr, as_filter=logic)
    if isinstance(node, _Const):
        result = values.is_match(node.value)
        return lambda record: result
    if logic:
        return node  # built by _and_or to return is_match of its value
    if isinstance(expr, _PREDICATES):
        return lambda record: node(record) is True
    is_match = values.is_match
    return lambda record: is_match(node(record))


def _root(expr: ast.Expr, *, as_filter: bool) -> _Node:
    try:
        return _and_or(expr, as_filter=True) if as_filter else _compile(expr)  # type: ignore[arg-type]
    except RecursionError:  # only hand-built trees get here: the parser caps nesting
        raise FilterError("the filter is nested too deeply to compile", hint="flatten nested parentheses") from None


def _compile(expr: ast.Expr) -> _Node:
    builder = _BUILDERS.get(type(expr))
    if builder is None:
        raise FilterError(f"not a filter expression node: {type(expr).__name__}")
    return builder(expr)


def _closure(node: _Node) -> Compiled:
    if isinstance(node, _Const):
        constant = node.value
        return lambda record: constant
    return node


def _fold(closure: Compiled, *inputs: _Node) -> _Node:
    """``closure``, or its value when every input is constant and computing it succeeds."""
    if not all(isinstance(node, _Const) for node in inputs):
        return closure
    try:
        return _Const(closure(None))
    except Exception:  # noqa: BLE001 -- e.g. a regex timeout: it must happen per evaluation
        return closure


# --- leaves and arithmetic -------------------------------------------------------------------


def _literal(node: ast.Literal) -> _Node:
    return _Const(node.value)


def _field(node: ast.Field) -> _Node:
    field = node
    if any(step.index is not None or (step.name.startswith("@") and not node.bracketed) for step in node.steps):
        return lambda record: record.get(field)
    names = tuple(step.name for step in node.steps)
    if len(names) == 1:
        name = names[0]

        def get_one(record: Any) -> Any:
            if type(record) is JsonRecord and type(data := record.data) is dict:
                return data.get(name)
            return record.get(field)

        return get_one

    def get_path(record: Any) -> Any:
        if type(record) is not JsonRecord:
            return record.get(field)
        current = record.data
        for name in names:
            if type(current) is not dict:  # NULL ends the walk; arrays and scalars: JsonRecord's rules
                return None if current is None else record.get(field)
            current = current.get(name)
        return current

    return get_path


def _negate(node: ast.Negate) -> _Node:
    operand = _compile(node.operand)
    get, negate = _closure(operand), values.negate
    return _fold(lambda record: negate(get(record)), operand)


def _arithmetic(node: ast.Arithmetic) -> _Node:
    spine = [node]  # the left spine of an unparenthesised chain, walked in a loop as evaluate does
    while isinstance(spine[-1].left, ast.Arithmetic):
        spine.append(spine[-1].left)
    head, arithmetic = _compile(spine[-1].left), values.arithmetic
    chain: list[tuple[str, Compiled]] = []
    for step in reversed(spine):
        right = _compile(step.right)
        if not chain:  # still constant so far: try to fold this step too
            folded = _fold(_binary(arithmetic, step.op, _closure(head), _closure(right)), head, right)
            if isinstance(folded, _Const):
                head = folded
                continue
        chain.append((step.op, _closure(right)))
    if len(chain) <= 1:
        return _binary(arithmetic, chain[0][0], _closure(head), chain[0][1]) if chain else head
    first, steps = _closure(head), tuple(chain)

    def run_chain(record: Any) -> Any:
        value = first(record)
        for op, right in steps:
            value = arithmetic(op, value, right(record))
        return value

    return run_chain


def _binary(helper: Callable[[str, Any, Any], Any], op: str, left: Compiled, right: Compiled) -> Compiled:
    return lambda record: helper(op, left(record), right(record))


# --- predicates: compiled_predicates builds the closures; operands and folding are here ------


def _operand(expr: ast.Expr) -> tuple[_Node, Operand]:
    """``expr`` compiled, and what compiled_predicates needs to know of it."""
    node = _compile(expr)
    if isinstance(node, _Const):
        return node, Operand(expr, _closure(node), known=True, value=node.value)
    return node, Operand(expr, node)


def _comparison(node: ast.Comparison) -> _Node:
    (left, left_operand), (right, right_operand) = _operand(node.left), _operand(node.right)
    return _fold(predicates.comparison(node.op, left_operand, right_operand), left, right)


def _between(node: ast.Between) -> _Node:
    (value, value_operand), (low, low_operand), (high, high_operand) = map(_operand, (node.value, node.low, node.high))
    return _fold(predicates.between(value_operand, low_operand, high_operand, node.negated), value, low, high)


def _in(node: ast.In) -> _Node:
    value, value_operand = _operand(node.value)
    options = [_operand(option) for option in node.options]
    closure = predicates.in_list(value_operand, [operand for _, operand in options], node.negated)
    return _fold(closure, value, *(option for option, _ in options))


def _like(node: ast.Like) -> _Node:
    value, value_operand = _operand(node.value)
    return _fold(predicates.like(value_operand, node.pattern, node.negated), value)


def _string_match(node: ast.StringMatch) -> _Node:
    value, value_operand = _operand(node.value)
    options = [_operand(option) for option in node.options]
    closure = predicates.string_match(node.kind, value_operand, [operand for _, operand in options], node.negated)
    return _fold(closure, value, *(option for option, _ in options))


def _is_null(node: ast.IsNull) -> _Node:
    value = _compile(node.value)
    get, is_null = _closure(value), values.is_null
    if node.negated:
        return _fold(lambda record: not is_null(get(record)), value)
    return _fold(lambda record: is_null(get(record)), value)


# --- logic -----------------------------------------------------------------------------------


def _not(node: ast.Not) -> _Node:
    operand = _compile(node.operand)
    get, truth, not3 = _closure(operand), values.truth, values.not3
    return _fold(lambda record: not3(truth(get(record))), operand)


def _and_or(node: ast.And | ast.Or, *, as_filter: bool = False) -> _Node:
    """SQL AND/OR that stops at the first deciding operand (False for AND, True for OR).

    Constant operands are settled now: one that cannot decide is dropped (a NULL one is
    remembered), the first that decides ends the list, as evaluate never looks past it.
    ``as_filter``: return ``is_match`` of the result (True only when the result is True).
    """
    if not isinstance(node, (ast.And, ast.Or)):
        return _compile(node)
    decider, truth = isinstance(node, ast.Or), values.truth
    operands: list[Compiled] = []
    unknown = decided = False
    strict = True  # every kept operand is a predicate: its value is its truth
    for operand in node.operands:
        compiled = _compile(operand)  # every operand: the whole filter is checked, reached or not
        if decided:
            continue
        if not isinstance(compiled, _Const):
            operands.append(compiled)
            strict = strict and isinstance(operand, _PREDICATES)
            continue
        t = truth(compiled.value)
        unknown = unknown or t is None
        if t is decider:
            decided = True
            operands.append(lambda record: decider)  # the operands before it still run first
    if decided and len(operands) == 1:
        return _Const(decider)
    if not operands:
        result = None if unknown else not decider
        return _Const(values.is_match(result) if as_filter else result)
    final = None if unknown else not decider  # the result when no operand decides or is NULL
    logic = _logic(tuple(operands), decider, final)
    if not as_filter:
        return logic
    if len(operands) == 2 and strict:
        return _logic2_filter(operands[0], operands[1], decider, final)
    return lambda record: logic(record) is True


def _logic(operands: tuple[Compiled, ...], decider: bool, final: bool | None) -> Compiled:
    truth, undecided = values.truth, not decider

    def logic(record: Any) -> bool | None:
        unknown = final is None
        for operand in operands:
            t = operand(record)
            if t is not True and t is not False:  # values.truth's own first test, inlined
                t = truth(t)
            if t is decider:
                return decider
            unknown = unknown or t is None
        return None if unknown else undecided

    return logic


def _logic2_filter(first: Compiled, second: Compiled, decider: bool, final: bool | None) -> Compiled:
    """``is_match`` of a two-predicate AND/OR, the shape of most filters, unrolled. Predicate
    values are already truth values. When both are comparisons of one-step fields with
    constants (``/region = 'US' AND /qty > 100``), their fast paths run inline on the record's
    dict (a NULL value compares as NULL, see compiled_predicates._compare_to_constant, which
    sets the ``field_test`` read here); any other value goes to the comparison's own closure."""
    undecided, hit, clean = not decider, decider is True, final is True
    test1, test2 = getattr(first, "field_test", None), getattr(second, "field_test", None)
    if test1 is None or test2 is None:

        def logic2(record: Any) -> bool:
            a = first(record)
            if a is decider:
                return hit
            b = second(record)
            if b is decider:
                return hit
            return clean and a is undecided and b is undecided

        return logic2
    (key1, kind1, op1, c1), (key2, kind2, op2, c2) = test1, test2

    def logic2_fields(record: Any) -> bool:
        if type(record) is JsonRecord and type(data := record.data) is dict:
            v = data.get(key1)
            a = op1(v, c1) if type(v) is kind1 and v else None if v is None else first(record)
            if a is decider:
                return hit
            v = data.get(key2)
            b = op2(v, c2) if type(v) is kind2 and v else None if v is None else second(record)
        else:
            a = first(record)
            if a is decider:
                return hit
            b = second(record)
        if b is decider:
            return hit
        return clean and a is undecided and b is undecided

    return logic2_fields


# --- functions -------------------------------------------------------------------------------


def _call(node: ast.Call) -> _Node:
    name, count = node.name, len(node.args)
    if name in AGGREGATES:
        hint = f"{name}() needs a group of messages: use it in a view Projection or an aggregated subscription"
        raise FilterError(AGGREGATE_MESSAGE, hint=hint, code="FILTER_AGGREGATE")
    spec, implementation = FUNCTIONS.get(name), IMPLEMENTATIONS.get(name)
    if spec is None or implementation is None:
        raise FilterError(f"unknown function {name}()", hint="docs/filter-language.md lists the supported functions")
    if not spec.accepts(count):
        raise FilterError(f"{name}() takes {spec.arity_text()}, not {count}", hint=spec.signature or None)
    args = [_compile(arg) for arg in node.args]
    getters = tuple(_closure(arg) for arg in args)
    truth, scalar, is_null = values.truth, values.scalar, values.is_null
    if name == "IF":  # lazy: only the chosen branch runs (AMPS 5.3.4+), as in evaluate
        condition, when_true, when_false = getters
        return _fold(lambda r: scalar((when_true if truth(condition(r)) is True else when_false)(r)), *args)
    if name == "COALESCE":  # stops at the first non-NULL argument, as in evaluate

        def coalesce(record: Any) -> Any:
            for arg in getters:
                first = scalar(arg(record))
                if not is_null(first):
                    return first
            return None

        return _fold(coalesce, *args)
    if len(getters) == 1:
        (a,) = getters
        closure: Compiled = lambda record: implementation(a(record))  # noqa: E731
    elif len(getters) == 2:
        a, b = getters
        closure = lambda record: implementation(a(record), b(record))  # noqa: E731
    else:
        closure = lambda record: implementation(*[arg(record) for arg in getters])  # noqa: E731
    return _fold(closure, *args) if spec.deterministic else closure


_BUILDERS: dict[type, Callable[[Any], _Node]] = {
    ast.Field: _field, ast.Literal: _literal, ast.Negate: _negate, ast.Arithmetic: _arithmetic,
    ast.Comparison: _comparison, ast.Between: _between, ast.In: _in, ast.Like: _like,
    ast.StringMatch: _string_match, ast.IsNull: _is_null, ast.Not: _not, ast.And: _and_or, ast.Or: _and_or,
    ast.Call: _call,
}

"""The reference evaluator (ampsctl/filter/evaluate.py) on ASTs built by hand.

The spec's vectors run through the parser in test_vectors.py; these tests pin the rules the
vectors do not reach: 3VL corners, arrays under every predicate, laziness, the trace, depth,
regex failures, aggregates and the clock.
"""

from __future__ import annotations

import math
import time

import pytest

from ampsctl.filter import ast, regexes
from ampsctl.filter.ast import (
    And, Arithmetic, Between, Call, Comparison, Field, In, IsNull, Like, Literal, Negate, Not, Or, Step, StringMatch,
)
from ampsctl.filter.errors import FilterError
from ampsctl.filter.evaluate import AGGREGATE_MESSAGE, evaluate, matches
from ampsctl.messages.json_record import JsonRecord

M = JsonRecord(
    {
        "id": 42, "symbol": "MSFT", "side": "Buy", "state": "Tennessee", "price": 90.25, "qty": 1000,
        "ratio": "47", "code": "007", "notes": "", "nothing": None, "flag": True,
        "customer": {"name": "Patrick", "region": "EMEA", "tier": 2},
        "data": [1, 2, 3, "zebra", 5], "other": [14, 34, 23, 5], "empty": [],
        "pair": [14, 34], "nulls": [None, 2], "Not Xpath Name": "spaced",
    }
)


def f(text: str) -> Field:
    """A test helper, not a parser: '/a/b[1]' -> Field(Step('a'), Step('b', 1))."""
    steps = []
    for part in text.strip("/").split("/"):
        name, _, index = part.partition("[")
        steps.append(Step(name, int(index[:-1]) if index else None))
    return Field(tuple(steps))


def lit(value) -> Literal:
    return Literal(value)


def cmp(left, op, right) -> Comparison:
    wrap = lambda x: x if not isinstance(x, (str, int, float, type(None))) else (f(x) if isinstance(x, str) and x.startswith("/") else lit(x))  # noqa: E731
    return Comparison(op, wrap(left), wrap(right))


ABSENT_EQ_1 = cmp("/absent", "=", 1)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # comparisons and coercion
        (cmp("/symbol", "=", "MSFT"), True),
        (cmp("/qty", ">=", "999"), True),
        (cmp("/ratio", ">", "5"), False),
        (cmp("/symbol", ">", 10), True),
        (cmp("/notes", "=", ""), None),
        (cmp("/flag", "=", 1), True),
        (Comparison("=", lit(True), lit(1)), True),
        # NULL and 3VL
        (ABSENT_EQ_1, None),
        (cmp("/absent", "!=", 1), None),
        (Not(ABSENT_EQ_1), None),
        (And((cmp("/price", ">", 90), ABSENT_EQ_1)), None),
        (Or((cmp("/price", ">", 90), ABSENT_EQ_1)), True),
        (Or((ABSENT_EQ_1, cmp("/price", "<", 90))), None),
        (And((ABSENT_EQ_1, cmp("/price", "<", 90))), False),
        (Not(Not(ABSENT_EQ_1)), None),
        # arrays
        (cmp("/data", "!=", "zebra"), True),
        (Not(cmp("/data", "=", "zebra")), False),
        (cmp("/data", "=", "/other"), True),
        (cmp("/empty", "=", 1), None),
        (cmp("/nulls", "=", 1), None),
        (cmp("/nulls", "=", 2), True),
        # IS NULL never yields NULL
        (IsNull(f("/empty")), True),
        (IsNull(f("/notes")), True),
        (IsNull(f("/customer")), False),
        (IsNull(f("/absent"), negated=True), False),
        (IsNull(Arithmetic("+", f("/absent"), lit(1))), True),
        (IsNull(ABSENT_EQ_1), True),
        # arithmetic
        (Arithmetic("/", f("/qty"), lit(4)), 250),
        (Arithmetic("/", lit(7), lit(2)), 3),
        (Arithmetic("/", lit(7.0), lit(2)), 3.5),
        (Arithmetic("%", Negate(lit(5)), lit(3)), -2),
        (Arithmetic("/", f("/qty"), lit(0)), None),
        (Arithmetic("+", f("/data"), lit(1)), 2),
        (Arithmetic("+", f("/flag"), lit(1)), 2),
        (Arithmetic("*", f("/price"), f("/qty")), 90250.0),
        (Negate(f("/customer/tier")), -2),
        # BETWEEN: inclusive, per element, NOT is the 3VL negation
        (Between(f("/price"), lit(90), lit(90.25)), True),
        (Between(f("/qty"), lit(1000), lit(500)), False),
        (Between(f("/other"), lit(20), lit(30)), True),
        (Between(f("/pair"), lit(20), lit(30)), False),  # 14 >= 20 fails, 34 <= 30 fails
        (Between(f("/absent"), lit(1), lit(2)), None),
        (Between(f("/absent"), lit(1), lit(2), negated=True), None),
        (Between(f("/price"), lit(90.0), lit(90.5), negated=True), False),
        (Between(f("/qty"), f("/absent"), lit(2000)), None),
        # IN: the OR of `=`
        (In(f("/symbol"), (lit("IBM"), lit("MSFT"))), True),
        (In(f("/data"), (lit(42), lit("zebra"))), True),
        (In(f("/qty"), (lit(None), lit(1000))), True),
        (In(f("/qty"), (lit(None), lit(1))), None),
        (In(f("/qty"), (lit(None), lit(1)), negated=True), None),
        (In(f("/qty"), (lit(1), lit(2)), negated=True), True),
        (In(f("/absent"), (lit(1), lit(2))), None),
        (In(lit(5), (f("/other"),)), True),
        # LIKE
        (Like(f("/data"), "z"), True),
        (Like(f("/other"), "^3"), True),
        (Like(f("/price"), r"^90\.25$"), True),
        (Like(f("/flag"), "^true$"), True),
        (Like(f("/symbol"), "ms"), False),
        (Like(f("/symbol"), "(?i)^ms"), True),
        (Like(f("/symbol"), "IBM", negated=True), True),
        (Like(f("/notes"), ".*"), None),
        (Like(f("/absent"), ".*", negated=True), None),
        (Like(f("/customer"), ".*"), None),
        (Like(lit("\u00e9"), r"^\w$"), False),  # ASCII classes, as in PCRE without UTF
        # BEGINS / ENDS WITH
        (StringMatch("BEGINS", f("/symbol"), (lit("MS"),)), True),
        (StringMatch("ENDS", f("/symbol"), (lit("XX"), lit("FT"))), True),
        (StringMatch("BEGINS", f("/symbol"), (lit("IB"),), negated=True), True),
        (StringMatch("BEGINS", f("/qty"), (lit("10"),)), True),  # numbers via their text form
        (StringMatch("ENDS", f("/price"), (lit(25),)), True),
        (StringMatch("BEGINS", f("/data"), (lit("zeb"),)), True),  # array-aware
        (StringMatch("BEGINS", f("/absent"), (lit("a"),)), None),
        (StringMatch("BEGINS", f("/symbol"), (lit(None), lit("MS"))), True),
        (StringMatch("BEGINS", f("/symbol"), (lit(None), lit("X"))), None),
        (StringMatch("ENDS", f("/symbol"), (lit("X"),), negated=True), True),
        # functions
        (Call("IF", (cmp("/qty", ">", 500), lit("big"), lit("small"))), "big"),
        (Call("IF", (ABSENT_EQ_1, lit("big"), lit("small"))), "small"),
        (Call("COALESCE", (f("/absent"), f("/notes"), f("/empty"), lit("dflt"))), "dflt"),
        (Call("COALESCE", (f("/absent"),)), None),
        (Call("CONCAT", (f("/symbol"), lit("-"), f("/absent"), f("/side"))), "MSFT-Buy"),
        (Call("UPPER", (f("/data"),)), "1"),  # first element
        (Call("REVERSE", (Call("SUBSTR", (lit("fandango"), lit(5))),)), "ogna"),
        (Comparison("=", Call("NAN_VALUE", ()), Call("NAN_VALUE", ())), False),
        (Comparison("!=", Call("NAN_VALUE", ()), lit(1)), False),
        (Not(Comparison("<", Call("NAN_VALUE", ()), lit(1))), True),
    ],
)
def test_evaluate(expr, expected):
    result = evaluate(expr, M)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    ("expr", "selected"),
    [
        (lit(1), True),
        (lit(True), True),
        (lit(0), False),
        (lit(None), False),
        (lit(""), False),
        (lit("abc"), False),
        (lit(2.5), True),
        (f("/qty"), True),  # A13: a non-zero number selects
        (f("/absent"), False),
        (Call("NAN_VALUE", ()), False),
        (ABSENT_EQ_1, False),
        (Not(ABSENT_EQ_1), False),
    ],
)
def test_matches(expr, selected):
    assert matches(expr, M) is selected


def test_short_circuit_skips_operands_that_would_fail():
    bad = Like(f("/symbol"), "(")  # would raise if evaluated
    assert evaluate(And((cmp("/qty", "<", 0), bad)), M) is False
    assert evaluate(Or((cmp("/qty", ">", 0), bad)), M) is True
    with pytest.raises(FilterError):
        evaluate(And((cmp("/qty", ">", 0), bad)), M)


def test_if_and_coalesce_are_lazy():
    bad = Call("REGEXP_MATCH", (f("/symbol"), lit("(")))
    assert evaluate(Call("IF", (lit(1), lit("x"), bad)), M) == "x"
    assert evaluate(Call("IF", (lit(0), bad, lit("y"))), M) == "y"
    assert evaluate(Call("COALESCE", (lit("a"), bad)), M) == "a"


def test_trace_is_post_order_of_evaluated_nodes():
    left = cmp("/qty", ">", 500)
    right = cmp("/absent", "=", 1)
    expr = Not(And((left, right)))
    trace: list = []
    assert evaluate(expr, M, trace=trace) is None
    assert trace == [
        (left.left, 1000), (left.right, 500), (left, True),
        (right.left, None), (right.right, 1), (right, None),
        (expr.operand, None), (expr, None),
    ]


def test_trace_of_arithmetic_chain_and_short_circuit():
    a, b, c = lit(1), lit(2), lit(3)
    inner = Arithmetic("+", a, b)
    outer = Arithmetic("*", inner, c)
    trace: list = []
    assert evaluate(outer, M, trace=trace) == 9
    assert trace == [(a, 1), (b, 2), (inner, 3), (c, 3), (outer, 9)]

    skipped = cmp("/qty", "=", 1)
    decided = cmp("/qty", "=", 1000)
    trace = []
    evaluate(Or((decided, skipped)), M, trace=trace)
    assert all(node is not skipped for node, _ in trace)


def test_long_chains_do_not_recurse():
    expr: ast.Expr = lit(0)
    for _ in range(50_000):
        expr = Arithmetic("+", expr, lit(1))
    assert evaluate(expr, M) == 50_000
    wide = Or(tuple(cmp("/qty", "=", n) for n in range(50_000)) + (cmp("/qty", "=", 1000),))
    assert evaluate(wide, M) is True
    assert evaluate(And(tuple(cmp("/qty", ">", n % 1000) for n in range(50_000))), M) is True


def test_nesting_at_the_parser_bound_evaluates():
    expr: ast.Expr = cmp("/qty", "=", 1000)
    for _ in range(200):
        expr = Not(expr)
    assert evaluate(expr, M) is True


@pytest.mark.parametrize("name", ["SUM", "COUNT", "MAX", "AVG"])
def test_aggregates_are_rejected_in_filters(name):
    with pytest.raises(FilterError, match=AGGREGATE_MESSAGE):
        evaluate(Comparison(">", Call(name, (f("/qty"),)), lit(0)), M)


def test_unknown_function_and_node():
    with pytest.raises(FilterError, match="unknown function"):
        evaluate(Call("NO_SUCH_FUNCTION", ()), M)
    with pytest.raises(FilterError):
        evaluate(object(), M)  # type: ignore[arg-type]


def test_invalid_regex_is_a_filter_error():
    with pytest.raises(FilterError) as info:
        evaluate(Like(f("/symbol"), "a(b"), M)
    assert info.value.hint and info.value.exit_code == 3


def test_invalid_regex_points_at_the_pattern_when_the_caller_knows_where():
    text = "/symbol LIKE 'a(b'"
    with pytest.raises(FilterError) as info:
        regexes.compile_pattern("a(b", expression=text, position=13)
    assert info.value.position == 13
    assert info.value.caret().splitlines()[1] == " " * 13 + "^"
    assert "offset 3 of the pattern" in info.value.message


def test_regex_cache_is_bounded():
    regexes.cache_clear()
    for n in range(regexes.CACHE_SIZE + 50):
        assert regexes.search(f"x{n}$", f"ax{n}")
    assert regexes.cache_size() == regexes.CACHE_SIZE


def test_search_compiled_is_search_with_a_compiled_pattern():
    for pattern, text in [("^MS", "MSFT"), ("(?i)ft$", "MSFT"), ("(.)\\1", "abba"), ("x", "MSFT"), ("", "")]:
        assert regexes.search_compiled(regexes.compile_pattern(pattern), text) is regexes.search(pattern, text)


def test_search_compiled_timeout_is_the_search_timeout_error():
    compiled, text = regexes.compile_pattern("(a|aa)+$"), "a" * 40 + "!"
    with pytest.raises(FilterError) as from_compiled:
        regexes.search_compiled(compiled, text, timeout=0.05)
    with pytest.raises(FilterError) as from_search:
        regexes.search("(a|aa)+$", text, timeout=0.05)
    assert from_compiled.value.code == from_search.value.code == "FILTER_REGEX_TIMEOUT"
    assert from_compiled.value.message == from_search.value.message
    assert "(a|aa)+$" in from_compiled.value.message


def test_hostile_regex_times_out():
    record = JsonRecord({"s": "a" * 40 + "!"})
    started = time.monotonic()
    with pytest.raises(FilterError, match="timeout"):
        evaluate(Like(f("/s"), "(a|aa)+$"), record)
    assert time.monotonic() - started < 10


def test_unix_timestamp_reads_the_clock_at_evaluation(monkeypatch):
    expr = Comparison(">", Call("UNIX_TIMESTAMP", ()), lit(1_500_000_000))
    assert matches(expr, M)
    monkeypatch.setattr(time, "time", lambda: 1_000_000_000.0)
    assert not matches(expr, M)
    assert evaluate(Call("UNIX_TIMESTAMP", ()), M) == 1_000_000_000.0


def test_nan_arithmetic_propagates():
    assert math.isnan(evaluate(Arithmetic("+", Call("NAN_VALUE", ()), lit(1)), M))

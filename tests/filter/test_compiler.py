"""The compiled fast path (ampsctl/filter/compiler.py and compiled_predicates.py): what it
refuses, folds and shortcuts.

Agreement with the evaluator on generated filters and records is test_differential.py's job;
these tests pin what a generator would rarely reach: compile-time errors, constant folding
(and what must not fold), the JsonRecord field fast path against ``JsonRecord.get``, records
of other kinds, depth, LIKE compiled once, regex timeouts and the IN/comparison fast paths on
the coercion corners. No test here depends on timing.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from ampsctl.filter import ast, regexes
from ampsctl.filter.ast import And, Arithmetic, Call, Comparison, Field, In, Like, Literal, Not, Or, Step
from ampsctl.filter.catalog import AGGREGATES, FUNCTIONS
from ampsctl.filter.compiler import compile_filter, compile_value
from ampsctl.filter.errors import FilterError
from ampsctl.filter.evaluate import AGGREGATE_MESSAGE, evaluate, matches
from ampsctl.messages.json_record import JsonRecord
from ampsctl.filter.parser import parse

M = JsonRecord.from_bytes(
    b'{"id": 42, "symbol": "MSFT", "region": "US", "qty": 1000, "price": 90.25, "ratio": "47",'
    b' "code": "007", "notes": "", "nothing": null, "flag": true, "customer": {"name": "Patrick", "tier": 2},'
    b' "data": [1, 2, 3, "zebra", 5], "empty": [], "items": [{"q": 1}, {"q": 2}, {"r": 3}, [{"q": 4}]],'
    b' "@at": "json key", "Not Xpath Name": "spaced"}'
)


def both(text: str, record: Any = M) -> Any:
    """The compiled value and match, after checking both against the evaluator."""
    expr = parse(text)
    value = compile_value(expr)(record)
    expected = evaluate(expr, record)
    assert type(value) is type(expected) and (value == expected or value != value and expected != expected), text
    assert compile_filter(expr)(record) is matches(expr, record), text
    return value


# --- compile-time errors ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(AGGREGATES))
def test_aggregates_are_refused_at_compile_time(name):
    expr = Comparison(">", Call(name, (Field((Step("qty"),)),)), Literal(1))
    for compile_ in (compile_filter, compile_value):
        with pytest.raises(FilterError, match=AGGREGATE_MESSAGE) as caught:
            compile_(expr)
        assert caught.value.code == "FILTER_AGGREGATE"


def test_aggregate_in_an_unreached_branch_is_still_refused():
    # evaluate would short-circuit past it; a compiled filter is checked whole, once.
    with pytest.raises(FilterError, match="aggregate"):
        compile_filter(parse("1 = 0 AND SUM(/qty) > 1"))


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (Call("NO_SUCH_FUNCTION", ()), "unknown function NO_SUCH_FUNCTION"),
        (Call("IF", (Literal(1), Literal(2))), "IF\\(\\) takes 3 arguments, not 2"),
        (Call("SUBSTR", (Literal("abc"),)), "SUBSTR\\(\\) takes 2 or 3 arguments, not 1"),
        (Call("UPPER", (Literal("a"), Literal("b"))), "UPPER\\(\\) takes 1 argument, not 2"),
        (Like(Field((Step("symbol"),)), "(unclosed"), "invalid regular expression"),
        (ast.Step("not an expression"), "not a filter expression node: Step"),
    ],
)
def test_unknown_constructs_are_refused_at_compile_time(expr, message):
    for compile_ in (compile_filter, compile_value):
        with pytest.raises(FilterError, match=message):
            compile_(expr)


def test_every_catalog_function_compiles_with_an_accepted_argument_count():
    # The parser accepts every catalog name; a name without an implementation would compile
    # (and evaluate) to "unknown function" only here, after parsing succeeded.
    for name, spec in FUNCTIONS.items():
        if spec.aggregate:
            continue
        args = tuple(Literal("1") for _ in range(spec.min_args))
        compile_value(Call(name, args))


def test_hand_built_nesting_beyond_the_parser_limit_is_a_filter_error_not_a_recursion_error():
    expr: ast.Expr = Comparison("=", Field((Step("qty"),)), Literal(1000))
    for _ in range(5000):
        expr = Not(expr)
    with pytest.raises(FilterError, match="nested too deeply"):
        compile_filter(expr)


# --- constants -------------------------------------------------------------------------------


def test_constant_filters_fold_to_their_match():
    assert compile_filter(parse("1 = 1"))(None) is True  # no record access at all
    assert compile_filter(parse("REVERSE(SUBSTR('fandango', 5)) == 'ogna'"))(None) is True
    assert compile_value(parse("2 * 3 + 1"))(None) == 7
    assert compile_filter(parse("NULL OR 1 = 0"))(None) is False
    assert math.isnan(compile_value(parse("NAN_VALUE() + 1"))(None))


def test_the_clock_is_never_folded(monkeypatch):
    compiled = compile_value(parse("UNIX_TIMESTAMP()"))
    monkeypatch.setattr(time, "time", lambda: 1_000.0)
    assert compiled(M) == 1_000.0
    monkeypatch.setattr(time, "time", lambda: 2_000.0)
    assert compiled(M) == 2_000.0
    assert compile_filter(parse("UNIX_TIMESTAMP() > 1500"))(M) is True


def test_a_constant_that_fails_is_not_folded_and_fails_per_evaluation():
    # Built by hand: the parser refuses this literal pattern (a pattern from a field is data).
    expr = Comparison("=", Call("REGEXP_MATCH", (Literal("abc"), Literal("("))), Literal("a"))
    compiled = compile_filter(expr)  # no error yet
    with pytest.raises(FilterError, match="invalid regular expression"):
        compiled(M)
    with pytest.raises(FilterError, match="invalid regular expression"):
        evaluate(expr, M)


def test_a_pattern_nested_too_deeply_is_an_invalid_regular_expression_not_a_crash():
    nested = "(" * 1000 + "a" + ")" * 1000  # the regex package recurses once per group
    with pytest.raises(FilterError, match="groups nested too deeply to compile") as caught:
        compile_filter(parse(f"/a LIKE '{nested}'"))
    assert len(caught.value.message) < 400  # the pattern is cut in the message
    with pytest.raises(FilterError, match="nested too deeply"):
        evaluate(parse(f"REGEXP_MATCH('a', '{nested}') = 'a'"), M)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("/qty > 1 AND 1 = 1", True),  # constant true operand dropped
        ("/qty > 1 AND NULL", None),  # constant NULL remembered
        ("/absent = 1 OR 1 = 1", True),  # constant deciding operand ends the list
        ("1 = 0 AND /qty > 1", False),
        ("/qty AND 1 = 1", True),  # a lone remaining operand still goes through truth()
        ("/qty > 1 AND /price > 1 AND /symbol = 'MSFT' AND 1 = 1", True),
        ("/absent = 1 OR /notes = 'x' OR NULL", None),
        ("NOT (/qty > 1 AND NULL)", None),
    ],
)
def test_and_or_with_constant_operands(text, value):
    assert both(text) is value


def test_and_or_stop_where_evaluate_stops():
    # The third operand would fail (an invalid pattern made at run time); both paths stop before it.
    assert both("/qty > 1 OR REGEXP_MATCH(/symbol, CONCAT('(', /symbol)) = 'x'") is True
    with pytest.raises(FilterError):
        compile_filter(parse("/absent = 1 OR REGEXP_MATCH(/symbol, CONCAT('(', /symbol)) = 'x'"))(M)


# --- fields ----------------------------------------------------------------------------------

PATHS = [
    "/qty", "/customer/name", "/customer/absent", "/absent/name", "/qty/name", "/data", "/data/x",
    "/items/q", "/items/r", "/items[1]/q", "/items/q[1]", "/data[3]", "/data[9]", "/empty", "/nothing/x",
    "/@at", "[/@at]", "[/Not Xpath Name]", "/notes",
]


@pytest.mark.parametrize("path", PATHS)
def test_json_field_fast_path_is_json_record_get(path):
    field = parse(f"{path} IS NULL").value
    assert compile_value(field)(M) == M.get(field)
    qualified = Field(field.steps, field.bracketed, ("json", "orders"))
    assert compile_value(qualified)(M) == M.get(qualified)


@pytest.mark.parametrize("data", [[1, 2], "text", None, 5, [{"qty": 7}]])
def test_json_records_that_are_not_objects(data):
    record = JsonRecord(data)
    for path in ("/qty", "/qty/x"):
        field = parse(path + " IS NULL").value
        assert compile_value(field)(record) == record.get(field)


class DictRecord:
    """Another Record implementation: the compiler must only call ``get``."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def get(self, field: Field) -> Any:
        return self.values.get("/".join(step.name for step in field.steps))


@pytest.mark.parametrize(
    "text", ["/region = 'US' AND /qty > 100", "/region = 'US' AND /qty > 100 AND /a/b = 'x'", "/qty BETWEEN 1 AND 200",
             "/region IN ('US', 'EU')", "/a/b LIKE 'x'", "/region BEGINS WITH ('U')", "/region = 'EU' OR 100 < /qty"],
)
def test_other_record_kinds_go_through_get(text):
    record = DictRecord({"region": "US", "qty": 150, "a/b": "x"})
    assert compile_filter(parse(text))(record) is True
    assert matches(parse(text), record) is True


class JsonRecordLike(JsonRecord):
    """A subclass may change ``get``: the dict fast path must not bypass it."""

    def get(self, field: Field) -> Any:
        return "overridden"


def test_json_record_subclasses_are_not_shortcut():
    assert compile_value(parse("/qty IS NULL").value)(JsonRecordLike({"qty": 1})) == "overridden"


# --- arithmetic, LIKE, fast paths ------------------------------------------------------------


def test_long_arithmetic_chain_runs_in_a_loop():
    expr: ast.Expr = Field((Step("qty"),))
    for n in range(20_000):
        expr = Arithmetic("+" if n % 2 else "-", expr, Literal(1))
    assert compile_value(expr)(M) == evaluate(expr, M) == 1000
    long_and = And(tuple(Comparison(">", Field((Step("qty"),)), Literal(n)) for n in range(50_000)))
    assert compile_filter(long_and)(M) is False and compile_filter(long_and)(JsonRecord({"qty": 10**6})) is True


def test_like_pattern_is_compiled_once():
    compiled = compile_filter(parse("/symbol LIKE '^MS' OR /data LIKE 'zeb'"))
    regexes.cache_clear()
    assert compiled(M) is True and compiled(JsonRecord({"data": ["a", "zebra"]})) is True
    assert regexes.cache_size() == 0  # no per-record pattern lookups


def test_like_timeout_is_the_evaluators_error(monkeypatch):
    monkeypatch.setattr(regexes, "DEFAULT_TIMEOUT", 0.05)
    compiled = compile_filter(Like(Field((Step("s"),)), "(a|aa)+$"))
    with pytest.raises(FilterError, match="timeout") as caught:
        compiled(JsonRecord({"s": "a" * 40 + "b"}))
    assert caught.value.code == "FILTER_REGEX_TIMEOUT"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("/code = 7", True), ("/code = '7'", False), ("7 = /code", True), ("/ratio > 5", True),
        ("/ratio > '5'", False), ("/symbol > 10", True), ("10 < /symbol", True), ("/flag = 1", True),
        ("/notes = ''", None), ("/notes != 'x'", None), ("/data != 'zebra'", True), ("/data = 42", False),
        ("/qty = 1000.0", True), ("/qty >= '999'", True), ("/price BETWEEN 90 AND 90.25", True),
        ("/ratio BETWEEN 40 AND 50", True), ("/data BETWEEN 4 AND 5", True), ("/qty NOT BETWEEN 1 AND 2", True),
        ("/code IN (7, 8)", True), ("/code IN ('7', '8')", False), ("/ratio IN ('x', 47)", True),
        ("/qty IN ('1000', 'x')", True), ("/qty IN (999, NULL)", None), ("/qty NOT IN (999, NULL)", None),
        ("/flag IN (1)", True), ("/symbol IN ('IBM', 'MSFT')", True), ("/symbol NOT IN ('IBM', 'MSFT')", False),
        ("/data IN (42, 'zebra')", True), ("/absent IN ('a')", None), ("/notes IN ('')", None),
        ("/qty IN (1000.0)", True), ("/symbol BEGINS WITH ('MS', NULL)", True),
        ("/symbol ENDS WITH ('XX', NULL)", None), ("/qty ENDS WITH ('00')", True),
        ("/symbol NOT LIKE 'IBM'", True), ("/data LIKE '^3$'", True), ("/price LIKE '\\.25$'", True),
    ],
)
def test_fast_paths_keep_the_coercion_rules(text, value):
    assert both(text) is value


def test_nan_values_against_number_constants():
    record = JsonRecord({"x": math.nan, "xs": [math.nan, 5]})
    for text, value in [
        ("/x = 1", False), ("/x != 1", False), ("/x < 1", False), ("/x IN (1, 2)", False),
        ("/x NOT IN (1)", True), ("/x BETWEEN 0 AND 9", False), ("/x NOT BETWEEN 0 AND 9", True),
        ("/xs != 1", True), ("/xs IN (5)", True), ("NAN_VALUE() = NAN_VALUE()", False),
    ]:
        assert both(text, record) is value, text


def test_filter_of_a_non_predicate_uses_its_truth():
    assert both("/qty") == 1000 and compile_filter(parse("/qty"))(M) is True
    assert compile_filter(parse("/symbol"))(M) is False  # not a number: unknown, no match
    assert compile_filter(parse("/ratio"))(M) is True  # '47' counts through its number
    assert compile_filter(Or((Field((Step("absent"),)), Field((Step("qty"),)))))(M) is True

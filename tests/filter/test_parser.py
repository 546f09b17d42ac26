"""Parser: grammar and precedence (spec §3), canonical AST spellings, errors and hostile input."""

from __future__ import annotations

import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ampsctl.filter.ast import (
    And, Arithmetic, Between, Call, Comparison, Field, In, IsNull, Like, Literal, Negate, Not, Or, Step, StringMatch,
)
from ampsctl.filter.catalog import FUNCTIONS
from ampsctl.filter.errors import FilterSyntaxError
from ampsctl.filter.grammar import MAX_DEPTH, MAX_FILTER_BYTES
from ampsctl.filter.parser import parse


def f(*names: str) -> Field:
    return Field(tuple(Step(n) for n in names))


def lit(value: object) -> Literal:
    return Literal(value)  # type: ignore[arg-type]


A, B, C, D = f("a"), f("b"), f("c"), f("d")
ONE, TWO, THREE = lit(1), lit(2), lit(3)


def eq(left, right):
    return Comparison("=", left, right)


def syntax_error(text: str | bytes) -> FilterSyntaxError:
    with pytest.raises(FilterSyntaxError) as info:
        parse(text)
    return info.value


# -- the language -------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "ast"), [
    # literals
    ("TRUE", lit(True)), ("false", lit(False)), ("Null", lit(None)),
    ("'x'", lit("x")), ("42", lit(42)), ("4.5", lit(4.5)),
    ("-5", Negate(lit(5))), ("+5", lit(5)), ("- -5", Negate(Negate(lit(5)))),
    # comparisons, canonical spellings
    ("/a = 1", eq(A, ONE)), ("/a == 1", eq(A, ONE)),
    ("/a != 1", Comparison("!=", A, ONE)), ("/a <> 1", Comparison("!=", A, ONE)),
    ("/a < 1", Comparison("<", A, ONE)), ("/a <= 1", Comparison("<=", A, ONE)),
    ("/a > 1", Comparison(">", A, ONE)), ("/a >= 1", Comparison(">=", A, ONE)),
    # predicates
    ("/a BETWEEN 1 AND 2", Between(A, ONE, TWO)),
    ("/a NOT BETWEEN 1 AND 2", Between(A, ONE, TWO, True)),
    ("/a IN (1, 'x', /b)", In(A, (ONE, lit("x"), B))),
    ("/a NOT IN (1)", In(A, (ONE,), True)),
    ("/a LIKE '^x'", Like(A, "^x")),
    ("/a NOT LIKE \"x$\"", Like(A, "x$", True)),
    ("/a BEGINS WITH ('x', 'y')", StringMatch("BEGINS", A, (lit("x"), lit("y")))),
    ("/a NOT BEGINS WITH ('x')", StringMatch("BEGINS", A, (lit("x"),), True)),
    ("/a ENDS WITH ('x')", StringMatch("ENDS", A, (lit("x"),))),
    ("/a not ends with ('x')", StringMatch("ENDS", A, (lit("x"),), True)),
    ("/a IS NULL", IsNull(A)), ("/a is not null", IsNull(A, True)),
    # arithmetic
    ("/a + 1", Arithmetic("+", A, ONE)), ("/a - 1", Arithmetic("-", A, ONE)),
    ("/a * 1", Arithmetic("*", A, ONE)), ("/a / 1", Arithmetic("/", A, ONE)),
    ("/a % 1", Arithmetic("%", A, ONE)), ("/a MOD 1", Arithmetic("%", A, ONE)), ("/a mod 1", Arithmetic("%", A, ONE)),
    ("/a / /b", Arithmetic("/", A, B)), ("/a/b", f("a", "b")), ("/a-1", f("a-1")),
    ("/a - /b - /c", Arithmetic("-", Arithmetic("-", A, B), C)),
    ("/a / /b / /c", Arithmetic("/", Arithmetic("/", A, B), C)),
    ("/a - (/b - /c)", Arithmetic("-", A, Arithmetic("-", B, C))),
    ("/a + /b * /c", Arithmetic("+", A, Arithmetic("*", B, C))),
    ("(/a + /b) * /c", Arithmetic("*", Arithmetic("+", A, B), C)),
    ("-/a * 2", Arithmetic("*", Negate(A), TWO)),
    ("-(/a * 2)", Negate(Arithmetic("*", A, TWO))),
    ("2 * -/a", Arithmetic("*", TWO, Negate(A))),
    ("+/a", A),
    ("-5 % 3 = -2", eq(Arithmetic("%", Negate(lit(5)), THREE), Negate(TWO))),
    ("/a + 1 > /b * 2", Comparison(">", Arithmetic("+", A, ONE), Arithmetic("*", B, TWO))),
    # logic: NOT binds tighter than AND, AND tighter than OR; chains are n-ary
    ("/a AND /b OR /c AND /d", Or((And((A, B)), And((C, D))))),
    ("/a OR /b OR /c", Or((A, B, C))),
    ("/a AND /b AND /c AND /d", And((A, B, C, D))),
    ("(/a AND /b) AND /c", And((And((A, B)), C))),
    ("/a AND (/b AND /c)", And((A, And((B, C))))),
    ("(/a OR /b) AND /c", And((Or((A, B)), C))),
    ("NOT /a = 1", Not(eq(A, ONE))),
    ("NOT /a = 1 AND /b", And((Not(eq(A, ONE)), B))),
    ("NOT NOT /a", Not(Not(A))),
    ("/a AND NOT /b", And((A, Not(B)))),
    ("NOT -/a = 1", Not(eq(Negate(A), ONE))),
    ("NOT /a + 1", Not(Arithmetic("+", A, ONE))),
    ("(NOT /a) = 1", eq(Not(A), ONE)),
    ("/p BETWEEN 1 AND 2 AND /q = 3", And((Between(f("p"), ONE, TWO), eq(f("q"), THREE)))),
    ("/p BETWEEN 1 + 1 AND 2 * 3", Between(f("p"), Arithmetic("+", ONE, ONE), Arithmetic("*", TWO, THREE))),
    ("1 + 2 NOT IN (3)", In(Arithmetic("+", ONE, TWO), (THREE,), True)),
    ("(/a = 1) = 1", eq(eq(A, ONE), ONE)),
    ("/a IN (/b OR /c, 1)", In(A, (Or((B, C)), ONE))),
    # calls
    ("upper(/a)", Call("UPPER", (A,))),
    ("UNIX_TIMESTAMP()", Call("UNIX_TIMESTAMP", ())),
    ("IF(/a > 1, 'x', NULL)", Call("IF", (Comparison(">", A, ONE), lit("x"), lit(None)))),
    ("COALESCE(/a, /b, /c, 0)", Call("COALESCE", (A, B, C, lit(0)))),
    ("REVERSE(SUBSTR('fandango', 5))", Call("REVERSE", (Call("SUBSTR", (lit("fandango"), lit(5))),))),
    ("count_distinct(/a)", Call("COUNT_DISTINCT", (A,))),
    ("SUM(IF((/qty % 10) == 0, 1, 0))",
     Call("SUM", (Call("IF", (eq(Arithmetic("%", f("qty"), lit(10)), lit(0)), ONE, lit(0))),),)),
    # identifiers
    ("[/Not Xpath Name] = 'x'", eq(Field((Step("Not Xpath Name"),), bracketed=True), lit("x"))),
    ("[t]./x = [json].[t].[/y z]",
     eq(Field((Step("x"),), qualifier=("t",)), Field((Step("y z"),), bracketed=True, qualifier=("json", "t")))),
    ("/Order/@update", f("Order", "@update")),
    ("/@attr", f("@attr")),
    ("/data[3]", Field((Step("data", 3),))),
])
def test_parse(text: str, ast: object) -> None:
    assert parse(text) == ast
    assert parse(text.encode()) == ast


def test_literal_types_are_kept() -> None:
    assert type(parse("TRUE").value) is bool  # type: ignore[union-attr]
    assert type(parse("1").value) is int  # type: ignore[union-attr]
    assert type(parse("1.0").value) is float  # type: ignore[union-attr]


def test_documented_in_list_example() -> None:
    ast = parse("/21964 IN (/14*5, /6*/14, 1000, 2000)")
    assert ast == In(f("21964"), (Arithmetic("*", f("14"), lit(5)), Arithmetic("*", f("6"), f("14")),
                                  lit(1000), lit(2000)))


# Every filter of spec §12 (vectors 1-90, F1-F4, X1-X4) parses.
SPEC_VECTORS = [
    "/symbol = 'MSFT'", '/symbol == "MSFT"', "/symbol = 'msft'", "/symbol != 'IBM'", "/symbol <> 'IBM'",
    "/price > 90", "/price BETWEEN 90 AND 90.25", "/price NOT BETWEEN 90.0 AND 90.5", "/qty = 1000.0",
    "/qty >= '999'", "/ratio = 47", "/ratio > 5", "/ratio > '5'", "/code = 7", "/code = '7'", "/symbol > 10",
    "/symbol < 10", "/notes IS NULL", "/notes = ''", "/nothing IS NULL", "/absent IS NULL", "/absent IS NOT NULL",
    "/absent = 1", "/absent != 1", "NOT (/absent = 1)", "/absent + 1 IS NULL", "/customer/name = 'Patrick'",
    "/customer/tier * 2 = 4", "/qty / 4 = 250", "/qty % 7 = 6", "/qty MOD 7 = 6", "-5 % 3 = -2", "5 % -3 = 2",
    "/price * /qty >= 90250", "/symbol IN ('IBM', 'MSFT', 'ORCL')", "/symbol NOT IN ('IBM', 'ORCL')",
    "/qty IN (500, 1000.0)", "/absent IN (1, 2)", "/data = 1", "/data = 'zebra'", "/data != 'zebra'",
    "NOT (/data = 'zebra')", "/data = 42", "/data LIKE 'z'", "/other > 30", "/other > 50", "/data[0] = 1",
    '/data[3] = "zebra"', "/data[1] != 1", "/other[1] LIKE '4'", "/data = /other", "/data IN (42, 'zebra')",
    "/empty IS NULL", "/data + 1 = 2", "/symbol LIKE '^MS'", "/symbol LIKE 'ms'", "/symbol LIKE '(?i)^ms'",
    "/state LIKE '(.)\\1'", "/customer/name LIKE '(.)\\1'", "NOT (/symbol LIKE 'IBM')", "/symbol BEGINS WITH ('MS')",
    "/symbol ENDS WITH ('XX', 'FT')", "/symbol NOT BEGINS WITH ('IB')", "INSTR(/symbol, 'SF') = 2",
    "INSTR(/symbol, 'zz') = 0", "STREQUAL_I(/symbol, 'msft') == 1", "INSTR_I(/symbol, 'sf') != 0",
    "UPPER(/side) = 'BUY'", "LOWER(/symbol) IN ('msft', 'ibm')", "CONCAT(/symbol, '-', /side) = 'MSFT-Buy'",
    "REVERSE(SUBSTR('fandango', 5)) == 'ogna'", "SUBSTR(/symbol, 2, 2) = 'SF'",
    "IF(/qty > 500, 'big', 'small') = 'big'", "COALESCE(/absent, /notes, 'dflt') = 'dflt'",
    "[/Not Xpath Name] = 'spaced'", "(/price > 100 OR /qty > 500) AND /side = 'Buy'",
    "/price > 100 OR /qty > 500 AND /side = 'Sell'", "NOT /symbol = 'IBM'", "1=1", "10 < 'Crank It Up'",
    "10 < '2'", "'2.000' <> '2.0'", "2 = 2.0", "10 > ''", "'' IS NULL", "/qty BETWEEN 1000 AND 500", "/flag = 1",
    "/price > 90 AND /absent = 1", "/price > 90 OR /absent = 1", "UNIX_TIMESTAMP() > 1500000000",
    "/55 = 'MSFT'", "/38 * /44 >= 90250", '/55 LIKE "FT$"', "/99 IS NULL",
    "/Order/Symbol = 'IBM'", "/Order/@update = 'full'", "/Order/OrderQty > 999", "/Symbol = 'IBM'",
]


@pytest.mark.parametrize("text", SPEC_VECTORS)
def test_spec_vectors_parse(text: str) -> None:
    parse(text)


def test_spec_vector_shapes() -> None:
    assert parse("/state LIKE '(.)\\1'") == Like(f("state"), "(.)\\1")
    assert parse("/price > 100 OR /qty > 500 AND /side = 'Sell'") == Or((
        Comparison(">", f("price"), lit(100)),
        And((Comparison(">", f("qty"), lit(500)), eq(f("side"), lit("Sell")))),
    ))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_catalog_function_parses_at_its_arities(name: str) -> None:
    spec = FUNCTIONS[name]
    high = spec.max_args if spec.max_args is not None else spec.min_args + 3
    for count in range(spec.min_args, high + 1):
        args = ", ".join(["/x"] * count)
        assert parse(f"{name.lower()}({args})") == Call(name, (f("x"),) * count)
    if spec.min_args > 0:
        error = syntax_error(f"{name}({', '.join(['/x'] * (spec.min_args - 1))})")
        assert "takes" in error.message and spec.signature in (error.hint or "")
    if spec.max_args is not None:
        text = f"{name}({', '.join(['/x'] * (spec.max_args + 1))})"
        error = syntax_error(text)
        assert error.position == (text.rindex("/x") if spec.max_args else len(name) + 1)


# -- errors -------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "position", "message", "hint"), [
    ("", 0, "empty filter", "1=1"),
    ("  \n ", 0, "empty filter", "condition"),
    ("/a = ", 5, "unexpected end of filter", "expected a value"),
    ("/a = 1 AND", 10, "unexpected end", "expected a value"),
    ("NOT", 3, "unexpected end", "expected a value"),
    ("/a = 1 /b", 7, "unexpected field", "operator"),
    ("/a = 1)", 6, "unexpected symbol )", "closes nothing"),
    ("(/a = 1", 7, "expected ')'", "offset 0"),
    ("10/2", 2, "unexpected field /2", "spaces around the /"),
    ("/a- 1", 4, "unexpected number", "spaces around the -"),
    ("'it''s'", 4, "unexpected string", "\\'"),
    ("/a = 1 = 2", 7, "comparisons do not chain", "parenthesise"),
    ("/a < /b < /c", 8, "comparisons do not chain", "AND"),
    ("/a IS NULL IS NULL", 11, "comparisons do not chain", ""),
    ("/a IS NULL + 1", 11, "cannot apply to a condition", "parenthesise"),
    ("/a IN (1) * 2", 10, "cannot apply to a condition", ""),
    ("/a LIKE /b", 8, "LIKE needs a quoted pattern", "string literal"),
    ("/a LIKE ('x')", 8, "LIKE needs a quoted pattern", ""),
    ("/a LIKE 5", 8, "LIKE needs a quoted pattern", ""),
    ("/a NOT LIKE CONCAT('a')", 12, "LIKE needs a quoted pattern", ""),
    ("/a NOT = 1", 7, "after NOT", "NOT (/a = 1)"),
    ("/a = 1 NOT", 10, "after NOT", ""),
    ("/a = NOT /b", 5, "NOT cannot stand here", "parenthesise"),
    ("1 + NOT /b", 4, "NOT cannot stand here", ""),
    ("/a BETWEEN 1 OR 2", 13, "expected AND", "BETWEEN low AND high"),
    ("/a IN 1", 6, "expected '('", "parentheses"),
    ("/a IN ()", 7, "empty list", ""),
    ("/a IN (1 2)", 9, "expected ',' or ')'", "offset 6"),
    ("/a BEGINS ('x')", 10, "expected WITH", "BEGINS WITH"),
    ("/a ENDS WITH 'x'", 13, "expected '('", "ENDS WITH ("),
    ("/a IS 1", 6, "expected NULL", "IS NOT NULL"),
    ("SUBSTRR(/a, 1)", 0, "unknown function SUBSTRR", "did you mean SUBSTR?"),
    ("uper(/a)", 0, "unknown function uper", "UPPER"),
    ("zzzzzz(/a)", 0, "unknown function", "docs/filter-language.md"),
    ("NOW()", 0, "unknown function", "UNIX_TIMESTAMP"),
    ("CASE WHEN /a THEN 1 END", 0, "unexpected name CASE", "IF("),
    ("TOPIC_MATCH(/a)", 0, "unexpected keyword TOPIC_MATCH", "not supported"),
    ("/a TOPIC_MATCH 'x'", 3, "unexpected keyword TOPIC_MATCH", "not supported"),
    ("SUM(/a) AS /b", 8, "unexpected keyword AS", "projected field"),
    ("symbol = 'x'", 0, "unexpected name symbol", "/symbol"),
    ("upper", 0, "needs parentheses", "UPPER(s)"),
    ("SUBSTR(/a)", 9, "SUBSTR takes 2 or 3 arguments, got 1", "SUBSTR(s, start [, length])"),
    ("SUBSTR(/a, 1, 2, 3)", 17, "SUBSTR takes 2 or 3 arguments, got 4", ""),
    ("IF(/a, 1)", 8, "IF takes 3 arguments, got 2", ""),
    ("UNIX_TIMESTAMP(1)", 15, "takes no arguments", ""),
    ("COALESCE()", 9, "at least 1 argument", ""),
    ("/a[-1] = 1", 3, "negative subscript", "from 0"),
    ("'abc", 0, "unterminated string", ""),
    ("/a = 'abc", 5, "unterminated string", ""),
    ("/a / ", 5, "unexpected end", ""),
    ("/a = /", 5, "unexpected symbol /", "no space after the /"),
])
def test_syntax_errors(text: str, position: int, message: str, hint: str) -> None:
    error = syntax_error(text)
    assert error.position == position, error
    assert message in error.message
    assert hint in (error.hint or "")
    assert error.exit_code == 3


def test_error_caret_points_at_the_offending_character() -> None:
    error = syntax_error("/a = 1 AND /b LIKE /c")
    assert error.caret() == "/a = 1 AND /b LIKE /c\n                   ^"


# -- bytes, encoding and size -----------------------------------------------------------------

def test_bytes_are_utf8() -> None:
    assert parse("/a = 'é'".encode()) == eq(A, lit("é"))
    assert parse(bytearray(b"/a = 1")) == eq(A, ONE)


@pytest.mark.parametrize(("raw", "offset"), [
    (b"/a = '\xff'", 6), (b"\x80", 0), (b"/a = '\xc3\xa9\xc3'", 8), (b"/a = '\xed\xa0\x80'", 6),
])
def test_invalid_utf8_reports_the_byte_offset(raw: bytes, offset: int) -> None:
    error = syntax_error(raw)
    assert error.position == offset
    assert "invalid UTF-8" in error.message and f"byte offset {offset}" in error.message


def test_filter_of_exactly_the_limit_is_read() -> None:
    text = "'" + "x" * (MAX_FILTER_BYTES - 2) + "'"
    assert parse(text) == lit("x" * (MAX_FILTER_BYTES - 2))


@pytest.mark.parametrize("as_bytes", [False, True])
def test_filter_over_one_megabyte_is_refused_before_tokenizing(as_bytes: bool) -> None:
    text = "'" + "x" * (MAX_FILTER_BYTES - 1) + "'"  # limit + 1 bytes
    start = time.perf_counter()
    error = syntax_error(text.encode() if as_bytes else text)
    assert time.perf_counter() - start < 1.0
    assert "too long" in error.message and error.position == MAX_FILTER_BYTES


def test_limit_counts_utf8_bytes_not_characters() -> None:
    text = "'" + "é" * (MAX_FILTER_BYTES // 2) + "'"  # fewer characters than the limit, more bytes
    error = syntax_error(text)
    assert "too long" in error.message
    assert error.position == MAX_FILTER_BYTES // 2  # the character holding the first byte past the limit


# -- nesting and hostile sizes: never a RecursionError, never a hang --------------------------

def test_ten_thousand_nested_parentheses() -> None:
    error = syntax_error("(" * 10_000 + "1" + ")" * 10_000)
    assert "nested too deeply" in error.message
    assert error.position == MAX_DEPTH  # the first parenthesis past the limit


def test_ten_thousand_nots() -> None:
    error = syntax_error("NOT " * 10_000 + "/a")
    assert error.position == 4 * MAX_DEPTH


def test_ten_thousand_unary_minus() -> None:
    assert syntax_error("-" * 10_000 + "1").position == MAX_DEPTH
    assert syntax_error("- " * 10_000 + "1").position == 2 * MAX_DEPTH


@pytest.mark.parametrize("text", [
    "ABS(" * 10_000 + "1" + ")" * 10_000,
    "/a IN (" * 10_000 + "1" + ")" * 10_000,
    "/a BEGINS WITH (" * 10_000 + "1" + ")" * 10_000,
    "1 BETWEEN 0 AND (" * 10_000 + "1" + ")" * 10_000,
    "/a = (" * 10_000 + "1" + ")" * 10_000,
    "1 OR (" * 10_000 + "1" + ")" * 10_000,
    " + ".join(["1"] * 100_000),
    " * ".join(["1"] * 100_000),
    "NOT -(" * 5_000 + "1" + ")" * 5_000,
])
def test_deep_nesting_of_every_kind_is_a_syntax_error(text: str) -> None:
    assert "nested too deeply" in syntax_error(text).message


def test_nesting_limit_is_exact() -> None:
    parse("(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH)
    parse("NOT " * MAX_DEPTH + "1")
    parse(" + ".join(["1"] * (MAX_DEPTH + 1)))  # MAX_DEPTH operators, left-nested
    syntax_error(" + ".join(["1"] * (MAX_DEPTH + 2)))


def _at_stack_depth(frames: int, function):
    return function() if frames == 0 else _at_stack_depth(frames - 1, function)


@pytest.mark.parametrize("text", [
    "(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH,
    "ABS(" * (MAX_DEPTH - 1) + "1" + ")" * (MAX_DEPTH - 1),
    "/a IN (" * MAX_DEPTH + "1" + ")" * MAX_DEPTH,
    "/a = (" * (MAX_DEPTH // 2) + "1" + ")" * (MAX_DEPTH // 2),
    "NOT " * MAX_DEPTH + "1",
])
def test_deepest_accepted_filters_leave_stack_headroom(text: str) -> None:
    # Parsed from 300 frames down: the parser needs at most three frames per nesting level.
    assert sys.getrecursionlimit() >= 1000
    _at_stack_depth(300, lambda: parse(text))


def test_hundred_thousand_term_and_chain_is_flat_and_fast() -> None:
    text = " AND ".join(["/a=1"] * 100_000)
    start = time.perf_counter()
    ast = parse(text)
    elapsed = time.perf_counter() - start
    assert isinstance(ast, And) and len(ast.operands) == 100_000
    assert ast.operands[-1] == eq(A, ONE)
    assert elapsed < 15, f"100,000-term chain took {elapsed:.1f}s"


def test_hundred_thousand_term_or_of_ands() -> None:
    ast = parse(" OR ".join(["/a AND /b"] * 50_000))
    assert isinstance(ast, Or) and len(ast.operands) == 50_000 and ast.operands[0] == And((A, B))


def test_large_in_list() -> None:
    ast = parse("/a IN (" + ",".join(str(i) for i in range(100_000)) + ")")
    assert isinstance(ast, In) and len(ast.options) == 100_000


# -- arbitrary input raises nothing but FilterSyntaxError -----------------------------------

FRAGMENTS = st.sampled_from([
    "/a", "/b/c", "/d[0]", "[/x y]", "[t]./z", "'s'", '"t"', "'", '"', "\\", "1", "2.5", "1e3", "(", ")", ",", "=",
    "!=", "<", ">=", "+", "-", "*", "/", "%", "MOD", "AND", "OR", "NOT", "IN", "BETWEEN", "LIKE", "BEGINS", "ENDS",
    "WITH", "IS", "NULL", "TRUE", "UPPER", "SUBSTR", "IF", "COUNT", "[", "]", ".", "@", "AS", " ", "é", "\x00",
])


def _parses_or_syntax_error(text: str | bytes) -> None:
    try:
        parse(text)
    except FilterSyntaxError as error:
        assert error.position is not None and error.hint


@settings(max_examples=500, deadline=2000)
@given(st.text())
def test_arbitrary_text_only_raises_syntax_errors(text: str) -> None:
    _parses_or_syntax_error(text)


@settings(max_examples=300, deadline=2000)
@given(st.binary())
def test_arbitrary_bytes_only_raise_syntax_errors(raw: bytes) -> None:
    _parses_or_syntax_error(raw)


@settings(max_examples=1000, deadline=2000)
@given(st.lists(FRAGMENTS, max_size=30), st.sampled_from(["", " "]))
def test_token_soup_only_raises_syntax_errors(parts: list[str], glue: str) -> None:
    _parses_or_syntax_error(glue.join(parts))


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("REGEXP_MATCH(/s, '(') IS NULL", "invalid regular expression '\\('", 17),
        ("REGEXP_REPLACE(/s, 'a[', 'x') = 'y'", "invalid regular expression 'a\\['", 19),
        ("REGEXP_REPLACE(/s, '(b)', '\\2') = 'y'", "invalid replacement .* invalid group reference", 26),
        ("REGEXP_REPLACE(/s, 'b', '\\g<name>') = 'y'", "invalid replacement .* unknown group", 24),
        ("REGEXP_REPLACE(/s, 'b', 'x\\\\') = 'y'", "invalid replacement .* bad escape", 24),
    ],
)
def test_a_literal_regexp_pattern_or_replacement_is_checked_like_a_like_pattern(text, message, column):
    # They passed `filter check` and then failed on every message, blamed on the message.
    from ampsctl.filter.errors import FilterError

    with pytest.raises(FilterError, match=message) as caught:
        parse(text)
    assert caught.value.position == column and caught.value.code == "FILTER_REGEX"


@pytest.mark.parametrize(
    "text",
    [
        "REGEXP_REPLACE(/s, '(b)|(c)', '[\\2]') = 'a'",  # a group that may not take part
        "REGEXP_REPLACE(/s, '(?x) (b) # comment', '\\1') = 'a'",  # verbose mode: the probe's \n ends the comment
        "REGEXP_REPLACE(/s, '(?P<n>b)', '\\g<n>') = 'a'",
        "REGEXP_MATCH(/s, /pattern) IS NULL",  # from a field: checked when run
        "REGEXP_MATCH(/s, '') IS NULL",  # '' is NULL
        "REGEXP_REPLACE(/s, /p, '\\9') = 'a'",
    ],
)
def test_valid_or_run_time_regexp_arguments_parse(text):
    parse(text)

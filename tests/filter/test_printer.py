"""Canonical printer: round trips, minimal-but-safe parentheses, literal forms."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import exprs

from ampsctl.filter.ast import (
    And, Arithmetic, Between, Call, Comparison, Field, In, IsNull, Like, Literal, Negate, Not, Or, Step, StringMatch,
)
from ampsctl.filter.parser import parse
from ampsctl.filter.printer import string_text, to_text
from ampsctl.filter.tokens import tokenize

A, B, C = (Field((Step(n),)) for n in "abc")


def canonical(text: str) -> str:
    return to_text(parse(text))


@pytest.mark.parametrize(("text", "expected"), [
    # canonical spellings and spacing
    ("/a==1", "/a = 1"),
    ("/a<>1", "/a != 1"),
    ("/a mod 2 = 0", "/a % 2 = 0"),
    ("not /a in (1,2) and /b like \"x\"", "NOT (/a IN (1, 2)) AND /b LIKE 'x'"),
    ("/a is not null", "/a IS NOT NULL"),
    ("/a not between 1 and 2", "/a NOT BETWEEN 1 AND 2"),
    ("/a begins with ('x','y')", "/a BEGINS WITH ('x', 'y')"),
    ("/a not ends with ('x')", "/a NOT ENDS WITH ('x')"),
    ("substr(/a,1)", "SUBSTR(/a, 1)"),
    ("unix_timestamp()", "UNIX_TIMESTAMP()"),
    ("true or false or null", "TRUE OR FALSE OR NULL"),
    # division and subtraction keep their spaces so they never join a field name
    ("/a / 2", "/a / 2"),
    ("/a / /b", "/a / /b"),
    ("/a - 1", "/a - 1"),
    ("/a - /b", "/a - /b"),
    ("/6*/14", "/6 * /14"),
    ("/a-1", "/a-1"),
    ("/a/b", "/a/b"),
    # minimal parentheses
    ("((/a))", "/a"),
    ("(/a = 1)", "/a = 1"),
    ("(/a * 2) + 1", "/a * 2 + 1"),
    ("(/a + 2) * 1", "(/a + 2) * 1"),
    ("(/a - /b) - /c", "/a - /b - /c"),
    ("/a - (/b - /c)", "/a - (/b - /c)"),
    ("/a / (/b / /c)", "/a / (/b / /c)"),
    ("/a - (/b + /c)", "/a - (/b + /c)"),
    ("(/a AND /b) OR /c", "/a AND /b OR /c"),
    ("(/a OR /b) AND /c", "(/a OR /b) AND /c"),
    ("-(/a)", "-/a"),
    ("-(/a + 1)", "-(/a + 1)"),
    ("-(-(5))", "- -5"),
    ("(-5) * 2", "-5 * 2"),
    ("(NOT /a) = 1", "(NOT /a) = 1"),
    ("(/a = 1) = 1", "(/a = 1) = 1"),
    ("(/a IS NULL) + 1", "(/a IS NULL) + 1"),
    ("/a BETWEEN (1 AND 2) AND 3", "/a BETWEEN (1 AND 2) AND 3"),
    ("/a IN ((1), (2 OR 3))", "/a IN (1, 2 OR 3)"),
    ("NOT (/a + 1)", "NOT /a + 1"),
    ("NOT (NOT /a)", "NOT NOT /a"),
    ("NOT (/a AND /b)", "NOT (/a AND /b)"),
    # explicit nesting of the same n-ary operator is kept as a group
    ("(/a AND /b) AND /c", "(/a AND /b) AND /c"),
    ("/a AND (/b AND /c)", "/a AND (/b AND /c)"),
    ("/a OR (/b OR /c)", "/a OR (/b OR /c)"),
    ("/a AND /b AND /c", "/a AND /b AND /c"),
    # NOT over a predicate is parenthesised for the reader
    ("NOT /a = 1", "NOT (/a = 1)"),
    ("NOT /a LIKE 'x'", "NOT (/a LIKE 'x')"),
    # literals
    ("'it\\'s'", "'it\\'s'"),
    ('"say \\"hi\\""', "'say \"hi\"'"),
    ('"it\'s"', "'it\\'s'"),
    ("'(.)\\1'", "'(.)\\1'"),
    ("'\\\\'", "'\\\\'"),
    ("'a\\\\'", "'a\\\\'"),
    ("'\\x41'", "'A'"),
    ("'\\x01'", "'\\x01'"),
    ("'tab\there'", "'tab\\x09here'"),
    ("1.0", "1.0"), ("1.", "1.0"), ("90.25", "90.25"), ("1e16", "1e+16"), ("1E-7", "1e-07"),
    ("007", "7"), ("18446744073709551615", "18446744073709551615"),
    # identifiers
    ("[/odd name]", "[/odd name]"),
    ("[/odd name][2]", "[/odd name][2]"),
    ("orders./x", "[orders]./x"),
    ("[json].[orders]./x[1]/@y", "[json].[orders]./x[1]/@y"),
    ("[t].[/a b]", "[t].[/a b]"),
])
def test_canonical_form(text: str, expected: str) -> None:
    assert canonical(text) == expected
    assert canonical(expected) == expected


def test_string_escapes_read_back() -> None:
    for value in ["", "'", '"', "\\", "\\\\", "\\'", "\\x41", "\\x4", "(.)\\1", "a\\", "\x00\x1f\x7f", "é中✓"]:
        text = string_text(value)
        assert tokenize(text)[0].value == value, text


@pytest.mark.parametrize(("ast", "text"), [
    (Literal(True), "TRUE"), (Literal(False), "FALSE"), (Literal(None), "NULL"), (Literal(1), "1"),
    (Literal(1.0), "1.0"), (Literal(0.1 + 0.2), "0.30000000000000004"), (Literal(-5), "-5"),
    (Arithmetic("*", A, Literal(-5)), "/a * -5"),
    (Negate(Literal(-5)), "- -5"),
    (Call("concat", (A,)), "CONCAT(/a)"),
])
def test_literal_and_lenient_forms(ast: object, text: str) -> None:
    assert to_text(ast) == text  # type: ignore[arg-type]


@pytest.mark.parametrize("ast", [
    And((A,)), Or(()),
    Comparison("==", A, B), Arithmetic("^", A, B), StringMatch("CONTAINS", A, (B,)),
    In(A, ()), StringMatch("BEGINS", A, ()),
    Literal(float("nan")), Literal(float("inf")), Literal(object()),  # type: ignore[arg-type]
    Field(()), Field((Step("a b"),)), Field((Step("-a"),)), Field((Step("a", -1),)),
    Field((Step("a"), Step("b")), bracketed=True), Field((Step("a]"),), bracketed=True),
    Field((Step(""),), bracketed=True), Field((Step("a"),), qualifier=("x]",)), Field((Step("a"),), qualifier=("/x",)),
    Field((Step("a"),), qualifier=("",)),
    "not a node",
])
def test_unprintable_asts_raise_value_error(ast: object) -> None:
    with pytest.raises((ValueError, KeyError)):
        to_text(ast)  # type: ignore[arg-type]


def test_deeply_nested_print_round_trips() -> None:
    expr: object = A
    for index in range(100):  # NOT, -( ... ): 150 nesting levels
        expr = [Not, Negate][index % 2](expr)  # type: ignore[operator]
    assert parse(to_text(expr)) == expr  # type: ignore[arg-type]


def test_round_trip_keeps_predicates_between_and_in() -> None:
    ast = Between(In(A, (B,)), IsNull(B), Like(C, "x", True))
    text = to_text(ast)
    assert text == "(/a IN (/b)) BETWEEN (/b IS NULL) AND (/c NOT LIKE 'x')"
    assert parse(text) == ast


# -- properties ---------------------------------------------------------------------------

@settings(max_examples=600, deadline=2000)
@given(exprs(4))
def test_round_trip(ast: object) -> None:
    text = to_text(ast)  # type: ignore[arg-type]
    again = parse(text)
    # repr, not ==: Literal(True) == Literal(1) == Literal(1.0) under dataclass equality.
    assert repr(again) == repr(ast)
    assert again == ast
    assert to_text(again) == text


@settings(max_examples=300, deadline=2000)
@given(exprs(3))
def test_printed_form_is_a_fixed_point_from_bytes(ast: object) -> None:
    text = to_text(ast)  # type: ignore[arg-type]
    assert to_text(parse(text.encode("utf-8"))) == text


@settings(max_examples=300, deadline=2000)
@given(st.text())
def test_any_parsable_text_has_a_stable_canonical_form(text: str) -> None:
    try:
        ast = parse(text)
    except Exception as error:  # noqa: BLE001 - only the type matters here
        assert type(error).__name__ == "FilterSyntaxError"
        return
    printed = to_text(ast)
    assert parse(printed) == ast
    assert to_text(parse(printed)) == printed

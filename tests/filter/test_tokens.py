"""Tokenizer: the lexical rules of spec/expressions.md §2 and the brief's literal decisions."""

from __future__ import annotations

import pytest

from ampsctl.filter.ast import Field, Step
from ampsctl.filter.errors import FilterSyntaxError
from ampsctl.filter.tokens import MAX_INTEGER, Kind, is_plain_step, tokenize


def kinds(text: str) -> list[tuple[str, object]]:
    """(kind, key or value) per token, END excluded."""
    out = []
    for token in tokenize(text)[:-1]:
        detail = token.key if token.kind in (Kind.KEYWORD, Kind.NAME, Kind.SYMBOL) else token.value
        out.append((token.kind.value, detail))
    return out


def path(*names: str | tuple[str, int], **kw: object) -> Field:
    steps = tuple(Step(*n) if isinstance(n, tuple) else Step(n) for n in names)
    return Field(steps, **kw)  # type: ignore[arg-type]


# -- identifiers and the "/" / "-" spacing rule (§2.1, §2.2) ---------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("/a/b", [("field", path("a", "b"))]),
    ("/a / /b", [("field", path("a")), ("symbol", "/"), ("field", path("b"))]),
    ("/qty/4", [("field", path("qty", "4"))]),
    ("/qty / 4", [("field", path("qty")), ("symbol", "/"), ("number", 4)]),
    ("/a/ 2", [("field", path("a")), ("symbol", "/"), ("number", 2)]),
    ("/a /(2)", [("field", path("a")), ("symbol", "/"), ("symbol", "("), ("number", 2), ("symbol", ")")]),
    ("/a-1", [("field", path("a-1"))]),
    ("/a - 1", [("field", path("a")), ("symbol", "-"), ("number", 1)]),
    ("/a -1", [("field", path("a")), ("symbol", "-"), ("number", 1)]),
    ("5-3", [("number", 5), ("symbol", "-"), ("number", 3)]),
    ("/a.b.c", [("field", path("a.b.c"))]),
    ("/55", [("field", path("55"))]),
    ("/@attr", [("field", path("@attr"))]),
    ("/Order/@update", [("field", path("Order", "@update"))]),
    ("/_x/é中", [("field", path("_x", "é中"))]),
    ("/data[0]", [("field", path(("data", 0)))]),
    ("/a[12]/b[007]", [("field", path(("a", 12), ("b", 7)))]),
    ("/6*/14", [("field", path("6")), ("symbol", "*"), ("field", path("14"))]),
    ("/a%2", [("field", path("a")), ("symbol", "%"), ("number", 2)]),
    ("/a+/b", [("field", path("a")), ("symbol", "+"), ("field", path("b"))]),
    ("/a<=/b", [("field", path("a")), ("symbol", "<="), ("field", path("b"))]),
    ("(/a,/b)", [("symbol", "("), ("field", path("a")), ("symbol", ","), ("field", path("b")), ("symbol", ")")]),
])
def test_paths_and_operators(text: str, expected: list) -> None:
    assert kinds(text) == expected


def test_documented_in_list_lexes_without_blanks() -> None:
    text = "/21964 IN (/14*5, /6*/14, 1000, 2000)"
    assert kinds(text) == [
        ("field", path("21964")), ("keyword", "IN"), ("symbol", "("),
        ("field", path("14")), ("symbol", "*"), ("number", 5), ("symbol", ","),
        ("field", path("6")), ("symbol", "*"), ("field", path("14")), ("symbol", ","),
        ("number", 1000), ("symbol", ","), ("number", 2000), ("symbol", ")"),
    ]


@pytest.mark.parametrize(("text", "field"), [
    ("[/Not Xpath Name]", Field((Step("Not Xpath Name"),), bracketed=True)),
    ("[/odd]name]", None),  # the first ] closes: "odd", then a stray "name]"
    ("[/a b][2]", Field((Step("a b", 2),), bracketed=True)),
    ("[/ spaced ]", Field((Step(" spaced "),), bracketed=True)),
    ("[/a/b]", Field((Step("a/b"),), bracketed=True)),
    ("[ORDERS]./Tick", Field((Step("Tick"),), qualifier=("ORDERS",))),
    ("[json].[orders]./region/x[1]", Field((Step("region"), Step("x", 1)), qualifier=("json", "orders"))),
    ("[nvfix].[Orders].[/Id]", Field((Step("Id"),), bracketed=True, qualifier=("nvfix", "Orders"))),
    ("[my topic].[/odd name]", Field((Step("odd name"),), bracketed=True, qualifier=("my topic",))),
    ("ORDERS./Tick", Field((Step("Tick"),), qualifier=("ORDERS",))),
    ("orders.[/a b]", Field((Step("a b"),), bracketed=True, qualifier=("orders",))),
])
def test_bracketed_and_qualified_fields(text: str, field: Field | None) -> None:
    if field is None:
        with pytest.raises(FilterSyntaxError):
            tokenize(text)
        return
    tokens = tokenize(text)
    assert [t.kind for t in tokens] == [Kind.FIELD, Kind.END]
    assert tokens[0].value == field
    assert (tokens[0].pos, tokens[0].end) == (0, len(text))


def test_positions_are_character_offsets() -> None:
    tokens = tokenize("  /é = 'ü' AND x")
    assert [(t.kind, t.pos, t.end) for t in tokens] == [
        (Kind.FIELD, 2, 4), (Kind.SYMBOL, 5, 6), (Kind.STRING, 7, 10), (Kind.KEYWORD, 11, 14),
        (Kind.NAME, 15, 16), (Kind.END, 16, 16),
    ]


# -- keywords ----------------------------------------------------------------------------

@pytest.mark.parametrize("spelling", ["and", "AND", "And", "aNd"])
def test_keywords_are_case_insensitive(spelling: str) -> None:
    assert kinds(f"1 {spelling} 2")[1] == ("keyword", "AND")


def test_names_keep_their_spelling_as_value() -> None:
    token = tokenize("substr")[0]
    assert (token.kind, token.key, token.value) == (Kind.NAME, "SUBSTR", "substr")


@pytest.mark.parametrize("word", ["NOT", "BETWEEN", "IN", "LIKE", "IS", "NULL", "MOD", "BEGINS", "ENDS", "WITH",
                                  "TRUE", "FALSE", "OR", "AS", "TOPIC_MATCH"])
def test_reserved_words(word: str) -> None:
    assert tokenize(word.lower())[0].kind is Kind.KEYWORD


# -- literals ----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "value"), [
    ("'IBM'", "IBM"),
    ('"zebra"', "zebra"),
    ("''", ""),
    ("'\\x01'", "\x01"),
    ("'\\x41\\x4a'", "AJ"),
    ("'\\xff'", "\xff"),
    ("'\\\\'", "\\"),
    ("'\\''", "'"),
    ("'\\\"'", '"'),
    ('"\\""', '"'),
    ('"it\'s"', "it's"),
    ("'say \"hi\"'", 'say "hi"'),
    ("'(.)\\1'", "(.)\\1"),
    ("'\\d+\\.\\w'", "\\d+\\.\\w"),
    ("'\\x4'", "\\x4"),
    ("'\\xZZ'", "\\xZZ"),
    ("'\\\\x41'", "\\x41"),
    ("'line\nbreak'", "line\nbreak"),
    ("'日本語 ✓'", "日本語 ✓"),
])
def test_string_literals_and_escapes(text: str, value: str) -> None:
    tokens = tokenize(text)
    assert tokens[0].kind is Kind.STRING
    assert tokens[0].value == value
    assert tokens[0].end == len(text)


@pytest.mark.parametrize(("text", "value"), [
    ("42", 42), ("0", 0), ("007", 7), ("90.0", 90.0), ("90.25", 90.25), ("1.", 1.0),
    ("1e6", 1e6), ("1E6", 1e6), ("2.5e-3", 2.5e-3), ("1e+16", 1e16), ("1.e5", 1e5),
    (str(MAX_INTEGER), MAX_INTEGER), ("1.7976931348623157e308", 1.7976931348623157e308),
])
def test_numbers(text: str, value: int | float) -> None:
    token = tokenize(text)[0]
    assert token.kind is Kind.NUMBER
    assert token.value == value
    assert type(token.value) is type(value)


def test_plain_step_names() -> None:
    assert is_plain_step("a-1.b") and is_plain_step("@x") and is_plain_step("55") and is_plain_step("é")
    assert not is_plain_step("a b") and not is_plain_step("-a") and not is_plain_step("@") and not is_plain_step("")


# -- errors ------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "position", "message"), [
    ("'abc", 0, "unterminated string"),
    ("/a = 'abc", 5, "unterminated string"),
    ('/a = "abc\\"', 5, "unterminated string"),
    ("/a = 'x' + 'y", 11, "unterminated string"),
    ("/a[-1]", 3, "negative subscript"),
    ("/a/b[-12] = 1", 5, "negative subscript"),
    ("[/x][-1]", 5, "negative subscript"),
    ("/a[x]", 3, "non-negative integer"),
    ("/a[/i]", 3, "non-negative integer"),
    ("/a[ 1]", 3, "non-negative integer"),
    ("/a[", 2, "unterminated subscript"),
    ("/a[0][1]", 5, "one subscript"),
    ("[/x", 0, "unterminated bracketed"),
    ("[/]", 0, "empty field name"),
    ("[]./x", 0, "empty qualifier"),
    ("[a", 0, "unterminated ["),
    ("[a]/x", 3, "expected '.'"),
    ("/a [0]", 6, "expected '.'"),
    ("[a].x", 4, "expected a field"),
    ("[a].[b].[c]./x", 8, "too many qualifiers"),
    ("1e", 1, "malformed number"),
    ("12abc", 2, "malformed number"),
    ("1.2.3", 3, "malformed number"),
    ("99999999999999999999", 0, "integer out of range"),
    ("1e999", 0, "number out of range"),
    ("/a ; /b", 3, "unexpected character ';'"),
    ("/a && /b", 3, "unexpected character '&'"),
    ("@x", 0, "unexpected character '@'"),
    ("/a/@", 2, "unexpected character '/'"),
    ("/ @", 2, "unexpected character '@'"),
    ("  \x00", 2, "unexpected character"),
    (".5", 0, "unexpected character '.'"),
    ("/a = é", 5, "unexpected character 'é'"),
])
def test_lexical_errors_carry_position_and_hint(text: str, position: int, message: str) -> None:
    with pytest.raises(FilterSyntaxError) as info:
        tokenize(text)
    assert info.value.position == position
    assert message in info.value.message
    assert info.value.hint
    assert info.value.expression == text


def test_unterminated_megabyte_string_fails_fast() -> None:
    with pytest.raises(FilterSyntaxError) as info:
        tokenize("'" + "ab\\'" * 250_000)
    assert info.value.position == 0


def test_empty_text_is_only_end() -> None:
    assert [t.kind for t in tokenize("  \t\n ")] == [Kind.END]

"""The value model (ampsctl/filter/values.py): coercion, comparison, 3VL, arrays, text form."""

from __future__ import annotations

import math

import pytest

from ampsctl.filter import values as v

T, F, N = True, False, None

# --- NULL ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, "", []])
def test_null_forms(value):
    assert v.is_null(value)


@pytest.mark.parametrize("value", [0, 0.0, False, " ", "0", [None], {}, math.nan])
def test_not_null(value):
    assert not v.is_null(value)


# --- string -> number (§4.4 [ASSUME]) -------------------------------------------------------

CONVERTIBLE = [
    ("0", 0),
    ("47", 47),
    ("007", 7),
    ("-5", -5),
    ("2.0", 2.0),
    ("1.", 1.0),
    ("1e6", 1e6),
    ("1E+2", 100.0),
    ("2.5e-1", 0.25),
    ("18446744073709551615", 2**64 - 1),
]
NOT_CONVERTIBLE = ["", " 12", "12 ", "+1", "12abc", "NaN", "nan", "inf", "1,000", ".5", "0x10", "--1", "1e", "abc"]


@pytest.mark.parametrize(("text", "number"), CONVERTIBLE)
def test_parse_number(text, number):
    parsed = v.parse_number(text)
    assert parsed == number and type(parsed) is type(number)


@pytest.mark.parametrize("text", NOT_CONVERTIBLE)
def test_parse_number_rejects(text):
    assert v.parse_number(text) is None


def test_integers_beyond_64_bits_become_floats():
    assert v.parse_number("18446744073709551616") == float(2**64)
    assert isinstance(v.parse_number("1" * 500), float)
    assert v.fit_int(-(2**63)) == -(2**63) and isinstance(v.fit_int(-(2**63) - 1), float)


@pytest.mark.parametrize(
    ("value", "number"),
    [(True, 1), (False, 0), (3, 3), (2.5, 2.5), ("47", 47), ("x", None), (None, None), ("", None),
     ([], None), ([7, 8], 7), ([[], 1], None), ({"a": 1}, None), (["9", 1], 9)],
)
def test_to_number(value, number):
    assert v.to_number(value) == number


# --- text form (A8) ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [(34, "34"), (-7, "-7"), (24.0, "24.0"), (90.25, "90.25"), (1e21, "1e+21"), (True, "true"),
     (False, "false"), ("abc", "abc"), ("", None), (None, None), ([34, 1], "34"), ([], None),
     ({"a": 1}, None), (math.nan, "nan")],
)
def test_to_text(value, text):
    assert v.to_text(value) == text


# --- comparison (§4.3–§4.5, §5) ----------------------------------------------------------------

COMPARISONS = [
    # number vs number
    ("=", 2, 2.0, T),
    ("<", 1, 2, T),
    (">=", 2.5, 3, F),
    # string vs string: text order, case-sensitive, no numeric conversion
    ("!=", "2.000", "2.0", T),
    (">", "47", "5", F),
    ("=", "MSFT", "msft", F),
    ("<", "B", "a", T),
    ("<", "\u00e9", "\u4e00", T),  # code point order == UTF-8 byte order
    # convertible string vs number: numeric
    ("<", 10, "2", F),
    ("=", "47", 47, T),
    ("=", "007", 7, T),
    (">=", 1000, "999", T),
    ("=", "-5", -5, T),
    # non-convertible string vs number: the string is greater
    ("<", 10, "Crank It Up", T),
    (">", "MSFT", 10, T),
    ("<", "MSFT", 10, F),
    ("=", "MSFT", 10, F),
    ("!=", "MSFT", 10, T),
    # booleans are 1/0
    ("=", True, 1, T),
    ("=", False, 0, T),
    ("=", True, "true", F),  # A14: 'true' is not a number, so it is greater than 1
    # NULL: never true, never false
    ("=", None, None, N),
    ("=", "", "", N),
    ("<", 10, "", N),
    (">", 10, "", N),
    ("!=", None, 1, N),
    ("=", {"a": 1}, 1, N),
    # NaN: every comparison is false, != included (§5 [ASSUME])
    ("=", math.nan, math.nan, F),
    ("!=", math.nan, 1, F),
    ("<", math.nan, 1, F),
    (">", 1, math.nan, F),
]


@pytest.mark.parametrize(("op", "left", "right", "expected"), COMPARISONS)
def test_compare_scalars(op, left, right, expected):
    assert v.compare_scalars(op, left, right) is expected


def test_unknown_operator():
    with pytest.raises(ValueError):
        v.compare_scalars("~", 1, 2)
    with pytest.raises(ValueError):
        v.arithmetic("^", 1, 2)


# --- arrays (§7) -------------------------------------------------------------------------------

DATA = [1, 2, 3, "zebra", 5]
OTHER = [14, 34, 23, 5]


@pytest.mark.parametrize(
    ("op", "left", "right", "expected"),
    [
        ("=", DATA, 1, T),
        ("=", DATA, "zebra", T),
        ("!=", DATA, "zebra", T),  # existential: some element differs
        ("=", DATA, 42, F),
        (">", OTHER, 30, T),
        (">", OTHER, 50, F),
        ("=", DATA, OTHER, T),  # 5 in both
        ("=", [], 1, N),  # empty array is NULL
        ("!=", [], 1, N),
        ("=", [None, 1], 1, T),
        ("=", [None, 2], 1, N),  # no true element, one unknown
        ("=", ["", 2], 1, N),
        ("=", [[1, 2], [3]], 3, T),  # nested arrays are flattened
        ("=", [{"q": 1}], 1, N),
    ],
)
def test_compare_arrays(op, left, right, expected):
    assert v.compare(op, left, right) is expected


def test_elements_and_scalar():
    assert v.elements(None) == [] and v.elements("") == [] and v.elements([]) == []
    assert v.elements(3) == [3]
    assert v.elements([1, [2, [3, []]], 4]) == [1, 2, 3, 4]
    assert v.scalar([[7, 8], 9]) == 7 and v.scalar([]) is None and v.scalar({"a": 1}) is None
    assert v.scalar("") is None and v.scalar(0) == 0


def test_deeply_nested_arrays_do_not_recurse():
    deep: list = [5]
    for _ in range(5000):
        deep = [deep]
    assert v.elements(deep) == [5]
    assert v.scalar(deep) == 5


def test_any_element():
    assert v.any_element([1, 2], lambda e: e == 2) is T
    assert v.any_element([], lambda e: True) is N
    assert v.any_element([1, 2], lambda e: None if e == 1 else False) is N


# --- three-valued logic (§5 table) ---------------------------------------------------------------

TRUTH_TABLE = [
    # a, b, a AND b, a OR b
    (T, T, T, T),
    (T, F, F, T),
    (T, N, N, T),
    (F, T, F, T),
    (F, F, F, F),
    (F, N, F, N),
    (N, T, N, T),
    (N, F, F, N),
    (N, N, N, N),
]


@pytest.mark.parametrize(("a", "b", "conj", "disj"), TRUTH_TABLE)
def test_truth_tables(a, b, conj, disj):
    assert v.and3([a, b]) is conj
    assert v.or3([a, b]) is disj


@pytest.mark.parametrize(("a", "negation"), [(T, F), (F, T), (N, N)])
def test_not3(a, negation):
    assert v.not3(a) is negation


def test_empty_logic():
    assert v.and3([]) is T and v.or3([]) is F


@pytest.mark.parametrize(
    ("value", "truth"),
    [(True, T), (False, F), (1, T), (0, F), (-2.5, T), (0.0, F), (math.nan, F), (None, N), ("", N),
     ("1", T), ("0", F), ("abc", N), ([], N), ([0, 1], F), ({"a": 1}, N)],
)
def test_truth_and_match(value, truth):
    assert v.truth(value) is truth
    assert v.is_match(value) is (truth is True)


# --- arithmetic (§6.8) ---------------------------------------------------------------------------

ARITHMETIC = [
    ("+", 1, 2, 3),
    ("+", 1, 2.5, 3.5),
    ("-", 5, 7, -2),
    ("*", 90.25, 1000, 90250.0),
    ("/", 1000, 4, 250),
    ("/", 7, 2, 3),  # int/int truncates (A5)
    ("/", -7, 2, -3),  # toward zero
    ("/", 7, -2, -3),
    ("/", 7.0, 2, 3.5),
    ("%", 1000, 7, 6),
    ("%", -5, 3, -2),  # sign of the left operand
    ("%", 5, -3, 2),
    ("%", 5.5, 2, 1.5),
    ("%", -5.5, 2, -1.5),
    ("/", 1, 0, None),  # division by zero is NULL (A6)
    ("%", 1, 0, None),
    ("/", 1.0, 0.0, None),
    ("%", 1.5, 0, None),
    ("+", None, 1, None),
    ("+", "", 1, None),
    ("+", "abc", 1, None),  # `+` is not concatenation; a non-number is NULL
    ("+", "41", 1, 42),
    ("+", True, 1, 2),
    ("+", [1, 2], 1, 2),  # first element
    ("+", [], 1, None),
    ("*", 2**63, 4, float(2**65)),  # overflow promotes to float
]


@pytest.mark.parametrize(("op", "left", "right", "expected"), ARITHMETIC)
def test_arithmetic(op, left, right, expected):
    result = v.arithmetic(op, left, right)
    assert result == expected and type(result) is type(expected)


def test_nan_propagates():
    assert math.isnan(v.arithmetic("+", math.nan, 1))
    assert math.isnan(v.arithmetic("%", math.inf, 2))


@pytest.mark.parametrize(("value", "expected"), [(5, -5), (-2.5, 2.5), ("3", -3), (None, None), ("x", None), ([4], -4), (True, -1)])
def test_negate(value, expected):
    assert v.negate(value) == expected

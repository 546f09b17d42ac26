"""Adversarial conformance cases, run through the public entry points (``ampsctl filter
check|test`` in-process, as the console script runs them).

Each test pins a bug found in a conformance round: odd inputs must give a clear error with a
position and exit 3, or the documented value, never exit 5 (an internal error), a hang or a
blown-up process.
"""

from __future__ import annotations

import json

import pytest
from inprocess import run_inprocess as ampsctl


def check_json(expr: str) -> tuple[int, dict]:
    code, out, _ = ampsctl("filter", "check", "--format", "json", "--", expr)
    return code, json.loads(out)


def verdict(expr: str, message: object) -> tuple[int, str]:
    code, out, err = ampsctl("filter", "test", "--data", json.dumps(message), "--", expr)
    return code, out.strip() or err


# --- integers longer than Python's int() conversion limit (4300 digits) ----------------------

HUGE = "9" * 5000
ZEROS = "0" * 5000


@pytest.mark.parametrize(("expr", "position", "message"), [
    (f"/a = {HUGE}", 5, "integer out of range"),
    (f"/a[{HUGE}] = 1", 3, "subscript out of range"),
    (f"[/a b][{HUGE}] = 1", 7, "subscript out of range"),
    (f"/x/y[1]/a[{HUGE}] = 1", 10, "subscript out of range"),
    (f"[t]./b/a[{HUGE}] = 1", 9, "subscript out of range"),
    ("/a[18446744073709551616] = 1", 3, "subscript out of range"),
])
def test_a_huge_integer_or_subscript_is_an_error_with_its_position(expr: str, position: int, message: str) -> None:
    code, result = check_json(expr)
    assert code == 3, result
    assert result["valid"] is False and message in result["error"]
    assert result["position"] == position


@pytest.mark.parametrize(("expr", "canonical"), [
    (f"/a = {ZEROS}7", "/a = 7"),
    (f"/a[{ZEROS}1] = 1", "/a[1] = 1"),
    ("/a[18446744073709551615] = 1", "/a[18446744073709551615] = 1"),
])
def test_leading_zeros_do_not_count_towards_the_limit(expr: str, canonical: str) -> None:
    code, result = check_json(expr)
    assert (code, result) == (0, {"valid": True, "canonical": canonical})


# --- a numeric string padded with many zeros is still an integer ------------------------------

PADDED = "0" * 45 + "7"


@pytest.mark.parametrize(("expr", "message"), [
    ("/a / 2 = 3", {"a": PADDED}),  # integer division, as for '007'
    ("/a / 2 = -3", {"a": "-" + PADDED}),
    ("CONCAT(/a + 0) = '7'", {"a": PADDED}),
    ("CONCAT(/a + 0) = '0'", {"a": "0" * 6000}),
])
def test_zero_padding_keeps_a_numeric_string_integral(expr: str, message: dict) -> None:
    assert verdict(expr, message) == (0, "true")


# --- counted repeats the regex package would unroll into gigabytes ---------------------------

# Refused patterns. Before the fix each of these compiled (tens of MB each; three levels of
# {1000} asked for hundreds of GB and took the machine down).
TOO_LARGE = ["a{70000}", "(?:a{1000}){100}", "(?:x|[ab]{300}){300}", "(?x)(?:a{3#c\n00}){300}", "(?:a{1000})(?x) {100}"]


@pytest.mark.parametrize("pattern", TOO_LARGE)
def test_a_pattern_that_unrolls_too_far_is_refused_with_its_column(pattern: str) -> None:
    code, result = check_json(f"/a LIKE '{pattern}'")
    assert code == 3, result
    assert "is too large: its counted repeats unroll" in result["error"]
    assert result["position"] == 8
    assert "smaller counts" in result["hint"]


@pytest.mark.parametrize("expr", ["REGEXP_MATCH(/a, '(?:a{1000}){100}') = 'x'",
                                  "REGEXP_REPLACE(/a, '(?:a{1000}){100}', 'y') = 'x'"])
def test_regexp_functions_refuse_it_too(expr: str) -> None:
    code, result = check_json(expr)
    assert code == 3 and "too large" in result["error"] and result["position"] == 17 + expr.startswith("REGEXP_R") * 2


def test_a_pattern_read_from_the_message_is_refused_for_that_message() -> None:
    code, text = verdict("REGEXP_MATCH(/a, /p) IS NULL", {"a": "aaa", "p": "(?:a{1000}){100}"})
    assert code == 3 and "too large" in text


@pytest.mark.parametrize("pattern", ["a{65535}", "(?:a{1000}){0,1000}", "(?:a{0,1000}){1000}", "a{0,4294967294}",
                                     "(?:abcdefgh){8000}", "(?x) # (?:a{1000}){1000}", r"^\d{4}-\d{2}-\d{2}$"])
def test_patterns_within_the_limit_still_compile(pattern: str) -> None:
    assert check_json(f"/a LIKE '{pattern}'")[0] == 0


def test_three_nested_repeats_do_not_exhaust_memory() -> None:
    # In a child capped at 1 GB of address space: without the check this is a MemoryError (exit 5).
    import resource
    import subprocess
    import sys

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    done = subprocess.run([sys.executable, "-m", "ampsctl", "filter", "check", "/a LIKE '(?:(?:a{1000}){1000}){1000}'"],
                          capture_output=True, text=True, timeout=60, preexec_fn=cap)
    assert done.returncode == 3, done.stderr
    assert "too large" in done.stdout


# --- left recursion: a group calling itself before it consumes anything ------------------------

# Before the fix these compiled, and each search recursed until the 1 s timeout, taking about
# 1 GB of memory (a MemoryError, exit 5, where memory is capped).
@pytest.mark.parametrize(("pattern", "offset"), [
    ("(?:(?R)|a)", 3), ("((?1)|a)", 1), ("(?<n>(?&n)|a)", 5), ("(?P<n>x|(?P>n))", 8), ("(?:\\b(?R)|a)", 5),
    ("((?2))((?1))", 7), ("(?:a?)*(?R)", 7), ("(?x) (?R) | a", 5),
])
def test_a_left_recursive_pattern_is_refused_with_its_offset(pattern: str, offset: int) -> None:
    code, result = check_json(f"/a LIKE '{pattern}'")
    assert code == 3, result
    assert "recurses forever" in result["error"] and f"(offset {offset} of the pattern)" in result["error"]
    assert result["position"] == 8 and "a(?R)?" in result["hint"]


@pytest.mark.parametrize(("pattern", "text", "expected"), [
    ("^a(?R)?b$", "aabb", "false"),  # the anchors recurse too, as in PCRE
    ("(a)(?:(?1)(?R)|b)", "aab", "true"),
    ("(?:(?R)|a){0}b", "b", "true"),  # {0} never runs the group
])
def test_recursion_that_consumes_first_still_works(pattern: str, text: str, expected: str) -> None:
    assert verdict(f"/a LIKE '{pattern}'", {"a": text}) == (0 if expected == "true" else 1, expected)


def test_balanced_parentheses_by_recursion_still_match() -> None:
    expr = r"REGEXP_MATCH(/a, '\((?:[^()]|(?R))*\)') = '(a(b)(c))'"
    assert verdict(expr, {"a": "x(a(b)(c))y"}) == (0, "true")


# --- aggregates (views) on NaN, infinities and 64-bit overflow ---------------------------------


def _aggregate(projection: str, rows: list[dict]) -> object:
    from ampsctl.filter.aggregate import aggregate, parse_projection
    from ampsctl.messages.json_record import JsonRecord

    [row] = aggregate([parse_projection(projection)], [], [JsonRecord(r) for r in rows])
    return row["out"]


@pytest.mark.parametrize("projection", ["STDDEV_POP(/x * 1e300) AS /out", "STDDEV_SAMP(/x * 1e300) AS /out",
                                        "STDDEV_POP(IF(/x = 1, NAN_VALUE(), /x)) AS /out"])
def test_stddev_of_a_non_finite_value_is_nan_not_a_crash(projection: str) -> None:
    import math

    assert math.isnan(_aggregate(projection, [{"x": 1e10}, {"x": 1}, {"x": 2}]))  # was AttributeError


@pytest.mark.parametrize("name", ["MIN", "MAX"])
def test_min_max_with_nan_do_not_depend_on_the_order(name: str) -> None:
    import math

    projection = f"{name}(IF(/x = 0, NAN_VALUE(), /x)) AS /out"
    first, last = [{"x": 0}, {"x": 1}, {"x": 2}], [{"x": 1}, {"x": 2}, {"x": 0}]
    assert math.isnan(_aggregate(projection, first)) and math.isnan(_aggregate(projection, last))


def test_sum_beyond_64_bits_becomes_a_float_as_addition_does() -> None:
    assert _aggregate("SUM(/x) AS /out", [{"x": 2**64 - 1}, {"x": 2**64 - 1}]) == float(2**65 - 2)
    assert _aggregate("SUM(/x) AS /out", [{"x": 2**63}, {"x": 1}]) == 2**63 + 1  # still fits


# --- string functions that could build gigabytes ------------------------------------------------

# A 100,000-character field and a 1,000-character replacement make 100 million characters
# (before the fix; with a 1 MB message and a 20 KB literal it was 20 GB, a MemoryError or worse).
LONG = {"s": "a" * 100_000}
WIDE = "x" * 1000


@pytest.mark.parametrize(("expr", "function"), [
    (f"REPLACE(/s, 'a', '{WIDE}') IS NULL", "REPLACE"),
    (f"REGEXP_REPLACE(/s, 'a', '{WIDE}') IS NULL", "REGEXP_REPLACE"),
    (f"REGEXP_REPLACE(/s, '(a)', '\\1{WIDE}') IS NULL", "REGEXP_REPLACE"),
    ("CONCAT(" + ", ".join(["/s"] * 700) + ") IS NULL", "CONCAT"),
])
def test_a_string_function_result_is_bounded(expr: str, function: str) -> None:
    code, text = verdict(expr, LONG)
    assert code == 3 and f"{function} would build a string longer than {64 << 20} characters" in text


@pytest.mark.parametrize("expr", [
    "LENGTH(REPLACE(/s, 'a', 'bb')) = 200000", "LENGTH(REGEXP_REPLACE(/s, '(a)', '\\1\\1')) = 200000",
    "LENGTH(CONCAT(/s, /s, /s)) = 300000", "REPLACE(/s, 'aa', 'b') = REGEXP_REPLACE(/s, 'aa', 'b')",
])
def test_results_within_the_bound_are_unchanged(expr: str) -> None:
    assert verdict(expr, LONG) == (0, "true")


# --- comparisons of two large arrays ------------------------------------------------------------


def test_comparing_two_large_arrays_is_quick() -> None:
    # 20,000 elements a side is 400 million pairs: minutes before the fix (a broker stalls on it).
    import time

    message = {"a": list(range(20_000)), "b": list(range(100_000, 120_000)), "c": [*range(20_000), "19999"]}
    started = time.monotonic()
    assert verdict("/a = /b", message) == (1, "false")
    assert verdict("/a < /b AND /b != /a AND /a = /c AND NOT (/a > /b)", message) == (0, "true")
    assert time.monotonic() - started < 5


ELEMENTS = [None, "", {}, True, False, 0, -0.0, 1, 1.0, 2, 47, -5, 2**63, 2**64 - 1, 1e300, float("inf"),
            float("-inf"), float("nan"), 0.5, "0", "1", "1.0", "47", "047", "-5", "abc", "ABC", "zebra", "1e3", "é"]


def test_large_array_comparisons_agree_with_the_pair_by_pair_rule() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from ampsctl.filter.values import compare, compare_scalars, or3

    sides = st.lists(st.sampled_from(ELEMENTS), min_size=65, max_size=90)  # over 4096 pairs: summarised

    @settings(max_examples=300, deadline=None)
    @given(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), sides, sides)
    def agree(op: str, lefts: list, rights: list) -> None:
        expected = or3(compare_scalars(op, a, b) for a in lefts for b in rights)
        assert compare(op, lefts, rights) is expected

    agree()


def test_in_and_between_on_a_large_array_are_quick() -> None:
    # 100,000 elements against 1,000 IN options or 20,000-element bounds: 25 s and minutes before.
    import time

    message = {"a": list(range(100_000)), "b": list(range(100_000, 120_000))}
    options = ", ".join(str(-i) for i in range(1, 1001))
    started = time.monotonic()
    assert verdict(f"/a IN ({options})", message) == (1, "false")
    assert verdict("/a BETWEEN /b AND /b", message) == (1, "false")
    assert verdict("/a IN (/b, 5) AND /a BETWEEN 0 AND /b AND /a NOT IN (/b)", message) == (0, "true")
    assert time.monotonic() - started < 5


def test_in_and_between_on_large_arrays_agree_with_the_pair_by_pair_rule() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from ampsctl.filter.values import and3, any_element, compare_scalars, elements, member, or3, within

    def pairwise(op: str, left: object, right: object) -> object:
        lefts, rights = elements(left), elements(right)
        return or3(compare_scalars(op, a, b) for a in lefts for b in rights) if lefts and rights else None

    values = st.one_of(st.sampled_from(ELEMENTS), st.lists(st.sampled_from(ELEMENTS), max_size=120))

    @settings(max_examples=300, deadline=None)
    @given(values, st.lists(values, min_size=1, max_size=50), values, values)
    def agree(value: object, options: list, low: object, high: object) -> None:
        assert member(value, options) is or3(pairwise("=", value, option) for option in options)
        expected = any_element(value, lambda e: and3((pairwise(">=", e, low), pairwise("<=", e, high))))
        assert within(value, low, high) is expected

    agree()


# --- LIKE over an array: one timeout for all the elements ---------------------------------------


def test_like_over_an_array_shares_one_timeout() -> None:
    # 200 elements that each take ~50 ms under a backtracking pattern: 10 s of searching before,
    # far past the documented 1 s; now the LIKE stops at 1 s like a single slow search.
    import time

    started = time.monotonic()
    code, text = verdict("/a LIKE '(a|aa)+$'", {"a": ["a" * 24 + "b"] * 200})
    assert code == 3 and "'(a|aa)+$' ran past its timeout of 1 s" in text
    assert time.monotonic() - started < 4


@pytest.mark.parametrize(("expr", "message", "expected"), [
    ("/a LIKE 'b$'", {"a": ["xa", None, "ab"]}, "true"),
    ("/a LIKE 'z'", {"a": ["xa", None, "ab"]}, "false"),  # NULL element, no match: NULL
    ("NOT (/a LIKE 'z')", {"a": ["xa", None, "ab"]}, "false"),
    ("NOT (/a LIKE 'z')", {"a": ["xa", "ab"]}, "true"),
    ("/a LIKE '4'", {"a": [14, 34.5]}, "true"),
    ("/a IS NULL OR NOT (/a LIKE 'z')", {"a": []}, "true"),
])
def test_like_over_an_array_keeps_its_three_valued_result(expr: str, message: dict, expected: str) -> None:
    assert verdict(expr, message) == (0 if expected == "true" else 1, expected)


@pytest.mark.parametrize("function", ["REGEXP_MATCH(/v, /p)", "REGEXP_REPLACE(/v, /p, 'x')"])
def test_a_bad_pattern_read_from_a_message_names_its_function(function: str) -> None:
    from ampsctl.filter.compiler import compile_filter
    from ampsctl.filter.errors import FilterError
    from ampsctl.filter.evaluate import matches
    from ampsctl.filter.parser import parse
    from ampsctl.messages.json_record import JsonRecord

    tree, record = parse(f"{function} = 'b'"), JsonRecord({"v": "abc", "p": "("})
    name = function.split("(")[0]
    for run in (lambda: matches(tree, record), lambda: compile_filter(tree)(record)):
        with pytest.raises(FilterError, match=r"invalid regular expression '\('") as caught:
            run()
        assert caught.value.hint.startswith(f"{name} takes a PCRE pattern")  # was "LIKE takes ..."


# --- filter test --data @FILE: a read that fails --------------------------------------------------


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/mem"), reason="needs Linux /proc")
def test_a_data_file_that_fails_to_read_is_an_environment_error() -> None:
    # Reading /proc/self/mem at offset 0 fails with EIO: that was an internal error (exit 5).
    code, out, err = ampsctl("filter", "test", "--data", "@/proc/self/mem", "--", "/a = 1")
    assert code == 4, err
    assert "cannot read '/proc/self/mem'" in err and "Traceback" not in err and "internal error" not in err


@pytest.mark.parametrize("pattern", ["(?V1)a", "a(?V1)", "(?u)a", "(?L)a"])
def test_an_inline_flag_at_odds_with_the_regex_mode_is_an_error_at_the_pattern(pattern: str) -> None:
    # The regex package raises ValueError for these, not regex.error: it was an internal error (exit 5).
    code, result = check_json(f"/a LIKE '{pattern}'")
    assert code == 3 and result["position"] == 8, result
    assert "invalid regular expression" in result["error"] and "remove the inline flag" in result["hint"]
    code, text = verdict("REGEXP_MATCH(/a, /p) = 'a'", {"a": "a", "p": pattern})
    assert code == 3 and "invalid regular expression" in text

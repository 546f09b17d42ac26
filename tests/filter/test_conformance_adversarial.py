"""Adversarial conformance cases, run through the public entry points (``ampsctl filter
check|test`` in-process, as the console script runs them).

Each test pins a bug found in a conformance round: odd inputs must give a clear error with a
position and exit 3, or the documented value, never exit 5 (an internal error), a hang or a
blown-up process.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from ampsctl.cli.app import main


def ampsctl(*args: str) -> tuple[int, str, str]:
    """``ampsctl ARGS...`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, out.getvalue(), err.getvalue()


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

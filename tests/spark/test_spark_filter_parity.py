"""Parity cases the generated differential test does not reach, through ``spark_query.filter_frame``.

Each group is a small frame of JSON messages and a few filters; every filter runs end to end
(compiled condition, guards, the evaluator on guarded rows) and must select exactly the rows
the local evaluator selects. Each filter is one Spark job on a handful of rows.
"""

from __future__ import annotations

import json

import pytest

from ampsctl.filter.evaluate import matches
from ampsctl.filter.parser import parse
from ampsctl.messages.json_record import JsonRecord


def _selected(spark, records: list[str], text: str) -> tuple[list[int], list[int]]:
    """(Spark's row numbers, the local evaluator's row numbers) for ``text`` over ``records``."""
    from ampsctl.pipeline.spark_query import collect, filter_frame

    frame = spark.createDataFrame(list(enumerate(record.encode() for record in records)), "id long, payload binary")
    out, _ = filter_frame(frame, text)
    got = sorted(row["id"] for row in collect(out))
    expected = [n for n, record in enumerate(records) if matches(parse(text), JsonRecord.from_bytes(record.encode()))]
    return got, expected


# A number followed by a line terminator is text locally (the whole string must be a number),
# whatever Java's `$` accepts before a final terminator and whatever Spark's cast trims.
TERMINATED = [json.dumps({"a": "5" + end}) for end in ("\n", "\r", "\r\n", "\u2028", "\u2029", "\u0085", "")]


@pytest.mark.parametrize("text", ["/a = 5", "/a > 100", "/a + 1 = 6", "CONCAT(/a, '') < 6"])
def test_a_number_followed_by_a_line_terminator_is_text(spark, text):
    got, expected = _selected(spark, TERMINATED, text)
    assert got == expected


# Integers between 2^63 and 2^64 are exact integers locally (unsigned 64-bit); Spark's VARIANT
# holds them as DECIMAL(19,0)/(20,0), which this compiler reads as a double.
UNSIGNED = [json.dumps(doc) for doc in (
    {"a": 2**63 + 1, "b": 2**63}, {"a": 2**64 - 1, "b": 2**64 - 2}, {"a": [2**63 + 1], "b": 2**63},
    {"a": 2**63, "b": 2**63}, {"a": 5, "b": 4},
)]


@pytest.mark.parametrize("text", ["/a = /b", "/a > /b", "/a != /b", "/a IN (/b, 1)", "/a BETWEEN /b AND /b",
                                  "/a > 9223372036854775808.0", "/a = 9.223372036854775808e18"])
def test_unsigned_64_bit_integers_compare_exactly(spark, text):
    got, expected = _selected(spark, UNSIGNED, text)
    assert got == expected


# -2^63 / -1 is 2^63: an integer locally (fit_int), an overflow of Spark's bigint `div` (ANSI).
MINIMUM = [json.dumps(doc) for doc in (
    {"a": -(2**63), "b": -1}, {"a": str(-(2**63)), "b": "-1"}, {"a": -(2**63), "b": 1}, {"a": 7, "b": -1},
)]


@pytest.mark.parametrize("text", ["/a / -1 > 0", "/a / /b > 0", "/a % /b = 0", "-/a > 0", "ABS(/a) > 0"])
def test_the_smallest_64_bit_integer_divided_by_minus_one(spark, text):
    got, expected = _selected(spark, MINIMUM, text)
    assert got == expected


# SUBSTR positions and lengths are Python integers locally: no clamping changes the slice.
SLICED = [json.dumps({"s": "abcdef", "n": -(2**31), "m": 2**31 - 3}), json.dumps({"s": "😀x", "n": -(2**40), "m": 2**40 + 1})]


@pytest.mark.parametrize("text", ["SUBSTR(/s, -2147483648, 2147483645) = 'abc'", "SUBSTR(/s, /n, /m) = 'abc'",
                                  "SUBSTR(/s, -1e300, 1e300 + 1) IS NULL", "SUBSTR(/s, -4503599627370496, 4503599627370498) = 'ab'",
                                  "SUBSTR(/s, /n) = /s", "SUBSTR(/s, 1e300) IS NULL", "SUBSTR(/s, 2, 1e300) = 'bcdef'"])
def test_substr_with_huge_positions_and_lengths(spark, text):
    got, expected = _selected(spark, SLICED, text)
    assert got == expected

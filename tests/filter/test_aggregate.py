"""Group-by aggregation for view projections (spec/expressions.md §9.6)."""

from __future__ import annotations

import pytest

from ampsctl.filter.aggregate import aggregate, parse_projection
from ampsctl.filter.errors import FilterSyntaxError
from ampsctl.messages.json_record import JsonRecord
from ampsctl.filter.parser import parse

ROWS = [
    {"desk": "fx", "trader": "ann", "qty": 10, "px": 1.5, "note": "a"},
    {"desk": "fx", "trader": "bob", "qty": None, "px": 2.5, "note": "b"},
    {"desk": "rates", "trader": "cy", "qty": 7, "px": "", "note": "a"},
    {"desk": "fx", "trader": "ann", "qty": 20, "px": 4.0, "note": "a"},
]


def _run(projection: list[str], grouping: list[str], rows=ROWS) -> list[dict]:
    return aggregate([parse_projection(p) for p in projection], [parse(g) for g in grouping], [JsonRecord(r) for r in rows])


def test_groups_in_order_of_first_appearance_with_nulls_skipped() -> None:
    result = _run(["/desk", "SUM(/qty) AS /qty", "COUNT(/qty) AS /n", "AVG(/px) AS /avg"], ["/desk"])
    assert result == [{"desk": "fx", "qty": 30, "n": 2, "avg": 8.0 / 3}, {"desk": "rates", "qty": 7, "n": 1, "avg": None}]


def test_min_max_any_count_distinct_and_stddev() -> None:
    [fx, _] = _run(
        ["MIN(/trader) AS /first", "MAX(/px) AS /top", "ANY(/desk) AS /d", "COUNT_DISTINCT(/note) AS /notes",
         "STDDEV_POP(/qty) AS /sd", "STDDEV_SAMP(/qty) AS /ssd"],
        ["/desk"],
    )
    assert fx == {"first": "ann", "top": 4.0, "d": "fx", "notes": 2, "sd": 5.0, "ssd": pytest.approx(7.0710678)}


def test_nested_alias_expression_over_aggregates_and_last_value() -> None:
    [fx, _] = _run(["SUM(/qty) * 2 AS /totals/double", "/trader AS /last"], ["/desk"])
    assert fx == {"totals": {"double": 60}, "last": "ann"}


def test_lower_case_as_and_grouping_on_two_fields() -> None:
    result = _run(["/trader as /t", "COUNT(/px) as /n"], ["/desk", "/trader"])
    assert result == [{"t": "ann", "n": 2}, {"t": "bob", "n": 1}, {"t": "cy", "n": 0}]


def test_a_projection_needs_an_output_field() -> None:
    with pytest.raises(FilterSyntaxError, match="output field"):
        parse_projection("SUM(/qty) AS 3")
    with pytest.raises(FilterSyntaxError):
        parse_projection("SUM(/qty)")

"""The function catalog: every function of spec §9 with its arity, kind and Spark class (§11)."""

from __future__ import annotations

import dataclasses

import pytest

from ampsctl.filter.catalog import AGGREGATES, FUNCTIONS, NONDETERMINISTIC, FunctionSpec, SparkMapping, lookup

# name -> (min_args, max_args) straight from spec §9.1-§9.6.
DOCUMENTED = {
    # §9.1
    "UPPER": (1, 1), "LOWER": (1, 1), "CONCAT": (1, None), "INSTR": (2, 2), "INSTR_I": (2, 2),
    "STREQUAL_I": (2, 2), "SUBSTR": (2, 3), "REVERSE": (1, 1),
    # §9.2 (provisional)
    "LENGTH": (1, 1), "LEN": (1, 1), "TRIM": (1, 2), "LTRIM": (1, 2), "RTRIM": (1, 2), "REGEXP_MATCH": (2, 2),
    "REPLACE": (3, 3), "REGEXP_REPLACE": (3, 3), "ABS": (1, 1), "ROUND": (1, 2), "CEILING": (1, 1), "FLOOR": (1, 1),
    "COALESCE": (1, None),
    # §9.3-§9.5
    "IF": (3, 3), "UNIX_TIMESTAMP": (0, 0), "STRFTIME": (2, 2), "STRPTIME": (2, 2),
    "TRUE_VALUE": (0, 0), "FALSE_VALUE": (0, 0), "NAN_VALUE": (0, 0), "CHAR_VALUE": (1, 1),
    # §9.6
    "AVG": (1, 1), "ANY": (1, 1), "COUNT": (1, 1), "COUNT_DISTINCT": (1, 1), "MIN": (1, 1), "MAX": (1, 1),
    "SUM": (1, 1), "STDDEV_POP": (1, 1), "STDDEV_SAMP": (1, 1),
}
PROVISIONAL = {"LENGTH", "LEN", "TRIM", "LTRIM", "RTRIM", "REGEXP_MATCH", "REPLACE", "REGEXP_REPLACE", "ABS",
               "ROUND", "CEILING", "FLOOR"}


def test_catalog_is_exactly_the_documented_functions() -> None:
    assert set(FUNCTIONS) == set(DOCUMENTED)
    for name, (low, high) in DOCUMENTED.items():
        assert (FUNCTIONS[name].min_args, FUNCTIONS[name].max_args) == (low, high), name


def test_not_in_the_language() -> None:
    for name in ("NOW", "CASE", "TOPIC_MATCH", "LIKE"):
        assert name not in FUNCTIONS


def test_aggregates() -> None:
    assert AGGREGATES == {"AVG", "ANY", "COUNT", "COUNT_DISTINCT", "MIN", "MAX", "SUM", "STDDEV_POP", "STDDEV_SAMP"}
    assert all(FUNCTIONS[name].aggregate for name in AGGREGATES)


def test_only_unix_timestamp_is_nondeterministic() -> None:
    assert NONDETERMINISTIC == {"UNIX_TIMESTAMP"}
    assert FUNCTIONS["UNIX_TIMESTAMP"].deterministic is False


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_entry_is_well_formed(name: str) -> None:
    spec = FUNCTIONS[name]
    assert spec.name == name == name.upper()
    assert spec.signature.startswith(f"{name}(") and spec.signature.endswith(")")
    assert spec.spark in {"faithful", "approximate", "none"}
    assert isinstance(spec.spark, SparkMapping)
    assert spec.summary and "\n" not in spec.summary and len(spec.summary) < 140
    assert spec.summary.startswith("Provisional") == (name in PROVISIONAL)
    assert spec.max_args is None or spec.max_args >= spec.min_args


@pytest.mark.parametrize(("name", "mapping"), [
    ("INSTR", "faithful"), ("SUBSTR", "faithful"), ("REVERSE", "faithful"), ("IF", "faithful"),
    ("COALESCE", "faithful"), ("UPPER", "approximate"), ("INSTR_I", "approximate"), ("STREQUAL_I", "approximate"),
    ("UNIX_TIMESTAMP", "approximate"), ("STRFTIME", "approximate"), ("NAN_VALUE", "approximate"),
    ("MIN", "approximate"), ("COUNT_DISTINCT", "approximate"), ("SUM", "faithful"), ("STDDEV_SAMP", "faithful"),
])
def test_spark_classes_follow_the_mapping_table(name: str, mapping: str) -> None:
    assert FUNCTIONS[name].spark == mapping


@pytest.mark.parametrize(("name", "text"), [
    ("UNIX_TIMESTAMP", "no arguments"), ("UPPER", "1 argument"), ("INSTR", "2 arguments"),
    ("SUBSTR", "2 or 3 arguments"), ("CONCAT", "at least 1 argument"),
])
def test_arity_text(name: str, text: str) -> None:
    assert FUNCTIONS[name].arity_text() == text


def test_arity_text_for_wide_ranges_and_accepts() -> None:
    spec = FunctionSpec("X", 1, 4, True, False, SparkMapping.NONE, "x")
    assert spec.arity_text() == "1 to 4 arguments"
    assert [spec.accepts(n) for n in range(6)] == [False, True, True, True, True, False]
    assert FUNCTIONS["COALESCE"].accepts(100)


def test_lookup_is_case_insensitive() -> None:
    assert lookup("substr") is FUNCTIONS["SUBSTR"]
    assert lookup("Count_Distinct") is FUNCTIONS["COUNT_DISTINCT"]
    assert lookup("nope") is None


def test_catalog_is_immutable() -> None:
    with pytest.raises(TypeError):
        FUNCTIONS["NEW"] = FUNCTIONS["UPPER"]  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        FUNCTIONS["UPPER"].min_args = 0  # type: ignore[misc]

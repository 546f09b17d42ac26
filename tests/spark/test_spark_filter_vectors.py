"""The Spark filter compiler against the reference evaluator on every JSON vector of spec §12.

Every vector of tests/filter/vectors.toml that runs on the JSON sample ``M`` is compiled with
``pipeline.spark_filter`` and run through real Spark. A vector that compiles must give exactly
the reference evaluator's answer (and the spec's) from the compiled Column alone, on a row
the guards call exact; a vector that raises ``UnsupportedFilterError`` must give the same
answer through ``spark_query.filter_frame``'s stated fallback. FIX/XML vectors do not apply:
the Spark compiler reads JSON messages only (other types always take the fallback, tested
in test_spark_filter.py).

All compiled vectors run in ONE Spark job (one condition/exact column pair per vector over one row), so the whole file
costs a few seconds rather than one job per vector.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from ampsctl.filter.evaluate import matches
from ampsctl.filter.parser import parse
from ampsctl.messages.json_record import JsonRecord

DATA = tomllib.loads((Path(__file__).parents[1] / "filter" / "vectors.toml").read_text(encoding="utf-8"))
RECORD = DATA["records"]["M"]
JSON_VECTORS: list[dict[str, Any]] = [vector for vector in DATA["vector"] if vector["record"] == "M"]
# Constructs with no exact Spark mapping today (the docs' Spark mapping section says why).
EXPECTED_FALLBACKS = {"90"}  # UNIX_TIMESTAMP(): Spark reads the clock once per query


def _reference(text: str) -> bool:
    return matches(parse(text), JsonRecord.from_bytes(RECORD))


@pytest.fixture(scope="module")
def compiled_results(spark) -> dict[str, tuple[bool, bool] | str]:
    """Per vector id: (condition, exact) from one Spark job, or the UnsupportedFilterError reason."""
    from pyspark.sql import functions as F

    from ampsctl.pipeline.spark_filter import Compiled, UnsupportedFilterError, compile_filter, with_bindings

    base = spark.createDataFrame([(RECORD.encode("utf-8"),)], "payload binary")
    base = base.withColumn("message", F.try_parse_json(F.col("payload").cast("string")))
    results: dict[str, tuple[bool, bool] | str] = {}
    bindings: list[tuple[str, Any]] = []
    outputs = []
    for vector in JSON_VECTORS:
        try:
            compiled = compile_filter(parse(vector["filter"]), F.col("message"), prefix=f"v{vector['id']}_")
        except UnsupportedFilterError as exc:
            results[vector["id"]] = exc.reason
            continue
        bindings += compiled.bindings
        outputs += [compiled.condition.alias(f"c{vector['id']}"), compiled.exact.alias(f"e{vector['id']}")]
    everything = Compiled(tuple(bindings), F.lit(True), F.lit(True), False)  # every vector's bindings, by level
    row = with_bindings(base, everything).select(*outputs).collect()[0]
    for vector in JSON_VECTORS:
        if vector["id"] not in results:
            results[vector["id"]] = (row[f"c{vector['id']}"], row[f"e{vector['id']}"])
    return results


def test_the_vectors_are_all_here():
    assert len(JSON_VECTORS) == 90


@pytest.mark.parametrize("vector", JSON_VECTORS, ids=[v["id"] for v in JSON_VECTORS])
def test_compiled_vector_agrees_with_the_evaluator(vector, compiled_results):
    result = compiled_results[vector["id"]]
    expected = _reference(vector["filter"])
    assert expected is vector["expect"]
    if vector["id"] in EXPECTED_FALLBACKS:
        assert isinstance(result, str), f"{vector['filter']} now compiles: update EXPECTED_FALLBACKS and the docs"
        return
    assert not isinstance(result, str), f"{vector['filter']} did not compile: {result}"
    condition, exact = result
    assert exact is True, f"{vector['filter']}: the guards sent the sample row to Python"
    assert condition is expected, vector["filter"]


@pytest.mark.parametrize("vector_id", sorted(EXPECTED_FALLBACKS))
def test_fallback_vector_agrees_through_the_python_evaluator(spark, vector_id):
    from ampsctl.pipeline.spark_query import filter_frame

    vector = next(v for v in JSON_VECTORS if v["id"] == vector_id)
    frame = spark.createDataFrame([(1, RECORD.encode("utf-8"))], "id long, payload binary")
    notes: list[str] = []
    out, fell_back = filter_frame(frame, vector["filter"], on_fallback=notes.append)
    assert fell_back is True
    assert notes and "UNIX_TIMESTAMP" in notes[0]
    assert (out.count() == 1) is vector["expect"] is _reference(vector["filter"])

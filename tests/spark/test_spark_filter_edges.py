"""Edge values of the local engine that the Spark compiler must agree with, or send to the
evaluator: a CONCAT result at and beyond 64 Mi characters (regexes.MAX_TEXT: an evaluation
error locally) and numeric strings with more than 40 characters of zero padding (integers
locally, as '007' is). One Spark job per group."""

from __future__ import annotations

import json

import pytest

from ampsctl.filter.evaluate import matches
from ampsctl.filter.parser import parse
from ampsctl.filter.regexes import MAX_TEXT
from ampsctl.messages.json_record import JsonRecord

PAD = "0" * 45
PADDED_RECORDS = [json.dumps(doc) for doc in (
    {"a": PAD + "7", "b": 2}, {"a": "-" + PAD + "7", "b": 2}, {"a": PAD, "b": 2}, {"a": PAD + "7.5", "b": 2},
    {"a": "0" * 41, "b": 2}, {"a": "1" + "0" * 40, "b": 2}, {"a": "007", "b": 2}, {"a": 7, "b": 2},
)]
PADDED_FILTERS = [
    "/a / 2 = 3", "/a / /b = 3", "/a % 4 = 3", "/a + 0 = 7", "-/a = -7", "ABS(/a) / 2 = 3", "/a = 7", "/a * 1 = 0",
    f"/a = '{PAD}7'", "CONCAT(/a, '') / 2 = 3", f"'{PAD}7' / 2 = /a / 2", "/a > 6.5", "LENGTH(/a) > 40",
]


def _run(spark, records: list[str], filters: list[str]) -> list[tuple[str, int, bool, bool]]:
    """(filter, record number, condition, exact) for every pair, from one Spark job."""
    from pyspark.sql import functions as F

    from ampsctl.pipeline.spark_filter import Compiled, compile_filter, with_bindings

    base = spark.createDataFrame(list(enumerate(record.encode() for record in records)), "id long, payload binary")
    base = base.withColumn("message", F.try_parse_json(F.col("payload").cast("string")))
    bindings, outputs = [], []
    for number, text in enumerate(filters):
        compiled = compile_filter(parse(text), F.col("message"), prefix=f"f{number}_")
        bindings += compiled.bindings
        outputs += [compiled.condition.alias(f"c{number}"), compiled.exact.alias(f"e{number}")]
    everything = Compiled(tuple(bindings), F.lit(True), F.lit(True), False)
    rows = with_bindings(base, everything).select("id", *outputs).collect()
    return [(text, row["id"], row[f"c{number}"], row[f"e{number}"]) for row in rows for number, text in enumerate(filters)]


def test_zero_padded_numeric_strings_agree_with_the_evaluator(spark):
    results = _run(spark, PADDED_RECORDS, PADDED_FILTERS)
    wrong = [(text, PADDED_RECORDS[row], got, matches(parse(text), JsonRecord.from_bytes(PADDED_RECORDS[row].encode())))
             for text, row, got, exact in results if exact
             and got is not matches(parse(text), JsonRecord.from_bytes(PADDED_RECORDS[row].encode()))]
    assert not wrong, wrong
    # The padded integers are integers in Spark too, not guarded away: rows 0-2 and 6-7 are exact.
    exact_rows = {row for text, row, _, exact in results if exact and text == "/a / 2 = 3"}
    assert {0, 1, 2, 6, 7} <= exact_rows, exact_rows


# An eighth of the limit: Spark's VARIANT holds at most 16 MiB, and a bigger message would go
# to the evaluator for that reason alone. Eight copies are exactly MAX_TEXT characters.
EIGHTH = "a" * (MAX_TEXT // 8)
AT_LIMIT = f"LENGTH(CONCAT({', '.join(['/s'] * 8)})) > 0"
BEYOND = f"LENGTH(CONCAT({', '.join(['/s'] * 8)}, 'x')) > 0"


@pytest.fixture(scope="module")
def long_records() -> list[str]:
    return [json.dumps({"s": EIGHTH}), json.dumps({"s": "abc"})]


def test_concat_at_the_limit_is_exact_and_beyond_it_goes_to_the_evaluator(spark, long_records):
    at_limit, beyond = AT_LIMIT, BEYOND
    results = {(text, row): (got, exact) for text, row, got, exact in _run(spark, long_records, [at_limit, beyond])}
    assert results[(at_limit, 0)] == (True, True)  # exactly MAX_TEXT characters: built, as locally
    assert results[(beyond, 0)][1] is False  # MAX_TEXT + 1: the evaluator decides (an error)
    assert results[(at_limit, 1)] == (True, True) and results[(beyond, 1)] == (True, True)


def test_concat_beyond_the_limit_is_the_local_engines_error(spark, long_records):
    from ampsctl.errors import InputError
    from ampsctl.pipeline.spark_query import collect, filter_frame

    frame = spark.createDataFrame([(1, long_records[0].encode())], "id long, payload binary")
    out, fell_back = filter_frame(frame, BEYOND)
    assert fell_back is False  # compiled: only that row runs on the evaluator
    with pytest.raises(InputError, match="CONCAT would build a string longer than"):
        collect(out)

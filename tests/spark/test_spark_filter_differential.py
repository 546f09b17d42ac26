"""Differential tests of the Spark compiler: generated filters and records, and LIKE patterns.

* Generated filters (a seeded grammar over every compiled construct) run on generated JSON
  records full of awkward values (numeric strings, integral floats, NaN-free huge numbers,
  nested arrays, arrays of objects, '' and null). On every row the compiled ``exact`` column
  accepts, the compiled condition must equal the reference evaluator; the rows it sends to
  Python must stay a minority, or the test would prove little.
* Every translated LIKE pattern gives Java's ``rlike`` the answer of ``regexes.search`` on
  subjects chosen where PCRE and Java differ (``\\r``, ``\\u2028``, non-ASCII letters, a
  final newline); refused patterns raise UnsupportedRegex.
* ``filter_frame`` end to end: guarded rows come back through the Python evaluator.
Each group is one Spark job.
"""

from __future__ import annotations

import json
import random

import pytest

from ampsctl.filter import regexes
from ampsctl.filter.evaluate import matches
from ampsctl.filter.parser import parse
from ampsctl.messages.json_record import JsonRecord
from ampsctl.pipeline.spark_regex import UnsupportedRegex, to_java

VALUES = [1, 0, -2, 5, 7, 2.5, 1.0, -0.5, 1e21, 2**60, "5", "007", "2.50", "abc", "ABC", "aBc", "", None, True, False,
          [1, "a"], [], [[1], 2], {"x": 1}, [{"x": 3}, {"y": 4}], "a\r", "éA", " 5", "1e2", [5, 5.5, "5"],
          "0" * 45 + "7", "-" + "0" * 45 + "7", "1" + "0" * 40,  # zero padding keeps an integer; 41 digits: beyond int64
          "5\n", "7\u2028", 2**63 + 1, -(2**63)]  # a final line terminator is text; unsigned 64-bit; -2^63 / -1
FIELDS = ["/a", "/b", "/c", "/arr", "/n/x", "/absent", "/arr[1]"]
LITERALS = ["0", "1", "5", "-3", "2.5", "'abc'", "'5'", "'007'", "''", "'A'", "TRUE", "NULL", "1e21", "-1"]
PATTERNS = ["'a'", "'^A'", "'c$'", "'(?i)ab'", "'[0-9]+'", "'(.)\\1'", "'b.c'", "'^$'", "'\\d{2,}'"]
RECORDS = 48
FILTERS = 36


def _value(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if depth <= 0 or roll < 0.35:
        return rng.choice(FIELDS)
    if roll < 0.55:
        return rng.choice(LITERALS)
    if roll < 0.75:
        return f"{_value(rng, depth - 1)} {rng.choice(['+', '-', '*', '/', '%'])} {_value(rng, depth - 1)}"
    name = rng.choice(["UPPER", "LOWER", "ABS", "CONCAT", "SUBSTR", "REVERSE", "COALESCE", "IF", "LENGTH", "INSTR"])
    one = _value(rng, depth - 1)
    if name == "CONCAT":
        return f"CONCAT({one}, {_value(rng, depth - 1)})"
    if name == "SUBSTR":
        start, length = rng.choice(['0', '2', '-2', '1.5', '-2147483648']), rng.choice(['', ', 2', ', -1', ', 2147483645'])
        return f"SUBSTR({one}, {start}{length})"
    if name == "COALESCE":
        return f"COALESCE({one}, {_value(rng, depth - 1)})"
    if name == "IF":
        return f"IF({_predicate(rng, depth - 1)}, {one}, {_value(rng, depth - 1)})"
    if name == "INSTR":
        return f"INSTR({one}, {rng.choice(['a', 'B', '5'])!r})"
    return f"{name}({one})"


def _predicate(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    value = _value(rng, depth - 1)
    if depth > 0 and roll < 0.15:
        return f"({_predicate(rng, depth - 1)} {rng.choice(['AND', 'OR'])} {_predicate(rng, depth - 1)})"
    if depth > 0 and roll < 0.22:
        return f"NOT ({_predicate(rng, depth - 1)})"
    if roll < 0.55:
        return f"{value} {rng.choice(['=', '!=', '<', '<=', '>', '>='])} {_value(rng, depth - 1)}"
    if roll < 0.62:
        return f"{value} {rng.choice(['', 'NOT '])}BETWEEN {rng.choice(LITERALS)} AND {rng.choice(LITERALS)}"
    if roll < 0.72:
        return f"{value} {rng.choice(['', 'NOT '])}IN ({rng.choice(LITERALS)}, {_value(rng, 0)})"
    if roll < 0.82:
        return f"{value} {rng.choice(['', 'NOT '])}LIKE {rng.choice(PATTERNS)}"
    if roll < 0.9:
        return f"{value} {rng.choice(['BEGINS', 'ENDS'])} WITH ({rng.choice(LITERALS)}, 'a')"
    if roll < 0.95:
        return f"{value} IS {rng.choice(['', 'NOT '])}NULL"
    return value  # a value used as the condition


def _records(rng: random.Random) -> list[str]:
    out = []
    for _ in range(RECORDS):
        doc = {name: rng.choice(VALUES) for name in ("a", "b", "c", "arr") if rng.random() < 0.9}
        if rng.random() < 0.7:
            doc["n"] = rng.choice([{"x": rng.choice(VALUES)}, [{"x": 1}, {"x": "b"}], 5])
        out.append(json.dumps(doc))
    return out


def test_generated_filters_agree_with_the_evaluator(spark):
    from pyspark.sql import functions as F

    from ampsctl.pipeline.spark_filter import Compiled, UnsupportedFilterError, compile_filter, with_bindings

    rng = random.Random(20261125)
    records = _records(rng)
    filters = [_predicate(rng, 3) for _ in range(FILTERS)]
    base = spark.createDataFrame(list(enumerate(record.encode() for record in records)), "id long, payload binary")
    base = base.withColumn("message", F.try_parse_json(F.col("payload").cast("string")))
    bindings, outputs, refused, kept = [], [], [], []
    for number, text in enumerate(filters):
        try:
            compiled = compile_filter(parse(text), F.col("message"), prefix=f"f{number}_")
        except UnsupportedFilterError:
            refused.append(text)
            continue
        kept.append(number)
        bindings += compiled.bindings
        outputs += [compiled.condition.alias(f"c{number}"), compiled.exact.alias(f"e{number}")]
    assert len(refused) <= 2, refused  # integer literals only; everything else in the grammar compiles
    everything = Compiled(tuple(bindings), F.lit(True), F.lit(True), False)
    rows = with_bindings(base, everything).select("id", *outputs).collect()
    results = [{"filter": number, "id": row["id"], "condition": row[f"c{number}"], "exact": row[f"e{number}"]}
               for row in rows for number in kept]
    exact = [row for row in results if row["exact"]]
    assert len(exact) >= 0.5 * len(results), f"only {len(exact)} of {len(results)} rows compiled exactly"
    disagreements = []
    for row in exact:
        text = filters[row["filter"]]
        expected = matches(parse(text), JsonRecord.from_bytes(records[row["id"]]))
        if row["condition"] is not expected:
            disagreements.append((text, records[row["id"]], row["condition"], expected))
    assert not disagreements, disagreements[:5]
    assert any(row["condition"] for row in exact) and not all(row["condition"] for row in exact)


def test_filter_frame_sends_guarded_rows_to_the_evaluator(spark):
    from ampsctl.pipeline.spark_query import filter_frame

    records = ['{"q": [{"x": 1}, {"x": 2}]}', '{"q": {"x": 2}}', '{"q": [[2]]}', '{"q": 2.0}', '{"q": 9007199254740993}',
               '{"q": "2"}', '{"q": 3}', '{"q": [1, 2]}']
    frame = spark.createDataFrame(list(enumerate(record.encode() for record in records)), "id long, payload binary")
    for text in ("/q/x = 2 OR /q = 2", "/q LIKE '^2'", "/q * 1 > 5", "/q = 9007199254740993.0"):
        notes: list[str] = []
        out, fell_back = filter_frame(frame, text, on_fallback=notes.append)
        got = sorted(row["id"] for row in out.collect())
        expected = [n for n, record in enumerate(records) if matches(parse(text), JsonRecord.from_bytes(record))]
        assert got == expected, text
        assert not fell_back and not notes


SUPPORTED = ["z", "^MS", "(?i)^ms", "(.)\\1", "FT$", "a.b", "^$", "\\bab\\b", "\\Bb", "[a-c]+x?", "[^0-9]{2,3}",
             "\\d+\\.\\d*", "(?:ab|cd)e", "x(?=y)", "a(?!b)", "\\s\\S\\w\\W", "\\.\\*\\$", "[\\]\\-.]", "é", "a{2}",
             "ab*?c", "(a)(b)\\2\\1", "[-a]", "[a-]", "\\t|\\n", "c$", "A$", "^\\w+$"]
REFUSED = ["(ab)+", "(a|b)*", "a++", "(?<=a)b", "(?s).", "a(?i)b", "\\v", "\\x41", "[[:alpha:]]", "[a&&b]", "a{,2}",
           "{", "(a)\\10", "\\1(a)", "[]a]", "(?P<n>a)"]
SUBJECTS = ["zebra", "MSFT", "msft", "Tennessee", "a\rb", "ab\r", "FT\r", "FT\n", "FT", "a\u2028b", "", "ab cd", "éb",
            "ÀB", "xy", "ab", "abba", "12.5", "a.b", "]-", "aa", "abbbc", "\t", "ABC_1", "c\r\n", "A\u2029"]


def test_translated_patterns_match_like_the_evaluator(spark):
    from pyspark.sql import functions as F

    frame = spark.createDataFrame([(subject,) for subject in SUBJECTS], "s string")
    columns = [F.col("s").rlike(to_java(pattern)).alias(f"p{number}") for number, pattern in enumerate(SUPPORTED)]
    rows = frame.select("s", *columns).collect()
    wrong = [(pattern, row["s"]) for row in rows for number, pattern in enumerate(SUPPORTED)
             if row[f"p{number}"] is not regexes.search(pattern, row["s"])]
    assert not wrong, wrong


@pytest.mark.parametrize("pattern", REFUSED)
def test_patterns_outside_the_core_are_refused(pattern):
    with pytest.raises(UnsupportedRegex):
        to_java(pattern)


def test_an_evaluation_error_in_a_worker_is_the_local_engines_input_error(spark):
    """`(a+)+$` is refused by the translator (quantified group), so it runs on the evaluator,
    whose 1 s timeout fires in the worker: the caller gets an InputError (exit 3), as locally."""
    from ampsctl.errors import InputError
    from ampsctl.pipeline.spark_query import collect, filter_frame

    frame = spark.createDataFrame([(1, ('{"s": "' + "a" * 1000 + 'b"}').encode())], "id long, payload binary")
    notes: list[str] = []
    out, fell_back = filter_frame(frame, "/s LIKE '(a+)+$'", on_fallback=notes.append)
    assert fell_back and "quantified group" in notes[0]
    with pytest.raises(InputError, match="ran past its timeout"):
        collect(out)

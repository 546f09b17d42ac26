"""``sow query --engine spark`` gives the local engine's records, on SOW files and Parquet exports.

The inputs are made the way a user makes them: a JSONL journal (with awkward values on
purpose: integral floats, numeric strings, empty strings, NaN-free floats beyond 2^53,
nested arrays, arrays of objects, CR at the end of a string) goes through
``ampsctl journal import`` and ``ampsctl journal compact`` (SOW files and ``--out-format
parquet``). Each query runs through ``pipeline.spark_sow.query`` on the shared Spark session
and through the local engine (``sow.filequery.query_file``); the printed record objects must be
equal, in order. One query runs through the CLI in a subprocess to check the stated fallback.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ampsctl.cli.sow_cmd import record_object
from ampsctl.sow.filequery import query_file
from ampsctl.sow.query import Query
from ampsctl.sow.sowfile import SowFile

CONFIG = """<AMPSConfig>
  <Name>spark-query</Name>
  <SOW>
    <Topic>
      <Name>orders</Name><MessageType>json</MessageType><FileName>./sow/%n.sow</FileName>
      <Key>/id</Key><HashIndex><Key>/region</Key></HashIndex>
    </Topic>
    <Topic>
      <Name>quotes</Name><Pattern>^quotes/</Pattern><MessageType>nvfix</MessageType>
      <FileName>./sow/%n.sow</FileName><Key>/Symbol</Key>
    </Topic>
  </SOW>
</AMPSConfig>
"""

FILTERS = [
    "/qty > 5",
    "/region = 'EMEA' AND /qty >= '7'",
    "/region IN ('EMEA', 'APAC') OR /price > 100",
    "NOT (/qty = 10)",
    "/qty != 10",
    "/price BETWEEN 90 AND 1e22",
    "/tags = 2",
    "/tags != 'x'",
    "/tags/q = 2",  # a path through an array of objects: guarded rows go to the evaluator
    "/tags[1] = 2 OR /tags[0] IS NULL",
    "/qty / 2 = 2",  # int/int truncates; qty 1.0 parses to DECIMAL(1,0): guarded
    "/qty % 3 = 1 OR /qty * 2 > 100",
    "/name LIKE '(.)\\1'",
    "/name LIKE 'a$'",  # 'zebra\r': Java's $ would match before \r
    "/name LIKE '(?i)^ms'",
    "/price LIKE '^9'",  # floats as text: guarded
    "/name BEGINS WITH ('Te', 'Pa') AND /region IS NOT NULL",
    "CONCAT(/name, '-', /qty) ENDS WITH ('-5', '-10')",
    "UPPER(/name) = 'MSFT' AND INSTR(/name, 's') = 0",
    "COALESCE(/region, 'none') = 'none'",
    "IF(/qty > 5, /price, 0) > 90",
    "/qty",
    "TRIM(/name) = 'MSFT'",  # no exact Spark mapping: the stated fallback
]


def _ampsctl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ampsctl", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _journal() -> str:
    rng = random.Random(7)
    lines: list[dict[str, Any]] = []
    for number in range(1, 301):
        doc: dict[str, Any] = {
            "id": number,
            "region": rng.choice(["EMEA", "APAC", "AMER", "", None]),
            "qty": rng.choice([0, 5, 10, 1000, "47", "007", 1.0, 2.5, -3, None, 2**60]),
            "price": rng.choice([90.25, 100, 1e21, "abc", None, True]),
            "tags": rng.choice([[1, 2, "x"], [], [[1], 2], [{"q": 1}, {"q": 2}], "solo", None]),
            "name": rng.choice(["Tennessee", "Patrick", "MSFT", "msft", "zebra\r", "Crank It Up", " MSFT "]),
        }
        lines.append({"command": "publish", "topic": "orders",
                      "data": {k: v for k, v in doc.items() if v is not None or rng.random() < 0.5}})
    for number in range(1, 40, 3):
        lines.append({"command": "delta_publish", "topic": "orders", "data": {"id": number, "qty": number * 3}})
    for number in range(2, 60, 7):
        lines.append({"command": "sow_delete", "topic": "orders", "data": {"id": number}})
    for symbol in ("IBM", "SAP", "MSFT"):
        lines.append({"command": "publish", "topic": "quotes/us", "message_type": "nvfix",
                      "payload": f"Symbol={symbol}\u0001Bid=101.5\u0001"})
    return "\n".join(json.dumps(line) for line in lines) + "\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("spark-sow-query")
    (base / "cfg.xml").write_text(CONFIG)
    (base / "j.jsonl").write_text(_journal())
    for args in (("journal", "import", "j.jsonl", "--out", "journal"),
                 ("journal", "compact", "journal", "--config", "cfg.xml", "--out", "sow"),
                 ("journal", "compact", "journal", "--config", "cfg.xml", "--out", "pq", "--out-format", "parquet")):
        done = _ampsctl(*args, cwd=base)
        assert done.returncode == 0, done.stderr
    return base


def _local(path: Path, request: Query) -> list[dict[str, Any]]:
    with SowFile.open(path) as sow:
        result = query_file(sow, request)
        return [record_object(row.record, row.doc, result.payloads) for row in result.rows]


def _spark(spark: Any, path: Path, request: Query, notes: list[str] | None = None) -> list[dict[str, Any]]:
    from ampsctl.pipeline.spark_sow import query

    result = query(spark, str(path), request, on_fallback=(notes.append if notes is not None else None))
    return [record_object(row.record, row.doc, result.payloads) for row in result.rows]


@pytest.mark.parametrize("text", FILTERS)
def test_spark_engine_equals_local_engine(spark, files, text):
    path = files / "sow" / "orders.json.sow"
    request = Query(filter=text)
    notes: list[str] = []
    expected = _local(path, request)
    assert _spark(spark, path, request, notes) == expected
    assert bool(notes) is text.startswith("TRIM"), notes


def test_the_filters_select_something_and_not_everything(files):
    """The comparison above would be empty if the filters matched nothing (or everything)."""
    path = files / "sow" / "orders.json.sow"
    total = len(_local(path, Query()))
    counts = [len(_local(path, Query(filter=text))) for text in FILTERS]
    assert total > 250
    assert sum(0 < count < total for count in counts) >= len(FILTERS) - 2, counts


def test_order_by_top_n_select_keys_and_topic(spark, files):
    path = files / "sow" / "orders.json.sow"
    for request in (Query(filter="/qty > 0", order_by="/qty DESC, /id", top_n=7, select=("/id", "/qty")),
                    Query(filter="/region = 'EMEA'", top_n=5),
                    Query(keys=None, order_by="/name TEXT", top_n=4),
                    Query(filter="/qty >= 5", topic="^ord")):
        assert _spark(spark, path, request) == _local(path, request), request


def test_non_json_topics_take_the_stated_fallback(spark, files):
    path = files / "sow" / "quotes.nvfix.sow"
    request = Query(filter="/Symbol BEGINS WITH ('I', 'M')")
    notes: list[str] = []
    found = _spark(spark, path, request, notes)
    assert found == _local(path, request)
    assert len(found) == 2
    assert notes and "nvfix" in notes[0]


def test_parquet_export_gives_the_sow_file_records(spark, files):
    """Compaction's Parquet holds the same records (sorted by key, no CRC): compare as sets of keys."""
    request = Query(filter="/qty > 5 AND /name LIKE 'e'", order_by="/id")
    from_parquet = _spark(spark, files / "pq" / "orders.json.parquet", request)
    from_sow = _local(files / "sow" / "orders.json.sow", request)
    assert from_parquet and from_parquet == from_sow


def test_as_of_needs_the_local_engine(spark, files):
    from ampsctl.errors import UsageError

    with pytest.raises(UsageError, match="as-of"):
        _spark(spark, files / "sow" / "orders.json.sow", Query(as_of=1))


def test_cli_states_the_fallback_and_prints_what_local_prints(files):
    args = ["sow", "query", "sow/orders.json.sow", "-F", "TRIM(/name) = 'MSFT' OR /qty > 500", "-f", "json"]
    local = _ampsctl(*args, cwd=files)
    spark = _ampsctl(*args, "--engine", "spark", "--master", "local[1]", cwd=files)
    assert local.returncode == 0 and spark.returncode == 0, spark.stderr
    assert spark.stdout == local.stdout
    assert json.loads(spark.stdout)
    assert "ampsctl: note: filter not compiled to Spark SQL (TRIM(): " in spark.stderr
    assert "Python evaluator inside Spark" in spark.stderr


def test_cli_bad_filter_is_exit_3_before_spark_starts(files):
    done = _ampsctl("sow", "query", "sow/orders.json.sow", "-F", "/a = = 1", "--engine", "spark", cwd=files)
    assert done.returncode == 3, done.stderr

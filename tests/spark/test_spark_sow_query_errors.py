"""Evaluation errors in ``sow query --engine spark`` are the local engine's: same record, same message.

The local engine evaluates the filter record by record in file order (a top-n without
order-by ahead of its N-th match, in batches of candidate rows) and fails on the first record
whose evaluation fails, naming its SOW key. Spark evaluates rows in parallel, so the failing
rows come back marked and the driver raises the first one in file order, named the same way.
The error here is a LIKE past its 1 s timeout (``(a+)+$`` on a long run of ``a`` then ``b``:
the regex package backtracks exponentially).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ampsctl.errors import InputError
from ampsctl.sow.filequery import query_file
from ampsctl.sow.query import Query
from ampsctl.sow.sowfile import SowFile
from test_spark_sow_query import _ampsctl

CONFIG = """<AMPSConfig><Name>errors</Name><SOW><Topic>
  <Name>orders</Name><MessageType>json</MessageType><FileName>./sow/%n.sow</FileName><Key>/id</Key>
</Topic></SOW></AMPSConfig>
"""
SLOW = "a" * 2000 + "b"
FILTER = "/id < 3 OR /name LIKE '(a+)+$'"  # ids 1 and 2 match before the slow names are evaluated


@pytest.fixture(scope="module")
def sow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("spark-sow-errors")
    (base / "cfg.xml").write_text(CONFIG)
    names = ["x", "y", SLOW, "z", SLOW]
    lines = [json.dumps({"command": "publish", "topic": "orders", "data": {"id": n, "name": name}})
             for n, name in enumerate(names, 1)]
    (base / "j.jsonl").write_text("\n".join(lines) + "\n")
    for args in (("journal", "import", "j.jsonl", "--out", "journal"),
                 ("journal", "compact", "journal", "--config", "cfg.xml", "--out", "sow")):
        done = _ampsctl(*args, cwd=base)
        assert done.returncode == 0, done.stderr
    return base / "sow" / "orders.json.sow"


def _both(spark, path: Path, request: Query) -> list[tuple[str, object]]:
    from ampsctl.pipeline.spark_sow import query

    outcomes: list[tuple[str, object]] = []
    for run in (lambda: [row.record.key for row in query_file(SowFile.open(path), request).rows],
                lambda: [row.record.key for row in query(spark, str(path), request).rows]):
        try:
            outcomes.append(("rows", run()))
        except InputError as exc:
            outcomes.append(("error", (exc.message, exc.exit_code)))
    return outcomes


@pytest.mark.parametrize("top_n", [None, 2, 3])
def test_the_first_failing_record_in_file_order_is_the_error(spark, sow, top_n):
    local, remote = _both(spark, sow, Query(filter=FILTER, top_n=top_n))
    assert local[0] == "error" and "(on the record with SOW key " in local[1][0]  # type: ignore[index]
    assert remote == local


def test_a_filter_that_fails_on_no_record_gives_the_local_rows(spark, sow):
    """The slow names are never evaluated (AND stops first): the fallback runs with no failure."""
    local, remote = _both(spark, sow, Query(filter="/id != 3 AND /id != 5 AND NOT /name LIKE '(a+)+$'"))
    assert local[0] == "rows" and len(local[1]) == 3  # type: ignore[arg-type]
    assert remote == local


# Messages orjson refuses (the local engine fails on them) that Spark's parse_json reads:
# text after the object, not an object, a number beyond a double, bytes that are not UTF-8.
REFUSED = [b'{"a":1} {"b":2}', b'{"a":1}}', b'{"a":1}]', b'{"a": 1}\x00', b'[1]', b'"x"', b'{"a": 1e400}',
           b'{"a": 1' + b"0" * 400 + b"}", b'{"a": "\xff"}']


@pytest.mark.parametrize("payload", REFUSED, ids=range(len(REFUSED)))
def test_a_message_orjson_refuses_is_the_local_engines_error(spark, tmp_path, payload):
    """A Parquet file is whatever its writer made it: its messages are checked as the local
    engine parses them. The good record comes first, so the bad one is the first failure."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ampsctl.pipeline.spark_sow import query
    from ampsctl.sow.payloads import Payloads

    with pytest.raises(InputError) as local:
        Payloads("json").parse(payload)
    rows = {"topic": ["t", "t"], "sow_key": ["k1", "k2"], "payload": [b'{"a": 1}', payload], "sequence": [1, 2],
            "timestamp": [0, 0], "expiration": [None, None], "expires_at": [None, None]}
    path = tmp_path / "orders.json.parquet"
    pq.write_table(pa.table(rows), path)
    for text in ("/a = 1", "/a IS NULL"):
        with pytest.raises(InputError) as remote:
            query(spark, str(path), Query(filter=text))
        assert (remote.value.message, remote.value.code) == (local.value.message, local.value.code), text

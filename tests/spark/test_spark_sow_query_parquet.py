"""``sow query --engine spark`` on compaction's Parquet answers as the local engine on the SOW file.

A Parquet file has no SOW meta, so what the local engine reads from the SOW file's spec must
travel with it: whether the topic processes expiration (``--now`` leaves out records due only
then: a topic without ``<Expiration>`` keeps its records' expiry times but does not act on
them) and whether it is a Pattern topic (the table shows the concrete topic), even with one
concrete topic.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ampsctl.journal.bookmarks import parse_timestamp
from ampsctl.sow.filequery import query_file
from ampsctl.sow.query import Query
from ampsctl.sow.sowfile import SowFile
from test_spark_sow_query import _ampsctl

CONFIG = """<AMPSConfig><Name>pq</Name><SOW>
  <Topic><Name>orders</Name><MessageType>json</MessageType><FileName>./sow/%n.sow</FileName><Key>/id</Key></Topic>
  <Topic><Name>quotes</Name><Pattern>^quotes/</Pattern><MessageType>json</MessageType><FileName>./sow/%n.sow</FileName>
    <Key>/sym</Key><Expiration>60s</Expiration></Topic>
</SOW></AMPSConfig>
"""
NOW = "2030-01-01T00:00:00Z"  # after every expiry time below


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("spark-sow-parquet")
    (base / "cfg.xml").write_text(CONFIG)
    lines = [{"command": "publish", "topic": "orders", "data": {"id": n}, "expiration": 5 if n % 2 else None,
              "timestamp": "2026-03-01T09:00:00Z"} for n in range(1, 7)]
    lines += [{"command": "publish", "topic": "quotes/us", "data": {"sym": s}, "expiration": 5 if s == "A" else 0,
               "timestamp": "2026-03-01T09:00:00Z"} for s in ("A", "B")]
    (base / "j.jsonl").write_text("\n".join(json.dumps({k: v for k, v in line.items() if v is not None})
                                            for line in lines) + "\n")
    for args in (("journal", "import", "j.jsonl", "--out", "journal"),
                 ("journal", "compact", "journal", "--config", "cfg.xml", "--out", "sow", "--now", "2026-03-01T09:00:01Z"),
                 ("journal", "compact", "journal", "--config", "cfg.xml", "--out", "pq", "--out-format", "parquet",
                  "--now", "2026-03-01T09:00:01Z")):
        done = _ampsctl(*args, cwd=base)
        assert done.returncode == 0, done.stderr
    return base


@pytest.mark.parametrize("name", ["orders.json", "quotes.json"])
def test_now_and_pattern_follow_the_topics_spec(spark, base, name):
    from ampsctl.pipeline.spark_sow import query

    request = Query(now=parse_timestamp(NOW))
    with SowFile.open(base / "sow" / f"{name}.sow") as sow:
        local = [row.record.key for row in query_file(sow, request).rows]
        pattern = sow.meta.spec.pattern
    remote = query(spark, str(base / "pq" / f"{name}.parquet"), request)
    assert sorted(row.record.key for row in remote.rows) == sorted(local)
    assert remote.pattern is pattern
    assert local  # something is kept: orders keeps all six, quotes keeps B


def test_now_on_a_parquet_file_without_the_spec_is_refused(base, tmp_path):
    """Without the spec, --now could leave out records the local engine keeps: a usage error,
    before any Spark session (no ``spark`` fixture here)."""
    import pyarrow.parquet as pq

    from ampsctl.errors import UsageError
    from ampsctl.pipeline.spark_sow import run_query

    table = pq.read_table(base / "pq" / "orders.json.parquet")
    bare = tmp_path / "orders.json.parquet"
    pq.write_table(table.replace_schema_metadata(None), bare)
    with pytest.raises(UsageError, match="processes expiration"):
        run_query(str(bare), Query(now=parse_timestamp(NOW)))

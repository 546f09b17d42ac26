"""``journal compact`` stores a delta_publish's merge with the published number text.

A record published as ``{"id":1,"px":1.50,"q":1E5}`` and then updated by a delta is an AMPS
record ``{"id":1,"px":1.50,"q":1E5,"s":"x"}``: the SOW file must hold that, not the parser's
``1.5`` and ``100000.0``, whether compaction takes its fast path or (here forced by a
sow_delete) the reference replay. The file's index columns are those of the values (``sow
stats --verify``) and filters find the record by its values (``sow query``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from clitools import run_ampsctl

CONFIG = """<AMPSConfig>
  <Name>numbers</Name>
  <SOW>
    <Topic><Name>orders</Name><MessageType>json</MessageType><Key>/id</Key>
      <HashIndex><Key>/px</Key></HashIndex><Index>/q</Index><FileName>sow/%n.sow</FileName></Topic>
  </SOW>
</AMPSConfig>
"""

RECORDS = [
    {"command": "publish", "topic": "orders", "payload": '{"id":1,"px":1.50,"q":1E5,"z":-0}'},
    {"command": "publish", "topic": "orders", "payload": '{"id":2,"px":2,"q":12345678901234567890123}'},
    {"command": "delta_publish", "topic": "orders", "payload": '{"id":1,"s":"x"}'},
    {"command": "delta_publish", "topic": "orders", "payload": '{"id":2,"px":2.50}'},
]
DELETE = {"command": "sow_delete", "topic": "orders", "filter": "/id = 9"}  # the fast path hands it back


@pytest.mark.parametrize("records", [RECORDS, [*RECORDS[:2], DELETE, *RECORDS[2:]]], ids=["fast", "reference"])
def test_compacted_merges_keep_the_published_number_text(tmp_path: Path, records: list[dict]) -> None:
    (tmp_path / "amps.xml").write_text(CONFIG)
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    assert run_ampsctl("journal", "import", "in.jsonl", "--out", "j", cwd=tmp_path).code == 0
    done = run_ampsctl("journal", "compact", "j", "--config", "amps.xml", "--out", "out", cwd=tmp_path)
    assert done.code == 0, done.output
    connection = sqlite3.connect(tmp_path / "out" / "orders.json.sow")
    try:
        stored = [row[0] for row in connection.execute("SELECT payload FROM records ORDER BY id")]
    finally:
        connection.close()
    assert stored == [b'{"id":1,"px":1.50,"q":1E5,"z":-0,"s":"x"}', b'{"id":2,"px":2.50,"q":12345678901234567890123}']
    verified = run_ampsctl("sow", "stats", "out/orders.json.sow", "--verify", cwd=tmp_path)
    assert verified.code == 0 and "verified       ok: 2 records" in verified.stdout, verified.output
    found = run_ampsctl("sow", "query", "out/orders.json.sow", "--filter", "/q = 100000 AND /px = 1.5 AND /z = 0",
                        "--format", "jsonl", cwd=tmp_path)
    assert found.code == 0 and [json.loads(line)["message"]["s"] for line in found.stdout.splitlines()] == ["x"]

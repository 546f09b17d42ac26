"""The ``ampsctl-sow`` data source: ``sow query --engine spark`` reads a SOW file in ``id`` ranges.

The SOW file is made as a user makes it (``journal import`` then ``journal compact``) from
about 20k records: publishes, delta_publishes, and deletes of which some keys are published
again, so first-insert (``id``) order is neither key order nor sequence order and the file
spans several ranges (``MIN_ROWS`` ids each). The CLI cases run ``python -m ampsctl sow query``
with ``--engine local`` and ``--engine spark`` and compare stdout byte for byte; the error
cases compare what each engine raises. Damage is made by hand: a payload byte flipped (the CRC
check of returned rows) and a table page whose type byte is wrong (SQLite's "malformed", met
by an executor).
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ampsctl.errors import AmpsctlError
from ampsctl.pipeline.errors import TaskError, from_spark
from ampsctl.pipeline.sow_source import MIN_ROWS, IdRange, SowSourceReader, id_ranges
from ampsctl.sow.filequery import query_file
from ampsctl.sow.query import Query
from ampsctl.sow.sowfile import SowFile, meta_crc

CONFIG = """<AMPSConfig>
  <Name>sow-source</Name>
  <SOW>
    <Topic>
      <Name>orders</Name><MessageType>json</MessageType><FileName>./sow/%n.sow</FileName>
      <Key>/id</Key><HashIndex><Key>/region</Key></HashIndex>
    </Topic>
  </SOW>
</AMPSConfig>
"""
KEYS = 20_000
SPARK = ("--engine", "spark", "--master", "local[2]")


def _ampsctl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ampsctl", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _journal() -> str:
    rng = random.Random(11)
    lines: list[dict[str, Any]] = []
    for key in range(KEYS):
        lines.append({"command": "publish", "topic": "orders", "data": {
            "id": key, "region": rng.choice(["EMEA", "APAC", "AMER", ""]),
            "qty": rng.choice([0, 5, 10, 1000, "47", 2.5, 700]), "name": rng.choice(["MSFT", " MSFT ", "Tennessee", "zebra"])}})
    lines += [{"command": "delta_publish", "topic": "orders", "data": {"id": key, "qty": key % 1000}} for key in range(0, KEYS, 37)]
    lines += [{"command": "sow_delete", "topic": "orders", "data": {"id": key}} for key in range(3, KEYS, 53)]
    # Published again after their delete: new records, at the end of first-insert order.
    lines += [{"command": "publish", "topic": "orders", "data": {"id": key, "region": "EMEA", "qty": 999, "name": "back"}}
              for key in range(3, KEYS, 106)]
    return "\n".join(json.dumps(line) for line in lines) + "\n"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("sow-source")
    (base / "cfg.xml").write_text(CONFIG)
    (base / "j.jsonl").write_text(_journal())
    for args in (("journal", "import", "j.jsonl", "--out", "journal"),
                 ("journal", "compact", "journal", "--config", "cfg.xml", "--out", "sow")):
        done = _ampsctl(*args, cwd=base)
        assert done.returncode == 0, done.stderr
    orders = base / "sow" / "orders.json.sow"
    data = bytearray(orders.read_bytes())
    data[data.index(b'"qty":999,"name":"back"') + 8] ^= 0x01  # a republished record's qty: its CRC fails
    (base / "crc.sow").write_bytes(bytes(data))
    data = bytearray(orders.read_bytes())
    size = _page_size(orders)
    # The first table leaf page (type 0x0D: only the records table has rowids) past the middle.
    page = next(offset for offset in range(len(data) // 2 // size * size, len(data), size) if data[offset] == 0x0D)
    data[page] = 0xFF
    (base / "malformed.sow").write_bytes(bytes(data))
    return base


def _page_size(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        return connection.execute("PRAGMA page_size").fetchone()[0]


def test_the_file_spans_several_ranges_in_first_insert_order(spark, base):
    from ampsctl.pipeline.spark_sow import _sow_frame

    path = base / "sow" / "orders.json.sow"
    with SowFile.open(path) as sow:
        expected = [(row[0], row[1]) for row in sow.select("SELECT id, sow_key FROM records ORDER BY id")]
        keys = [record.key for record in sow.records()]
    assert len(expected) > 4 * MIN_ROWS
    assert keys != sorted(keys)
    frame = _sow_frame(spark, str(path))
    assert frame.rdd.getNumPartitions() == 4  # 2 x local[2]'s cores
    found = [(row.id, row.sow_key) for row in frame.select("id", "sow_key").collect()]
    assert found == expected  # the ranges cover every row once, and come in id order


@pytest.mark.parametrize("args", [
    ("-f", "jsonl"),  # every record, in file order
    ("-F", "/qty > 500 AND /region != 'APAC'", "--top-n", "3000", "-f", "json"),  # top-n without order-by: the first in id order
    ("-F", "TRIM(/name) = 'MSFT' OR /name = 'back'", "-o", "/qty DESC, /id", "-n", "40", "-s", "/id,/qty,/name", "-f", "csv"),
], ids=["all", "filter-top-n", "fallback-order-by"])
def test_cli_spark_prints_what_local_prints(base, args):
    local = _ampsctl("sow", "query", "sow/orders.json.sow", *args, cwd=base)
    spark = _ampsctl("sow", "query", "sow/orders.json.sow", *args, *SPARK, cwd=base)
    assert local.returncode == 0, local.stderr
    assert spark.returncode == 0, spark.stderr
    assert spark.stdout == local.stdout
    assert local.stdout.count("\n") > 40


def test_cli_damage_met_by_an_executor_is_the_local_error(base):
    local = _ampsctl("sow", "query", "malformed.sow", "-f", "jsonl", cwd=base)
    spark = _ampsctl("sow", "query", "malformed.sow", "-f", "jsonl", *SPARK, cwd=base)
    assert local.returncode == spark.returncode == 3
    expected = [line for line in local.stderr.splitlines() if line.startswith(("ampsctl: error:", "  hint:"))]
    assert expected[0] == "ampsctl: error: malformed.sow: SOW file is damaged: database disk image is malformed"
    assert [line for line in spark.stderr.splitlines() if line.startswith(("ampsctl: error:", "  hint:"))] == expected
    assert spark.stdout == local.stdout == ""


def _error(run: Any) -> tuple[int, str, str | None]:
    with pytest.raises(AmpsctlError) as caught:
        run()
    return caught.value.exit_code, str(caught.value), caught.value.hint


def _local(path: Path, request: Query) -> None:
    with SowFile.open(path) as sow:
        query_file(sow, request)


@pytest.mark.parametrize("name, request_", [
    ("missing.sow", Query()),
    ("j.jsonl", Query()),  # not a SOW file
    ("crc.sow", Query(filter="/name = 'back'")),  # the damaged record is returned
    ("malformed.sow", Query(filter="/qty > 5")),
])
def test_errors_are_the_local_engines(spark, base, name, request_):
    from ampsctl.pipeline.spark_sow import query

    path = base / name
    expected = _error(lambda: _local(path, request_))
    assert _error(lambda: query(spark, str(path), request_)) == expected


def test_a_damaged_record_no_query_returns_fails_neither_engine(spark, base):
    from ampsctl.pipeline.spark_sow import query

    request = Query(filter="/name = 'MSFT'", top_n=5)
    with SowFile.open(base / "crc.sow") as sow:
        local = [row.record.key for row in query_file(sow, request).rows]
    assert [row.record.key for row in query(spark, str(base / "crc.sow"), request).rows] == local
    assert len(local) == 5


def test_a_file_changed_after_planning_is_refused(base, tmp_path):
    """Each range checks, in its read transaction, that the meta is the one the ranges were planned on."""
    path = tmp_path / "orders.json.sow"
    shutil.copy(base / "sow" / "orders.json.sow", path)
    planned = SowSourceReader({"path": str(path)}).partitions()
    assert len(planned) == 4
    with sqlite3.connect(path) as connection:  # what a checkpoint does to the meta: a new last sequence, a new CRC
        values = dict(connection.execute("SELECT name, value FROM meta").fetchall())
        values["last_sequence"] = str(int(values["last_sequence"]) + 1)
        for name, value in (("last_sequence", values["last_sequence"]), ("meta_crc", str(meta_crc(values)))):
            connection.execute("UPDATE meta SET value = ? WHERE name = ?", (value, name))
    with pytest.raises(TaskError, match="changed while Spark was reading it") as raised:
        list(SowSourceReader({"path": str(path)}).read(planned[1]))
    found = from_spark(raised.value)
    assert found is not None and found.code == "SOW_CHANGED" and found.hint == "run the query again"


def test_id_ranges_are_contiguous_and_few():
    assert id_ranges("f", 1, 10, "c", 4) == [IdRange("f", 1, 10, "c")]  # fewer than MIN_ROWS ids: one range
    ranges = id_ranges("f", 7, 7 + 3 * MIN_ROWS, "c", 8)
    assert len(ranges) == 4 and ranges[0].first == 7 and ranges[-1].last == 7 + 3 * MIN_ROWS
    assert all(left.last + 1 == right.first for left, right in zip(ranges, ranges[1:]))
    assert len(id_ranges("f", 1, 100 * MIN_ROWS, "c", 3)) == 3


def test_an_empty_file_gives_no_rows(spark, tmp_path, base):
    from ampsctl.pipeline.spark_sow import query

    path = tmp_path / "empty.sow"
    shutil.copy(base / "sow" / "orders.json.sow", path)
    with sqlite3.connect(path) as connection:
        connection.execute("DELETE FROM records")
    assert SowSourceReader({"path": str(path)}).partitions() == []
    assert query(spark, str(path), Query()).rows == []


def test_an_executors_error_keeps_its_exit_code():
    """What a task raises reaches the driver with its message, code, hint and exit code."""
    from ampsctl.errors import EnvironmentProblem, ExitCode, InputError
    from ampsctl.pipeline.errors import to_task_error

    for error, exit_code in ((EnvironmentProblem("no access to /x", code="PERM", hint="fix it"), ExitCode.ENVIRONMENT),
                             (InputError("bad", code="BAD", hint="mend it"), ExitCode.INVALID_INPUT)):
        found = from_spark(to_task_error(error))
        assert found is not None and (found.message, found.code, found.hint) == (error.message, error.code, error.hint)
        assert found.exit_code == exit_code

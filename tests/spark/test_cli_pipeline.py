"""``ampsctl journal compact --engine spark`` and ``ampsctl journal export`` as a user runs them.

Each case runs ``python -m ampsctl`` in a subprocess (its own JVM, as on a user's machine) on
journals written by ``ampsctl journal import`` from the same inputs as the local-engine CLI
tests (json, fix and nvfix SOW topics, a Pattern topic, a transient topic). Environment
problems are made real by the environment: no java on PATH and no JAVA_HOME; a pyspark that
cannot be imported (a directory on PYTHONPATH whose ``pyspark`` raises ImportError, which is
what Python does when the package is absent); a master port nobody listens on.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

from ampsctl.journal.reader import JournalReader
from ampsctl.sow.sowfile import SowFile

DATA = Path(__file__).resolve().parents[1] / "data" / "compact"  # the journal compact CLI tests' inputs
CONFIG = (DATA / "amps.xml").read_bytes()
# The same journal, then a delete by filter and two more publishes.
JOURNAL = (DATA / "journal.jsonl").read_bytes() + b"""\
{"command":"sow_delete","topic":"orders","filter":"/region = 'APAC'"}
{"command":"publish","topic":"orders","data":{"id":4,"region":"APAC","qty":40},"expiration":5}
{"command":"publish","topic":"orders","data":{"id":5,"region":"EMEA","qty":50},"timestamp":"2026-03-01T09:05:00Z"}
"""

SPARK = ("--engine", "spark", "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2")


def _ampsctl(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ampsctl", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("pipeline-cli")
    (base / "compact.xml").write_bytes(CONFIG)
    (base / "journal.jsonl").write_bytes(JOURNAL)
    for target in ("journal", "damaged"):
        done = _ampsctl("journal", "import", "journal.jsonl", "--out", target, cwd=base)
        assert done.returncode == 0, done.stderr
    segment = next((base / "damaged").glob("*.journal"))
    data = bytearray(segment.read_bytes())
    data[data.index(b"quotes/eu") + 3] ^= 0x01  # a record in the middle: damage, not a torn tail
    segment.write_bytes(bytes(data))
    return base


def _records(directory: Path) -> dict[str, list]:
    found = {}
    for path in sorted(directory.glob("*.sow")):
        with SowFile.open(path) as sow:
            found[path.name] = sorted((r.topic, r.key, r.payload, r.sequence, r.timestamp, r.expiration, r.expires_at)
                                      for r in sow.records())
    return found


def test_compact_on_spark_equals_local(base: Path) -> None:
    local = _ampsctl("journal", "compact", "journal", "-c", "compact.xml", "-o", "local", "--format", "json", cwd=base)
    spark = _ampsctl("journal", "compact", "journal", "-c", "compact.xml", "-o", "spark", "--format", "json", *SPARK, cwd=base)
    assert local.returncode == 0, local.stderr
    assert spark.returncode == 0, spark.stderr
    summaries = [json.loads(done.stdout) for done in (local, spark)]
    assert [s.pop("engine") for s in summaries] == ["local", "spark"]
    for summary in summaries:
        summary.pop("out")
        for file in summary["files"]:
            file["path"] = Path(file["path"]).name
    assert summaries[0] == summaries[1]
    assert summaries[0]["records_read"] == 13 and summaries[0]["expired"] == 3
    assert _records(base / "local") == _records(base / "spark")
    orders = {json.loads(payload)["id"] for _, _, payload, *_ in _records(base / "spark")["orders.json.sow"]}
    assert orders == {5}  # 2 deleted by filter; 1 and 3 expired (30 s topic default), 4 too (its own 5 s)
    assert "Traceback" not in spark.stderr and "ERROR" not in spark.stderr
    # the files are ordinary SOW files
    query = _ampsctl("sow", "query", "spark/orders.json.sow", "--format", "json", cwd=base)
    assert query.returncode == 0 and len(json.loads(query.stdout)) == 1


def test_damaged_journal_fails_or_is_skipped_with_a_report(base: Path) -> None:
    failed = _ampsctl("journal", "compact", "damaged", "-c", "compact.xml", "-o", "out1", *SPARK, cwd=base)
    reader_error = _ampsctl("journal", "compact", "damaged", "-c", "compact.xml", "-o", "out0", cwd=base)
    assert failed.returncode == 3 == reader_error.returncode
    segment = str(next((base / "damaged").glob("*.journal")).relative_to(base))
    assert f"{segment}: journal segment damaged at offset" in failed.stderr
    errors = [[line for line in done.stderr.splitlines() if line.startswith("ampsctl: error:")] for done in (failed, reader_error)]
    assert errors[0] == errors[1] and len(errors[0]) == 1  # the same segment, offset and reason as the local reader
    assert not (base / "out1").exists() or not any((base / "out1").iterdir())

    skipped = _ampsctl("journal", "compact", "damaged", "-c", "compact.xml", "-o", "out2", "--skip-corrupt",
                       "--format", "json", *SPARK, cwd=base)
    assert skipped.returncode == 1, skipped.stderr
    assert "skipped damaged journal region" in skipped.stderr and segment in skipped.stderr
    summary = json.loads(skipped.stdout)
    assert summary["records_read"] == 12 and summary["corrupt_skipped"][0]["records"] == 1
    assert summary["corrupt_skipped"][0]["offset"] > 0

    local = _ampsctl("journal", "compact", "damaged", "-c", "compact.xml", "-o", "out3", "--skip-corrupt", cwd=base)
    assert local.returncode == 2 and "--engine spark" in local.stderr


def test_export_parquet_through_spark_and_jsonl_locally(base: Path) -> None:
    done = _ampsctl("journal", "export", "journal", "--format", "parquet", "--out", "parquet", "--master", "local[2]", cwd=base)
    assert done.returncode == 0, done.stderr
    assert "exported 13 journal records" in done.stdout and "spark engine" in done.stdout
    table = pq.read_table(base / "parquet").sort_by("sequence")
    records = list(JournalReader(base / "journal").scan())
    assert table.column("sequence").to_pylist() == [r.sequence for r in records]
    assert table.column("payload").to_pylist() == [r.payload for r in records]
    assert {"timestamp", "command", "topic", "message_type", "sow_key", "segment", "offset"} <= set(table.column_names)

    jsonl = _ampsctl("journal", "export", "journal", "--format", "jsonl", "--out", "jsonl", cwd=base)
    dump = _ampsctl("journal", "dump", "journal", "--format", "jsonl", cwd=base)
    assert jsonl.returncode == 0 and "local engine" in jsonl.stdout
    assert (base / "jsonl" / "part-00000.jsonl").read_text() == dump.stdout
    again = _ampsctl("journal", "export", "journal", "--format", "jsonl", "--out", "jsonl", cwd=base)
    assert again.returncode == 2 and "--force" in again.stderr
    lines = [orjson.loads(line) for line in dump.stdout.splitlines()]
    assert len(lines) == 13


def test_missing_java_exits_4_with_a_hint(base: Path, tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java anywhere (python runs by its absolute path)
    done = _ampsctl("journal", "compact", "journal", "-c", "compact.xml", "-o", "nojava", "--engine", "spark", cwd=base, env=env)
    assert done.returncode == 4, done.stderr
    assert "Java was not found" in done.stderr and "openjdk-17" in done.stderr


def test_missing_pyspark_exits_4_with_a_hint(base: Path, tmp_path: Path) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "pyspark.py").write_text("raise ImportError(\"No module named 'pyspark'\", name='pyspark')\n")
    env = {**os.environ, "PYTHONPATH": str(shadow)}
    done = _ampsctl("journal", "export", "journal", "--format", "parquet", "--out", "nopyspark", cwd=base, env=env)
    assert done.returncode == 4, done.stderr
    assert "needs pyspark" in done.stderr and "pip install 'ampsctl[spark]'" in done.stderr


def test_bad_master_is_a_clear_error_within_30_seconds(base: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nobody listens there
    began = time.monotonic()
    done = _ampsctl("journal", "compact", "journal", "-c", "compact.xml", "-o", "x", "--engine", "spark",
                    "--master", f"spark://127.0.0.1:{port}", cwd=base, timeout=60)
    assert time.monotonic() - began < 30
    assert done.returncode == 4 and f"127.0.0.1:{port} cannot be reached" not in done.stdout
    assert "cannot be reached" in done.stderr and "hint:" in done.stderr
    done = _ampsctl("journal", "compact", "journal", "-c", "compact.xml", "-o", "x", "--engine", "spark",
                    "--master", "sparkk://host:7077", cwd=base, timeout=60)
    assert done.returncode == 2 and "is not a Spark master URL" in done.stderr
    done = _ampsctl("journal", "compact", "journal", "-c", "compact.xml", "-o", "x", "--master", "local[2]", cwd=base)
    assert done.returncode == 2 and "--engine spark" in done.stderr


def test_failed_export_leaves_no_directory(base: Path) -> None:
    done = _ampsctl("journal", "export", "damaged", "--format", "jsonl", "--out", "broken-export", cwd=base)
    assert done.returncode == 3 and "journal segment damaged at offset" in done.stderr
    assert not (base / "broken-export").exists()

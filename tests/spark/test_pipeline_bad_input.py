"""Bad input to the pipeline commands: a clear error and its exit code, never a traceback.

Found by a bad-input round on ``journal compact`` and ``journal export``: outputs that are
files or cannot be created, malformed ``--conf`` values, and journals the data source
cannot carry. Most cases run the CLI in a subprocess on a tiny journal; the cases that need
a JVM share the test session (``conftest.py``) through the pipeline's functions.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ampsctl.errors import EnvironmentProblem, UsageError
from ampsctl.pipeline.engines import run_compact
from ampsctl.pipeline.jobs import CompactJob, Engine, OutputFormat
from journals import SPECS, generate

DATA = Path(__file__).resolve().parents[1] / "data" / "compact"


def _ampsctl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ampsctl", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("bad-input")
    (base / "compact.xml").write_bytes((DATA / "amps.xml").read_bytes())
    done = _ampsctl("journal", "import", str(DATA / "journal.jsonl"), "--out", "journal", cwd=base)
    assert done.returncode == 0, done.stderr
    (base / "afile").write_text("not a directory\n")
    return base


def _clean(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr and "\tat " not in done.stderr


@pytest.mark.parametrize("out_format", ["parquet", "jsonl"])
def test_compact_out_that_is_a_file_or_below_one(base: Path, out_format: str) -> None:
    done = _ampsctl("journal", "compact", "journal", "-c", "compact.xml", "-o", "afile", "--out-format", out_format, cwd=base)
    assert done.returncode == 2, done.stderr
    assert "--out afile is a file, not a directory" in done.stderr
    _clean(done)
    done = _ampsctl("journal", "compact", "journal", "-c", "compact.xml", "-o", "afile/sub", "--out-format", out_format, cwd=base)
    assert done.returncode == 4, done.stderr
    assert "cannot write afile/sub: a part of the path is a file" in done.stderr
    _clean(done)
    assert (base / "afile").read_text() == "not a directory\n"


@pytest.mark.parametrize("out_format", ["parquet", "jsonl"])
def test_compact_out_that_is_a_file_on_spark(spark, tmp_path: Path, out_format: str) -> None:
    generate(tmp_path / "journal", 50)
    (tmp_path / "afile").write_text("x")
    job = CompactJob(str(tmp_path / "journal"), SPECS, str(tmp_path / "afile"), keep_going=True, output=OutputFormat(out_format))
    with pytest.raises(UsageError, match="is a file, not a directory"):
        run_compact(job, Engine.SPARK, spark=spark)


@pytest.mark.parametrize("args", [("--format", "jsonl"), ("--format", "parquet", "--master", "local[1]")])
def test_export_out_below_a_file_or_unwritable(base: Path, args: tuple[str, ...]) -> None:
    done = _ampsctl("journal", "export", "journal", *args, "-o", "afile/x", cwd=base)
    assert done.returncode == 4, done.stderr
    assert "cannot write afile/x: a part of the path is a file" in done.stderr
    _clean(done)
    done = _ampsctl("journal", "export", "journal", *args, "-o", "/proc/ampsctl-export", cwd=base)  # not creatable, even as root
    assert done.returncode == 4, done.stderr
    assert "cannot write /proc/ampsctl-export" in done.stderr and "hint:" in done.stderr
    _clean(done)


@pytest.mark.parametrize(("conf", "message"), [
    ("spark.driver.memory=lots", "--conf spark.driver.memory='lots' is not a memory size"),  # Java's -Xmx: no JVM start
    ("spark.driver.memory=1.5g", "is not a memory size"),
    ("spark.executor.memory=-1g", "--conf spark.executor.memory='-1g' is not a memory size"),
    ("spark.driver.memory=", "is not a memory size"),
    ("spark.master=yarn", "give the master with --master"),
    ("spark.sql.shuffle.partitions=abc",  # refused by Spark's SQL session state, after the JVM started
     "Spark refused a --conf value: The value 'abc' in the config \"spark.sql.shuffle.partitions\" is invalid"),
])
def test_bad_conf_is_a_usage_error_without_java_output(base: Path, conf: str, message: str) -> None:
    done = _ampsctl("journal", "compact", "journal", "-c", "compact.xml", "-o", "conf-out", "--engine", "spark",
                    "--master", "local[1]", "--conf", conf, cwd=base)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "hint:" in done.stderr
    _clean(done)
    assert "Invalid maximum heap size" not in done.stderr and "Exception in thread" not in done.stderr


def test_memory_sizes_spark_accepts_pass() -> None:
    from ampsctl.pipeline.session import check_conf

    check_conf({"spark.driver.memory": "2G", "spark.executor.memory": "512m", "spark.driver.maxResultSize": "0",
                "spark.executor.memoryOverhead": "1gb", "spark.foo": "anything"})
    with pytest.raises(UsageError, match="not a memory size"):
        check_conf({"spark.driver.memory": "2gb"})  # Java's -Xmx2gb is invalid


def test_unsigned_64_bit_fields_from_2_63_up(spark, tmp_path: Path) -> None:
    """A journal's expiration and publisher sequence are unsigned 64-bit: the source carries
    them exactly (DECIMAL(20,0)); as BIGINT the task failed with a Python traceback."""
    from ampsctl.journal.record import Command
    from ampsctl.journal.writer import FsyncPolicy, JournalWriter
    from ampsctl.sow.errors import ReplayError
    from ampsctl.sow.sowfile import SowFile
    from journals import T0

    directory = tmp_path / "journal"
    with JournalWriter.open(directory, fsync=FsyncPolicy.NEVER) as writer:
        writer.append(T0, Command.PUBLISH, "orders", "json", b'{"id": 1}', expiration=(1 << 64) - 1)  # refused by the SOW
        writer.append(T0 + 1, Command.PUBLISH, "orders", "json", b'{"id": 2}', publisher_sequence=1 << 63)
        writer.append(T0 + 2, Command.PUBLISH, "orders", "json", b'{"id": 3}', expiration=1 << 63)
    rows = spark.read.format("ampsctl-journal").load(str(directory)).orderBy("sequence").collect()
    assert [(row.expiration, row.publisher_sequence) for row in rows] == [((1 << 64) - 1, None), (None, 1 << 63), (1 << 63, None)]
    found = []
    for engine in (Engine.LOCAL, Engine.SPARK):
        refused: list[ReplayError] = []
        outcome = run_compact(CompactJob(str(directory), SPECS, str(tmp_path / engine.value), keep_going=True), engine,
                              spark=spark, on_error=refused.append)
        with SowFile.open(outcome.result.files[0].path) as sow:
            records = [(r.key, r.payload, r.sequence, r.expiration) for r in sow.records()]
        found.append((records, [(e.sequence, e.message) for e in refused], outcome.result.skipped))
    assert found[0] == found[1] and found[0][2] == 2 and len(found[0][0]) == 1
    with pytest.raises(ReplayError, match="expiration 18446744073709551615 s"):
        run_compact(CompactJob(str(directory), SPECS, str(tmp_path / "failed")), Engine.SPARK, spark=spark)


@pytest.mark.parametrize("name", ["amps.xml", "00000001.journal"])
def test_a_file_that_is_not_a_segment_is_the_local_engines_error(spark, tmp_path: Path, name: str) -> None:
    from ampsctl.errors import InputError

    path = tmp_path / name
    path.write_bytes((DATA / "amps.xml").read_bytes())
    errors = []
    for engine in (Engine.LOCAL, Engine.SPARK):
        with pytest.raises(InputError) as info:
            run_compact(CompactJob(str(path), SPECS, str(tmp_path / engine.value)), engine, spark=spark)
        errors.append((type(info.value).__name__, info.value.message, info.value.code, info.value.hint, str(info.value.location)))
    assert errors[0] == errors[1]
    assert errors[0][1].startswith("not a readable ampsctl journal segment: wrong magic number")

"""Usage errors of the Spark commands come out before Spark does (docs/pipeline.md: a query is
planned before a JVM starts).

``sow query --engine spark --as-of T`` used to start Spark (about 15 s) and only then exit 2;
so did an existing or misplaced ``--out`` of ``journal compact --engine spark`` and ``journal
export``. Each case runs the CLI's ``main`` in a fresh interpreter and checks, besides the exit
code and the message, that pyspark (and py4j, its JVM bridge) was never imported: no timing,
and no session could have been created. No JVM is needed to run this file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from probe import run_probe

DATA = Path(__file__).resolve().parents[1] / "data" / "compact"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A journal, its config, the SOW files compacted from it (local engine) and an export."""
    base = tmp_path_factory.mktemp("usage")
    (base / "compact.xml").write_bytes((DATA / "amps.xml").read_bytes())
    for args in (("journal", "import", str(DATA / "journal.jsonl"), "--out", "journal"),
                 ("journal", "compact", "journal", "-c", "compact.xml", "-o", "sow"),
                 ("journal", "export", "journal", "--format", "jsonl", "-o", "exported")):
        done = subprocess.run([sys.executable, "-m", "ampsctl", *args], cwd=base, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    (base / "afile").write_text("not a directory\n")
    return base


def _probe(base: Path, *args: str) -> tuple[object, list[str], str]:
    """(exit code, the pyspark and py4j modules imported, stderr) of ``ampsctl ARGS`` in ``base``."""
    probed = run_probe(args, cwd=base)
    return probed.exit, [m for m in probed.modules if m.split(".")[0] in ("pyspark", "py4j")], probed.stderr


SOW = "sow/orders.json.sow"
COMPACT = ("journal", "compact", "journal", "-c", "compact.xml", "--engine", "spark")
CASES = [
    # sow query --engine spark
    (("sow", "query", SOW, "--engine", "spark", "--as-of", "20260301T090000Z"), 2, "--as-of reads a History topic"),
    (("sow", "query", SOW, "--engine", "spark", "--message-type", "json"), 2, "--message-type is for Parquet input"),
    (("sow", "query", SOW, "--engine", "spark", "--master", "spork://x"), 2, "is not a Spark master URL"),
    (("sow", "query", SOW, "--engine", "spark", "--conf", "spark.driver.memory=lots"), 2, "is not a memory size"),
    (("sow", "query", SOW, "--engine", "spark", "--conf", "novalue"), 2, "is not KEY=VALUE"),
    (("sow", "query", SOW, "--engine", "spark", "--filter", "/qty > AND"), 3, "unexpected keyword AND"),
    (("sow", "query", SOW, "--engine", "spark", "--topic", "("), 3, "invalid topic regex"),
    # journal compact --engine spark
    ((*COMPACT, "-o", "sow"), 2, "already exists"),
    ((*COMPACT, "-o", "afile"), 2, "--out afile is a file, not a directory"),
    ((*COMPACT, "-o", "afile", "--out-format", "parquet"), 2, "--out afile is a file, not a directory"),
    ((*COMPACT, "-o", "new", "--master", "spork://x"), 2, "is not a Spark master URL"),
    ((*COMPACT, "-o", "new", "--conf", "spark.executor.memory=-1g"), 2, "is not a memory size"),
    # journal export (Spark for parquet, or with --engine spark)
    (("journal", "export", "journal", "--format", "parquet", "-o", "exported"), 2, "exported already exists"),
    (("journal", "export", "journal", "--format", "jsonl", "--engine", "spark", "-o", "exported"), 2, "exported already exists"),
    (("journal", "export", "journal", "--format", "parquet", "-o", "new", "--master", "spork://x"), 2, "is not a Spark master URL"),
    (("journal", "export", "journal", "--format", "jsonl", "--conf", "a=b", "-o", "new"), 2, "--master and --conf need --engine spark"),
]


@pytest.mark.parametrize(("args", "code", "message"), CASES, ids=lambda value: " ".join(value) if isinstance(value, tuple) else None)
def test_usage_error_without_spark(base: Path, args: tuple[str, ...], code: int, message: str) -> None:
    exit_code, spark_modules, stderr = _probe(base, *args)
    assert exit_code == code, stderr
    assert message in stderr
    assert "Traceback" not in stderr
    assert spark_modules == [], f"pyspark was imported before the usage error: {spark_modules[:3]}"


def test_refused_outputs_are_left_alone(base: Path) -> None:
    before = sorted(path.name for path in (base / "exported").iterdir())
    assert _probe(base, "journal", "export", "journal", "--format", "parquet", "-o", "exported")[0] == 2
    assert sorted(path.name for path in (base / "exported").iterdir()) == before
    assert not (base / "new").exists()

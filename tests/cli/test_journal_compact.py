"""``ampsctl journal compact``: golden-file tests, on journals written by ``ampsctl journal import``.

Each case gets a working directory with ``compact.xml`` (the config) and the journals
``journal`` (good), ``bad-record`` (a publish without its key field) and ``damaged`` (a flipped
byte in the middle), all made by ``journal import``; then ``python -m ampsctl journal compact``
runs there and its command line, exit code, stdout and stderr are compared with
``tests/cli/golden/compact/<case>.txt``. The files it writes are then read back with
``ampsctl sow`` commands (outside the goldens) to prove they are ordinary SOW files.

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/cli/test_journal_compact.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from clitools import GoldenCase, check_golden, orphan_goldens, run_golden

GOLDEN = Path(__file__).resolve().parent / "golden" / "compact"

DATA = Path(__file__).resolve().parents[1] / "data" / "compact"  # shared with tests/spark/test_cli_pipeline.py
CONFIG = (DATA / "amps.xml").read_bytes()
JOURNAL = (DATA / "journal.jsonl").read_bytes()

BAD_RECORD = b"""\
{"command":"publish","topic":"orders","data":{"id":1,"region":"EMEA"}}
{"command":"publish","topic":"orders","data":{"region":"no id"}}
{"command":"publish","topic":"orders","data":{"id":2,"region":"APAC"}}
"""


def _ampsctl(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "ampsctl", *args], cwd=cwd, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("compact-inputs")
    (base / "compact.xml").write_bytes(CONFIG)
    (base / "journal.jsonl").write_bytes(JOURNAL)
    (base / "bad.jsonl").write_bytes(BAD_RECORD)
    for source, target in (("journal.jsonl", "journal"), ("bad.jsonl", "bad-record"), ("journal.jsonl", "damaged")):
        done = _ampsctl("journal", "import", source, "--out", target, cwd=base)
        assert done.returncode == 0, done.stderr.decode()
    segment = next((base / "damaged").glob("*.journal"))
    data = bytearray(segment.read_bytes())
    data[data.index(b"quotes/eu") + 3] ^= 0x01  # a record in the middle: a checksum error, not a torn tail
    segment.write_bytes(bytes(data))
    (base / "broken.xml").write_bytes(b"<AMPSConfig><SOW><Topic><Name>x</Name></Topic>")
    (base / "taken").write_text("a file where --out wants a directory\n")
    return base


def _bookmark(base: Path, sequence: int) -> str:
    from ampsctl.journal.reader import JournalReader

    found = JournalReader(base / "journal").record_at(sequence)
    assert found is not None
    return found.bookmark


Case = GoldenCase
COMPACT = ("compact", "journal", "--config", "compact.xml")
CASES = [
    Case("compact-text", (*COMPACT, "--out", "out")),
    Case("compact-json", (*COMPACT, "--out", "out", "--format", "json")),
    Case("compact-as-of-timestamp", (*COMPACT, "--out", "out", "--as-of", "20260301T090000.003000Z")),
    Case("compact-as-of-bookmark", (*COMPACT, "--out", "out", "--as-of", "BOOKMARK5")),
    Case("compact-as-of-epoch", (*COMPACT, "--out", "out", "--as-of", "0")),
    Case("compact-now-expires", (*COMPACT, "--out", "out", "--now", "2026-03-01T09:02:00Z")),
    Case("compact-keep-going", ("compact", "bad-record", "--config", "compact.xml", "--out", "out", "--keep-going")),
    Case("compact-error-bad-record", ("compact", "bad-record", "--config", "compact.xml", "--out", "out")),
    Case("compact-error-damaged-journal", ("compact", "damaged", "--config", "compact.xml", "--out", "out")),
    Case("compact-error-bad-config", ("compact", "journal", "--config", "broken.xml", "--out", "out")),
    Case("compact-error-missing-journal", ("compact", "nowhere", "--config", "compact.xml", "--out", "out")),
    Case("compact-error-unknown-bookmark", (*COMPACT, "--out", "out", "--as-of", "1|99|")),
    Case("compact-error-bad-as-of", (*COMPACT, "--out", "out", "--as-of", "last tuesday")),
    Case("compact-error-out-is-a-file", (*COMPACT, "--out", "taken")),
]


def _run(case: Case, inputs: Path, cwd: Path) -> str:
    for item in inputs.iterdir():
        (shutil.copytree if item.is_dir() else shutil.copy)(item, cwd / item.name)
    if "BOOKMARK5" in case.args:
        case = GoldenCase(case.name, tuple(_bookmark(inputs, 5) if a == "BOOKMARK5" else a for a in case.args))
    return run_golden("journal", case, cwd)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden(case: Case, inputs: Path, tmp_path: Path) -> None:
    check_golden(GOLDEN, case, _run(case, inputs, tmp_path))


def test_refuses_to_overwrite_without_force(inputs: Path, tmp_path: Path) -> None:
    first = _run(CASES[0], inputs, tmp_path)
    assert "\nexit: 0\n" in first
    again = _ampsctl("journal", *COMPACT, "--out", "out", cwd=tmp_path)
    assert again.returncode == 2 and b"already exists" in again.stderr and b"--force" in again.stderr
    forced = _ampsctl("journal", *COMPACT, "--out", "out", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr.decode()


def test_output_files_are_sow_files_every_sow_command_reads(inputs: Path, tmp_path: Path) -> None:
    assert "\nexit: 0\n" in _run(CASES[0], inputs, tmp_path)
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == ["%2Fett%2Forder.fix.sow", "orders.json.sow", "quotes.nvfix.sow"]
    for name in files:
        for command in (("stats", "--verify"), ("dump", "--format", "jsonl"), ("query", "--format", "json")):
            done = _ampsctl("sow", command[0], f"out/{name}", *command[1:], cwd=tmp_path)
            assert done.returncode == 0, (name, command, done.stderr.decode())
    quotes = json.loads(_ampsctl("sow", "query", "out/quotes.nvfix.sow", "--format", "json", "--order-by", "/Symbol", cwd=tmp_path).stdout)
    assert [(q["topic"], q["message"]) for q in quotes] == [
        ("quotes/us", "Symbol=IBM\u0001Bid=101.5\u0001Ask=102\u0001"), ("quotes/eu", "Symbol=SAP\u0001Bid=99\u0001")]
    orders = json.loads(_ampsctl("sow", "query", "out/orders.json.sow", "--filter", "/region = 'EMEA'", "--format", "json", cwd=tmp_path).stdout)
    assert [o["message"] for o in orders] == [{"id": 3, "region": "EMEA", "qty": 30}]  # id 1 expired (30 s) at 09:00:30
    assert json.loads(_ampsctl("sow", "query", "out/%2Fett%2Forder.fix.sow", "--format", "json", cwd=tmp_path).stdout) == []


def test_case_names_are_unique() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


def test_no_orphan_golden_files() -> None:
    orphans = orphan_goldens(GOLDEN, CASES)
    assert not orphans, f"golden files without a case (delete them): {orphans}"


def test_exit_codes_follow_the_contract() -> None:
    expected = {
        "compact-text": 0, "compact-keep-going": 1, "compact-error-bad-record": 3, "compact-error-damaged-journal": 3,
        "compact-error-bad-config": 3, "compact-error-unknown-bookmark": 3, "compact-error-bad-as-of": 2,
        "compact-error-out-is-a-file": 2,
    }
    for name, code in expected.items():
        text = (GOLDEN / f"{name}.txt").read_text(encoding="utf-8")
        assert f"\nexit: {code}\n" in text, name

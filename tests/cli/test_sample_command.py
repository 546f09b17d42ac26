"""`ampsctl config sample` prints a starter config that validates clean.

The output is written to a temporary file and checked by `ampsctl validate` (exit 0, no
findings at any severity). The starter must also keep what it promises: an instance Name,
a tcp json transport on 9007, Admin on 8085, stdout logging, a transaction log, a SOW topic
with Key and FileName, a queue over a transaction-log topic, a view, a conflated topic, and
a commented-out manifold-affinity action that validates clean once uncommented.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import etree

from ampsctl.config.lint import LintOptions, lint_paths

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "ampsctl" / "data" / "sample-config.xml"
# The switched-off action: a line holding only "<!--", the <Actions> block, a line holding only "-->".
COMMENTED_ACTIONS = re.compile(r"^[ \t]*<!--[ \t]*\n([ \t]*<Actions>.*?</Actions>[ \t]*)\n[ \t]*-->[ \t]*$", re.S | re.M)


def _ampsctl(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ampsctl", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def sample_text() -> str:
    proc = _ampsctl("config", "sample")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip(), "ampsctl config sample printed nothing"
    return proc.stdout


def test_sample_is_the_packaged_file(sample_text: str) -> None:
    assert sample_text == DATA.read_text()


def test_sample_validates_clean(sample_text: str, tmp_path: Path) -> None:
    config = tmp_path / "amps.xml"
    config.write_text(sample_text)
    proc = _ampsctl("validate", str(config), "--format", "json", "--fail-on", "info")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert [f for r in report["files"] for f in r["findings"]] == []
    assert all(r["suppressed"] == 0 for r in report["files"]), "the starter must not hide findings with suppressions"


def test_sample_validates_clean_text_report(sample_text: str, tmp_path: Path) -> None:
    config = tmp_path / "amps.xml"
    config.write_text(sample_text)
    proc = _ampsctl("validate", str(config))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_sample_has_the_promised_sections(sample_text: str) -> None:
    root = etree.fromstring(sample_text.encode())
    assert root.tag == "AMPSConfig"
    assert (root.findtext("Name") or "").strip()
    transports = root.findall("Transports/Transport")
    assert any(
        t.findtext("Type") == "tcp" and t.findtext("InetAddr") == "9007" and t.findtext("MessageType") == "json"
        for t in transports
    )
    assert root.findtext("Admin/InetAddr") == "8085"
    assert any(t.findtext("Protocol") == "stdout" for t in root.findall("Logging/Target"))
    txlog = root.find("TransactionLog")
    assert txlog is not None and txlog.findtext("JournalDirectory")
    recorded = {t.findtext("Name") for t in txlog.findall("Topic")}
    topics = root.findall("SOW/Topic")
    assert any(t.find("Key") is not None and t.findtext("FileName") for t in topics)
    queues = root.findall("SOW/Queue")
    assert any((q.findtext("UnderlyingTopic") or q.findtext("Name")) in recorded for q in queues)
    assert root.findall("SOW/View")
    assert root.findall("SOW/ConflatedTopic")
    assert root.find("Actions") is None, "the manifold-affinity action ships commented out"
    commented = COMMENTED_ACTIONS.search(sample_text)
    assert commented and "amps-action-on-manifold-affinity" in commented.group(1)


def test_uncommented_action_validates_clean(sample_text: str, tmp_path: Path) -> None:
    enabled = COMMENTED_ACTIONS.sub(lambda m: m.group(1), sample_text, count=1)
    assert "<Actions>" in enabled and enabled != sample_text
    root = etree.fromstring(enabled.encode())
    assert root.findtext("Actions/Action/On/Module") == "amps-action-on-manifold-affinity"
    config = tmp_path / "amps.xml"
    config.write_text(enabled)
    report = lint_paths([str(config)], LintOptions(env={}))
    assert [f"{f.location.line}:{f.location.col} {f.code}: {f.message}" for f in report.findings] == []

"""What a lint run imports, and how it reads files, through the public entry point.

`ampsctl validate` pays for every module it imports on every run, so modules that only some
configs or options need (regex for topic patterns, the baseline module, traceback for a
failing worker) are imported on demand. Files are read with plain system calls; the error
paths (directory, unreadable file, missing file) keep their messages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ampsctl.config.lint import LintOptions, lint_paths

PLAIN = """<AMPSConfig>
  <Name>demo</Name>
  <SOW>
    <Topic><Name>orders</Name><MessageType>json</MessageType><Key>/id</Key><FileName>./sow/%n.sow</FileName></Topic>
  </SOW>
</AMPSConfig>
"""
# A pattern topic and a later topic it captures (SOWT-027 searches the pattern with regex).
WITH_PATTERN = PLAIN.replace(
    "</SOW>",
    "  <Topic><Name>by-desk</Name><Pattern>^orders/.*</Pattern><MessageType>json</MessageType><Key>/id</Key>"
    "<FileName>./sow/%n.sow</FileName></Topic>\n"
    "    <Topic><Name>orders/eu</Name><MessageType>json</MessageType><Key>/id</Key><FileName>./sow/eu.sow</FileName></Topic>\n"
    "  </SOW>",
)

PROBE = """
import json, sys
from ampsctl.config.lint import LintOptions, lint_paths
report = lint_paths(sys.argv[1:], LintOptions(env={}, jobs=1))
print(json.dumps({"codes": sorted(f.code for f in report.findings), "modules": sorted(sys.modules)}))
"""


def _lint_in_fresh_interpreter(*paths: Path) -> tuple[list[str], set[str]]:
    done = subprocess.run([sys.executable, "-c", PROBE, *map(str, paths)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["codes"], set(result["modules"])


def test_a_config_without_patterns_does_not_import_regex(tmp_path: Path) -> None:
    path = tmp_path / "plain.xml"
    path.write_text(PLAIN)
    codes, modules = _lint_in_fresh_interpreter(path)
    assert "regex" not in modules
    assert not {"ampsctl.config.baseline", "traceback"} & modules


def test_a_pattern_topic_imports_regex_when_checked(tmp_path: Path) -> None:
    plain, pattern = tmp_path / "plain.xml", tmp_path / "pattern.xml"
    plain.write_text(PLAIN)
    pattern.write_text(WITH_PATTERN)
    _, modules = _lint_in_fresh_interpreter(plain, pattern)
    assert "regex" in modules
    codes = sorted(f.code for f in lint_paths([str(pattern)], LintOptions(env={}, jobs=1)).findings)
    assert "SOWT-027" in codes  # the regex search found the captured topic
    assert _lint_in_fresh_interpreter(pattern)[0] == codes


def _only_finding(path: Path) -> tuple[str, str]:
    report = lint_paths([str(path)], LintOptions(env={}, jobs=1))
    [finding] = report.findings
    assert finding.fatal
    return finding.code, finding.message


def test_a_directory_is_reported(tmp_path: Path) -> None:
    (tmp_path / "conf.xml").mkdir()
    assert _only_finding(tmp_path / "conf.xml") == ("GEN-001", f"'{tmp_path / 'conf.xml'}' is a directory, not a config file")


def test_a_missing_file_is_reported(tmp_path: Path) -> None:
    assert _only_finding(tmp_path / "gone.xml") == ("GEN-001", f"no such file: '{tmp_path / 'gone.xml'}'")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "secret.xml"
    path.write_text(PLAIN)
    path.chmod(0)
    assert _only_finding(path) == ("GEN-001", f"permission denied reading '{path}'")


def test_a_file_over_the_limit_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "big.xml"
    path.write_text(PLAIN + "<!--" + "x" * 2_000_000 + "-->\n")
    report = lint_paths([str(path)], LintOptions(env={}, jobs=1, max_file_bytes=1024 * 1024))
    [finding] = report.findings
    assert finding.code == "GEN-001" and "larger than the 1 MB limit" in finding.message


def test_a_file_read_in_several_reads_is_whole(tmp_path: Path) -> None:
    """A config larger than one read returns (pipes return at most 64 KB) reads whole."""
    topics = "".join(
        f"<Topic><Name>t{i}</Name><MessageType>json</MessageType><Key>/id</Key><FileName>./sow/%n.sow</FileName></Topic>\n"
        for i in range(5000)
    )
    path = tmp_path / "many.xml"
    path.write_text(PLAIN.replace("<SOW>\n", "<SOW>\n" + topics))
    assert path.stat().st_size > 256 * 1024
    report = lint_paths([str(path)], LintOptions(env={}, jobs=1))
    assert [f for f in report.findings if f.fatal] == []

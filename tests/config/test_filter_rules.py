"""`ampsctl validate` checks config filters with the parser of `ampsctl filter check` (GEN-013,
ACT-022): the same verdict, the error at its line:col inside the value, and the filter package
loaded only for a config that holds a filter. Positions for every place are in
rule_cases/GEN-013.toml and ACT-022.toml."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ampsctl.cli.app import main

CONFLATED = """<AMPSConfig>
  <Name>a</Name>
  <SOW>
    <Topic><Name>orders</Name><MessageType>json</MessageType><Key>/id</Key><FileName>./sow/%n.sow</FileName></Topic>
    <ConflatedTopic>
      <Name>orders-C</Name>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <MessageType>json</MessageType>
      <Interval>1s</Interval>
      <Filter>FILTER</Filter>
    </ConflatedTopic>
  </SOW>
</AMPSConfig>
"""
NO_FILTER = """<AMPSConfig>
  <Name>a</Name>
  <SOW><Topic><Name>orders</Name><MessageType>json</MessageType><Key>/id</Key><FileName>./sow/%n.sow</FileName></Topic></SOW>
</AMPSConfig>
"""


def _run(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    return code, capsys.readouterr().out


def test_validate_reports_what_filter_check_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "amps.xml"
    path.write_text(CONFLATED.replace("FILTER", "/qty &gt; AND"))
    code, out = _run("filter", "check", "/qty > AND", capsys=capsys)
    assert code == 3 and "unexpected keyword AND (column 8)" in out
    code, out = _run("validate", str(path), "--format", "json", capsys=capsys)
    assert code == 1
    findings = json.loads(out)["files"][0]["findings"]
    assert [(f["code"], f["line"], f["column"]) for f in findings] == [("GEN-013", 10, 25)]
    assert "unexpected keyword AND" in findings[0]["message"]


def test_valid_filter_has_no_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "amps.xml"
    path.write_text(CONFLATED.replace("FILTER", "/qty &gt; 100 AND /region = 'A'"))
    code, out = _run("validate", str(path), capsys=capsys)
    assert code == 0, out
    assert "no findings" in out


_PROBE = """
import sys
from ampsctl.config.lint import LintOptions, lint_paths
report = lint_paths([sys.argv[1]], LintOptions(jobs=1))
print(len(report.findings), "ampsctl.filter.parser" in sys.modules)
"""


@pytest.mark.parametrize(("text", "expected"), [(NO_FILTER, "0 False"), (CONFLATED.replace("FILTER", "/qty &gt; 1"), "0 True")])
def test_filter_package_loaded_only_for_a_filter(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "amps.xml"
    path.write_text(text)
    done = subprocess.run([sys.executable, "-c", _PROBE, str(path)], capture_output=True, text=True, timeout=120)
    assert done.stdout.split("\n")[0] == expected, done.stderr

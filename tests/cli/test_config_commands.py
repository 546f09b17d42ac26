"""``ampsctl config rules|explain|dump`` and ``ampsctl --version`` (in-process), plus a few
runs of the real entry points (console script and ``python -m ampsctl``) in a subprocess."""

from __future__ import annotations

import json

import pytest
from clitools import CLEAN, ERROR_AND_WARNING, run_ampsctl
from lxml import etree

from ampsctl import __version__
from ampsctl.config.registry import all_rules

# ----------------------------------------------------------------------------------- rules


def test_rules_text_lists_every_rule(cli):
    result = cli("config", "rules")
    assert result.code == 0
    for rule in all_rules():
        assert rule.code in result.stdout
        assert rule.name in result.stdout


def test_rules_json(cli):
    result = cli("config", "rules", "--format", "json")
    assert result.code == 0
    rows = json.loads(result.stdout)
    assert [r["code"] for r in rows] == [r.code for r in all_rules()]
    gen006 = next(r for r in rows if r["code"] == "GEN-006")
    assert gen006["name"] == "unknown-element"
    assert gen006["severity"] == "warning"
    assert gen006["summary"]
    assert set(gen006) >= {"code", "name", "severity", "summary", "source"}


def test_rules_bad_format_is_usage_error(cli):
    assert cli("config", "rules", "--format", "yaml").code == 2


# --------------------------------------------------------------------------------- explain


def test_explain_shows_docs_and_examples(cli):
    result = cli("config", "explain", "GEN-008")
    assert result.code == 0
    assert result.stdout.startswith("GEN-008 include-problem (error)")
    assert "Bad:" in result.stdout and "Good:" in result.stdout
    assert "<Include>does-not-exist.xml</Include>" in result.stdout


def test_explain_accepts_lower_case(cli):
    assert cli("config", "explain", "gen-006").stdout.startswith("GEN-006 unknown-element")


@pytest.mark.parametrize("code", ["NOPE-001", "GEN", "GEN-9999", ""])
def test_explain_unknown_code_exits_2(cli, code):
    result = cli("config", "explain", code)
    assert result.code == 2
    assert "unknown rule code" in result.stderr
    assert "ampsctl config rules" in result.stderr


# ------------------------------------------------------------------------------------ dump


def test_dump_expands_env_and_includes(cli, write):
    write(
        "amps.xml",
        """<AMPSConfig>
  <Name>${AMPSCTL_TEST_NAME}</Name>
  <Include>parts/admin.xml</Include>
</AMPSConfig>
""",
    )
    write("parts/admin.xml", "<Admin>\n  <InetAddr>${AMPSCTL_TEST_PORT}</InetAddr>\n  <Include>stats.xml</Include>\n</Admin>\n")
    write("parts/stats.xml", "<FileName>stats.db</FileName>\n")
    result = cli("config", "dump", "amps.xml", "--env", "AMPSCTL_TEST_NAME=ny1", "--env", "AMPSCTL_TEST_PORT=8085")
    assert result.code == 0, result.output
    root = etree.fromstring(result.stdout.encode())
    assert root.findtext("Name") == "ny1"
    assert root.findtext("Admin/InetAddr") == "8085"
    assert root.findtext("Admin/FileName") == "stats.db"
    assert root.find(".//Include") is None
    assert "<!-- Start" not in result.stdout  # no marker comments unless asked for


def test_dump_include_comment_true(cli, write):
    write(
        "amps.xml",
        '<AMPSConfig>\n  <Name>a</Name>\n  <Include comment="true">admin.xml</Include>\n</AMPSConfig>\n',
    )
    write("admin.xml", "<Admin><InetAddr>8085</InetAddr></Admin>\n")
    result = cli("config", "dump", "amps.xml")
    assert result.code == 0
    out = result.stdout
    start = out.index("<!-- Start <Include>admin.xml</Include> -->")
    middle = out.index("<Admin><InetAddr>8085</InetAddr></Admin>")
    end = out.index("<!-- End <Include>admin.xml</Include> -->")
    assert start < middle < end


def test_dump_include_comment_default(cli, write):
    write(
        "amps.xml",
        "<AMPSConfig>\n  <Name>a</Name>\n  <ConfigIncludeCommentDefault>true</ConfigIncludeCommentDefault>\n"
        '  <Include>admin.xml</Include>\n  <Include comment="false">admin2.xml</Include>\n</AMPSConfig>\n',
    )
    write("admin.xml", "<Admin/>\n")
    write("admin2.xml", "<Modules/>\n")
    out = cli("config", "dump", "amps.xml").stdout
    assert "<!-- Start <Include>admin.xml</Include> -->" in out
    assert "admin2.xml" not in out


def test_dump_keeps_comment_references_unexpanded(cli, write):
    write("amps.xml", "<AMPSConfig>\n  <Name>a</Name>\n  <!-- ${AMPSCTL_TEST_NAME} -->\n</AMPSConfig>\n")
    result = cli("config", "dump", "amps.xml", "--env", "AMPSCTL_TEST_NAME=expanded")
    assert "<!-- ${AMPSCTL_TEST_NAME} -->" in result.stdout


def test_dump_with_findings_exits_1_and_reports_on_stderr(cli, write):
    write("amps.xml", "<AMPSConfig>\n  <Name>${AMPSCTL_TEST_SURELY_UNDEFINED}</Name>\n</AMPSConfig>\n")
    result = cli("config", "dump", "amps.xml")
    assert result.code == 1
    assert "amps.xml:2:9: error GEN-007" in result.stderr
    assert "<Name>${AMPSCTL_TEST_SURELY_UNDEFINED}</Name>" in result.stdout


def test_dump_unreadable_file_exits_3(cli):
    result = cli("config", "dump", "missing.xml")
    assert result.code == 3
    assert "no such file: 'missing.xml'" in result.stderr


def test_dump_with_an_included_file_that_cannot_be_parsed_exits_3(cli, write):
    write("amps.xml", "<AMPSConfig>\n  <Name>x</Name>\n  <Include>bad.xml</Include>\n</AMPSConfig>\n")
    write("bad.xml", "<Admin>")
    result = cli("config", "dump", "amps.xml")
    assert result.code == 3
    assert "bad.xml:1:8: error GEN-001: in included file: malformed XML" in result.stderr
    assert "hint: fix the XML syntax" in result.stderr


# --------------------------------------------------------------------------------- version


def test_version(cli):
    result = cli("--version")
    assert result.code == 0
    assert result.stdout.strip() == f"ampsctl {__version__}"


def test_no_arguments_prints_help(cli):
    result = cli()
    assert "Usage" in result.output
    assert result.code in (0, 2)


# ------------------------------------------------------------- the real entry points (slow)


@pytest.mark.parametrize("module", [False, True], ids=["console-script", "python-m"])
def test_entry_point_version(tmp_path, module):
    result = run_ampsctl("--version", cwd=tmp_path, module=module)
    assert result.code == 0
    assert result.stdout.strip() == f"ampsctl {__version__}"


@pytest.mark.parametrize("module", [False, True], ids=["console-script", "python-m"])
def test_entry_point_exit_codes(tmp_path, module):
    (tmp_path / "clean.xml").write_text(CLEAN)
    (tmp_path / "findings.xml").write_text(ERROR_AND_WARNING)
    assert run_ampsctl("validate", "clean.xml", cwd=tmp_path, module=module).code == 0
    findings = run_ampsctl("validate", "findings.xml", cwd=tmp_path, module=module)
    assert findings.code == 1
    assert "findings.xml:2:9: error GEN-007" in findings.stdout
    assert run_ampsctl("validate", "clean.xml", "--bogus", cwd=tmp_path, module=module).code == 2
    assert run_ampsctl("validate", "missing.xml", cwd=tmp_path, module=module).code == 3


def test_entry_point_sarif_to_file(tmp_path):
    (tmp_path / "findings.xml").write_text(ERROR_AND_WARNING)
    result = run_ampsctl("validate", "findings.xml", "-f", "sarif", "-o", "out.sarif", cwd=tmp_path, module=True)
    assert result.code == 1
    assert result.stdout == ""
    log = json.loads((tmp_path / "out.sarif").read_text())
    assert {r["ruleId"] for r in log["runs"][0]["results"]} == {"GEN-006", "GEN-007"}


def test_entry_point_env_from_process_environment(tmp_path):
    (tmp_path / "amps.xml").write_text("<AMPSConfig>\n  <Name>${AMPSCTL_TEST_FROM_ENV}</Name>\n</AMPSConfig>\n")
    assert run_ampsctl("validate", "amps.xml", cwd=tmp_path).code == 1
    assert run_ampsctl("validate", "amps.xml", cwd=tmp_path, env={"AMPSCTL_TEST_FROM_ENV": "x"}).code == 0

"""``ampsctl validate``: exit codes, formats, output files, rule selection, --env, suppressions
and baselines. Runs the CLI in-process (see conftest.py) for speed."""

from __future__ import annotations

import json

import pytest
from clitools import CLEAN, ERROR_AND_WARNING, WARNING_ONLY
from lxml import etree

# ------------------------------------------------------------------------------- exit codes


def test_clean_file_exits_0(cli, write):
    write("amps.xml", CLEAN)
    result = cli("validate", "amps.xml")
    assert result.code == 0, result.output
    assert "1 file checked, no findings" in result.stdout


def test_error_finding_exits_1_with_location(cli, write):
    write("amps.xml", ERROR_AND_WARNING)
    result = cli("validate", "amps.xml")
    assert result.code == 1
    assert "amps.xml:2:9: error GEN-007" in result.stdout
    assert "amps.xml:3:3: warning GEN-006" in result.stdout
    assert "1 error, 1 warning" in result.stdout


@pytest.mark.parametrize(
    ("fail_on", "expected"),
    [(None, 0), ("error", 0), ("warning", 1), ("info", 1), ("never", 0)],
)
def test_fail_on_threshold_with_a_warning(cli, write, fail_on, expected):
    write("amps.xml", WARNING_ONLY)
    args = ["validate", "amps.xml"] + (["--fail-on", fail_on] if fail_on else [])
    assert cli(*args).code == expected


def test_fail_on_never_still_reports(cli, write):
    write("amps.xml", ERROR_AND_WARNING)
    result = cli("validate", "amps.xml", "--fail-on", "never")
    assert result.code == 0
    assert "GEN-007" in result.stdout


def test_unreadable_file_exits_3_even_with_fail_on_never(cli, write):
    write("ok.xml", CLEAN)
    result = cli("validate", "ok.xml", "missing.xml", "--fail-on", "never")
    assert result.code == 3
    assert "missing.xml: error GEN-001" in result.stdout
    assert "no such file" in result.stdout


def test_fatal_file_wins_over_findings(cli, write):
    write("findings.xml", ERROR_AND_WARNING)
    write("broken.xml", "<AMPSConfig><Name>x</Name>")
    result = cli("validate", "findings.xml", "broken.xml")
    assert result.code == 3
    assert "findings.xml:2:9" in result.stdout  # the other file is still checked
    assert "broken.xml:1:" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["validate", "amps.xml", "--no-such-option"], "No such option"),
        (["validate", "amps.xml", "--select", "NOPE-999"], "unknown rule code 'NOPE-999'"),
        (["validate", "amps.xml", "--ignore", "ZZZ"], "unknown rule code 'ZZZ'"),
        (["validate", "amps.xml", "--select", "GEN-006,BOGUS"], "unknown rule code 'BOGUS'"),
        (["validate", "amps.xml", "--env", "NOEQUALS"], "--env expects NAME=VALUE"),
        (["validate", "amps.xml", "--env", "=value"], "--env expects NAME=VALUE"),
        (["validate", "amps.xml", "--fail-on", "sometimes"], "--fail-on"),
        (["validate", "amps.xml", "--format", "xml"], "--format"),
        (["validate", "amps.xml", "--write-baseline"], "--write-baseline needs --baseline"),
        (["validate", "amps.xml", "--max-file-size", "0"], "--max-file-size"),
        (["validate", "amps.xml", "--max-file-size", "-1"], "--max-file-size"),
        (["validate"], "Missing argument"),
        (["no-such-command"], "No such command"),
    ],
)
def test_usage_errors_exit_2(cli, write, args, message):
    write("amps.xml", CLEAN)
    result = cli(*args)
    assert result.code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_usage_error_has_a_hint(cli, write):
    write("amps.xml", CLEAN)
    result = cli("validate", "amps.xml", "--select", "NOPE-999")
    assert "ampsctl: error:" in result.stderr
    assert "hint: list the codes with `ampsctl config rules`" in result.stderr


def test_config_validate_is_the_same_command(cli, write):
    write("amps.xml", ERROR_AND_WARNING)
    direct = cli("validate", "amps.xml", "-f", "json")
    nested = cli("config", "validate", "amps.xml", "-f", "json")
    assert direct.code == nested.code == 1
    assert direct.stdout == nested.stdout


# ---------------------------------------------------------------------------------- formats


def test_format_json(cli, write):
    write("amps.xml", ERROR_AND_WARNING)
    result = cli("validate", "amps.xml", "--format", "json")
    assert result.code == 1
    data = json.loads(result.stdout)
    assert data["tool"] == "ampsctl"
    [file_report] = data["files"]
    assert file_report["path"] == "amps.xml"
    found = {(f["code"], f["line"], f["column"], f["severity"]) for f in file_report["findings"]}
    assert found == {("GEN-007", 2, 9, "error"), ("GEN-006", 3, 3, "warning")}


def test_format_sarif(cli, write):
    write("amps.xml", ERROR_AND_WARNING)
    result = cli("validate", "amps.xml", "-f", "sarif")
    assert result.code == 1
    log = json.loads(result.stdout)
    assert log["version"] == "2.1.0"
    [run] = log["runs"]
    assert run["tool"]["driver"]["name"] == "ampsctl"
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert sorted(rules) == ["GEN-006", "GEN-007"]
    for res in run["results"]:
        assert rules[res["ruleIndex"]] == res["ruleId"]
        assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "amps.xml"


def test_format_github(cli, write):
    write("amps.xml", ERROR_AND_WARNING)
    result = cli("validate", "amps.xml", "-f", "github")
    assert result.code == 1
    lines = result.stdout.splitlines()
    assert any(
        line.startswith("::error file=amps.xml,line=2,col=9,title=GEN-007 undefined-environment-variable::")
        for line in lines
    )
    assert any(line.startswith("::warning file=amps.xml,line=3,col=3,title=GEN-006 unknown-element::") for line in lines)


def test_format_junit(cli, write):
    write("bad.xml", ERROR_AND_WARNING)
    write("good.xml", CLEAN)
    result = cli("validate", "bad.xml", "good.xml", "-f", "junit")
    assert result.code == 1
    root = etree.fromstring(result.stdout.encode())
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "1", "0")
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert suites["bad.xml"].find("testcase/failure") is not None
    assert suites["good.xml"].find("testcase/failure") is None


def test_format_text_is_the_default(cli, write):
    write("amps.xml", ERROR_AND_WARNING)
    assert cli("validate", "amps.xml").stdout == cli("validate", "amps.xml", "-f", "text").stdout


@pytest.mark.parametrize("fmt", ["json", "sarif", "github", "junit", "text"])
def test_output_file(cli, write, tmp_path, fmt):
    write("amps.xml", ERROR_AND_WARNING)
    result = cli("validate", "amps.xml", "-f", fmt, "-o", "report.out")
    assert result.code == 1
    assert result.stdout == ""
    text = (tmp_path / "report.out").read_text(encoding="utf-8")
    assert "GEN-007" in text
    if fmt == "json" or fmt == "sarif":
        json.loads(text)
    if fmt == "junit":
        etree.fromstring(text.encode())
    if fmt == "text":
        assert "amps.xml:2:9" in text and "\x1b[" not in text  # no colour codes in a file


def test_output_to_a_directory_is_a_usage_error(cli, write, tmp_path):
    write("amps.xml", CLEAN)
    (tmp_path / "out").mkdir()
    result = cli("validate", "amps.xml", "-o", "out")
    assert result.code == 2
    assert "cannot write the report to 'out'" in result.stderr
    assert "Traceback" not in result.output


# ---------------------------------------------------------------------- --select / --ignore

MANY = """<AMPSConfig>
  <Name>${AMPSCTL_TEST_SURELY_UNDEFINED}</Name>
  <!-- ampsctl: disable=GEN-006 -->
  <Bogus/>
  <Logging><Include>missing.xml</Include></Logging>
</AMPSConfig>
"""  # GEN-007 (2:9), SUP-001 (3:3), GEN-006 (4:3), GEN-008 (5:12)


def _codes(result) -> list[str]:
    return sorted(f["code"] for r in json.loads(result.stdout)["files"] for f in r["findings"])


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ([], ["GEN-006", "GEN-007", "GEN-008", "SUP-001"]),
        (["--select", "GEN-006"], ["GEN-006"]),
        (["--select", "GEN-006", "--select", "SUP-001"], ["GEN-006", "SUP-001"]),
        (["--select", "GEN-006,SUP-001"], ["GEN-006", "SUP-001"]),
        (["--select", "gen-006, sup-001"], ["GEN-006", "SUP-001"]),
        (["--select", "GEN"], ["GEN-006", "GEN-007", "GEN-008"]),
        (["--select", "GEN-"], ["GEN-006", "GEN-007", "GEN-008"]),
        (["--ignore", "GEN"], ["SUP-001"]),
        (["--ignore", "GEN-006", "--ignore", "SUP"], ["GEN-007", "GEN-008"]),
        (["--ignore", "GEN-006,GEN-007"], ["GEN-008", "SUP-001"]),
        (["--select", "GEN", "--ignore", "GEN-008"], ["GEN-006", "GEN-007"]),
    ],
)
def test_select_and_ignore(cli, write, options, expected):
    write("amps.xml", MANY)
    result = cli("validate", "amps.xml", "-f", "json", "--fail-on", "never", *options)
    assert result.code == 0, result.output
    assert _codes(result) == expected


def test_fatal_findings_are_never_filtered(cli, write):
    write("broken.xml", "<AMPSConfig>")
    result = cli("validate", "broken.xml", "-f", "json", "--ignore", "GEN")
    assert result.code == 3
    assert _codes(result) == ["GEN-001"]


# ----------------------------------------------------------------------------------- --env

ENV_CONFIG = """<AMPSConfig>
  <Name>${AMPSCTL_TEST_NAME}</Name>
</AMPSConfig>
"""


def test_env_defines_a_variable(cli, write):
    write("amps.xml", ENV_CONFIG)
    assert cli("validate", "amps.xml").code == 1
    assert cli("validate", "amps.xml", "--env", "AMPSCTL_TEST_NAME=demo").code == 0


def test_env_overrides_the_process_environment(cli, write, monkeypatch):
    write("amps.xml", ENV_CONFIG)
    monkeypatch.setenv("AMPSCTL_TEST_NAME", "from-environment")
    assert "<Name>from-environment</Name>" in cli("config", "dump", "amps.xml").stdout
    dumped = cli("config", "dump", "amps.xml", "--env", "AMPSCTL_TEST_NAME=from-option").stdout
    assert "<Name>from-option</Name>" in dumped


def test_env_value_may_contain_equals_and_be_empty(cli, write):
    write("amps.xml", "<AMPSConfig>\n  <Name>${AMPSCTL_TEST_A}|${AMPSCTL_TEST_B}</Name>\n</AMPSConfig>\n")
    result = cli("config", "dump", "amps.xml", "--env", "AMPSCTL_TEST_A=x=y", "--env", "AMPSCTL_TEST_B=")
    assert result.code == 0
    assert "<Name>x=y|</Name>" in result.stdout


def test_env_is_repeatable_for_validate(cli, write):
    write("amps.xml", "<AMPSConfig>\n  <Name>${AMPSCTL_TEST_A}-${AMPSCTL_TEST_B}</Name>\n</AMPSConfig>\n")
    assert cli("validate", "amps.xml", "--env", "AMPSCTL_TEST_A=a").code == 1
    assert cli("validate", "amps.xml", "--env", "AMPSCTL_TEST_A=a", "--env", "AMPSCTL_TEST_B=b").code == 0


# ------------------------------------------------------------------------ inline suppression


def test_suppression_with_reason_hides_the_finding(cli, write):
    write(
        "amps.xml",
        "<AMPSConfig>\n  <Name>demo</Name>\n  <!-- ampsctl: disable=GEN-006 read by our deploy tooling -->\n  <Bogus/>\n</AMPSConfig>\n",
    )
    result = cli("validate", "amps.xml", "--fail-on", "warning")
    assert result.code == 0, result.output
    assert "no findings (1 suppressed)" in result.stdout
    assert json.loads(cli("validate", "amps.xml", "-f", "json").stdout)["files"][0]["suppressed"] == 1


def test_suppression_without_reason_is_sup_001_and_not_applied(cli, write):
    write("amps.xml", "<AMPSConfig>\n  <Name>demo</Name>\n  <!-- ampsctl: disable=GEN-006 -->\n  <Bogus/>\n</AMPSConfig>\n")
    result = cli("validate", "amps.xml", "-f", "json")
    assert result.code == 1
    findings = {(f["code"], f["line"], f["column"]) for f in json.loads(result.stdout)["files"][0]["findings"]}
    assert findings == {("SUP-001", 3, 3), ("GEN-006", 4, 3)}


def test_suppression_without_code_is_sup_001(cli, write):
    write("amps.xml", "<AMPSConfig>\n  <Name>demo</Name>\n  <!-- ampsctl: disable=* because -->\n  <Bogus/>\n</AMPSConfig>\n")
    result = cli("validate", "amps.xml", "-f", "json")
    codes = _codes(result)
    assert codes == ["GEN-006", "SUP-001"]


def test_suppression_by_prefix_and_file_wide(cli, write):
    write(
        "amps.xml",
        "<!-- ampsctl: disable=GEN generated file, checked upstream -->\n"
        "<AMPSConfig>\n  <Name>${AMPSCTL_TEST_SURELY_UNDEFINED}</Name>\n  <Bogus/>\n</AMPSConfig>\n",
    )
    result = cli("validate", "amps.xml")
    assert result.code == 0, result.output
    assert "(2 suppressed)" in result.stdout


def test_suppression_prefix_may_end_with_a_dash_as_in_select(cli, write):
    write(
        "amps.xml",
        "<!-- ampsctl: disable=GEN- generated file, checked upstream -->\n"
        "<AMPSConfig>\n  <Name>${AMPSCTL_TEST_SURELY_UNDEFINED}</Name>\n  <Bogus/>\n</AMPSConfig>\n",
    )
    result = cli("validate", "amps.xml")
    assert result.code == 0, result.output
    assert "(2 suppressed)" in result.stdout


def test_suppression_scope_is_the_next_element(cli, write):
    # Two persistent SOW topics without FileName (SOWT-004 each); the comment covers the first.
    write(
        "amps.xml",
        """<AMPSConfig>
  <Name>demo</Name>
  <SOW>
    <!-- ampsctl: disable=SOWT-004 the deploy script adds FileName -->
    <Topic><Name>a</Name><MessageType>json</MessageType></Topic>
    <Topic><Name>b</Name><MessageType>json</MessageType></Topic>
  </SOW>
</AMPSConfig>
""",
    )
    result = cli("validate", "amps.xml", "-f", "json", "--select", "SOWT-004")
    report = json.loads(result.stdout)["files"][0]
    assert [(f["code"], f["line"]) for f in report["findings"]] == [("SOWT-004", 6)]
    assert report["suppressed"] == 1


def test_suppression_of_an_unknown_code_is_sup_002(cli, write):
    write(
        "amps.xml",
        "<AMPSConfig>\n  <Name>demo</Name>\n  <!-- ampsctl: disable=NOPE-001 legacy -->\n  <Bogus/>\n</AMPSConfig>\n",
    )
    result = cli("validate", "amps.xml", "-f", "json")
    found = {(f["code"], f["severity"], f["line"]) for f in json.loads(result.stdout)["files"][0]["findings"]}
    assert ("SUP-002", "warning", 3) in found
    assert ("GEN-006", "warning", 4) in found


# ---------------------------------------------------------------------------------- baseline


def test_baseline_round_trip(cli, write, tmp_path):
    config = write("amps.xml", ERROR_AND_WARNING)
    written = cli("validate", "amps.xml", "--baseline", "baseline.json", "--write-baseline")
    assert written.code == 0, written.output
    assert "wrote 2 findings to baseline.json" in written.stderr
    data = json.loads((tmp_path / "baseline.json").read_text())
    assert {(e["path"], e["code"], e["count"]) for e in data["findings"]} == {
        ("amps.xml", "GEN-007", 1),
        ("amps.xml", "GEN-006", 1),
    }

    accepted = cli("validate", "amps.xml", "--baseline", "baseline.json")
    assert accepted.code == 0, accepted.output
    assert "2 in baseline" in accepted.stdout

    # Lines move: the baseline still matches (it keys on path, code and message).
    config.write_text("<!-- moved -->\n\n" + ERROR_AND_WARNING)
    assert cli("validate", "amps.xml", "--baseline", "baseline.json").code == 0

    # A new finding after the baseline still fails, and only the new one is reported.
    config.write_text(ERROR_AND_WARNING.replace("}</Name>", "}${AMPSCTL_TEST_OTHER}</Name>"))
    new = cli("validate", "amps.xml", "--baseline", "baseline.json", "-f", "json")
    assert new.code == 1
    report = json.loads(new.stdout)
    assert report["baselined"] == 2
    [finding] = report["files"][0]["findings"]
    assert finding["code"] == "GEN-007" and "AMPSCTL_TEST_OTHER" in finding["message"]


def test_baseline_counts_repeated_findings(cli, write):
    one = "<AMPSConfig>\n  <Name>${AMPSCTL_TEST_X}</Name>\n</AMPSConfig>\n"
    two = "<AMPSConfig>\n  <Name>${AMPSCTL_TEST_X}${AMPSCTL_TEST_X}</Name>\n</AMPSConfig>\n"
    config = write("amps.xml", one)
    assert cli("validate", "amps.xml", "--baseline", "b.json", "--write-baseline").code == 0
    config.write_text(two)
    assert cli("validate", "amps.xml", "--baseline", "b.json").code == 1


def test_baseline_matches_a_config_however_it_is_named(cli, write, tmp_path, monkeypatch):
    # Keys were the path as typed: a baseline written for "configs/amps.xml" did not cover
    # "./configs/amps.xml", an absolute path, or a run from another directory.
    write("configs/amps.xml", "<AMPSConfig>\n  <Name>${AMPSCTL_TEST_X}</Name>\n</AMPSConfig>\n")
    (tmp_path / "ci").mkdir()
    assert cli("validate", "configs/amps.xml", "--baseline", "ci/b.json", "--write-baseline").code == 0
    stored = json.loads((tmp_path / "ci" / "b.json").read_text())
    assert stored["version"] == 2 and {f["path"] for f in stored["findings"]} == {"../configs/amps.xml"}
    for name in ("configs/amps.xml", "./configs/amps.xml", str(tmp_path / "configs" / "amps.xml")):
        assert cli("validate", name, "--baseline", "ci/b.json").code == 0, name
    monkeypatch.chdir(tmp_path / "configs")
    assert cli("validate", "amps.xml", "--baseline", "../ci/b.json").code == 0
    write("configs/amps.xml", "<AMPSConfig>\n  <Name>${AMPSCTL_TEST_X}${AMPSCTL_TEST_X}</Name>\n</AMPSConfig>\n")
    assert cli("validate", "amps.xml", "--baseline", "../ci/b.json").code == 1  # a new finding still fails


def test_a_format_1_baseline_is_read_relative_to_the_working_directory(cli, write, tmp_path):
    write("amps.xml", "<AMPSConfig>\n  <Name>${AMPSCTL_TEST_X}</Name>\n</AMPSConfig>\n")
    (tmp_path / "ci").mkdir()
    assert cli("validate", "amps.xml", "--baseline", "ci/b.json", "--write-baseline").code == 0
    old = json.loads((tmp_path / "ci" / "b.json").read_text())
    old["version"] = 1
    for finding in old["findings"]:
        finding["path"] = "amps.xml"  # as format 1 wrote it: the path as given
    write("ci/b.json", json.dumps(old))
    assert cli("validate", "amps.xml", "--baseline", "ci/b.json").code == 0
    write("ci/b.json", json.dumps({**old, "version": 3}))
    refused = cli("validate", "amps.xml", "--baseline", "ci/b.json")
    assert refused.code == 3 and "format version 3 is not one this ampsctl reads" in refused.stderr + refused.stdout


def test_baseline_does_not_accept_fatal_files(cli, write):
    write("amps.xml", "<AMPSConfig>")
    written = cli("validate", "amps.xml", "missing.xml", "--baseline", "b.json", "--write-baseline")
    assert written.code == 3  # a baseline that misses a file is not a success (a CI job must not pass on it)
    # the files that could not be read are named, not left out silently
    assert "ampsctl: error: not in the baseline: amps.xml:1:13: malformed XML" in written.stderr
    assert "not in the baseline: missing.xml: no such file: 'missing.xml'" in written.stderr
    assert cli("validate", "amps.xml", "--baseline", "b.json").code == 3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "baseline file not found"),
        ("{not json", "baseline file is not valid: it is not JSON"),
        ('{"x": 1}', 'expected a JSON object with a "findings" list'),
        ("", "baseline file is not valid: the file is empty"),
        ("[]", 'expected a JSON object with a "findings" list'),
        ("null", 'expected a JSON object with a "findings" list'),
        ('{"findings": {}}', 'expected a JSON object with a "findings" list'),
        ('{"findings": "abc"}', 'expected a JSON object with a "findings" list'),
        ('{"findings": [1]}', "finding 1 is not a JSON object"),
        ('{"findings": [{"path": "a"}]}', 'finding 1 has no "code"'),
        ('{"findings": [{"path": ["a"], "code": "b", "message": "c"}]}', 'finding 1 has a non-string "path"'),
        ('{"findings": [{"path": "a", "code": "b", "message": "c", "count": 1e999}]}', '"count" that is not a whole number'),
        ('{"findings": [{"path": "a", "code": "b", "message": "c", "count": -5}]}', '"count" that is not a whole number'),
        ('{"findings": [{"path": "a", "code": "b", "message": "c", "count": 1.5}]}', '"count" that is not a whole number'),
        ('{"findings": [{"path": "a", "code": "b", "message": "c", "count": "x"}]}', '"count" that is not a whole number'),
        ("[" * 100_000, "baseline file is not valid: it is not JSON"),
    ],
)
def test_bad_baseline_file_exits_3(cli, write, content, message):
    write("amps.xml", CLEAN)
    if content is not None:
        write("b.json", content)
    result = cli("validate", "amps.xml", "--baseline", "b.json")
    assert result.code == 3
    assert message in result.stderr
    assert "Traceback" not in result.output


# ------------------------------------------------------------------------ text report safety


def test_text_report_escapes_control_characters(cli, write):
    # C1 CSI (U+009B) is legal XML 1.0; a newline in a value must not start a fake finding line
    write(
        "amps.xml",
        "<AMPSConfig>\n<Name>x</Name>\n<SOW><Topic><Name>a\u009b31m&#10;fake.xml:1:1: error</Name>"
        "<MessageType>nope&#13;x</MessageType><FileName>x</FileName></Topic></SOW>\u009b</AMPSConfig>\n",
    )
    result = cli("validate", "amps.xml")
    assert result.code == 1
    assert "\u009b" not in result.stdout and "\r" not in result.stdout
    assert not any(line.startswith("fake.xml") for line in result.stdout.splitlines())
    assert "Topic 'a\\x9b31m\\nfake.xml:1:1: error' uses message type 'nope\\rx'" in result.stdout
    assert "<Name>nope\\rx</Name>" in result.stdout  # the hint too


def test_text_report_escapes_a_newline_in_a_file_name(cli, write):
    write("a\nb.xml", "<AMPSConfig><Name>x</Name><Bogus/></AMPSConfig>")
    result = cli("validate", "a\nb.xml")
    assert result.stdout.splitlines()[0].startswith("a\\nb.xml:1:27: warning GEN-006")


def test_text_report_caret_under_wide_characters_and_tabs(cli, write):
    write("amps.xml", "<AMPSConfig><Name>x</Name>\n<!--\t\u4e2d\u6587\u009b--><Bogus/></AMPSConfig>")
    lines = cli("validate", "amps.xml").stdout.splitlines()
    snippet, caret = lines[1], lines[2]
    assert snippet == "    2 | <!-- \u4e2d\u6587\\x9b--><Bogus/></AMPSConfig>"
    # the two CJK characters take two terminal cells each
    assert caret.index("^") == len("    2 | <!-- ") + 4 + len("\\x9b-->")


def test_a_comment_inside_a_value_does_not_cut_it(cli, write, tmp_path):
    # lxml's .text stops at a comment: <Expiration>1<!-- x -->0s</Expiration> was read as "1"
    # (UNIT-002, "has no unit") and the topic as 'or'; AMPS and the XSD read the whole text.
    write("amps.xml", "<AMPSConfig><Name>x</Name><SOW><Topic><Name>or<!-- c -->ders</Name>"
          "<MessageType>json</MessageType><Key>/id</Key><FileName>sow/%n.sow</FileName>"
          "<Expiration>1<?pi?>0s</Expiration></Topic></SOW></AMPSConfig>")
    result = cli("validate", "amps.xml", "--format", "json")
    assert result.code == 0 and json.loads(result.stdout)["files"][0]["findings"] == []
    write("in.jsonl", '{"command":"publish","topic":"orders","data":{"id":1}}\n')
    assert cli("journal", "import", "in.jsonl", "--out", "journal").code == 0
    assert cli("journal", "compact", "journal", "--config", "amps.xml", "--out", "out").code == 0
    assert (tmp_path / "out" / "orders.json.sow").is_file()  # the topic is "orders", not "or"
    dumped = cli("config", "dump", "amps.xml")
    assert "<Name>or<!-- c -->ders</Name>" in dumped.stdout  # the dump shows the file as written


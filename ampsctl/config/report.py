"""Machine-readable lint reports: JSON, SARIF 2.1.0, GitHub annotations, JUnit XML.

Each renderer is a pure function from a ``LintReport`` to text: it reads no file and needs no
network. The only thing it looks at outside the report is the current directory, and only to
turn an absolute path below it into a relative one (pass ``base`` to pin it in tests).

Paths: CI systems (GitHub code scanning, annotations, JUnit viewers) want paths relative to the
checkout with forward slashes, so every renderer but JSON reports a path as given on the command
line when it is relative, and relative to ``base`` when it is absolute and below it. An absolute
path elsewhere stays absolute (SARIF gets a ``file://`` URI, which the format allows).

Text that came from the outside world (a file name with undecodable bytes, a control character
in a config value) is made safe for each format instead of crashing the renderer: lone
surrogates become U+FFFD, and characters XML 1.0 cannot hold are replaced in JUnit output.
"""

from __future__ import annotations

import hashlib
import os
import re
import textwrap
from collections import Counter
from pathlib import PurePath
from urllib.parse import quote

import orjson

from ampsctl import __version__
from ampsctl.config.findings import Finding, Severity
from ampsctl.config.lint import LintReport

INFORMATION_URI = "https://pypi.org/project/ampsctl/"
SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/os/schemas/sarif-schema-2.1.0.json"

_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_GITHUB_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def render_json(report: LintReport) -> str:
    data = {
        "tool": "ampsctl",
        "version": __version__,
        "files": [
            {
                "path": _clean(r.path),
                "suppressed": r.suppressed,
                "findings": [
                    {
                        "code": f.code,
                        "severity": f.severity.label,
                        "message": _clean(f.message),
                        "path": _clean(f.location.path),
                        "line": f.location.line,
                        "column": f.location.col,
                        "hint": _clean(f.hint) if f.hint else f.hint,
                        "fatal": f.fatal,
                    }
                    for f in r.findings
                ],
            }
            for r in report.files
        ],
        "baselined": report.baselined,
    }
    return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"


# ---------------------------------------------------------------------------------------- SARIF


def render_sarif(report: LintReport, *, base: str | None = None) -> str:
    """One SARIF 2.1.0 log with one run; the rules array holds every rule the results use."""
    findings = report.findings
    codes = sorted({f.code for f in findings}, key=_code_order)
    rule_index = {code: i for i, code in enumerate(codes)}
    artifacts: dict[str, int] = {}
    for path in [r.path for r in report.files] + [f.location.path for f in findings]:
        artifacts.setdefault(_sarif_uri(path, base), len(artifacts))

    seen: Counter[tuple[str, str, str]] = Counter()
    results = []
    for f in findings:
        key = (_report_path(f.location.path, base), f.code, f.message)
        seen[key] += 1
        results.append(_sarif_result(f, rule_index[f.code], artifacts, base, _fingerprint(key, seen[key])))

    driver: dict[str, object] = {
        "name": "ampsctl",
        "version": __version__,
        "semanticVersion": __version__,
        "informationUri": INFORMATION_URI,
        "rules": [_sarif_rule(code) for code in codes],
    }
    run = {
        "tool": {"driver": driver},
        "columnKind": "unicodeCodePoints",
        "artifacts": [{"location": {"uri": uri}} for uri in artifacts],
        "results": results,
        "properties": {
            "suppressed": sum(r.suppressed for r in report.files),
            "baselined": report.baselined,
        },
    }
    log = {"$schema": SARIF_SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}
    return orjson.dumps(log, option=orjson.OPT_INDENT_2).decode() + "\n"


def _sarif_rule(code: str) -> dict[str, object]:
    from ampsctl.config.registry import get_rule

    rule = get_rule(code)
    if rule is None:  # a code the registry does not know still gets a valid descriptor
        return {"id": code, "shortDescription": {"text": code}}
    about = rule.description or rule.summary
    bad, good = _example(rule.bad), _example(rule.good)
    text = (
        f"{rule.summary}\n\n{about}\n\nA config that passes this rule:\n\n{good}\n\n"
        f"Run `ampsctl config explain {rule.code}` for the full documentation."
    )
    markdown = (
        f"{rule.summary}\n\n{about}\n\n"
        f"Fails:\n\n```xml\n{bad}\n```\n\nPasses:\n\n```xml\n{good}\n```\n\n"
        f"Run `ampsctl config explain {rule.code}` for the full documentation."
    )
    properties: dict[str, object] = {"tags": [rule.prefix]}
    if rule.source:
        properties["source"] = rule.source
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": about},
        "help": {"text": text, "markdown": markdown},
        "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
        "properties": properties,
    }


def _example(example: str) -> str:
    """A rule example without its common indentation.

    The registry strips examples, which also drops the first line's indentation; fragments
    are written so that their last line closes the first, so that is restored first.
    """
    lines = example.splitlines()
    rest = [line for line in lines[1:] if line.strip()]
    if rest and not example.startswith(("<AMPSConfig", "<?xml")):
        indent = min(len(line) - len(line.lstrip(" ")) for line in rest)
        lines[0] = " " * indent + lines[0]
    return textwrap.dedent("\n".join(lines))


def _sarif_result(
    f: Finding, index: int, artifacts: dict[str, int], base: str | None, fingerprint: str
) -> dict[str, object]:
    uri = _sarif_uri(f.location.path, base)
    physical: dict[str, object] = {"artifactLocation": {"uri": uri, "index": artifacts[uri]}}
    if f.location.line > 0:
        region: dict[str, int] = {"startLine": f.location.line}
        if f.location.col > 0:
            region["startColumn"] = f.location.col
        physical["region"] = region
    result: dict[str, object] = {
        "ruleId": f.code,
        "ruleIndex": index,
        "level": _SARIF_LEVEL[f.severity],
        "message": {"text": _message(f)},
        "locations": [{"physicalLocation": physical}],
        "partialFingerprints": {"ampsctlFinding/v1": fingerprint},
    }
    if f.fatal:
        result["properties"] = {"fatal": True}
    return result


def _fingerprint(key: tuple[str, str, str], occurrence: int) -> str:
    """Stable across edits elsewhere in the file: the same identity as a baseline entry."""
    path, code, message = key
    digest = hashlib.sha256(_clean(f"{path}\0{code}\0{message}").encode()).hexdigest()[:32]
    return f"{digest}:{occurrence}"


def _sarif_uri(path: str, base: str | None) -> str:
    shown = _report_path_raw(path, base)
    if PurePath(shown).is_absolute():
        for candidate in (shown, _clean(shown)):
            try:
                return PurePath(candidate).as_uri()
            except (ValueError, UnicodeEncodeError):
                continue
    return quote(_utf8(shown), safe="/")


# --------------------------------------------------------------------------------------- GitHub


def render_github(report: LintReport, *, base: str | None = None) -> str:
    """GitHub Actions workflow commands: one ``::error``/``::warning``/``::notice`` per finding."""
    from ampsctl.config.registry import get_rule

    lines = []
    for f in report.findings:
        rule = get_rule(f.code)
        props = [("file", _report_path(f.location.path, base))]
        if f.location.line > 0:
            props.append(("line", str(f.location.line)))
            if f.location.col > 0:
                props.append(("col", str(f.location.col)))
        props.append(("title", f"{f.code} {rule.name}" if rule else f.code))
        joined = ",".join(f"{name}={_github_property(value)}" for name, value in props)
        lines.append(f"::{_GITHUB_COMMAND[f.severity]} {joined}::{_github_data(_message(f))}\n")
    return "".join(lines)


def _github_data(text: str) -> str:
    # other control characters (ESC, C1 CSI) would drive the log viewer's ANSI rendering
    text = _CONTROL.sub("\ufffd", _clean(text))
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_property(text: str) -> str:
    return _github_data(text).replace(":", "%3A").replace(",", "%2C")


# ---------------------------------------------------------------------------------------- JUnit


def render_junit(report: LintReport, *, base: str | None = None) -> str:
    """JUnit XML: one testsuite per config file, each holding one testcase for that file.

    A file with findings (of any severity) gets one ``<failure>`` listing all of them; a file
    that could not be read or parsed gets an ``<error>`` instead; a clean file passes.
    """
    from lxml import etree

    from ampsctl.config.registry import get_rule

    failed = sum(1 for r in report.files if r.findings and not r.fatal)
    broken = sum(1 for r in report.files if r.fatal)
    root = etree.Element(
        "testsuites",
        name="ampsctl validate",
        tests=str(len(report.files)),
        failures=str(failed),
        errors=str(broken),
    )
    for file_report in report.files:
        path = _xml(_report_path(file_report.path, base))
        findings = file_report.findings
        suite = etree.SubElement(
            root,
            "testsuite",
            name=path,
            tests="1",
            failures="1" if findings and not file_report.fatal else "0",
            errors="1" if file_report.fatal else "0",
            skipped="0",
        )
        case = etree.SubElement(suite, "testcase", name=path, classname="ampsctl.validate", file=path)
        if not findings:
            continue
        worst = max(findings, key=lambda f: (f.fatal, f.severity))
        problem = etree.SubElement(
            case,
            "error" if file_report.fatal else "failure",
            message=_xml(_junit_summary(findings)),
            type=worst.code,
        )
        listing = []
        for f in findings:
            rule = get_rule(f.code)
            name = f" [{rule.name}]" if rule else ""
            listing.append(f"{_relocated(f, base)}: {f.severity.label} {f.code}{name} {f.message}")
            if f.hint:
                listing.append(f"    hint: {f.hint}")
        problem.text = _xml("\n".join(listing) + "\n")
    return etree.tostring(root, encoding="UTF-8", xml_declaration=True, pretty_print=True).decode("utf-8")


def _junit_summary(findings: list[Finding]) -> str:
    if any(f.fatal for f in findings):
        return next(f.message for f in findings if f.fatal)
    counts = Counter(f.severity for f in findings)
    parts = [
        f"{counts[s]} {label}{'s' if counts[s] != 1 else ''}"
        for s, label in ((Severity.ERROR, "error"), (Severity.WARNING, "warning"), (Severity.INFO, "info"))
        if counts[s]
    ]
    return ", ".join(parts)


def _relocated(f: Finding, base: str | None) -> str:
    loc = f.location
    path = _report_path(loc.path, base)
    if not loc.line:
        return path
    return f"{path}:{loc.line}:{loc.col}" if loc.col else f"{path}:{loc.line}"


# -------------------------------------------------------------------------------------- helpers


def _message(f: Finding) -> str:
    return _clean(f"{f.message}\nhint: {f.hint}" if f.hint else f.message)


def _code_order(code: str) -> tuple[str, int, str]:
    prefix, _, number = code.partition("-")
    return (prefix, int(number) if number.isdigit() else 0, code)


def _report_path(path: str, base: str | None) -> str:
    """The path to show: relative to ``base`` (the current directory) when below it, with '/'."""
    return _clean(_report_path_raw(path, base))


def _report_path_raw(path: str, base: str | None) -> str:
    shown = path
    if os.path.isabs(path):
        try:
            root = base if base is not None else os.getcwd()
            relative = os.path.relpath(path, root)
        except (ValueError, OSError):  # another drive on Windows, or a deleted cwd
            relative = None
        if relative is not None and relative != ".." and not relative.startswith(".." + os.sep):
            shown = relative
    return PurePath(shown).as_posix() if shown else shown


def _clean(text: str) -> str:
    """Replace lone surrogates (undecodable bytes in file names) so the text can be encoded."""
    return _SURROGATE.sub("\ufffd", text)


def _utf8(text: str) -> bytes:
    """The bytes of a path for a URI: undecodable file-name bytes are kept as they were."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return _clean(text).encode("utf-8")


def _xml(text: str) -> str:
    """Text that XML 1.0 can hold: control characters and lone surrogates become U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)

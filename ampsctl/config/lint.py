"""The lint engine: load a config, check it against the XSD, run the rules.

``lint_paths`` is the one library call behind ``ampsctl validate``. It never raises for a
bad file: a file that cannot be read or parsed becomes a fatal finding (exit code 3),
so one broken file does not hide the findings of the others.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lxml import etree

from ampsctl.config import schema
from ampsctl.config.baseline import apply_baseline
from ampsctl.config.findings import Finding, Severity
from ampsctl.config.loader import MAX_FILE_BYTES, LoadedConfig, load_config
from ampsctl.config.model import ConfigModel
from ampsctl.config.registry import Rule, all_rules
from ampsctl.config.suppress import find_suppressions, is_suppressed
from ampsctl.errors import InputError, Location, UsageError


@dataclass(frozen=True)
class LintOptions:
    env: Mapping[str, str] | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    baseline: Counter[tuple[str, str, str]] | None = None
    max_file_bytes: int = MAX_FILE_BYTES


@dataclass
class FileReport:
    path: str
    findings: list[Finding]
    suppressed: int = 0
    config: LoadedConfig | None = field(default=None, repr=False)

    @property
    def fatal(self) -> bool:
        return any(f.fatal for f in self.findings)

    def source_line(self, location: Location) -> str:
        if self.config is not None:
            return self.config.source_line(location)
        return ""


@dataclass
class LintReport:
    files: list[FileReport]
    baselined: int = 0

    @property
    def findings(self) -> list[Finding]:
        return [f for report in self.files for f in report.findings]

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity)


def _matches(code: str, patterns: Sequence[str]) -> bool:
    return any(code == p or code.startswith(p + "-") or (p.endswith("-") and code.startswith(p)) for p in patterns)


def selected_rules(options: LintOptions) -> list[Rule]:
    rules = all_rules()
    known = {r.code for r in rules}
    for pattern in (*options.select, *options.ignore):
        if not any(_matches(code, [pattern]) for code in known):
            raise UsageError(f"unknown rule code '{pattern}'", hint="list the codes with `ampsctl config rules`")
    return [r for r in rules if _wanted(r, options)]


def _wanted(rule: Rule, options: LintOptions) -> bool:
    if _matches(rule.code, options.ignore):
        return False
    if rule.opt_in:
        return rule.code in options.select
    return not options.select or _matches(rule.code, options.select)


def lint_paths(paths: Sequence[str], options: LintOptions | None = None) -> LintReport:
    options = options or LintOptions()
    rules = selected_rules(options)
    reports = [lint_file(path, rules, options) for path in paths]
    baselined = 0
    if options.baseline is not None:
        remaining = options.baseline
        for report in reports:
            report.findings, dropped = apply_baseline(report.findings, remaining)
            baselined += dropped
    return LintReport(reports, baselined)


def lint_file(path: str, rules: list[Rule], options: LintOptions) -> FileReport:
    try:
        config = load_config(path, options.env, max_file_bytes=options.max_file_bytes)
    except InputError as exc:
        where = exc.location or Location(path)
        return FileReport(path, [Finding(exc.code, Severity.ERROR, exc.message, where, exc.hint, fatal=True)])
    selected = {r.code: r for r in rules}
    located: list[tuple[Finding, etree._Element | None]] = [(f, None) for f in config.findings]
    flagged: set[etree._Element] = set()
    model = ConfigModel(config)
    for rule in rules:
        if rule.check is None:
            continue
        for issue in rule.check(model):
            where = config.locate_text(issue.node) if issue.at_text else config.locate(issue.node)
            severity = issue.severity or rule.severity
            located.append((Finding(rule.code, severity, issue.message, where, issue.hint), issue.node))
            if severity >= Severity.WARNING:  # an info note must not hide a schema error
                flagged.add(issue.node)
    for problem in schema.validate(config.root):
        if problem.node in flagged:
            continue  # a rule already explains this element better
        rule = selected.get(problem.code)
        if rule is None:
            continue
        where = config.locate_text(problem.node) if problem.at_text else config.locate(problem.node)
        located.append((Finding(problem.code, rule.severity, problem.message, where, problem.hint), problem.node))
    suppressions, problems = find_suppressions(config, {r.code for r in all_rules()})
    located.extend((p, None) for p in problems)
    kept: list[Finding] = []
    suppressed = 0
    for finding, node in located:
        if finding.code not in selected and not finding.fatal:
            continue
        if is_suppressed(finding.code, node, suppressions):
            suppressed += 1
            continue
        kept.append(finding)
    unique = sorted(set(kept), key=Finding.sort_key)
    return FileReport(path, unique, suppressed, config)

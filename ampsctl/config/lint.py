"""The lint engine: load a config, check it against the XSD, run the rules.

``lint_paths`` is the one library call behind ``ampsctl validate``. It never raises for a
bad file: a file that cannot be read or parsed becomes a fatal finding (exit code 3),
so one broken file does not hide the findings of the others.

Files are independent, so many files are spread over worker processes (forked after the
rules and the XSD are loaded, so a worker starts warm). A ``FileReport`` carries plain
data only (findings and the source lines they point at), so it crosses processes.

Everything a run decides once (the selected rules, the codes suppressions may name) is in a
``_Plan``, so the per-file work is loading the file, the rules and the XSD check.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lxml import etree

from ampsctl.config import schema
from ampsctl.config.findings import Finding, Severity
from ampsctl.config.loader import MAX_FILE_BYTES, load_config
from ampsctl.config.model import ConfigModel
from ampsctl.config.registry import Rule, all_rules
from ampsctl.config.suppress import find_suppressions, is_suppressed
from ampsctl.errors import InputError, Location, UsageError
from ampsctl.gcpause import paused_gc

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.sharedctypes import Synchronized


@dataclass(frozen=True)
class LintOptions:
    env: Mapping[str, str] | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    baseline: Counter[tuple[str, str, str]] | None = None
    max_file_bytes: int = MAX_FILE_BYTES
    jobs: int = 0  # worker processes; 0 = one per CPU, 1 = in this process

PARALLEL_FROM = 8  # fewer files than this are not worth starting workers for


@dataclass
class FileReport:
    path: str
    findings: list[Finding]
    suppressed: int = 0
    lines: dict[tuple[str, int], str] = field(default_factory=dict, repr=False)  # for snippets

    @property
    def fatal(self) -> bool:
        return any(f.fatal for f in self.findings)

    def source_line(self, location: Location) -> str:
        return self.lines.get((location.path, location.line), "")


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


@dataclass(frozen=True)
class _Plan:
    """What every file of one run needs, worked out once instead of per file."""

    checks: tuple[Rule, ...]  # the selected rules that have a check, in code order
    selected: dict[str, Rule]  # code -> rule, every selected rule
    known: frozenset[str]  # every registered code (suppressions may name any of them)

    @classmethod
    def of(cls, options: LintOptions) -> _Plan:
        rules = selected_rules(options)
        return cls(tuple(r for r in rules if r.check is not None), {r.code: r for r in rules}, frozenset(r.code for r in all_rules()))


def lint_paths(paths: Sequence[str], options: LintOptions | None = None) -> LintReport:
    options = options or LintOptions()
    plan = _Plan.of(options)  # usage errors surface here, before any worker starts
    jobs = min(options.jobs or os.cpu_count() or 1, len(paths))
    with paused_gc():
        if jobs > 1 and len(paths) >= PARALLEL_FROM:
            reports = _lint_in_workers(list(paths), plan, options, jobs)
        else:
            reports = [lint_file(path, plan, options) for path in paths]
    baselined = 0
    if options.baseline is not None:
        from ampsctl.config.baseline import apply_baseline

        for report in reports:
            report.findings, dropped = apply_baseline(report.findings, options.baseline)
            baselined += dropped
    return LintReport(reports, baselined)


def _lint_in_workers(paths: list[str], plan: _Plan, options: LintOptions, jobs: int) -> list[FileReport]:
    """Lint in ``jobs`` forked workers; the reports come back in the order of ``paths``.

    The workers are forked after the rules, the XSD and the rules' on-demand imports are
    loaded, so they start warm and inherit the plan and the options. Each takes the next file
    from a shared counter, the largest files first (no worker is left with a big one at the
    end while the others idle), and sends all its reports back in one message when the files
    run out.
    """
    schema.validate(etree.Element("AMPSConfig"))  # load the XSD once, before forking
    # Also the modules the rules import on demand (the filter parser for GEN-013 and ACT-022,
    # the regex package for topic regexes): many files have some, and each worker importing
    # them again cost ~0.07 s of CPU apiece.
    import ampsctl.filter.compiler
    import ampsctl.filter.parser
    import ampsctl.filter.regexes  # noqa: F401
    order = sorted(range(len(paths)), key=lambda i: -_size(paths[i]))
    context = multiprocessing.get_context("fork")
    taken = context.Value("l", 0)  # how many files of `order` the workers have taken
    workers = []
    for _ in range(jobs):
        reader, writer = context.Pipe(duplex=False)
        worker = context.Process(target=_worker, args=(paths, order, taken, plan, options, writer), daemon=True)
        worker.start()
        writer.close()
        workers.append((worker, reader))
    reports: list[FileReport | None] = [None] * len(paths)
    try:
        for _, reader in workers:
            try:
                status, found = reader.recv()
            except EOFError:
                status, found = "error", "the worker ended without a result"
            if status != "ok":
                raise RuntimeError(f"a lint worker failed: {found}")
            for index, report in found:
                reports[index] = report
    except BaseException:
        for worker, _ in workers:
            worker.terminate()  # a failure or an interrupt: what the others would find is of no use
        raise
    finally:
        for worker, reader in workers:
            reader.close()
            worker.join()
    return reports  # type: ignore[return-value]


def _worker(paths: list[str], order: list[int], taken: Synchronized, plan: _Plan, options: LintOptions, writer: Connection) -> None:
    """One worker process: lint the next file until there is none left, then report them all."""
    try:
        done = []
        while True:
            with taken.get_lock():
                position = taken.value
                taken.value = position + 1
            if position >= len(order):
                break
            index = order[position]
            done.append((index, lint_file(paths[index], plan, options)))
        writer.send(("ok", done))
    except BaseException:  # the parent raises it
        import traceback

        writer.send(("error", traceback.format_exc()))


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # reported when the worker reads it


def lint_file(path: str, plan: _Plan, options: LintOptions) -> FileReport:
    try:
        config = load_config(path, options.env, max_file_bytes=options.max_file_bytes)
    except InputError as exc:
        where = exc.location or Location(path)
        return FileReport(path, [Finding(exc.code, Severity.ERROR, exc.message, where, exc.hint, fatal=True)])
    selected = plan.selected
    located: list[tuple[Finding, etree._Element | None]] = [(f, None) for f in config.findings]
    flagged: set[etree._Element] = set()
    model = ConfigModel(config)
    for rule in plan.checks:
        for issue in rule.check(model):  # type: ignore[misc]
            where = issue.where or (config.locate_text(issue.node) if issue.at_text else config.locate(issue.node))
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
    suppressions, problems = find_suppressions(config, plan.known)
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
    # dict.fromkeys, not set: duplicates go but ties keep rule order, so runs are reproducible
    unique = sorted(dict.fromkeys(kept), key=Finding.sort_key)
    lines = {(f.location.path, f.location.line): config.source_line(f.location) for f in unique if f.location.line}
    return FileReport(path, unique, suppressed, lines)

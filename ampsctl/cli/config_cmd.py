"""``ampsctl config ...`` commands (and the ``ampsctl validate`` alias)."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path

import typer

from ampsctl.errors import ExitCode, UsageError

app = typer.Typer(help="Lint, explain, expand and generate AMPS configs.", no_args_is_help=True)


class ReportFormat(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"
    junit = "junit"


class ListFormat(str, Enum):
    text = "text"
    json = "json"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


def _codes(values: list[str] | None) -> tuple[str, ...]:
    return tuple(c.strip().upper() for v in values or [] for c in v.split(",") if c.strip())


def parse_env(pairs: list[str] | None) -> dict[str, str]:
    env = dict(os.environ)
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--env expects NAME=VALUE, got '{pair}'", hint="for example --env SOW_DIR=/data/sow")
        env[name] = value
    return env


@app.command("validate")
def validate(
    paths: list[Path] = typer.Argument(..., help="Config files to check."),
    format: ReportFormat = typer.Option(ReportFormat.text, "--format", "-f", help="Report format."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the report to this file instead of stdout."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Lowest severity that makes the exit code 1."),
    select: list[str] | None = typer.Option(None, "--select", help="Only run these rule codes or prefixes (repeat or comma-separate)."),
    ignore: list[str] | None = typer.Option(None, "--ignore", help="Skip these rule codes or prefixes (repeat or comma-separate)."),
    env: list[str] | None = typer.Option(None, "--env", help="Define NAME=VALUE for ${NAME} expansion (repeatable); overrides the environment."),
    baseline: Path | None = typer.Option(None, "--baseline", help="Hide findings recorded in this baseline file."),
    write_baseline: bool = typer.Option(False, "--write-baseline", help="Record the current findings in the --baseline file and exit 0 (3 if a file could not be read or parsed: it is not in the baseline)."),
    max_file_size: int = typer.Option(64, "--max-file-size", min=1, help="Refuse config files larger than this many MB."),
    jobs: int = typer.Option(0, "--jobs", "-j", min=0, help="Worker processes for many files (0 = one per CPU, 1 = no workers)."),
) -> None:
    """Lint AMPS config files: XSD structure plus semantic rules.

    Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage error,
    3 a file that cannot be read or parsed at all.
    """
    from ampsctl.config.baseline import load_baseline, write_baseline as save_baseline
    from ampsctl.config.findings import Severity
    from ampsctl.config.lint import LintOptions, lint_paths

    if write_baseline and baseline is None:
        raise UsageError("--write-baseline needs --baseline FILE", hint="for example --baseline ampsctl-baseline.json --write-baseline")
    options = LintOptions(
        env=parse_env(env),
        select=_codes(select),
        ignore=_codes(ignore),
        baseline=load_baseline(str(baseline)) if baseline and not write_baseline else None,
        max_file_bytes=max_file_size * 1024 * 1024,
        jobs=jobs,
    )
    report = lint_paths([str(p) for p in paths], options)
    if write_baseline:
        count = save_baseline(report.findings, str(baseline))
        print(f"wrote {count} findings to {baseline}", file=sys.stderr)
        from ampsctl.cli.text_report import printable

        unread = [f for f in report.findings if f.fatal]  # never baselined: the baseline does not cover the file
        for finding in unread:
            print(printable(f"ampsctl: error: not in the baseline: {finding.location}: {finding.message}"), file=sys.stderr)
        raise typer.Exit(ExitCode.INVALID_INPUT if unread else ExitCode.OK)
    _emit(report, format, output)
    if any(f.fatal for f in report.findings):
        raise typer.Exit(ExitCode.INVALID_INPUT)
    if fail_on is not FailOn.never:
        threshold = Severity.parse(fail_on.value)
        if any(f.severity >= threshold for f in report.findings):
            raise typer.Exit(ExitCode.FINDINGS)


def _emit(report, format: ReportFormat, output: Path | None) -> None:  # noqa: ANN001
    from ampsctl.config import report as reports

    if format is ReportFormat.text:
        from rich.console import Console

        from ampsctl.cli.text_report import print_report

        if output is None:
            print_report(report)
        else:
            from io import StringIO

            buffer = StringIO()
            print_report(report, Console(file=buffer, no_color=True, highlight=False, soft_wrap=True))
            _write_output(output, buffer.getvalue())
        return
    render = {
        ReportFormat.json: reports.render_json,
        ReportFormat.sarif: reports.render_sarif,
        ReportFormat.github: reports.render_github,
        ReportFormat.junit: reports.render_junit,
    }[format]
    text = render(report)
    if output is None:
        sys.stdout.write(text)
    else:
        _write_output(output, text)


def _write_output(output: Path, text: str) -> None:
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write the report to '{output}': {exc.strerror}", hint="pass a writable file path to --output") from None


@app.command("rules")
def rules(format: ListFormat = typer.Option(ListFormat.text, "--format", "-f", help="Output format.")) -> None:
    """List every lint rule: code, severity, name and summary."""
    from ampsctl.config.registry import all_rules

    catalog = all_rules()
    if format is ListFormat.json:
        import orjson

        rows = [
            {"code": r.code, "name": r.name, "severity": r.severity.label, "opt_in": r.opt_in, "summary": r.summary, "source": r.source}
            for r in catalog
        ]
        sys.stdout.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("code", "severity", "name"):  # identifiers users copy: never cut them short
        table.add_column(column, no_wrap=True, overflow="ignore")
    table.add_column("summary", overflow="fold")
    for r in catalog:
        table.add_row(r.code, r.severity.label + (" (opt-in)" if r.opt_in else ""), r.name, r.summary)
    Console(highlight=False).print(table)


@app.command("explain")
def explain(code: str = typer.Argument(..., help="A rule code, e.g. SOWT-004.")) -> None:
    """Show a rule's documentation with a bad and a good example."""
    from ampsctl.config.registry import get_rule

    found = get_rule(code)
    if found is None:
        raise UsageError(f"unknown rule code '{code}'", hint="list the codes with `ampsctl config rules`")
    print(f"{found.code} {found.name} ({found.severity.label}{', opt-in: run it with --select ' + found.code if found.opt_in else ''})\n")
    print(found.summary)
    if found.description:
        print(f"\n{found.description}")
    if found.source:
        print(f"\nSource: {found.source}")
    print(f"\nBad:\n\n{found.bad}\n\nGood:\n\n{found.good}")


@app.command("dump")
def dump(
    path: Path = typer.Argument(..., help="Config file to expand."),
    env: list[str] | None = typer.Option(None, "--env", help="Define NAME=VALUE for ${NAME} expansion (repeatable)."),
) -> None:
    """Print the config after ${VAR} and <Include> expansion, as AMPS sees it."""
    from lxml import etree

    from ampsctl.config.loader import load_config

    from ampsctl.cli.text_report import printable

    config = load_config(str(path), parse_env(env))
    for finding in config.findings:
        print(printable(f"{finding.location}: {finding.severity.label} {finding.code}: {finding.message}"), file=sys.stderr)
        if finding.hint:
            print(f"  hint: {printable(finding.hint)}", file=sys.stderr)
    sys.stdout.write(etree.tostring(config.root, encoding="unicode") + "\n")
    if any(f.fatal for f in config.findings):  # an included file that cannot be read or parsed
        raise typer.Exit(ExitCode.INVALID_INPUT)
    if config.findings:
        raise typer.Exit(ExitCode.FINDINGS)


@app.command("sample")
def sample() -> None:
    """Print a commented sample config that validates clean."""
    sys.stdout.write((Path(__file__).resolve().parent.parent / "data" / "sample-config.xml").read_text())

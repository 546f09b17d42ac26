"""Human-readable lint report: location, severity, code, message, a source snippet and a caret."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape

from ampsctl.cli.output import terminal_text
from ampsctl.config.findings import Severity
from ampsctl.config.lint import LintReport

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def print_report(report: LintReport, console: Console | None = None) -> None:
    console = console or Console(highlight=False, soft_wrap=True)
    from ampsctl.config.registry import get_rule

    for file_report in report.files:
        for f in file_report.findings:
            rule = get_rule(f.code)
            name = f" [{rule.name}]" if rule else ""
            style = _STYLE[f.severity]
            where, message = printable(str(f.location)), printable(f.message)
            console.print(f"[bold]{escape(where)}[/]: [{style}]{f.severity.label}[/] {f.code}{escape(name)} {escape(message)}")
            line = file_report.source_line(f.location)
            if line and f.location.line:
                gutter = f"{f.location.line:>5} | "
                console.print(escape(gutter + _snippet(line)))
                before = _snippet(line[: max(0, f.location.col - 1)])
                console.print(" " * (len(gutter) + cell_len(before)) + f"[{style}]^[/]")
            if f.hint:
                console.print(f"      [dim]hint:[/] {escape(printable(f.hint))}")
    errors, warnings, infos = (report.count(s) for s in (Severity.ERROR, Severity.WARNING, Severity.INFO))
    files = len(report.files)
    suppressed = sum(r.suppressed for r in report.files)
    extra = []
    if suppressed:
        extra.append(f"{suppressed} suppressed")
    if report.baselined:
        extra.append(f"{report.baselined} in baseline")
    tail = f" ({', '.join(extra)})" if extra else ""
    if not (errors or warnings or infos):
        console.print(f"[green]{_plural(files, 'file')} checked, no findings[/]{tail}")
    else:
        counts = f"{_plural(errors, 'error')}, {_plural(warnings, 'warning')}, {infos} info"
        console.print(f"{_plural(files, 'file')} checked: {counts}{tail}")


def printable(text: str) -> str:
    """One line of text that is safe for a terminal (``output.terminal_text``, SOH escaped too).

    Control characters of a config value or a file name (a newline, ESC, the C1 CSI) would
    start a line that looks like a finding, or drive the terminal.
    """
    return terminal_text(text, soh=None)


def _snippet(line: str) -> str:
    """A source line for the snippet: tabs as one space (columns count a tab as one), the
    rest as ``printable``; the caret is placed by the width of the same text before it."""
    return printable(line.replace("\t", " "))


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"

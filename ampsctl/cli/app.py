"""The ``ampsctl`` entry point.

Start-up stays cheap: command modules import the library inside the command functions, so
``ampsctl --help`` never loads lxml, xmlschema, pyspark or the broker (a test checks it).
``main`` is the one place that turns errors into exit codes (DESIGN.md).
"""

from __future__ import annotations

import sys
from typing import NoReturn

import typer

from ampsctl import __version__
from ampsctl.cli import affinity_cmd, broker_cmd, client_cmd, compact_cmd, config_cmd, delta_cmd, filter_cmd, journal_cmd, sow_cmd, stdout
from ampsctl.errors import AmpsctlError, ExitCode

app = typer.Typer(
    name="ampsctl",
    help="Tools for teams that run 60East AMPS: lint configs, run a local broker, inspect SOW files and journals.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.add_typer(config_cmd.app, name="config")
app.command("validate", help="Lint AMPS config files (alias of `ampsctl config validate`).")(config_cmd.validate)
app.add_typer(filter_cmd.app, name="filter")
app.add_typer(delta_cmd.app, name="delta")
app.add_typer(affinity_cmd.app, name="affinity")
journal_cmd.app.command("compact")(compact_cmd.compact)
app.add_typer(journal_cmd.app, name="journal")
app.add_typer(sow_cmd.app, name="sow")
app.add_typer(broker_cmd.app, name="broker")
app.add_typer(client_cmd.app, name="client")


def _version(value: bool) -> None:
    if value:
        print(f"ampsctl {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    traceback: bool = typer.Option(False, "--traceback", help="Show a Python traceback for internal errors."),
) -> None:
    """Tools for teams that run 60East AMPS."""


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; click handles usage errors (exit 2), we map everything else."""
    args = sys.argv[1:] if argv is None else argv
    stdout.install()
    try:
        try:
            app(args=args, prog_name="ampsctl")
        finally:
            sys.stdout.flush()  # a write error surfaces here, in the handlers below, not at exit
    except stdout.ReaderGone:
        _reader_left()
    except SystemExit as exc:
        if exc.code not in (None, 0) and stdout.reader_gone():
            _reader_left()  # rich's Console turns a broken pipe into exit 1 ("findings" for validate)
        raise
    except AmpsctlError as exc:
        if stdout.reader_gone():
            _reader_left()  # raised on the way out of the failed write: the pipe is the cause
        _error(exc)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(ExitCode.INTERRUPTED)
    except Exception as exc:
        if stdout.reader_gone():
            _reader_left()  # likewise: whatever the failed write became on its way here
        if "--traceback" in args:
            raise
        print(f"ampsctl: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("  this is a bug in ampsctl; rerun with --traceback and report it", file=sys.stderr)
        sys.exit(ExitCode.INTERNAL)


def _reader_left() -> NoReturn:
    """The reader closed standard output early (``| head``): exit 141 without a word, whichever
    command it was and however its output was written."""
    stdout.quiet_after_broken_pipe()
    sys.exit(ExitCode.BROKEN_PIPE)


def _error(exc: AmpsctlError) -> None:
    from ampsctl.cli.output import terminal_text

    # A message quotes what the user gave (a path, a topic, a config value): escaped, so an
    # ESC in it cannot drive the terminal (docs/decisions.md, one rule for terminal text).
    where = f"{exc.location}: " if exc.location else ""
    print(terminal_text(f"ampsctl: error: {where}{exc.message}", lines=True, soh=None), file=sys.stderr)
    if exc.hint:
        print(terminal_text(f"  hint: {exc.hint}", lines=True, soh=None), file=sys.stderr)

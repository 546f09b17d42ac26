"""Fixtures for the CLI tests.

``cli(...)`` calls ``ampsctl.cli.app.main`` in this process, which is the function the console
script runs, with stdout/stderr captured and the exit code taken from ``SystemExit``. The
subprocess runner for the real entry point is ``clitools.run_ampsctl``.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from clitools import Result

from ampsctl.cli.app import main


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Run ``ampsctl ARGS...`` in-process with the working directory set to ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AMPSCTL_TEST_SURELY_UNDEFINED", raising=False)

    def invoke(*args: str) -> Result:
        out, err = io.StringIO(), io.StringIO()
        code = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main([str(a) for a in args])
            except SystemExit as exc:
                code = _exit_code(exc)
        return Result(code, out.getvalue(), err.getvalue())

    return invoke


@pytest.fixture
def write(tmp_path: Path):
    """Write a text file under tmp_path (creating directories) and return its path."""

    def write_file(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return write_file

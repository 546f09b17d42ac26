"""Fixtures for the documentation examples: the real ``ampsctl`` console script in a subprocess.

Every test here runs a command line that README.md or a page of docs/ shows and checks the
result the page documents, so a change of behaviour fails a test instead of leaving the docs
stale. When one fails, fix the code or the page, whichever is wrong.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from docs_example_tools import Run, run_ampsctl


@pytest.fixture
def ampsctl(tmp_path: Path):
    """``ampsctl(*args, cwd=tmp_path, stdin=None)``: run the console script, return a ``Run``."""

    def run(*args: str | os.PathLike[str], cwd: Path | None = None, stdin: str | None = None) -> Run:
        return run_ampsctl(*args, cwd=cwd or tmp_path, stdin=stdin)

    return run

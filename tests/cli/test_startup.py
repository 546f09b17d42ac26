"""Start-up stays cheap: the help paths must not import the heavy parts of ampsctl.

DESIGN.md: `ampsctl --help` must not import pyspark, lxml, xmlschema or the broker. Each
case runs ``main`` in a fresh interpreter (``sys.modules`` is per process), catches the
``SystemExit`` that click raises after printing help, and prints the loaded module names.
This checks what is imported, not how long it takes (bench/lint.py measures time).
"""

from __future__ import annotations

import os

import pytest
from probe import run_probe

FORBIDDEN = ("lxml", "xmlschema", "pyspark", "ampsctl.broker", "ampsctl.config.lint")


def _run(argv: list[str]) -> tuple[object, list[str], str]:
    probed = run_probe(argv, env={**os.environ, "COLUMNS": "80"})
    return probed.exit, probed.modules, probed.stdout


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == name or m.startswith(name + ".") for name in FORBIDDEN)]


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["validate", "--help"], ["config", "--help"], ["config", "validate", "--help"], ["--version"]],
    ids=" ".join,
)
def test_help_imports_nothing_heavy(argv: list[str]) -> None:
    code, modules, output = _run(argv)
    assert code in (0, None), f"exit code {code}:\n{output}"
    assert output.strip(), "nothing was printed"
    assert "ampsctl.cli.app" in modules
    assert _heavy(modules) == [], f"`ampsctl {' '.join(argv)}` imported {_heavy(modules)}"


def test_probe_sees_imports() -> None:
    """A command that does load the lint engine is caught (the probe is not blind)."""
    code, modules, _ = _run(["config", "rules", "--format", "json"])
    assert code in (0, None)
    assert "lxml" in _heavy(modules) or any(m.startswith("lxml.") for m in _heavy(modules))

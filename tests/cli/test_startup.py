"""Start-up stays cheap: the help paths must not import the heavy parts of ampsctl.

DESIGN.md: `ampsctl --help` must not import pyspark, lxml, xmlschema or the broker. Each
case runs ``main`` in a fresh interpreter (``sys.modules`` is per process), catches the
``SystemExit`` that click raises after printing help, and prints the loaded module names.
This checks what is imported, not how long it takes (bench/lint.py measures time).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

FORBIDDEN = ("lxml", "xmlschema", "pyspark", "ampsctl.broker", "ampsctl.config.lint")
MARKER = "--ampsctl-loaded-modules--"

PROBE = f"""
import json, sys
from ampsctl.cli.app import main
try:
    main(json.loads(sys.argv[1]))
    code = 0
except SystemExit as exc:
    code = exc.code
print()
print({MARKER!r})
print(json.dumps({{"exit": code, "modules": sorted(sys.modules)}}))
"""


def _run(argv: list[str]) -> tuple[object, list[str], str]:
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True, text=True, env=env, timeout=120
    )
    assert MARKER in done.stdout, f"probe failed:\n{done.stdout}\n{done.stderr}"
    output, _, data = done.stdout.rpartition(MARKER)
    result = json.loads(data)
    return result["exit"], result["modules"], output


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

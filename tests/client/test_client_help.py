"""``ampsctl client ... --help`` and ``journal replay --help`` stay cheap: they must not import
the client library, asyncio or the broker (DESIGN.md lazy imports; tests/cli/test_startup.py
checks the top-level help the same way)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
from ampsctl.cli.app import main
try:
    main(json.loads(sys.argv[1]))
except SystemExit as exc:
    code = exc.code
print("\\n--modules--")
print(json.dumps({"exit": code, "modules": sorted(sys.modules)}))
"""
HEAVY = ("asyncio", "ampsctl.client", "ampsctl.broker", "ampsctl.journal", "lxml", "pyspark")


@pytest.mark.parametrize("argv", [
    ["client", "--help"], ["client", "publish", "--help"], ["client", "subscribe", "--help"], ["client", "sow", "--help"],
    ["client", "sow-delete", "--help"], ["client", "ping", "--help"], ["journal", "replay", "--help"],
], ids=" ".join)
def test_help_imports_nothing_heavy(argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True, text=True, timeout=120,
                          env={"COLUMNS": "100", "PATH": "/usr/bin:/bin", **_pythonpath()})
    output, _, data = done.stdout.rpartition("--modules--")
    result = json.loads(data)
    assert result["exit"] in (0, None), done.stderr
    assert "Usage: ampsctl" in output
    loaded = [m for m in result["modules"] if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert loaded == []


def _pythonpath() -> dict[str, str]:
    import os

    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}

"""Running ``ampsctl`` in a fresh interpreter to see which modules it imported.

``sys.modules`` is per process, so each probe runs ``main`` with ``python -c``, catches the
``SystemExit`` it ends with, and prints the loaded module names after a marker line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

MARKER = "--ampsctl-probe--"
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


@dataclass(frozen=True)
class Probed:
    exit: object  # SystemExit's code: an int, or None
    modules: list[str]
    stdout: str  # what the command printed (the marker and the module list taken off)
    stderr: str


def run_probe(argv: list[str] | tuple[str, ...], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> Probed:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(argv))], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    assert MARKER in done.stdout, f"probe failed:\n{done.stdout}\n{done.stderr}"
    output, _, data = done.stdout.rpartition(MARKER)
    found = json.loads(data)
    return Probed(found["exit"], found["modules"], output, done.stderr)

"""Shared helpers for the CLI tests (imported by conftest.py and the test modules).

``run_ampsctl(...)`` starts the installed console script (or ``python -m ampsctl``) in a
subprocess with a timeout, for the tests that must prove there is no traceback and no hang.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SCRIPT = Path(sys.executable).with_name("ampsctl")
TIMEOUT = 60

CLEAN = """<AMPSConfig>
  <Name>demo</Name>
</AMPSConfig>
"""

# One warning (GEN-006, line 3) and nothing else.
WARNING_ONLY = """<AMPSConfig>
  <Name>demo</Name>
  <Bogus/>
</AMPSConfig>
"""

# One error (GEN-007, line 2 col 9) and one warning (GEN-006, line 3 col 3).
ERROR_AND_WARNING = """<AMPSConfig>
  <Name>${AMPSCTL_TEST_SURELY_UNDEFINED}</Name>
  <Bogus/>
</AMPSConfig>
"""


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_ampsctl(
    *args: str | os.PathLike[str],
    cwd: Path,
    module: bool = False,
    env: dict[str, str] | None = None,
    timeout: float = TIMEOUT,
) -> Result:
    """Run the real entry point in a subprocess; ``module=True`` uses ``python -m ampsctl``."""
    command = [sys.executable, "-m", "ampsctl"] if module else [str(SCRIPT)]
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AMPSCTL_TEST_")}
    environment.update(env or {})
    completed = subprocess.run(
        [*command, *(os.fspath(a) for a in args)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return Result(
        completed.returncode,
        completed.stdout.decode("utf-8", "replace"),
        completed.stderr.decode("utf-8", "replace"),
    )

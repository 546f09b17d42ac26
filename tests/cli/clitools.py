"""Shared helpers for the CLI tests (imported by conftest.py and the test modules).

``run_ampsctl(...)`` starts the installed console script (or ``python -m ampsctl``) in a
subprocess with a timeout, for the tests that must prove there is no traceback and no hang.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
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


# ---- golden-file tests of `python -m ampsctl <command> ...` (filter, delta)

UPDATE_GOLDEN = os.environ.get("UPDATE_GOLDEN") == "1"


@dataclass(frozen=True)
class GoldenCase:
    """One CLI run: its golden file name, arguments, stdin and input files (in the working dir)."""

    name: str
    args: tuple[str | bytes, ...]
    stdin: bytes = b""
    files: dict[str, bytes] = field(default_factory=dict)


def shown(arg: str | bytes) -> str:
    """An argument as a reader would type it in a POSIX shell (long ones abbreviated)."""
    text = arg.decode("utf-8", "backslashreplace") if isinstance(arg, bytes) else arg
    if len(text) > 200:
        text = f"{text[:60]}...<{len(text)} characters>"
    if "'" in text and not any(c in text for c in '"$`\\!'):
        return f'"{text}"'
    return shlex.quote(text)


def run_golden(command: str, case: GoldenCase, cwd: Path) -> str:
    """The command line, exit code, stdout and stderr of one case, as its golden file holds them.

    SOH bytes are shown as ``|`` so FIX output stays readable.
    """
    for name, content in case.files.items():
        (cwd / name).write_bytes(content)
    env = {**os.environ, "COLUMNS": "80", "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "ampsctl", command, *case.args],
        cwd=cwd, env=env, input=case.stdin, capture_output=True, timeout=TIMEOUT,
    )
    stdout = done.stdout.replace(b"\x01", b"|").decode("utf-8", "backslashreplace")
    stderr = done.stderr.decode("utf-8", "backslashreplace")
    line = " ".join(["ampsctl", command, *(shown(a) for a in case.args)])
    if case.stdin:
        line += f"  < stdin ({len(case.stdin.splitlines())} lines)"
    return f"$ {line}\nexit: {done.returncode}\n--- stdout\n{stdout}--- stderr\n{stderr}"


def check_golden(directory: Path, case: GoldenCase, actual: str) -> None:
    """Compare with (or, under UPDATE_GOLDEN=1, rewrite) ``directory/<case>.txt``."""
    assert "Traceback" not in actual, actual
    golden = directory / f"{case.name}.txt"
    if UPDATE_GOLDEN:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual, encoding="utf-8")
        return
    assert golden.exists(), f"{golden} is missing: run with UPDATE_GOLDEN=1 and review it"
    assert actual == golden.read_text(encoding="utf-8"), f"output differs from {golden.name} (UPDATE_GOLDEN=1 to accept)"


def orphan_goldens(directory: Path, cases: list[GoldenCase]) -> list[str]:
    expected = {f"{c.name}.txt" for c in cases}
    return sorted(p.name for p in directory.glob("*.txt") if p.name not in expected)

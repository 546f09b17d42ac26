"""Helpers for the documentation examples: the real ``ampsctl`` console script in a subprocess,
and the text of the pages whose examples the tests run."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).with_name("ampsctl")
TIMEOUT = 60


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AMPSCTL_TEST_")}
    env.update({"COLUMNS": "120", "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"})
    return env


def run_ampsctl(*args: str | os.PathLike[str], cwd: Path, stdin: str | None = None) -> Run:
    """Run the console script in ``cwd`` and wait for it."""
    done = subprocess.run([str(SCRIPT), *map(os.fspath, args)], cwd=cwd, env=environment(),
                          input=(stdin or "").encode(), capture_output=True, timeout=TIMEOUT)
    return Run(done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace"))


def doc_text(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def doc_block_after(name: str, marker: str) -> str:
    """The first fenced block after the line holding ``marker`` in document ``name``."""
    text = doc_text(name)
    start = text.index(marker)
    match = re.search(r"```[a-z]*\n(.*?)```", text[start:], re.DOTALL)
    assert match, f"no fenced block after {marker!r} in {name}"
    return match.group(1)


def readme_command(prefix: str, **replace: str) -> list[str]:
    """The arguments after ``ampsctl`` of the first README.md example line starting with
    ``prefix`` (a backslash continues it on the next line; a ``#`` comment ends it), with each
    ``replace`` key replaced by its value (for a port or a path the test picks)."""
    lines = doc_text("README.md").splitlines()
    for index, line in enumerate(lines):
        if line.startswith(prefix):
            text = line
            while text.rstrip().endswith("\\"):
                index += 1
                text = text.rstrip()[:-1] + " " + lines[index].strip()
            for old, new in replace.items():
                text = text.replace(old, new)
            words = shlex.split(text, comments=True)
            assert words[0] == "ampsctl", text
            return words[1:]
    raise AssertionError(f"README.md has no example line starting with {prefix!r}")

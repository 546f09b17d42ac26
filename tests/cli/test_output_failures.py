"""Standard output that cannot take everything: never a short output with exit code 0 (cli/stdout.py).

A full disk or a file-size limit is exit 4 with a message; a reader that closes the pipe early
(`| head`) is exit 141 with nothing on stderr; either way no traceback and no "internal error".
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

AMPSCTL = [sys.executable, "-m", "ampsctl"]
LIMIT = 64 * 1024


def _limited_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def test_a_file_size_limit_is_an_error_not_a_short_output(tmp_path: Path) -> None:
    full = subprocess.run([*AMPSCTL, "config", "rules"], capture_output=True, timeout=120, check=True).stdout
    assert len(full) > LIMIT  # the catalog is longer than the limit: the write must fail part-way
    target = tmp_path / "rules.txt"
    with open(target, "wb") as out:
        result = subprocess.run([*AMPSCTL, "config", "rules"], stdout=out, stderr=subprocess.PIPE, timeout=120,
                                preexec_fn=_limited_file_size)
    stderr = result.stderr.decode()
    assert result.returncode == 4, stderr
    assert "cannot write the output: File too large" in stderr and "incomplete" in stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert target.stat().st_size == LIMIT


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_full_device_is_an_environment_error() -> None:
    with open("/dev/full", "wb") as out:
        result = subprocess.run([*AMPSCTL, "config", "rules"], stdout=out, stderr=subprocess.PIPE, timeout=120)
    stderr = result.stderr.decode()
    assert result.returncode == 4 and "No space left on device" in stderr, stderr
    assert "internal error" not in stderr


@pytest.mark.skipif(shutil.which("head") is None, reason="no head")
def test_a_reader_that_stops_early_ends_the_command_quietly_with_141(tmp_path: Path) -> None:
    lines = "".join(f'{{"topic":"orders","data":{{"id":{n},"pad":"{"x" * 80}"}}}}\n' for n in range(5000))
    (tmp_path / "in.jsonl").write_text(lines)
    subprocess.run([*AMPSCTL, "journal", "import", "in.jsonl", "--out", "j"], cwd=tmp_path, capture_output=True,
                   timeout=120, check=True)
    dump = " ".join([*AMPSCTL, "journal", "dump", "j", "--format", "jsonl"])  # about 700 KB: more than a pipe holds
    result = subprocess.run(["bash", "-c", f"{dump} 2> err.txt | head -c 10 > /dev/null; echo ${{PIPESTATUS[0]}}"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "141"
    assert (tmp_path / "err.txt").read_text() == ""

"""Running ``ampsctl delta`` in this process for the conformance tests."""

from __future__ import annotations

from pathlib import Path

from inprocess import run_inprocess


def run_delta(tmp_path: Path, files: dict[str, bytes], *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``ampsctl delta ARGS`` run in ``tmp_path`` with ``files`` written there."""
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    return run_inprocess("delta", *args, cwd=tmp_path)

"""Running ``ampsctl delta`` in this process for the conformance tests."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

from ampsctl.cli.app import main


def run_delta(tmp_path: Path, files: dict[str, bytes], *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``ampsctl delta ARGS`` run in ``tmp_path`` with ``files`` written there."""
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.StringIO()
    code: Any = 0
    with contextlib.chdir(tmp_path), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):  # type: ignore[type-var]
        try:
            main(["delta", *args])
        except SystemExit as exc:
            code = exc.code or 0
    out.flush()
    return code, out.buffer.getvalue().decode("utf-8"), err.getvalue()  # type: ignore[attr-defined]

"""The broker core is sans-IO (DESIGN.md, docs/broker.md): it never imports asyncio, socket or
time, never reads the clock and never opens a file. Checked on the source of every module of
``ampsctl/broker/core/``, and on what importing the core loads."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import ampsctl.broker.core

CORE = Path(ampsctl.broker.core.__file__).parent
FORBIDDEN_MODULES = {"asyncio", "socket", "time", "selectors", "threading", "subprocess", "os"}
FORBIDDEN_CALLS = {"open", "now", "utcnow", "today", "time", "monotonic", "perf_counter"}


def _modules() -> list[Path]:
    found = sorted(CORE.glob("*.py"))
    assert len(found) >= 8, found
    return found


def test_no_io_imports_in_the_core() -> None:
    for path in _modules():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in FORBIDDEN_MODULES, f"{path.name} imports {name}"
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                assert called not in FORBIDDEN_CALLS, f"{path.name}:{node.lineno} calls {called}()"


def test_importing_the_core_loads_no_event_loop_or_sockets() -> None:
    probe = "import json, sys; import ampsctl.broker.core; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    loaded = json.loads(done.stdout)
    assert not [m for m in loaded if m.split(".")[0] in ("asyncio", "socket", "selectors")]
    assert "ampsctl.broker.server" not in loaded and "ampsctl.broker.connection" not in loaded

"""A SOW checkpoint killed mid-transaction, for the crash-recovery tests of the SOW and the broker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# Killed after SQLite wrote changed pages to the file (a cache of one page), so the file is
# half-written and its rollback journal "hot". ``grow`` also adds a table and 100 KB to it.
_SCRIPT = """
import os, signal, sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("PRAGMA cache_size = 1")
connection.execute("BEGIN IMMEDIATE")
connection.execute("DELETE FROM records")
connection.execute("DELETE FROM meta")
if sys.argv[2] == "grow":
    connection.execute("CREATE TABLE junk (x)")
    connection.execute("INSERT INTO junk VALUES (randomblob(100000))")
os.kill(os.getpid(), signal.SIGKILL)
"""


def kill_mid_checkpoint(path: Path, *, grow: bool = False) -> int:
    """Run the transaction on SOW file ``path`` in a child process that kills itself midway;
    the child's return code (minus SIGKILL)."""
    return subprocess.run([sys.executable, "-c", _SCRIPT, str(path), "grow" if grow else "keep"], timeout=30).returncode

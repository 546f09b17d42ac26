"""Recovery of a SOW file whose checkpoint was killed mid-transaction (tests/broker/test_crash_kill.py
found it): SQLite's rollback journal ``<file>-journal`` is left "hot" beside the file. Recovery
must roll it back (the file is then exactly the previous checkpoint), not call the file damaged;
and a journal must never be left where SQLite would apply it to another file of that name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ampsctl.sow import recovery
from ampsctl.sow.checkpoint import checkpoint, load_group
from ampsctl.sow.recovery import recover, sow_path
from ampsctl.sow.store import TopicGroup
from killed_checkpoint import kill_mid_checkpoint
from sow_helpers import T0
from test_sow_recovery import ORDERS, journal, publish, state

def _killed_checkpoint(tmp_path: Path) -> Path:
    log = tmp_path / "journal"
    journal(log, [publish("orders", {"id": n, "pad": "x" * 500}) for n in range(1, 41)])
    first = recover([ORDERS], journal=log, now=T0, base_dir=tmp_path)
    path = sow_path(ORDERS, tmp_path)
    assert path is not None
    checkpoint(path, first.store.groups[0], sequence=40, sync=False)
    assert kill_mid_checkpoint(path, grow=True) == -signal.SIGKILL
    assert path.with_name(path.name + "-journal").stat().st_size > 0  # hot
    return path


def test_a_checkpoint_killed_mid_transaction_is_rolled_back_not_called_damaged(tmp_path: Path) -> None:
    path = _killed_checkpoint(tmp_path)
    journal(tmp_path / "journal", [publish("orders", {"id": 41})])
    result = recover([ORDERS], journal=tmp_path / "journal", now=T0, base_dir=tmp_path)
    report = result.groups[0]
    assert (report.source, report.loaded, report.file_sequence, report.replayed, report.problem) == \
        ("file", 40, 40, 1, None)
    assert sorted(state(result)) == list(range(1, 42))
    assert not path.with_name(path.name + "-journal").exists()
    assert not path.with_name(path.name + ".damaged").exists()


def test_a_damaged_file_is_moved_aside_with_its_rollback_journal(tmp_path: Path, monkeypatch) -> None:
    path = _killed_checkpoint(tmp_path)
    hot = path.with_name(path.name + "-journal")
    monkeypatch.setattr(recovery, "_roll_back", lambda path: None, raising=False)  # a rollback that did not happen
    result = recover([ORDERS], journal=tmp_path / "journal", now=T0, base_dir=tmp_path)
    assert result.groups[0].source == "rebuilt"
    assert not hot.exists() and path.with_name(path.name + ".damaged-journal").exists()  # never left where SQLite would apply it to the next file of that name
    group = result.store.groups[0]
    checkpoint(path, group, sequence=40, sync=False)  # a new file
    checkpoint(path, group, sequence=40, sync=False)
    fresh = TopicGroup(ORDERS)
    assert load_group(path, fresh).last_sequence == 40 and len(fresh) == 40


def test_an_orphaned_rollback_journal_is_not_applied_to_a_new_file(tmp_path: Path) -> None:
    path = _killed_checkpoint(tmp_path)
    path.unlink()  # the file was removed by hand, its journal left
    result = recover([ORDERS], journal=tmp_path / "journal", now=T0, base_dir=tmp_path)
    assert result.groups[0].source == "rebuilt" and len(state(result)) == 40
    group = result.store.groups[0]
    group.needs_rewrite = True
    checkpoint(path, group, sequence=40, sync=False)
    fresh = TopicGroup(ORDERS)
    assert load_group(path, fresh).last_sequence == 40 and len(fresh) == 40


def test_temporary_files_of_dead_writers_are_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    path = _killed_checkpoint(tmp_path)
    dead = path.with_name(f".{path.name}.tmp-{2**22 + 7}")  # above any pid_max
    live = path.with_name(f".{path.name}.tmp-{os.getppid()}")  # a compaction still writing, say
    other = path.with_name(f".other.json.sow.tmp-{2**22 + 7}")
    for stale in (dead, live, other):
        stale.write_bytes(b"SQLite format 3\0")
    result = recover([ORDERS], journal=tmp_path / "journal", now=T0, base_dir=tmp_path)
    assert result.groups[0].removed == [dead.name]
    assert not dead.exists() and live.exists() and other.exists()


def test_the_offline_tools_name_an_interrupted_checkpoint_instead_of_advising_deletion(tmp_path: Path) -> None:
    path = _killed_checkpoint(tmp_path)
    result = subprocess.run([sys.executable, "-m", "ampsctl", "sow", "stats", str(path)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 3, result.stderr
    assert "orders.json.sow-journal: a checkpoint was interrupted" in result.stderr
    assert "delete it" not in result.stderr


KILLED_COMPACTION = """
import os, signal, sys
sys.path.insert(0, sys.argv[1])
from ampsctl.sow.compact import compact
from test_sow_recovery import ORDERS
os.replace = lambda *args: os.kill(os.getpid(), signal.SIGKILL)  # killed as its first file is renamed into place
compact(sys.argv[2], [ORDERS], sys.argv[3], fast=sys.argv[4] == "fast")
"""


@pytest.mark.parametrize("path", ["fast", "reference"])
def test_the_scratch_files_of_a_killed_compaction_are_removed(tmp_path: Path, path: str) -> None:
    # compact writes each file to .<file>.tmp-<pid> first, so the SOW writer's own scratch files
    # are named after that one (..<file>.tmp-<pid>.tmp-<pid>, ...<file>.tmp-<pid>.bulk-<pid>.tmp-<pid>),
    # which recovery left in place for good
    log = tmp_path / "journal"
    journal(log, [publish("orders", {"id": n}) for n in range(1, 11)])
    killed = subprocess.run([sys.executable, "-c", KILLED_COMPACTION, str(Path(__file__).parent), str(log),
                             str(tmp_path / "sow"), path], capture_output=True, text=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    left = sorted(p.name for p in (tmp_path / "sow").iterdir())
    assert left and all(name.startswith("..") and ".orders.json.sow.tmp-" in name for name in left), left
    result = recover([ORDERS], journal=log, now=T0, base_dir=tmp_path)
    assert sorted(result.groups[0].removed) == left and len(state(result)) == 10
    assert [p.name for p in (tmp_path / "sow").iterdir()] == []

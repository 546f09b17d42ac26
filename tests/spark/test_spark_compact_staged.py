"""``journal compact --engine spark`` writing SOW files: every file or none (docs/formats.md), as
the local engine does (tests/cli/test_journal_compact_failures.py). A full disk is simulated
on the rename of the second file."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from ampsctl.errors import EnvironmentProblem
from ampsctl.journal.record import Command
from ampsctl.journal.writer import FsyncPolicy, JournalWriter
from ampsctl.pipeline.engines import run_compact
from ampsctl.pipeline.jobs import CompactJob, Engine
from ampsctl.sow import checkpoint
from journals import T0, _spec

SPECS = (_spec("a", ("/id",)), _spec("b", ("/id",)))


def _journal(directory: Path, ids: range) -> Path:
    with JournalWriter.open(directory, fsync=FsyncPolicy.NEVER) as writer:
        for number in ids:
            for topic in ("a", "b"):
                writer.append(T0 + number, Command.PUBLISH, topic, "json", b'{"id":%d}' % number)
    return directory


def _contents(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def test_a_full_disk_on_the_second_file_leaves_out_as_it_was(spark, tmp_path: Path,  # noqa: ANN001
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    run_compact(CompactJob(str(_journal(tmp_path / "old", range(1, 2))), SPECS, str(out)), Engine.LOCAL)
    before = _contents(out)
    new = _journal(tmp_path / "new", range(1, 3))
    real = os.replace

    def full_for_b(source: object, target: object) -> None:
        if "b.json" in os.fspath(target):  # type: ignore[arg-type]
            raise OSError(errno.ENOSPC, "No space left on device")
        real(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(checkpoint.os, "replace", full_for_b)
    with pytest.raises(EnvironmentProblem) as failed:
        run_compact(CompactJob(str(new), SPECS, str(out), overwrite=True), Engine.SPARK, spark=spark)
    assert "b.json.sow" in failed.value.message and "No space left" in failed.value.message
    # a.json.sow was replaced before b.json.sow failed: files of two journal points side by side
    assert _contents(out) == before

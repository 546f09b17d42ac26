"""``ampsctl journal import`` when the disk fills up: nothing is imported, and the message says
so. Runs ``ampsctl.cli.app.main`` in this process (the ``cli`` fixture) so a full disk can be
simulated by patching the writer's ``os.write``, as tests/journal/test_journal_writer.py does."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from ampsctl.journal import writer

MANY = "".join('{"topic":"orders","data":{"id":%d,"pad":"%s"}}\n' % (i, "x" * 200) for i in range(20))


def test_a_full_disk_says_that_nothing_was_imported(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    # the writer's message ("records up to sequence 5 are safely written ... open the journal
    # again") was shown although import then removed the partial journal, as it must
    (tmp_path / "in.jsonl").write_text(MANY)
    real = os.write
    calls = []

    def full(fd: int, data: bytes) -> int:
        calls.append(fd)
        if len(calls) > 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(writer.os, "write", full)
    done = cli("journal", "import", "in.jsonl", "--out", "j", "--segment-size", "1KB")
    assert done.code == 4, done.output
    assert "no space left on device" in done.stderr.lower() and "nothing was imported" in done.stderr, done.stderr
    assert "safely written" not in done.stderr and "open the journal again" not in done.stderr
    assert not (tmp_path / "j").exists()


def test_an_out_that_cannot_be_created_keeps_its_own_message(cli, tmp_path: Path) -> None:  # noqa: ANN001
    # no journal was opened, so no partial one was removed; the disk-space hint of a failed
    # write replaced the one that says what to give
    (tmp_path / "in.jsonl").write_text(MANY)
    (tmp_path / "file").write_text("x")
    done = cli("journal", "import", "in.jsonl", "--out", "file/j")
    assert done.code == 4, done.output
    assert "not a directory" in done.stderr and "give a directory path whose parents are directories" in done.stderr
    assert "partial journal was removed" not in done.stderr and "free disk space" not in done.stderr

"""Durability: persisted frames wait for the commit that covers them, in order (durability.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ampsctl.broker.durability import BrokerFailure, Durability
from ampsctl.errors import EnvironmentProblem
from ampsctl.journal.record import Command, JournalRecord
from ampsctl.journal.writer import FsyncPolicy, JournalWriter
from ampsctl.sow import SowStore


def _record(sequence: int) -> JournalRecord:
    return JournalRecord(sequence, 1, Command.PUBLISH, "t", "json", b"{}")


def test_held_frames_are_released_in_order_by_the_covering_commit(tmp_path: Path) -> None:
    writer = JournalWriter.open(tmp_path / "j", fsync=FsyncPolicy.NEVER)
    durability = Durability(writer, SowStore([]), tmp_path)
    durability.append(_record(1))
    assert durability.hold(1, 7, b"a") and durability.uncommitted
    durability.append(_record(2))
    assert durability.hold(2, 8, b"b")
    assert durability.commit() == [(7, b"a"), (8, b"b")]
    assert not durability.hold(2, 7, b"c")  # covered already: send now
    durability.close()


def test_a_sequence_mismatch_stops_the_broker(tmp_path: Path) -> None:
    writer = JournalWriter.open(tmp_path / "j", fsync=FsyncPolicy.NEVER)
    durability = Durability(writer, SowStore([]), tmp_path)
    with pytest.raises(BrokerFailure, match="mismatch"):
        durability.append(_record(5))
    durability.close()
    with pytest.raises(BrokerFailure, match="no journal"):
        Durability(None, SowStore([]), tmp_path).append(_record(1))


def test_a_split_commit_releases_only_after_its_fsync_job_ran(tmp_path: Path) -> None:
    writer = JournalWriter.open(tmp_path / "j", fsync=FsyncPolicy.GROUP)
    durability = Durability(writer, SowStore([]), tmp_path)
    durability.append(_record(1))
    assert durability.hold(1, 7, b"a")
    job = durability.begin_commit()
    assert job is not None and job.sequence == 1
    durability.append(_record(2))  # appends go on while the fsync runs
    assert durability.hold(2, 7, b"b")
    assert durability.release() == []  # nothing is durable before the job ran
    job.run()
    assert durability.end_commit(job, None) == [(7, b"a")]  # the job covers sequence 1 only
    assert durability.commit() == [(7, b"b")]
    durability.close()


def test_a_failed_fsync_job_stops_the_journal_and_releases_nothing(tmp_path: Path) -> None:
    writer = JournalWriter.open(tmp_path / "j", fsync=FsyncPolicy.GROUP)
    durability = Durability(writer, SowStore([]), tmp_path)
    durability.append(_record(1))
    assert durability.hold(1, 7, b"a")
    job = durability.begin_commit()
    assert job is not None
    job.run()
    with pytest.raises(EnvironmentProblem, match="fsync"):
        durability.end_commit(job, OSError(5, "Input/output error"))
    assert durability.release() == []
    durability.close()


def test_no_fsync_job_under_never_the_write_is_the_commit(tmp_path: Path) -> None:
    writer = JournalWriter.open(tmp_path / "j", fsync=FsyncPolicy.NEVER)
    durability = Durability(writer, SowStore([]), tmp_path)
    durability.append(_record(1))
    assert durability.hold(1, 7, b"a")
    assert durability.begin_commit() is None
    assert durability.release() == [(7, b"a")]
    durability.close()

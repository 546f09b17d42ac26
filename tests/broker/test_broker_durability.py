"""Durability: persisted frames wait for the commit that covers them, in order (durability.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ampsctl.broker.durability import BrokerFailure, Durability
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

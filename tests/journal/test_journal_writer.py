"""JournalWriter: sequences, fsync policies, rotation, recovery, and OS errors that lose nothing acknowledged."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from journal_helpers import BASE_TIME, build, flip, read_all, record_offsets, segment_files

from ampsctl.errors import EnvironmentProblem, ExitCode, InputError
from ampsctl.journal import writer as writer_module
from ampsctl.journal.codec import HEADER_SIZE
from ampsctl.journal.errors import JournalCorruptError, JournalFormatError
from ampsctl.journal.reader import JournalReader
from ampsctl.journal.record import Command
from ampsctl.journal.writer import FsyncPolicy, JournalWriter


def _append(writer: JournalWriter, n: int, payload: bytes = b'{"id":1}') -> None:
    for i in range(n):
        writer.append(BASE_TIME + writer.last_sequence + 1, Command.PUBLISH, "orders", "json", payload, sow_key=str(i))


def test_sequences_start_at_one_and_continue_after_reopen(tmp_path: Path) -> None:
    with JournalWriter.open(tmp_path) as writer:
        assert writer.last_sequence == 0 and writer.recovery is None
        first = writer.append(BASE_TIME, Command.PUBLISH, "orders", "json", b"{}", client_name="me")
        assert first.sequence == 1 and first.bookmark.endswith("|1|")
        assert writer.append_many([first, first]) == 3 and writer.append_many([]) == 3
    with JournalWriter.open(tmp_path) as writer:
        assert writer.last_sequence == 3 and writer.recovery is None
        assert writer.append(BASE_TIME, Command.EXPIRE, "orders", "json", b"", sow_key="k").sequence == 4
    assert [r.sequence for r in read_all(tmp_path)] == [1, 2, 3, 4]


def test_rotation_by_size(tmp_path: Path) -> None:
    written = build(tmp_path, 300, segment_bytes=2048)
    files = segment_files(tmp_path)
    assert len(files) > 5
    assert all(path.stat().st_size <= 2048 for path in files)
    assert all(path.with_suffix(".index").exists() for path in files)  # sealed and closed segments are indexed
    reader = JournalReader(tmp_path)
    assert [s.first_sequence for s in reader.segments][0] == 1
    assert all(a.last_sequence + 1 == b.first_sequence for a, b in zip(reader.segments, reader.segments[1:]))
    assert list(reader.scan()) == written
    assert reader.verify() == []


def test_a_record_larger_than_a_segment_gets_one_of_its_own(tmp_path: Path) -> None:
    with JournalWriter.open(tmp_path, segment_bytes=1024) as writer:
        _append(writer, 2)
        writer.append(BASE_TIME, Command.PUBLISH, "orders", "json", b"x" * 5000)
        _append(writer, 2)
    sizes = [path.stat().st_size for path in segment_files(tmp_path)]
    assert len(sizes) == 3 and sizes[1] > 5000
    assert [r.sequence for r in read_all(tmp_path)] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(("policy", "per_append", "on_commit"), [
    (FsyncPolicy.ALWAYS, 1, 0), (FsyncPolicy.GROUP, 0, 1), (FsyncPolicy.NEVER, 0, 0),
])
def test_fsync_policies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: FsyncPolicy, per_append: int, on_commit: int) -> None:
    writer = JournalWriter.open(tmp_path, fsync=policy)
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    _append(writer, 3)
    assert len(calls) == 3 * per_append
    calls.clear()
    writer.commit()
    assert len(calls) == on_commit
    calls.clear()
    writer.commit()  # nothing new: no second fsync
    assert len(calls) == 0
    writer.close()


def test_group_commit_hands_big_batches_to_the_os_before_commit(tmp_path: Path) -> None:
    with JournalWriter.open(tmp_path, fsync=FsyncPolicy.GROUP) as writer:
        _append(writer, 5)
        assert writer.path.stat().st_size == HEADER_SIZE  # still in memory
        _append(writer, 20000, payload=b"x" * 100)  # > 1 MiB of records: written, not yet synced
        assert writer.path.stat().st_size > HEADER_SIZE


def test_second_writer_is_refused(tmp_path: Path) -> None:
    with JournalWriter.open(tmp_path):
        with pytest.raises(EnvironmentProblem, match="already open for writing") as info:
            JournalWriter.open(tmp_path)
        assert info.value.exit_code == ExitCode.ENVIRONMENT
    JournalWriter.open(tmp_path).close()  # released on close


def test_closed_writer_refuses_appends(tmp_path: Path) -> None:
    writer = JournalWriter.open(tmp_path)
    writer.close()
    writer.close()
    with pytest.raises(EnvironmentProblem, match="closed"):
        _append(writer, 1)


def test_invalid_record_changes_nothing(tmp_path: Path) -> None:
    with JournalWriter.open(tmp_path) as writer:
        _append(writer, 1)
        with pytest.raises(InputError, match="expiration"):
            writer.append(BASE_TIME, Command.PUBLISH, "orders", "json", b"{}", expiration=-5)
        assert writer.last_sequence == 1
        _append(writer, 1)
    assert [r.sequence for r in read_all(tmp_path)] == [1, 2]


def test_segment_size_must_be_sensible(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="too small"):
        JournalWriter.open(tmp_path, segment_bytes=10)


# ------------------------------------------------------------------------------ recovery


def test_torn_tail_at_every_byte_offset_of_the_last_record(tmp_path: Path) -> None:
    """Cut the file at each byte of its last record: recovery cuts exactly that record,
    reports it, and the next append reuses its sequence; every earlier record survives."""
    source = tmp_path / "source"
    written = build(source, 6, segment_bytes=1 << 20)
    (segment,) = segment_files(source)
    data = segment.read_bytes()
    last = record_offsets(segment)[-1]
    for cut in range(last, len(data)):
        journal = tmp_path / f"cut{cut}"
        journal.mkdir()
        (journal / segment.name).write_bytes(data[:cut])
        reader = JournalReader(journal)
        torn = reader.torn_tail
        assert (torn.offset, torn.length) == (last, cut - last) if torn is not None else cut == last
        assert list(reader.scan()) == written[:5]
        with JournalWriter.open(journal) as writer:
            if cut == last:
                assert writer.recovery is None
            else:
                assert writer.recovery is not None
                assert (writer.recovery.offset, writer.recovery.bytes_cut) == (last, cut - last)
            assert writer.last_sequence == 5
            assert writer.append(BASE_TIME, Command.PUBLISH, "orders", "json", b"{}").sequence == 6
        assert JournalReader(journal).verify() == []
        assert [r.sequence for r in read_all(journal)] == [1, 2, 3, 4, 5, 6]


def test_torn_segment_header_is_removed(tmp_path: Path) -> None:
    build(tmp_path, 50, segment_bytes=1024)
    files = segment_files(tmp_path)
    number = int(files[-1].stem) + 1
    torn = tmp_path / f"{number:08d}.journal"
    torn.write_bytes(b"\x89AJL\r\n")  # the writer died while creating the next segment
    reader = JournalReader(tmp_path)
    assert reader.torn_tail is not None and reader.torn_tail.path == str(torn) and reader.last_sequence == 50
    with JournalWriter.open(tmp_path) as writer:
        assert writer.recovery is not None and writer.recovery.removed_segment
        assert not torn.exists()
        assert writer.append(BASE_TIME, Command.PUBLISH, "orders", "json", b"{}").sequence == 51


def test_damage_before_the_tail_is_refused_with_segment_and_offset(tmp_path: Path) -> None:
    build(tmp_path, 20, segment_bytes=1 << 20)
    (segment,) = segment_files(tmp_path)
    offsets = record_offsets(segment)
    flip(segment, offsets[7] + 30)
    size = segment.stat().st_size
    with pytest.raises(JournalCorruptError) as info:
        JournalWriter.open(tmp_path)
    assert info.value.path == str(segment) and info.value.offset == offsets[7]
    assert "checksum" in info.value.reason and info.value.exit_code == ExitCode.INVALID_INPUT
    assert str(segment) in str(info.value) and f"offset {offsets[7]}" in str(info.value)
    assert segment.stat().st_size == size  # nothing was cut
    JournalWriter.open(tmp_path / "other").close()  # the lock of the refused journal was released
    with pytest.raises(JournalCorruptError):
        JournalWriter.open(tmp_path)


def test_a_missing_index_is_rebuilt_and_a_missing_segment_refused(tmp_path: Path) -> None:
    build(tmp_path, 100, segment_bytes=1024)
    files = segment_files(tmp_path)
    files[1].with_suffix(".index").unlink()
    with JournalWriter.open(tmp_path):
        pass
    assert files[1].with_suffix(".index").exists()
    files[2].unlink()
    files[2].with_suffix(".index").unlink()
    with pytest.raises(JournalCorruptError, match="previous segment ends at"):
        JournalWriter.open(tmp_path)


def test_not_a_journal_is_refused(tmp_path: Path) -> None:
    (tmp_path / "00000001.journal").write_text("this is a text file\n" * 3)
    with pytest.raises(JournalFormatError, match="looks like text"):
        JournalWriter.open(tmp_path)


# ------------------------------------------------------------------------------ OS errors


def _failing_write(monkeypatch: pytest.MonkeyPatch, *, after: int, partial: bool = False, code: int = errno.ENOSPC) -> list[int]:
    """Make os.write fail with ``code`` from its ``after``-th call on (after writing half, if ``partial``)."""
    calls = [0]
    real = os.write

    def write(fd: int, data: bytes) -> int:
        calls[0] += 1
        if calls[0] > after:
            if partial and calls[0] == after + 1 and len(data) > 1:
                return real(fd, bytes(data[: len(data) // 2]))
            raise OSError(code, os.strerror(code))
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)
    return calls


@pytest.mark.parametrize("partial", [False, True])
def test_disk_full_loses_nothing_acknowledged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, partial: bool) -> None:
    writer = JournalWriter.open(tmp_path, fsync=FsyncPolicy.GROUP)
    _append(writer, 10)
    writer.commit()  # 1..10 acknowledged
    _failing_write(monkeypatch, after=0, partial=partial)
    _append(writer, 5)
    with pytest.raises(EnvironmentProblem) as info:
        writer.commit()
    problem = info.value
    assert problem.exit_code == ExitCode.ENVIRONMENT and problem.code == "JOURNAL_IO"
    assert "no space left on device" in problem.message and "up to sequence 10 are safely written" in problem.message
    assert "5 after it were not acknowledged" in problem.message and "free disk space" in (problem.hint or "")
    with pytest.raises(EnvironmentProblem, match="stopped after an error"):
        _append(writer, 1)
    writer.close()  # releases the journal without writing
    monkeypatch.undo()
    reader = JournalReader(tmp_path)
    assert reader.torn_tail is None  # the partial write was cut back
    assert [r.sequence for r in reader.scan()] == list(range(1, 11))
    with JournalWriter.open(tmp_path) as again:
        assert again.recovery is None and again.last_sequence == 10
        _append(again, 1)
    assert read_all(tmp_path)[-1].sequence == 11


def test_disk_full_under_always_fails_the_append(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = JournalWriter.open(tmp_path, fsync=FsyncPolicy.ALWAYS)
    _append(writer, 3)
    _failing_write(monkeypatch, after=0)
    with pytest.raises(EnvironmentProblem, match="up to sequence 3 are safely written"):
        _append(writer, 1)
    writer.close()
    monkeypatch.undo()
    assert [r.sequence for r in read_all(tmp_path)] == [1, 2, 3]


def test_disk_full_while_rotating(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = JournalWriter.open(tmp_path, segment_bytes=1024, fsync=FsyncPolicy.GROUP)
    _append(writer, 5)
    writer.commit()
    calls = _failing_write(monkeypatch, after=1)  # the pending records go out, the index write fails
    with pytest.raises(EnvironmentProblem, match="no space left"):
        _append(writer, 40)
    assert calls[0] >= 2
    writer.close()
    monkeypatch.undo()
    sequences = [r.sequence for r in read_all(tmp_path)]
    assert sequences[:5] == [1, 2, 3, 4, 5] and sequences == list(range(1, len(sequences) + 1))
    with JournalWriter.open(tmp_path) as again:
        _append(again, 1)
    assert JournalReader(tmp_path).verify() == []


def test_fsync_failure_stops_the_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = JournalWriter.open(tmp_path, fsync=FsyncPolicy.GROUP)
    _append(writer, 2)

    def broken(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(EnvironmentProblem, match="input/output error"):
        writer.commit()
    with pytest.raises(EnvironmentProblem, match="stopped"):
        writer.commit()
    writer.close()


def test_unwritable_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.open

    def denied(path: object, flags: int, *args: object) -> int:
        if str(path).endswith(writer_module.LOCK_NAME):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, flags, *args)

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(EnvironmentProblem) as info:
        JournalWriter.open(tmp_path / "journal")
    assert info.value.exit_code == ExitCode.ENVIRONMENT
    assert "permission denied" in info.value.message and "chmod" in (info.value.hint or "")


def test_journal_path_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(EnvironmentProblem, match="not a directory"):
        JournalWriter.open(tmp_path / "file" / "journal")
    with pytest.raises(EnvironmentProblem, match="exists and is not a directory"):
        JournalWriter.open(tmp_path / "file")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write to a read-only directory")
def test_read_only_directory(tmp_path: Path) -> None:
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(EnvironmentProblem, match="permission denied"):
            JournalWriter.open(tmp_path)
    finally:
        tmp_path.chmod(0o700)


def test_a_sync_job_survives_the_segment_rotating_and_closing_under_it(tmp_path: Path) -> None:
    writer = JournalWriter.open(tmp_path, segment_bytes=600, fsync=FsyncPolicy.GROUP)
    _append(writer, 2)
    job = writer.start_sync()
    assert job is not None and job.sequence == 2
    _append(writer, 20)  # rotates: the segment the job syncs is sealed and its descriptor closed
    assert len(segment_files(tmp_path)) > 1
    job.run()  # its own duplicate descriptor is still valid
    writer.finish_sync(job, None)
    assert writer.synced_sequence >= 2
    rest = writer.start_sync()  # the new segment's records still owe an fsync
    assert rest is not None and rest.sequence == 22
    rest.run()
    writer.finish_sync(rest, None)
    assert writer.synced_sequence == 22
    writer.close()
    assert [record.sequence for record in read_all(tmp_path)] == list(range(1, 23))

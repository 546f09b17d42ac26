"""File-system work for the writer: the journal directory, its lock, durable writes, and OS
errors turned into EnvironmentProblem (exit 4) with what failed, where, and how to fix it.

Functions here raise OSError for the writer to handle (it must stop and cut back a partial
write first), except ``make_directory`` and ``lock``, which run before there is anything to
protect and raise EnvironmentProblem directly.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from ampsctl.errors import EnvironmentProblem
from ampsctl.journal.index import SegmentIndex, encode_index
from ampsctl.journal.segment import index_path

LOCK_NAME = "journal.lock"

_REASONS = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only file system",
    errno.ENOTDIR: "a part of the path is not a directory",
    errno.EIO: "input/output error",
}
_HINTS = {
    errno.ENOSPC: "free disk space or move the journal to a larger disk, then open the journal again",
    errno.EDQUOT: "free space within your quota, then open the journal again",
    errno.EACCES: "give a directory you can write to, or fix its permissions (chmod u+w DIR)",
    errno.EPERM: "give a directory you can write to, or fix its permissions (chmod u+w DIR)",
    errno.EROFS: "put the journal on a writable file system",
    errno.ENOTDIR: "give a directory path whose parents are directories",
    errno.EIO: "the disk reported an error: check it, then open the journal again",
}


def reason(exc: OSError) -> str:
    return _REASONS.get(exc.errno or 0, exc.strerror or str(exc))


def environment_error(exc: OSError, action: str, path: Path, detail: str = "") -> EnvironmentProblem:
    return EnvironmentProblem(
        f"cannot {action} '{path}': {reason(exc)}{detail}",
        code="JOURNAL_IO",
        hint=_HINTS.get(exc.errno or 0, "check the disk and the directory's permissions, then open the journal again"),
    )


def make_directory(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise EnvironmentProblem(f"journal path '{path}' exists and is not a directory", code="JOURNAL_IO",
                                 hint="give a directory for the journal, not a file") from None
    except OSError as exc:
        raise environment_error(exc, "create journal directory", path) from None


def lock(directory: Path) -> int:
    """An open descriptor holding the exclusive lock on the journal: one writer at a time."""
    path = directory / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise environment_error(exc, "write in journal directory", directory) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise EnvironmentProblem(f"journal '{directory}' is already open for writing", code="JOURNAL_LOCKED",
                                 hint="only one writer (a broker or an import) may use a journal at a time: stop the other one") from None
    return fd


def write_all(fd: int, data: bytes | bytearray) -> None:
    """``os.write`` until every byte is written (a write may be partial)."""
    done = 0
    with memoryview(data) as view:
        while done < len(data):
            done += os.write(fd, view[done:])


def write_index_file(segment: Path, index: SegmentIndex, *, durable: bool) -> None:
    """Write ``segment``'s index through a temporary file and a rename (never half an index)."""
    final = index_path(segment)
    temporary = final.with_name(final.name + ".tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            write_all(fd, encode_index(index))
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, final)
    except OSError:
        remove(temporary, quiet=True)
        raise
    if durable:
        sync_directory(segment.parent)


def sync_directory(directory: Path) -> None:
    """fsync a directory, so a file created or renamed in it survives a crash."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDWR)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove(path: Path, *, quiet: bool = False) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        if not quiet:
            raise

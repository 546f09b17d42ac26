"""Standard output that writes everything or fails loudly.

CPython's buffered stdout returns a short count, without an error, when the operating system
takes only part of a large write (a disk that fills up, a file-size limit), and ``print`` and
the buffered writes of the commands ignore that count: the output would be cut short and the
command would still exit 0. ``install`` puts a raw writer under ``sys.stdout`` that loops until
every byte is written, so the failure comes out as an exception: ``OutputFailed`` (exit 4) for
a full disk or any other write error, ``ReaderGone`` when the reader has gone (``| head``), which
``main`` ends quietly with exit code 141, the shell's code for a writer stopped by SIGPIPE (click
would make it a silent exit 1, which means "findings").

Some code between the write and ``main`` turns the broken pipe into something else: rich's
``Console`` (the tables, the lint report) catches it and raises ``SystemExit(1)``. So the writer
also remembers that the reader has gone (``reader_gone``), and ``main`` makes any failure after
that exit 141 too, whatever it became on the way.
"""

from __future__ import annotations

import errno
import io
import os
import sys

from ampsctl.errors import EnvironmentProblem


class OutputFailed(EnvironmentProblem):
    """Standard output cannot take the rest of the output."""


class ReaderGone(BrokenPipeError):
    """The reader of standard output closed it. No errno, so that click's own EPIPE handling (a
    silent exit 1) lets it through; a command that ends normally when its reader leaves (an
    endless subscription) catches BrokenPipeError."""


_reader_gone = False  # set by the first write that finds the pipe closed


def reader_gone() -> bool:
    """Whether a write to standard output has found the reader gone (the pipe closed)."""
    return _reader_gone


def _note_reader_gone() -> None:
    global _reader_gone
    _reader_gone = True


class _WholeWrites(io.RawIOBase):
    """File descriptor ``fd``, written in full or not at all (an exception)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            try:
                done += os.write(self._fd, view[done:])
            except BrokenPipeError:
                _note_reader_gone()
                raise ReaderGone from None
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise OutputFailed(f"cannot write the output: {exc.strerror or exc}", code="OUTPUT",
                                   hint="free disk space or write somewhere else; the output so far is incomplete") from None
        return done


def install() -> None:
    """Put ``_WholeWrites`` under ``sys.stdout`` when it is the process's real standard output."""
    global _reader_gone
    _reader_gone = False  # a new run (tests call main more than once in one process)
    current = sys.stdout
    try:
        fd = current.fileno()
    except (AttributeError, OSError, ValueError):
        return  # an in-process capture (tests): nothing to protect
    current.flush()
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(_WholeWrites(fd)), encoding=current.encoding,
                                  errors=current.errors, line_buffering=current.line_buffering,
                                  write_through=getattr(current, "write_through", False))  # python -u stays unbuffered


def quiet_after_broken_pipe() -> None:
    """The reader has gone: send whatever is still buffered to /dev/null, not to an error at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass

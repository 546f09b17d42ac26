"""Typed errors. The library raises these; only ``ampsctl.cli`` turns them into exit codes.

Each family maps to one exit code (DESIGN.md): usage 2, invalid input 3, environment 4.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FINDINGS = 1
    USAGE = 2
    INVALID_INPUT = 3
    ENVIRONMENT = 4
    INTERNAL = 5
    INTERRUPTED = 130
    BROKEN_PIPE = 141  # the reader closed standard output early (128 + SIGPIPE, as a shell reports it)


@dataclass(frozen=True, slots=True)
class Location:
    """A place in a file, 1-based line and column."""

    path: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if not self.line:
            return self.path
        return f"{self.path}:{self.line}:{self.col}" if self.col else f"{self.path}:{self.line}"


class AmpsctlError(Exception):
    """Base error: a stable code, a message, a hint on how to fix it, and where."""

    exit_code = ExitCode.INTERNAL

    def __init__(
        self,
        message: str,
        *,
        code: str = "AMPSCTL",
        hint: str | None = None,
        location: Location | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.hint = hint
        self.location = location

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        return f"{where}{self.message}"


class UsageError(AmpsctlError):
    """The command line itself is wrong."""

    exit_code = ExitCode.USAGE


class InputError(AmpsctlError):
    """A file, value or expression that cannot be read or understood."""

    exit_code = ExitCode.INVALID_INPUT


class UnitError(InputError):
    """A value that is not a valid AMPS interval, byte size or count."""


class EnvironmentProblem(AmpsctlError):
    """Something outside the input is missing or busy (a port, Java, a directory)."""

    exit_code = ExitCode.ENVIRONMENT

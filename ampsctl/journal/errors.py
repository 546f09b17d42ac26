"""Journal errors and problems.

* ``JournalCorruptError``: a segment that cannot be trusted at a given place (a bad checksum,
  an impossible length, a sequence gap, a damaged header). Raised by scans and by the writer's
  recovery; ``verify`` returns the same facts as ``JournalProblem`` values instead of raising.
* ``JournalFormatError``: the file is not a journal segment at all (wrong magic: a text file,
  another tool's file) or is one of a format version this ampsctl cannot read.

Both are InputError (exit 3). Disk-full, permission and other OS failures while writing are
``ampsctl.errors.EnvironmentProblem`` (exit 4), raised by the writer.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ampsctl.errors import InputError, Location


class ProblemKind(enum.Enum):
    """What ``JournalReader.verify`` found; the value is the word the CLI prints."""

    FORMAT = "format"  # not a segment, or an unsupported format version
    HEADER = "header"  # a segment header that is damaged or disagrees with its file name
    RECORD = "record"  # a record with a bad checksum, length or field
    SEQUENCE = "sequence"  # a gap or repeat in the sequence numbers (a missing or extra segment)
    INDEX = "index"  # an index file that is damaged or disagrees with its segment


@dataclass(frozen=True, slots=True)
class JournalProblem:
    """One thing ``verify`` found wrong: where (file and byte offset) and what."""

    path: str
    offset: int
    reason: str
    kind: ProblemKind = ProblemKind.RECORD
    length: int = 0  # bytes of the damaged region, when known (0 = unknown or not a region)

    def __str__(self) -> str:
        return f"{self.path}: offset {self.offset}: {self.reason}"


_CORRUPT_HINT = (
    "run `ampsctl journal verify DIR` to list every damaged place; restore the segment from a "
    "replica or backup. Only the journal's last segment may be cut at the offset shown instead "
    "(truncate -s OFFSET FILE), losing its records from there on: a cut in an earlier segment "
    "destroys its intact records after the damage and leaves a gap before the next segment"
)


class JournalCorruptError(InputError):
    """A journal segment is damaged at ``path``:``offset`` for ``reason``."""

    def __init__(self, path: str, offset: int, reason: str, *, hint: str | None = None, code: str = "JOURNAL_CORRUPT") -> None:
        super().__init__(
            f"journal segment damaged at offset {offset}: {reason}",
            code=code,
            hint=_CORRUPT_HINT if hint is None else hint,
            location=Location(path),
        )
        self.path = path
        self.offset = offset
        self.reason = reason

    def problem(self, kind: ProblemKind = ProblemKind.RECORD) -> JournalProblem:
        return JournalProblem(self.path, self.offset, self.reason, kind)


class JournalFormatError(JournalCorruptError):
    """The file is not an ampsctl journal segment, or has a format version we cannot read."""

    def __init__(self, path: str, reason: str, *, hint: str, offset: int = 0) -> None:
        super().__init__(path, offset, reason, hint=hint, code="JOURNAL_FORMAT")
        self.message = f"not a readable ampsctl journal segment: {reason}"
        self.args = (self.message,)

"""The transaction log (journal): an append-only, segmented, checksummed record of every
publish, delta_publish, sow_delete and expiration, read back by bookmark or time.

Modules, each one concept: ``record`` (the record value), ``codec`` (the byte format, pure),
``views`` (lazy records for fast scans), ``index`` (per-segment seek index), ``segment``
(segment files, torn tail or damage), ``writer`` (append, group commit, rotation, recovery),
``reader`` (scans, bookmarks, verify), ``bookmarks`` (bookmark and timestamp text), ``errors``.
The format is documented in docs/formats.md ("Transaction log (journal)").
"""

from ampsctl.journal.errors import JournalCorruptError, JournalFormatError, JournalProblem, ProblemKind
from ampsctl.journal.reader import JournalReader, SegmentInfo, TornTail
from ampsctl.journal.record import Command, JournalRecord
from ampsctl.journal.writer import FsyncPolicy, JournalWriter, Recovery

__all__ = [
    "Command", "FsyncPolicy", "JournalCorruptError", "JournalFormatError", "JournalProblem", "JournalReader",
    "JournalRecord", "JournalWriter", "ProblemKind", "Recovery", "SegmentInfo", "TornTail",
]

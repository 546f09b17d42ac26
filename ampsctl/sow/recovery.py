"""Start-up recovery: load each SOW file, replay the journal after it, expire what is due.

Theory of operation (AMPS's own model, DESIGN.md; seeds 001 and 003):

1. Persistent topic with a readable SOW file: its records are loaded and the group is complete
   through the file's ``last_sequence``. A file *ahead* of the journal (the journal was
   deleted or cut) is kept as it is ("AMPS takes no action") and journal records are applied
   from the journal's end on, so later records are never skipped.
2. Persistent topic whose file is missing, damaged (bad page, failed CRC, truncated) or
   incompatible (other Key fields, KeyDomain, message type): rebuilt from the journal from its
   RecoveryPoint (``epoch``, the default, is the start). A damaged or incompatible file is
   renamed to ``<file>.damaged`` (``.damaged.2``... beside an earlier one) so nothing is
   destroyed; the next checkpoint writes a new one.
   A file that is not a SOW file at all, or of a newer format version, stops recovery instead:
   it is not ours to replace.
   A checkpoint killed mid-transaction left SQLite's hot rollback journal beside the file:
   it is rolled back first (``_roll_back``), and a journal never stays where SQLite would apply
   it to a later file of that name (moved aside with a damaged file, removed without one).
   The temporary file of a whole-file write killed midway (``.<file>.tmp-<pid>``, its pid gone)
   is removed, so crashes do not pile them up.
3. Transient topic: rebuilt from the journal from its RecoveryPoint (``now``: empty).
4. One scan of the journal from the lowest start point applies every record to the groups
   that need it (``SowStore.apply`` skips what a group already holds). A torn journal tail is
   not read (the reader excludes it; the writer cuts it when the broker reopens the journal);
   damage before the tail stops recovery with JournalCorruptError, never a silent skip.
5. Expirations due at the caller's ``now`` are processed (seed 003: "AMPS processes
   expirations during startup"); they are returned so the broker can journal them.
Recovery reads the journal and never writes it; it reads SOW files and writes only the
renames and rollbacks of step 2.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ampsctl.errors import EnvironmentProblem
from ampsctl.sow.checkpoint import load_group
from ampsctl.sow.errors import ReplayError, SowFileError
from ampsctl.sow.sowfile import check_header
from ampsctl.sow.record import Change
from ampsctl.sow.spec import TopicSpec
from ampsctl.sow.store import SowStore, TopicGroup

if TYPE_CHECKING:
    from ampsctl.journal.reader import JournalReader


@dataclass(slots=True)
class GroupRecovery:
    """How one SOW topic was recovered."""

    name: str
    message_type: str
    path: str | None  # the SOW file (None: transient)
    source: str  # "file", "rebuilt" (file missing/damaged), "journal" (transient), "empty" (RecoveryPoint now)
    loaded: int = 0  # records read from the file
    file_sequence: int | None = None  # the file's last_sequence
    replayed: int = 0  # journal records applied
    problem: str | None = None  # why the file was not used, or a note (file ahead of the journal)
    removed: list[str] = field(default_factory=list)  # temporary files of killed checkpoints, removed


@dataclass(slots=True)
class RecoveryResult:
    store: SowStore
    groups: list[GroupRecovery]
    expired: list[Change] = field(default_factory=list)
    journal_last_sequence: int = 0
    torn_tail: str | None = None  # what the reader left out at the end of the journal


def sow_path(spec: TopicSpec, base_dir: str | os.PathLike[str]) -> Path | None:
    """Where a persistent topic's SOW file is: FileName with %n expanded, relative to ``base_dir``."""
    name = spec.file_path()
    return None if name is None else Path(base_dir) / name


def recover(
    specs: Sequence[TopicSpec],
    *,
    journal: str | os.PathLike[str] | JournalReader | None,
    now: int,
    base_dir: str | os.PathLike[str] = ".",
    on_error: Callable[[ReplayError], None] | None = None,
) -> RecoveryResult:
    """Recover every SOW topic of ``specs``; see the module docstring for the steps. ``journal``
    is its directory, or a reader of it (the broker reads it for its publisher memory too)."""
    from ampsctl.journal.reader import JournalReader

    if isinstance(journal, JournalReader):
        reader: JournalReader | None = journal
    else:
        reader = JournalReader(journal) if journal is not None and Path(journal).is_dir() else None
    last = reader.last_sequence if reader is not None else 0
    store = SowStore(specs)
    reports = [_prepare(store, position, base_dir, last) for position in range(len(store.groups))]
    if reader is not None and store.groups:
        start = min(group.sequence for group in store.groups)
        counts = [0] * len(store.groups)
        positions = {id(group): position for position, group in enumerate(store.groups)}
        wanted = _topic_test(specs)
        for record in reader.scan(after_sequence=start, topics=wanted):
            group = store.route(record.topic, record.message_type)
            before = group.sequence if group is not None else 0
            try:
                store.apply(record)
            except ReplayError as exc:
                if on_error is None:
                    raise
                on_error(exc)
            if group is not None and group.sequence != before:
                counts[positions[id(group)]] += 1
        for report, count in zip(reports, counts, strict=True):
            report.replayed = count
    store.last_sequence = max(store.last_sequence, last)
    expired = store.sweep(now)
    torn = str(reader.torn_tail) if reader is not None and reader.torn_tail is not None else None
    return RecoveryResult(store, reports, expired, last, torn)


def _prepare(store: SowStore, position: int, base_dir: str | os.PathLike[str], last: int) -> GroupRecovery:
    """Load one group's file (or decide where its replay starts); the report of what happened."""
    group = store.groups[position]
    spec = group.spec
    path = sow_path(spec, base_dir)
    start_over = 0 if spec.recovery_point == "epoch" else last
    if path is None:
        group.sequence = start_over
        return GroupRecovery(spec.name, spec.message_type, None, "journal" if start_over == 0 else "empty")
    report = GroupRecovery(spec.name, spec.message_type, str(path), "rebuilt")
    report.removed = _remove_temporaries(path)
    hot = rollback_journal(path)
    if not path.exists():
        report.problem = "no SOW file yet"
        group.sequence = start_over
        if hot.exists():  # SQLite would apply it to the next file of that name
            _move(hot, None)
        return report
    fresh = TopicGroup(spec)
    try:
        if hot.exists():
            _roll_back(path)
        meta = load_group(path, fresh)
    except SowFileError as exc:
        if not exc.damaged:
            raise  # not a SOW file, or a newer format: not ours to replace
        report.problem = exc.message
        aside = _aside_path(path)
        try:
            if hot.exists():  # its journal goes with it, never left for the next file of that name
                _move(hot, rollback_journal(aside))
            os.replace(path, aside)
        except OSError as error:
            raise EnvironmentProblem(f"cannot move the damaged SOW file {path} to {aside}: {error.strerror}",
                                     code="SOW_IO", hint="check the directory's permissions") from None
        group.sequence = start_over
        return report
    store.groups[position] = fresh
    report.source, report.loaded, report.file_sequence = "file", len(fresh), meta.last_sequence
    if fresh.sequence > last:
        report.problem = f"the SOW file is ahead of the journal (file {fresh.sequence}, journal {last}); kept as it is"
        fresh.sequence = last
    return report


def _aside_path(path: Path) -> Path:
    """Where a damaged file goes: ``<file>.damaged``, or ``.damaged.2``, ``.3``... when an
    earlier damaged copy (or its rollback journal) is already there: evidence is never overwritten."""
    aside = path.with_name(path.name + ".damaged")
    number = 1
    while aside.exists() or rollback_journal(aside).exists():
        number += 1
        aside = path.with_name(f"{path.name}.damaged.{number}")
    return aside


def _remove_temporaries(path: Path) -> list[str]:
    """Remove the ``.<file>.tmp-<pid>`` files (``sowfile.temporary_path``) of writers that are
    gone: a process killed while it wrote a whole new file (a first checkpoint, a rebuild) left
    one, under its own pid, so each crash would add one more. A live process's file is left.
    ``journal compact`` writes each file to that name first (``compact.staged_files``) and the
    writers' own scratch files are named after the name they write in turn (``.<name>.tmp-<pid>``,
    ``.<name>.bulk-<pid>`` on its fast path), so a compaction killed mid-write leaves
    ``..<file>.tmp-<pid>.tmp-<pid>`` or ``...<file>.tmp-<pid>.bulk-<pid>.tmp-<pid>``: one leading
    point per suffix."""
    scratch = re.compile(r"(\.+)" + re.escape(path.name) + r"((?:\.(?:tmp|bulk)-[0-9]+)+)")
    removed = []
    try:
        names = [entry.name for entry in os.scandir(path.parent) if entry.name.startswith(".")]
    except OSError:
        return removed  # no directory yet, or not readable: loading the file says what is wrong
    for name in names:
        found = scratch.fullmatch(name)
        if found is None:
            continue
        pids = {int(pid) for pid in re.findall(r"-([0-9]+)", found[2])}
        if len(found[1]) != found[2].count(".") or any(pid != os.getpid() and _alive(pid) for pid in pids):
            continue
        try:
            (path.parent / name).unlink()
        except FileNotFoundError:
            continue
        except OSError as error:
            raise EnvironmentProblem(f"cannot remove the temporary SOW file {path.parent / name}: {error.strerror}",
                                     code="SOW_IO", hint="check the directory's permissions") from None
        removed.append(name)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def rollback_journal(path: Path) -> Path:
    """SQLite's rollback journal of a SOW file: left "hot" when a checkpoint was killed mid-transaction."""
    return path.with_name(path.name + "-journal")


def _roll_back(path: Path) -> None:
    """Finish a checkpoint killed mid-transaction: the first read of a writable connection rolls
    the hot journal back, so the file is its previous checkpoint again (a read-only open would
    see the half-written pages). A file that is not a SOW file is not touched (``check_header``)."""
    check_header(path)
    try:
        connection = sqlite3.connect(path, isolation_level=None)
        try:
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            connection.close()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # the latter: SQLite's message quotes damaged bytes
        if isinstance(exc, sqlite3.OperationalError) and rollback_journal(path).exists():
            raise EnvironmentProblem(
                f"cannot roll back the unfinished checkpoint of SOW file {path} ({rollback_journal(path).name}): {exc}",
                code="SOW_IO", hint="make the SOW file and its directory writable; the journal holds its previous state",
            ) from None
        # damage: load_group reports it


def _move(source: Path, target: Path | None) -> None:
    """Move ``source`` to ``target``, or remove it (None)."""
    try:
        if target is None:
            source.unlink()
        else:
            os.replace(source, target)
    except OSError as error:
        raise EnvironmentProblem(f"cannot move SQLite's rollback journal {source}: {error.strerror}",
                                 code="SOW_IO", hint="check the directory's permissions") from None


def _topic_test(specs: Sequence[TopicSpec]) -> Callable[[str], bool]:
    """Whether any spec could store a topic (message types are checked when a record is applied)."""
    def wanted(topic: str) -> bool:
        return any(spec.matches(topic, spec.message_type) for spec in specs)

    return wanted

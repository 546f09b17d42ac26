"""Journal compaction (local engine): the SOW files a journal implies at a point in time.

``compact`` replays a journal into a fresh ``SowStore`` up to an as-of point and writes one SOW
file per configured SOW topic (persistent and transient alike; a Pattern topic's concrete
topics share their container's file). It is the reference the Spark engine of the pipeline
issue must agree with.

* As-of point: a bookmark (``h|seq|``: that record included; ``0``: nothing; ``0|1|``: the
  whole journal) or a timestamp (the records before the first one stamped later than it:
  timestamps need not increase, and the reader stops there). Default: the whole journal.
* Expiration: records due at ``now`` are expired, as recovery would at that moment. ``now``
  defaults to the as-of timestamp, else to the timestamp of the last record read, so the
  result depends on the journal alone, never on a clock.
* Files are named ``<Name>.<MessageType>.sow`` (``%n``), the name percent-encoded where it
  holds characters a file name cannot (``/ett/order`` -> ``%2Fett%2Forder.fix.sow``); each is
  written to a temporary file and renamed into place. Existing files are only replaced with
  ``overwrite``; every target is checked before anything is written.
* A record the SOW cannot apply (a message without its key fields...) stops compaction with
  its sequence, unless ``on_error`` takes it (``--keep-going``).

Two paths, one result: ``fastcompact`` (last value per record from lazy journal views, bulk
file writes) runs first and gives up on any journal it cannot replay exactly (sow_delete,
EXPIRE records, History topics...); the reference replay through ``SowStore`` below then
runs from the start. ``fast=False`` runs only the reference (tests compare the two). On a
fallback the progress callback starts again from 0; refused records reach ``on_error`` once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ampsctl.errors import EnvironmentProblem, UsageError
from ampsctl.gcpause import paused_gc
from ampsctl.sow.checkpoint import fsync_directory, write_failure, write_group
from ampsctl.sow.errors import ReplayError
from ampsctl.sow.sowfile import temporary_path
from ampsctl.sow.spec import TopicSpec
from ampsctl.sow.store import SowStore


@dataclass(frozen=True, slots=True)
class CompactedFile:
    name: str
    message_type: str
    path: str
    records: int
    topics: int  # concrete topics (more than one only for a Pattern topic)


@dataclass(frozen=True, slots=True)
class CompactResult:
    files: list[CompactedFile]
    scanned: int  # journal records read
    applied: int  # of those, records that went to a SOW topic
    last_sequence: int  # the as-of point: the last journal sequence applied (0: none)
    now: int | None  # the time expirations were processed at (None: nothing read, nothing to expire)
    expired: int
    skipped: int  # records refused and skipped through on_error


def file_name(spec: TopicSpec) -> str:
    """``<Name>.<MessageType>.sow`` with unsafe characters percent-encoded."""
    return quote(f"{spec.name}.{spec.message_type}", safe="-_.~@+=,") + ".sow"


def compact(
    journal: str | os.PathLike[str],
    specs: Sequence[TopicSpec],
    out_dir: str | os.PathLike[str],
    *,
    as_of: str | None = None,
    now: int | None = None,
    overwrite: bool = False,
    on_error: Callable[[ReplayError], None] | None = None,
    progress: Callable[[int], None] | None = None,
    fast: bool = True,
) -> CompactResult:
    """Build the SOW files of ``specs`` from ``journal`` into ``out_dir``."""
    from ampsctl.journal.bookmarks import parse_position
    from ampsctl.journal.reader import JournalReader

    reader = JournalReader(journal)
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise UsageError(f"--out {out_dir} is a file, not a directory", hint="give a directory for the SOW files (it is created if missing)")
    targets = [Path(out_dir) / file_name(spec) for spec in specs]
    check_targets(targets, overwrite)
    to_sequence = to_timestamp = None
    if as_of is not None:
        position = parse_position(as_of)
        if position.timestamp is not None:
            to_timestamp = position.timestamp
            now = to_timestamp if now is None else now
        else:
            to_sequence = reader.seek_bookmark(as_of)  # checks the bookmark names a record of this journal
    if fast:
        result = _compact_fast(reader, specs, targets, to_sequence, to_timestamp, now, on_error, progress)
        if result is not None:
            return result
    store = SowStore(specs)
    scanned = applied = skipped = 0
    last_timestamp = None
    if to_sequence != 0:
        for record in reader.scan(to_sequence=to_sequence, to_timestamp=to_timestamp):
            scanned += 1
            last_timestamp = record.timestamp
            if store.route(record.topic, record.message_type) is not None:
                applied += 1
            try:
                store.apply(record)
            except ReplayError as exc:
                if on_error is None:
                    raise
                skipped += 1
                on_error(exc)
            if progress is not None and not scanned & 0xFFFF:
                progress(scanned)
    if progress is not None:
        progress(scanned)
    if now is None:
        now = last_timestamp
    expired = len(store.sweep(now)) if now is not None else 0
    files = []
    with staged_files(targets) as staged:
        for group, target, scratch in zip(store.groups, targets, staged, strict=True):
            count = write_group(scratch, group, sequence=store.last_sequence)
            files.append(CompactedFile(group.spec.name, group.spec.message_type, str(target), count, len(group.topics)))
    return CompactResult(files, scanned, applied, store.last_sequence, now, expired, skipped)


def _compact_fast(reader: Any, specs: Sequence[TopicSpec], targets: list[Path], to_sequence: int | None,
                  to_timestamp: int | None, now: int | None, on_error: Callable[[ReplayError], None] | None,
                  progress: Callable[[int], None] | None) -> CompactResult | None:
    """The fast path's result, or None when the reference replay must run (see fastcompact)."""
    from ampsctl.sow import fastcompact
    from ampsctl.sow.bulkwrite import write_rows

    with paused_gc():  # the scan's, and the millions of rows after it
        try:
            state = fastcompact.scan(reader, specs, to_sequence=to_sequence, to_timestamp=to_timestamp,
                                     keep_going=on_error is not None, progress=progress)
            keyed = fastcompact.keyed(state)
        except fastcompact.Fallback:
            return None
        if progress is not None:
            progress(state.scanned)
        for refused in state.refused:  # only now: a fallback would have reported them again
            on_error(refused)  # type: ignore[misc]
        if now is None:
            now = state.last_timestamp
        expired = fastcompact.sweep(state, keyed, now)
        files = []
        with staged_files(targets) as staged:
            for fast, topics, target, scratch in zip(state.groups, keyed, targets, staged, strict=True):
                group = fast.group
                count = write_rows(scratch, group, fastcompact.rows(fast, topics), sequence=state.last_sequence)
                files.append(CompactedFile(group.spec.name, group.spec.message_type, str(target), count, len(group.topics)))
        return CompactResult(files, state.scanned, state.applied, state.last_sequence, now, expired, state.skipped)


def check_targets(targets: list[Path], overwrite: bool) -> None:
    seen: set[Path] = set()
    for target in targets:
        if target in seen:
            raise UsageError(f"two SOW topics would both be written to {target}",
                             hint="each (Name, MessageType) pair must be configured once")
        seen.add(target)
        if target.exists() and not target.is_file():  # --force replaces files, never a directory
            raise UsageError(f"{target} is a directory (or another non-file), where a SOW file goes",
                             hint="move it away, or pick another --out")
        if target.exists() and not overwrite:
            raise UsageError(f"{target} already exists", hint="pass --force to replace existing SOW files, or pick another --out")


@contextmanager
def staged_files(targets: list[Path]) -> Iterator[list[Path]]:
    """Scratch names beside ``targets`` to write the files to; renamed over the targets only when
    every file is written, so a failure (a full disk on the third file) leaves --out as it was,
    never a mix of new files and old ones of another journal point. A failure names the target.
    Both engines write SOW files through it (``pipeline.spark_compact``)."""
    staged = [temporary_path(target) for target in targets]  # recovery removes those a killed run leaves
    try:
        yield staged
        for scratch, target in zip(staged, targets, strict=True):
            os.replace(scratch, target)
        if targets:
            fsync_directory(targets[0].parent)
    except EnvironmentProblem as exc:
        raise EnvironmentProblem(_named(exc.message, staged, targets), code=exc.code, hint=exc.hint) from None
    except OSError as exc:
        raise write_failure(exc, next((t for s, t in zip(staged, targets) if s.exists()), targets[0])) from None
    finally:
        for scratch in staged:
            with suppress(OSError):
                scratch.unlink(missing_ok=True)


def _named(message: str, staged: list[Path], targets: list[Path]) -> str:
    for scratch, target in zip(staged, targets, strict=True):
        message = message.replace(str(scratch), str(target))
    return message

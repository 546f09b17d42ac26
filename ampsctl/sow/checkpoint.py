"""Moving a topic group between memory and its SOW file: write whole, checkpoint, load.

* ``write_group`` writes a complete new file next to the target and renames it over the
  target only when it is complete and synced, so a crash leaves the old file or the new one,
  never a mix (compaction, and the first checkpoint after a rebuild).
* ``checkpoint`` brings an existing file up to date in one SQLite transaction: the records
  and history of the keys changed since the last checkpoint (``SowTopic.dirty``), and the
  meta (last sequence applied). SQLite's rollback journal makes it atomic.
* ``load_group`` reads a file back into a group for recovery, after ``PRAGMA integrity_check``
  and with every row's CRC checked and no key twice; a file whose keys would differ (other Key fields,
  KeyDomain, message type or Pattern) is refused as incompatible so that recovery rebuilds it.

Both are two steps, so that a server can write off its event loop: ``take_snapshot`` (cheap,
between two commands: the dirty keys' records, tokens and history, the meta, and the dirty sets
handed over) and ``write_snapshot`` (the rows and SQLite, on any thread: it reads only the
snapshot and the group's immutable spec, indexer and payloads). A failed write gives the keys
back (``Snapshot.restore``), so the next checkpoint writes them again. ``checkpoint`` and
``write_group`` do both steps at once.

Invariant kept for recovery: the ``last_sequence`` a file records covers exactly the records
it holds, because records and meta change in the same transaction (or the same rename), and a
snapshot holds the store as it was at that sequence.
Only acknowledged journal records may be checkpointed; the caller guarantees that.
OS failures (a full disk, a read-only directory) are EnvironmentProblem (exit 4), and the
previous file is left as it was.
"""

from __future__ import annotations

import errno
import heapq
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import suppress
import dataclasses
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

import orjson

from ampsctl.errors import EnvironmentProblem, InputError
from ampsctl.messages.keys import KEY_SCHEME_VERSION
from ampsctl.sow.errors import SowFileError
from ampsctl.sow.history import Saved
from ampsctl.sow.payloads import json_plain
from ampsctl.sow.record import SowRecord
from ampsctl.sow.sowfile import (
    FORMAT, FORMAT_VERSION, SowFile, SowMeta, damaged, history_crc, index_columns, meta_crc, row_crc, schema,
    temporary_path,
)
from ampsctl.sow.store import TopicGroup
from ampsctl.sow.topic import SowTopic

_BATCH = 10_000


@dataclass(slots=True)
class _TopicState:
    """One topic's part of a snapshot: per key, its record (None: gone), tokens and document."""

    topic: str
    keys: list[str]  # in position order (topic.py "order") once written; an update's sorted by the writer
    positions: list[int | None]  # of each key; None (or -1 once sorted) for a key that is gone
    records: list[SowRecord | None]
    tokens: list[tuple[bytes | None, ...] | None] | None  # None: no hash index
    docs: list[Any] | None  # None: the rows need no document
    history: list[tuple[str, list[Saved]]] | None  # per key, its states (None: no history)
    source: SowTopic
    dirty: set[str]  # the keys handed over (restored if the write fails)
    restored: set[str]  # of those, the ones removed and stored again: their rows are replaced, not updated


@dataclass(slots=True)
class Snapshot:
    """A group as a checkpoint writes it, at ``sequence`` (see the module docstring)."""

    group: TopicGroup
    sequence: int
    timestamp: int | None
    horizon: int | None
    rewrite: bool  # a whole new file (write_group) rather than an update of the dirty keys
    topics: list[_TopicState]

    def restore(self) -> None:
        """The write failed: mark what it held as changed again."""
        for state in self.topics:
            source = state.source
            source.dirty.update(state.dirty)
            source.restored.update(state.restored)
            # a key stored anew since the snapshot (after a removal) was not marked: the file keeps its old row
            order = source._order  # noqa: SLF001
            source.restored.update(key for key, position in zip(state.keys, state.positions, strict=True)
                                   if order.get(key, position) != position)
        if self.rewrite:
            self.group.needs_rewrite = True


def take_snapshot(group: TopicGroup, *, sequence: int, rewrite: bool) -> Snapshot:
    """What a checkpoint of ``group`` at ``sequence`` writes; the topics' dirty sets start empty.

    Cost on the caller's thread: about 0.1 µs per changed key (every key with ``rewrite``),
    C-level lookups of records, tokens and positions; no sort (the writer's thread puts an
    update's keys in position order), row, CRC or SQL (those are ~7 µs a record)."""
    indexer = group.indexer
    states = []
    horizons = []
    for topic in list(group.topics.values()):
        dirty, topic.dirty = topic.dirty, set()
        restored, topic.restored = topic.restored, set()
        # The topic's own dicts (same package), read with C-level map: the loop waits for this.
        stored, kept, order = topic._records, topic._tokens, topic._order  # noqa: SLF001
        keys = list(stored) if rewrite else list(dirty)  # ``stored`` and ``order`` iterate in position order
        positions: list[int | None] = list(order.values()) if rewrite else list(map(order.get, keys))
        records = list(stored.values()) if rewrite else list(map(stored.get, keys))
        tokens = None
        if indexer.hash_fields:
            tokens = list(map(kept.get, keys)) if topic.indexer is indexer else [None] * len(keys)
        docs = None
        if indexer.memo_fields or (tokens is not None and None in tokens):
            docs = [topic.doc(key) if record is not None else None for key, record in zip(keys, records, strict=True)]
        history = topic.history
        saved = None
        if history is not None:
            saved = [(key, history.states(key)) for key in (history.keys() if rewrite else dirty)]
            if history.horizon is not None:
                horizons.append(history.horizon)
        states.append(_TopicState(topic.topic, keys, positions, records, tokens, docs, saved, topic, dirty, restored))
    if rewrite:
        group.needs_rewrite = False
    return Snapshot(group, sequence, group.timestamp, max(horizons) if horizons else None, rewrite, states)


def write_snapshot(path: str | os.PathLike[str], snapshot: Snapshot, *, sync: bool = True) -> int:
    """Write ``snapshot`` to the file at ``path``; the rows written (or deleted). Any thread.

    ``sync=False`` skips the fsyncs (the journal's FsyncPolicy.NEVER, tests): still atomic
    against a crash of the process, not against a power loss."""
    return _write_whole(Path(path), snapshot, sync) if snapshot.rewrite else _update(Path(path), snapshot, sync)


def write_group(path: str | os.PathLike[str], group: TopicGroup, *, sequence: int, sync: bool = True) -> int:
    """Write ``group`` to a new file at ``path`` (replacing any old one); the number of records."""
    return _write_now(path, take_snapshot(group, sequence=sequence, rewrite=True), sync)


def checkpoint(path: str | os.PathLike[str], group: TopicGroup, *, sequence: int, sync: bool = True) -> int:
    """Bring the file at ``path`` up to date with ``group``; the number of rows written or deleted."""
    rewrite = group.needs_rewrite or not Path(path).exists()
    return _write_now(path, take_snapshot(group, sequence=sequence, rewrite=rewrite), sync)


def _write_now(path: str | os.PathLike[str], snapshot: Snapshot, sync: bool) -> int:
    try:
        return write_snapshot(path, snapshot, sync=sync)
    except BaseException:
        snapshot.restore()
        raise


def _write_whole(target: Path, snapshot: Snapshot, sync: bool) -> int:
    group = snapshot.group
    temporary = temporary_path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary.unlink(missing_ok=True)
        connection = sqlite3.connect(temporary, isolation_level=None)
        try:
            connection.execute("PRAGMA journal_mode = OFF")  # a new file is renamed into place only when complete
            connection.execute("PRAGMA synchronous = OFF")
            for statement in schema(len(group.indexer.hash_fields), len(group.indexer.memo_fields)):
                connection.execute(statement)
            connection.execute("BEGIN")
            count = insert_rows(connection, group, _ordered_rows(group, snapshot.topics))
            for state in snapshot.topics:
                _write_history(connection, state)
            _write_meta(connection, snapshot)
            connection.execute("COMMIT")
        finally:
            connection.close()
        move_into_place(temporary, target, sync=sync)
    except (OSError, sqlite3.OperationalError) as exc:
        with suppress(OSError):  # the directory may be what failed
            temporary.unlink(missing_ok=True)
        raise write_failure(exc, target) from None
    return count


def _update(target: Path, snapshot: Snapshot, sync: bool) -> int:
    group = snapshot.group
    try:
        connection = sqlite3.connect(target, isolation_level=None)
    except (OSError, sqlite3.OperationalError) as exc:
        raise write_failure(exc, target) from None
    changed = 0
    try:
        connection.execute(f"PRAGMA synchronous = {'FULL' if sync else 'OFF'}")
        connection.execute("BEGIN IMMEDIATE")
        for state in snapshot.topics:
            _position_order(state)
            gone = [key for key, record in zip(state.keys, state.records, strict=True) if record is None]
            changed += len(gone)
            # a record removed and stored again goes last, as in memory: a new row, not an update
            connection.executemany("DELETE FROM records WHERE topic = ? AND sow_key = ?",
                                   [(state.topic, key) for key in (*gone, *state.restored)])
            _write_history(connection, state, replace=True)
        changed += insert_rows(connection, group, _ordered_rows(group, snapshot.topics), upsert=True)
        _write_meta(connection, snapshot)
        connection.execute("COMMIT")
    except sqlite3.DatabaseError as exc:
        _rollback(connection)
        schema_problem = "no such" in str(exc) or "has no column" in str(exc)
        if isinstance(exc, sqlite3.OperationalError) and not schema_problem:
            raise write_failure(exc, target) from None  # a full disk, a read-only file, an I/O error
        raise damaged(target, str(exc)) from None
    finally:
        connection.close()
    return changed


def load_group(path: str | os.PathLike[str], group: TopicGroup) -> SowMeta:
    """Fill an empty ``group`` from its SOW file; SowFileError if missing, damaged or incompatible."""
    with SowFile.open(path) as sow:
        meta = sow.meta
        _check_compatible(sow.path, meta, group)
        # integrity_check, not quick_check: it also proves every index entry points at its row,
        # which the upserts of later checkpoints rely on (quick_check: 0.6 s, this: 2 s per 1M rows)
        found = list(sow.select("PRAGMA integrity_check"))
        if found != [("ok",)]:
            raise damaged(sow.path, f"SQLite integrity_check: {found[0][0] if found else 'no answer'}")
        rekey = _keyed_again(meta, group)
        renamed: dict[tuple[str, str], str] = {}
        for stored in sow.records():
            topic = group.topic(stored.topic)
            record = stored.plain()
            if rekey:
                record = dataclasses.replace(record, key=_key_again(sow.path, topic, stored.key, stored.payload))
                renamed[(stored.topic, stored.key)] = record.key
            if record.key in topic:
                raise damaged(sow.path, f"record {record.key!r} of topic {record.topic!r} is stored twice")
            topic.load(record)
        states: Iterable[tuple[str, str, int, int, bytes | None]] = sow.history()
        if rekey:  # a deleted record's states key like its messages; a deletion (no message) like them
            states = list(states)  # read twice: first for the new keys
            for topic_name, key, _, _, payload in states:
                if payload is not None and (topic_name, key) not in renamed:
                    renamed[(topic_name, key)] = _key_again(sow.path, group.topic(topic_name), key, payload)
        for topic_name, key, timestamp, sequence, payload in states:
            group.topic(topic_name).load_history(renamed.get((topic_name, key), key), Saved(timestamp, sequence, payload))
    for topic in group.topics.values():
        if topic.history is not None:
            topic.history.horizon = meta.history_horizon
    group.sequence = meta.last_sequence
    group.timestamp = meta.last_timestamp
    group.needs_rewrite = meta.format_version != FORMAT_VERSION or meta.key_scheme != KEY_SCHEME_VERSION or (
        (meta.hash_paths, meta.memo_paths) != (group.indexer.hash_paths, group.indexer.memo_paths))
    return meta


def _keyed_again(meta: SowMeta, group: TopicGroup) -> bool:
    """Whether the records of a file must be keyed again from their messages. Key scheme 1
    typed the Key fields of text formats (XML, FIX, NVFIX) by inference before keying, so 11=007
    and 11=7 shared a key; scheme 2 keys the text as written. JSON keys and publisher-supplied
    keys are the same in both. Keys equal in scheme 2 were equal in scheme 1, so records keyed
    again never collide."""
    spec = group.spec
    return meta.key_scheme < 2 and bool(spec.key_fields) and spec.message_type != "json"


def _key_again(path: str, topic: SowTopic, key: str, payload: bytes) -> str:
    try:
        return topic.key_of(payload)
    except InputError as exc:  # it was keyed once: a message that cannot be now was altered
        raise damaged(path, f"record {key!r} cannot be keyed from its message: {exc.message}") from None


def _check_compatible(path: str, meta: SowMeta, group: TopicGroup) -> None:
    stored, wanted = meta.spec, group.spec
    for what, old, new in (
        ("message type", stored.message_type, wanted.message_type),
        ("Key fields", stored.key_fields, wanted.key_fields),
        ("KeyDomain", stored.key_domain, wanted.key_domain),
        ("Pattern", stored.topic_regex if stored.pattern else None, wanted.topic_regex if wanted.pattern else None),
        ("topic", stored.name, wanted.name),
    ):
        if old != new:
            raise SowFileError(path, f"the SOW file was written for {what} {old!r}, the config now says {new!r}",
                               code="SOW_INCOMPATIBLE", damaged=True,
                               hint="its keys no longer apply; recovery rebuilds it from the journal")


# ------------------------------------------------------------------ rows


def _position_order(state: _TopicState) -> None:
    """Put an update's keys (and what goes with them) in position order, keys that are gone
    first: new rows get row ids in the order they are inserted. On the writer's thread."""
    positions = [-1 if position is None else position for position in state.positions]
    ranked = sorted(range(len(positions)), key=positions.__getitem__)
    state.keys = [state.keys[i] for i in ranked]
    state.positions = [positions[i] for i in ranked]
    state.records = [state.records[i] for i in ranked]
    if state.tokens is not None:
        state.tokens = [state.tokens[i] for i in ranked]
    if state.docs is not None:
        state.docs = [state.docs[i] for i in ranked]


def _ordered_rows(group: TopicGroup, states: list[_TopicState]) -> Iterator[tuple[Any, ...]]:
    """The rows of every topic in position order across the topics (each state's rows are in
    position order already): the file's row ids then follow the in-memory order."""
    if len(states) == 1:
        return _rows(group, states[0])
    ranked = (zip([p for p, r in zip(state.positions, state.records, strict=True) if r is not None], _rows(group, state))
              for state in states)
    return (row for _, row in heapq.merge(*ranked, key=itemgetter(0)))


def _rows(group: TopicGroup, state: _TopicState) -> Iterator[tuple[Any, ...]]:
    indexer = group.indexer
    indexed = bool(indexer.hash_fields or indexer.memo_fields)
    plain = json_plain if group.payloads.message_type == "json" else None
    count = len(state.keys)
    all_tokens = state.tokens if state.tokens is not None else [None] * count
    all_docs = state.docs if state.docs is not None else [None] * count
    for key, record, tokens, doc in zip(state.keys, state.records, all_tokens, all_docs, strict=True):
        if record is None:
            continue
        crc = row_crc(record.topic, key, record.payload, record.sequence, record.timestamp, record.expiration, record.expires_at)
        row: tuple[Any, ...] = (record.topic, key, record.payload, record.sequence, record.timestamp, record.expiration,
                                record.expires_at, crc)
        marked = 0 if plain is None else plain(record.payload)  # json_plain, the last column
        if indexed:
            # The topic kept the hash tokens it indexed the record under (same indexer): the
            # document is read again only for memo columns, or when no tokens were kept.
            if tokens is None or indexer.memo_fields:
                fields = group.payloads.record(doc)
                memo, complex_ = indexer.memo_columns(fields)
                if tokens is None:
                    tokens = indexer.hash_tokens(fields)
            else:
                memo, complex_ = [], False
            row += (*tokens, *memo, 1 if complex_ else 0, marked)
        else:
            row += (0, marked)
        yield row


def insert_rows(connection: sqlite3.Connection, group: TopicGroup, rows: Iterator[tuple[Any, ...]], *, upsert: bool = False) -> int:
    columns = ["topic", "sow_key", "payload", "sequence", "timestamp", "expiration", "expires_at", "crc"]
    columns += [*index_columns(len(group.indexer.hash_fields), len(group.indexer.memo_fields)), "json_plain"]
    sql = f"INSERT INTO records ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    if upsert:
        updates = ", ".join(f"{column} = excluded.{column}" for column in columns[2:])
        sql += f" ON CONFLICT (topic, sow_key) DO UPDATE SET {updates}"
    count = 0
    batch: list[tuple[Any, ...]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= _BATCH:
            connection.executemany(sql, batch)
            count += len(batch)
            batch.clear()
    connection.executemany(sql, batch)
    return count + len(batch)


def _write_history(connection: sqlite3.Connection, state: _TopicState, *, replace: bool = False) -> None:
    if state.history is None:
        return
    topic = state.topic
    for key, states in state.history:
        if replace:
            connection.execute("DELETE FROM history WHERE topic = ? AND sow_key = ?", (topic, key))
        connection.executemany(
            "INSERT INTO history (topic, sow_key, position, timestamp, sequence, payload, crc) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(topic, key, position, saved.timestamp, saved.sequence, saved.payload,
              history_crc(topic, key, position, saved.timestamp, saved.sequence, saved.payload))
             for position, saved in enumerate(states)],
        )


def _write_meta(connection: sqlite3.Connection, snapshot: Snapshot) -> None:
    group = snapshot.group
    values = {
        "format": FORMAT,
        "format_version": str(FORMAT_VERSION),
        "spec": orjson.dumps(group.spec.to_json()).decode(),
        "columns": orjson.dumps({"hash": group.indexer.hash_paths, "memo": group.indexer.memo_paths}).decode(),
        "key_scheme": str(KEY_SCHEME_VERSION),
        "last_sequence": str(snapshot.sequence),
        "last_timestamp": "" if snapshot.timestamp is None else str(snapshot.timestamp),
        "history_horizon": "" if snapshot.horizon is None else str(snapshot.horizon),
    }
    values["meta_crc"] = str(meta_crc(values))
    connection.executemany("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", list(values.items()))


# ------------------------------------------------------------------ OS plumbing


def move_into_place(temporary: Path, target: Path, *, sync: bool) -> None:
    """Rename a complete new file over ``target``; with ``sync``, durably (the file, then its directory)."""
    if sync:
        fsync_file(temporary)
    os.replace(temporary, target)
    if sync:
        fsync_directory(target.parent)


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # some file systems do not open directories; the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _rollback(connection: sqlite3.Connection) -> None:
    try:
        connection.execute("ROLLBACK")
    except sqlite3.Error:
        pass


def write_failure(exc: BaseException, target: Path) -> EnvironmentProblem:
    """The error for a SOW file that could not be written (the disk full, or a directory)."""
    reason = getattr(exc, "strerror", None) or str(exc)
    full = isinstance(exc, OSError) and exc.errno == errno.ENOSPC or "full" in str(exc).lower()
    return EnvironmentProblem(
        f"cannot write SOW file {target}: {reason}",
        code="SOW_IO",
        hint="free disk space and retry; the previous file is unchanged" if full
        else "check that the directory exists and is writable; the previous file is unchanged",
    )


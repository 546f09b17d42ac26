"""The SOW file: the persistent form of one SOW topic (all concrete topics of a Pattern topic).

Theory of operation (format version 2, documented in docs/formats.md "SOW file"; version 1
lacks ``json_plain`` and is still read). A SOW file is an SQLite 3 database (DESIGN.md:
crash-safe, indexed, readable by any SQLite tool) in rollback-journal mode, so it is always a
single file between transactions:

* identity: ``PRAGMA application_id`` = 0x61534F57 ("aSOW") and ``PRAGMA user_version`` = the
  format version; ``meta`` repeats both and holds the topic's ``TopicSpec`` as JSON, the last
  journal sequence applied, the history horizon and a CRC-32 over all of its rows;
* ``records``: one row per SOW record (topic, sow_key, payload, sequence, timestamp,
  expiration, expires_at), a CRC-32 over those, and the index columns: ``h<i>`` one token per
  hash index (index 0 is the Key fields), ``m<i>n``/``m<i>t`` the typed values of memo index
  i and ``memo_complex`` (``indexing.py``), and ``json_plain`` (``payloads.json_plain``). A
  SQL index on every ``h<i>`` makes an exact match an indexed lookup. ``id`` keeps first-insert order;
* ``history``: the saved states of a History topic (``history.py``), with a CRC each.

Invariants: a reader never writes (``mode=ro``); every problem is a ``SowFileError`` naming the
file: not an SQLite file, an SQLite file of another application, an unknown version, a
truncated file (shorter than its header's page count), a damaged page (SQLite's own error),
tables or indexes other than exactly those ``schema`` creates, a meta or row whose CRC does
not match. Rows are checked when read by ``records`` and
``verify``; a query checks the rows it returns.
"""

from __future__ import annotations

import os
import sqlite3
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from ampsctl.sow.errors import SowFileError
from ampsctl.sow.indexing import Indexer
from ampsctl.sow.record import SowRecord
from ampsctl.sow.spec import TopicSpec

FORMAT = "ampsctl-sow"
FORMAT_VERSION = 2  # 2 added records.json_plain (docs/formats.md)
READABLE_VERSIONS = (1, 2)
APPLICATION_ID = 0x61534F57  # "aSOW"
SQLITE_MAGIC = b"SQLite format 3\x00"
_HEAD = struct.Struct(">qqqq")
_DAMAGED_HINT = "rebuild it from the journal (`ampsctl journal compact`), or delete it and let recovery rebuild it"
RECORD_COLUMNS = "topic, sow_key, payload, sequence, timestamp, expiration, expires_at, crc"


def row_crc(topic: str, key: str, payload: bytes, sequence: int, timestamp: int,
            expiration: int | None, expires_at: int | None) -> int:
    """CRC-32 (zlib) of a record row: the four integers big-endian (-1 for NULL), then the
    topic and key as 4-byte length + UTF-8, then the payload."""
    head = _HEAD.pack(sequence, timestamp, -1 if expiration is None else expiration, -1 if expires_at is None else expires_at)
    topic_bytes = topic.encode("utf-8", "surrogateescape")
    key_bytes = key.encode("utf-8", "surrogateescape")
    names = len(topic_bytes).to_bytes(4, "big") + topic_bytes + len(key_bytes).to_bytes(4, "big") + key_bytes
    return zlib.crc32(payload, zlib.crc32(names, zlib.crc32(head)))


def history_crc(topic: str, key: str, position: int, timestamp: int, sequence: int, payload: bytes | None) -> int:
    """CRC-32 of a history row: like ``row_crc`` with position for expiration and -1 for a deletion."""
    return row_crc(topic, key, payload or b"", sequence, timestamp, position, -1 if payload is None else len(payload))


def meta_crc(values: dict[str, str]) -> int:
    """CRC-32 of the meta rows other than ``meta_crc``: JSON of the name-sorted pairs."""
    return zlib.crc32(orjson.dumps(sorted((name, value) for name, value in values.items() if name != "meta_crc")))


@dataclass(frozen=True, slots=True)
class StoredRecord(SowRecord):
    """A record as read from a file, with the CRC stored next to it."""

    crc: int = -1

    def plain(self) -> SowRecord:
        """The record without its CRC (what the in-memory SOW keeps)."""
        return SowRecord(self.topic, self.key, self.payload, self.sequence, self.timestamp, self.expiration, self.expires_at)


@dataclass(frozen=True, slots=True)
class SowMeta:
    """What the meta table says about a SOW file."""

    path: str
    format_version: int
    spec: TopicSpec
    last_sequence: int
    last_timestamp: int | None
    history_horizon: int | None
    hash_paths: tuple[tuple[str, ...], ...]
    memo_paths: tuple[str, ...]
    key_scheme: int

    def indexer(self) -> Indexer:
        """The index layout the file was written with (it wins over the spec's, should they differ)."""
        return Indexer((), self.hash_paths, self.memo_paths)  # hash index 0 (the Key fields) is stored too


def damaged(path: str | os.PathLike[str], reason: str) -> SowFileError:
    hint = _DAMAGED_HINT
    if os.path.isfile(f"{path}-journal"):  # a read-only open cannot roll a killed checkpoint back
        reason += f" (beside it is {os.path.basename(path)}-journal: a checkpoint was interrupted)"
        hint = ("the broker rolls the interrupted checkpoint back when it starts (so does any writable SQLite "
                "open of the file); do not delete the -journal file, it holds the file's previous state")
    return SowFileError(str(path), f"SOW file is damaged: {reason}", hint=hint, code="SOW_DAMAGED", damaged=True)


def check_header(path: str | os.PathLike[str]) -> None:
    """Refuse a file that is not an SQLite database of this application and version, or is truncated."""
    where = str(path)
    try:
        size = os.path.getsize(where)
        with open(where, "rb") as file:
            head = file.read(100)
    except FileNotFoundError:
        raise SowFileError(where, "no such SOW file", hint="check the path", code="SOW_MISSING") from None
    except IsADirectoryError:
        raise SowFileError(where, "this is a directory, not a SOW file", hint="give the path of a .sow file") from None
    except OSError as exc:
        from ampsctl.errors import EnvironmentProblem

        raise EnvironmentProblem(f"cannot read SOW file {where}: {exc.strerror}", code="SOW_IO",
                                 hint="check the file's permissions") from None
    if not head.startswith(SQLITE_MAGIC):
        if len(head) < len(SQLITE_MAGIC) and SQLITE_MAGIC.startswith(head):
            # empty, or cut inside the magic: what a crash can leave of a SOW file, never another file
            raise damaged(where, f"only {size} bytes: the file is cut off inside its header")
        kind, hint = _other_kind(head)
        raise SowFileError(where, f"not a SOW file: {kind}", code="SOW_FORMAT", hint=hint)
    if len(head) < 100:
        raise damaged(where, f"only {size} bytes: the file is cut off inside its header")
    application = int.from_bytes(head[68:72], "big")
    if application != APPLICATION_ID:
        raise SowFileError(where, f"not a SOW file: an SQLite database of another application (application id 0x{application:08x})",
                           code="SOW_FORMAT", hint="give a file written by `ampsctl journal compact` or the broker")
    version = int.from_bytes(head[60:64], "big")
    if version not in READABLE_VERSIONS:
        raise _unsupported(where, version, "use the ampsctl release that wrote the file, or rebuild it from the journal")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    valid_for, changes = head[92:96], head[24:28]
    if page_size < 512 or page_size & (page_size - 1):
        raise damaged(where, f"impossible page size {page_size} in the header")
    if valid_for == changes and pages and size < pages * page_size:
        raise damaged(where, f"the file is truncated: {size} bytes, its header says {pages} pages of {page_size} bytes")


def _other_kind(head: bytes) -> tuple[str, str]:
    """What a file that is not SQLite seems to be, and the hint for it."""
    if head.startswith((b"\x89AJL", b"\x89AJX")):  # journal.codec.SEGMENT_MAGIC, journal.index.INDEX_MAGIC
        kind = "it is an ampsctl journal segment" if head[3:4] == b"L" else "it is an ampsctl journal index"
        return kind, ("read a journal with `ampsctl journal dump DIR`, or build SOW files from it with "
                      "`ampsctl journal compact DIR --config CFG --out DIR`")
    kind = "it looks like a text file" if _texty(head) else "it is not an SQLite database"
    return kind, "give a file written by `ampsctl journal compact` or the broker (SOW/Topic/FileName)"


def _texty(head: bytes) -> bool:
    return all(byte in b"\t\n\r" or 32 <= byte < 127 or byte >= 128 for byte in head[:64])


class SowFile:
    """A SOW file opened for reading. Use ``SowFile.open(path)``; close it (or use ``with``)."""

    def __init__(self, path: str, connection: sqlite3.Connection, meta: SowMeta) -> None:
        self.path = path
        self.connection = connection
        self.meta = meta

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> SowFile:
        where = str(path)
        check_header(where)
        connection = sqlite3.connect(f"file:{quote(os.path.abspath(where))}?mode=ro", uri=True)
        try:
            meta = _guarded(where, lambda: read_meta(where, connection))
            _guarded(where, lambda: check_schema(where, connection, meta))
        except BaseException:
            connection.close()
            raise
        return cls(where, connection, meta)

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> SowFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def count(self) -> int:
        return _guarded(self.path, lambda: self.connection.execute("SELECT count(*) FROM records").fetchone()[0])

    def counts(self) -> dict[str, int]:
        """Records per concrete topic."""
        rows = _guarded(self.path, lambda: self.connection.execute(
            "SELECT topic, count(*) FROM records GROUP BY topic ORDER BY min(id)").fetchall())
        return dict(rows)

    def select(self, sql: str, params: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
        """Rows of a read-only statement, with SQLite damage turned into SowFileError."""
        try:
            cursor = self.connection.execute(sql, params)
            while batch := cursor.fetchmany(4096):
                yield from batch
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # damaged pages, or damaged text
            raise damaged(self.path, str(exc)) from None

    def records(self, where: str = "", params: tuple[Any, ...] = (), *, check: bool = True) -> Iterator[SowRecord]:
        """Records in file order (``where`` is an SQL condition on the records table).

        Reading them all, the number read is compared with ``count`` (which SQLite takes from an
        index), in the same read transaction: a damaged table page can lose rows without any
        error from SQLite."""
        sql = f"SELECT {RECORD_COLUMNS} FROM records {'WHERE ' + where if where else ''} ORDER BY id"
        began = not where and not self.connection.in_transaction
        if began:
            _guarded(self.path, lambda: self.connection.execute("BEGIN"))
        try:
            read = 0
            for read, row in enumerate(self.select(sql, params), 1):
                yield self.record(row, check=check)
            if not where and read != (indexed := self.count()):
                raise damaged(self.path, f"its records table gives {read} records but its key index {indexed}")
        finally:
            if began:
                self.connection.rollback()

    def record(self, row: tuple[Any, ...], *, check: bool = True) -> StoredRecord:
        """A record from a row of RECORD_COLUMNS, CRC-checked unless ``check`` is False."""
        found = StoredRecord(*row)
        if check:
            self.check(found)
        return found

    def check(self, record: StoredRecord) -> None:
        """SowFileError when a record read without ``check`` does not match its CRC."""
        good = isinstance(record.payload, bytes) and isinstance(record.topic, str) and isinstance(record.key, str) and row_crc(
            record.topic, record.key, record.payload, record.sequence, record.timestamp, record.expiration, record.expires_at
        ) == record.crc
        if not good:
            raise damaged(self.path, f"record {record.key!r} of topic {record.topic!r} does not match its checksum")

    def index_row(self, key: str, topic: str) -> tuple[Any, ...] | None:
        """The stored index columns of one record (for ``verify``)."""
        columns = index_columns(len(self.meta.hash_paths), len(self.meta.memo_paths))
        found = list(self.select(f"SELECT {', '.join(columns)} FROM records WHERE topic = ? AND sow_key = ?", (topic, key)))
        return found[0] if found else None

    def history(self, check: bool = True) -> Iterator[tuple[str, str, int, int, bytes | None]]:
        """(topic, key, timestamp, sequence, payload or None) in write order per key."""
        sql = "SELECT topic, sow_key, position, timestamp, sequence, payload, crc FROM history ORDER BY topic, sow_key, position"
        for topic, key, position, timestamp, sequence, payload, crc in self.select(sql):
            if check and history_crc(topic, key, position, timestamp, sequence, payload) != crc:
                raise damaged(self.path, f"a history state of record {key!r} does not match its checksum")
            yield topic, key, timestamp, sequence, payload

    def history_count(self) -> int:
        return _guarded(self.path, lambda: self.connection.execute("SELECT count(*) FROM history").fetchone()[0])


def schema(hashes: int, memos: int, version: int = FORMAT_VERSION) -> list[str]:
    """The statements that create an empty SOW file with ``hashes`` hash and ``memos`` memo
    indexes (in format ``version``: readers check older files against their own schema)."""
    hash_columns = "".join(f", h{i} BLOB" for i in range(hashes))
    memo_columns = "".join(f", m{i}n, m{i}t" for i in range(memos))  # no declared type: values stay as bound
    plain_column = ", json_plain INTEGER NOT NULL DEFAULT 0" if version >= 2 else ""
    return [
        f"PRAGMA application_id = {APPLICATION_ID}",
        f"PRAGMA user_version = {version}",
        "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
        "CREATE TABLE records (id INTEGER PRIMARY KEY, topic TEXT NOT NULL, sow_key TEXT NOT NULL, payload BLOB NOT NULL, "
        "sequence INTEGER NOT NULL, timestamp INTEGER NOT NULL, expiration INTEGER, expires_at INTEGER, "
        f"crc INTEGER NOT NULL, memo_complex INTEGER NOT NULL DEFAULT 0{hash_columns}{memo_columns}{plain_column})",
        "CREATE UNIQUE INDEX records_key ON records (topic, sow_key)",
        "CREATE INDEX records_expiry ON records (expires_at) WHERE expires_at IS NOT NULL",
        *(f"CREATE INDEX records_h{i} ON records (h{i})" for i in range(hashes)),
        "CREATE TABLE history (topic TEXT NOT NULL, sow_key TEXT NOT NULL, position INTEGER NOT NULL, "
        "timestamp INTEGER NOT NULL, sequence INTEGER NOT NULL, payload BLOB, crc INTEGER NOT NULL, "
        "PRIMARY KEY (topic, sow_key, position)) WITHOUT ROWID",
    ]


def check_schema(path: str, connection: sqlite3.Connection, meta: SowMeta) -> None:
    """The tables and indexes must be exactly those ``schema`` creates for the file's layout."""
    found = {sql for (sql,) in connection.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")}
    expected = {sql for sql in schema(len(meta.hash_paths), len(meta.memo_paths), meta.format_version) if sql.startswith("CREATE")}
    if found != expected:
        raise damaged(path, "its tables are not those of a SOW file of this layout")
    (version,) = connection.execute("PRAGMA user_version").fetchone()
    if version != meta.format_version:
        raise damaged(path, f"its header says format version {version}, its meta table {meta.format_version}")


def index_columns(hashes: int, memos: int) -> list[str]:
    return [f"h{i}" for i in range(hashes)] + [f"m{i}{part}" for i in range(memos) for part in "nt"] + ["memo_complex"]


def read_meta(path: str, connection: sqlite3.Connection) -> SowMeta:
    try:
        rows = connection.execute("SELECT name, value FROM meta").fetchall()
    except sqlite3.OperationalError:
        raise damaged(path, "it has no meta table") from None
    except UnicodeDecodeError:  # sqlite3 raises this, not a DatabaseError, for text that is not UTF-8
        raise damaged(path, "its meta table holds text that is not UTF-8") from None
    values = {str(name): str(value) for name, value in rows}
    if values.get("format") != FORMAT:
        raise damaged(path, "its meta table does not name the ampsctl SOW format")
    if values.get("meta_crc") != str(meta_crc(values)):
        raise damaged(path, "its meta table does not match its checksum")
    try:
        version = int(values["format_version"])
        if version not in READABLE_VERSIONS:
            raise _unsupported(path, version, "use the ampsctl release that wrote the file")
        layout = orjson.loads(values["columns"])
        return SowMeta(
            path=path,
            format_version=version,
            spec=TopicSpec.from_json(orjson.loads(values["spec"])),
            last_sequence=int(values["last_sequence"]),
            last_timestamp=_optional_int(values["last_timestamp"]),
            history_horizon=_optional_int(values["history_horizon"]),
            hash_paths=tuple(tuple(str(path) for path in index) for index in layout["hash"]),
            memo_paths=tuple(str(path) for path in layout["memo"]),
            key_scheme=int(values["key_scheme"]),
        )
    except (KeyError, ValueError, TypeError, orjson.JSONDecodeError) as exc:
        raise damaged(path, f"its meta table is incomplete or malformed ({type(exc).__name__}: {exc})") from None


def _unsupported(path: str, version: int, hint: str) -> SowFileError:
    readable = " and ".join(map(str, READABLE_VERSIONS))
    return SowFileError(path, f"SOW file format version {version} is not supported (this ampsctl reads versions {readable})",
                        code="SOW_VERSION", hint=hint)


def _optional_int(text: str) -> int | None:
    return None if text == "" else int(text)


def _guarded(path: str, action: Any) -> Any:
    try:
        return action()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        raise damaged(path, str(exc)) from None


def temporary_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")

"""The rows a JSON-prefiltered scan of a SOW file hands to Python, on two CPUs when it pays.

Theory of operation. ``jsonfilter.json_prefilter`` gives an SQL condition that SQLite's C code
evaluates on every row; Python then checks each row that passes with the exact filter
(``filequery``). SQLite runs without the GIL, so a large file is scanned in two halves by id:
the caller's connection reads the first half while a second, read-only connection reads the
second on a worker thread. The rows come out in id order, exactly as one scan would give them.

* **One snapshot.** Both connections open a read transaction and compare ``meta_crc`` (a
  checkpoint always rewrites the meta) before either half is read; while they hold it no writer
  can commit (the file is in rollback-journal mode). Anything else (a busy file, another file
  renamed over the path, the caller's connection already in a transaction) scans in one thread,
  as does a machine whose load average is at its CPU count, where the second thread only costs.
* **Bounded memory.** The worker keeps at most ``BUFFER_ROWS`` candidate rows; past that, or
  if SQLite cannot parse a payload, it stops and the caller's thread scans the rest of the
  second half itself.
* **Malformed JSON** (SQLite's reader refusing what orjson took) ends the pre-filter: the scan
  goes on from the last row returned without it, so no row is ever lost.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from ampsctl.sow.jsonfilter import JsonPrefilter
from ampsctl.sow.sowfile import SowFile, damaged

PARALLEL_ROWS = 100_000  # an id span below this is scanned by one thread (a thread costs more than it saves)
BUFFER_ROWS = 65_536  # candidate rows the worker may hold for the caller
FETCH_ROWS = 1024  # rows per fetch on the worker
_BEFORE_ALL = -(1 << 63)
Row = tuple[int, bytes]


def prefiltered_rows(sow: SowFile, where: str, params: tuple[Any, ...], json: JsonPrefilter) -> Iterator[Row]:
    """(id, payload) of every row ``where`` selects that the JSON pre-filter passes, in id order."""
    twin = _twin(sow) if _worth_two(sow) else None
    split = _halves(sow) if twin is not None else None  # read in the snapshot both connections share
    if twin is None or split is None:
        if twin is not None:
            twin.close()
            sow.connection.rollback()
        yield from _scan(sow, sow.connection, where, params, json, _BEFORE_ALL, None)
        return
    low, middle, high = split
    worker = _Half(twin, _select(where, json.where), (*params, middle, high, *json.params), middle)
    try:
        worker.start()
        yield from _scan(sow, sow.connection, where, params, json, low - 1, middle)
        worker.join()
        if worker.error is not None:
            raise damaged(sow.path, str(worker.error))
        yield from worker.rows
        if worker.resume is not None:
            yield from _scan(sow, sow.connection, where, params, None if worker.malformed else json,
                             worker.resume, high)
    finally:
        if worker.is_alive():
            worker.stopped = True
            twin.interrupt()
            worker.join()
        twin.close()
        sow.connection.rollback()


def _worth_two(sow: SowFile) -> bool:
    """Two CPUs, the caller's connection free, and a table large enough (a hint, read outside
    the snapshot; ``_halves`` decides inside it)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0  # this process's own work included
    # A second thread pays only while some CPU is idle: on a saturated machine it costs about 10% more CPU.
    return cpus >= 2 and load < cpus and not sow.connection.in_transaction and _halves(sow) is not None


def _halves(sow: SowFile) -> tuple[int, int, int] | None:
    """(lowest id, middle, highest id) of a table worth two threads."""
    try:
        low, high = sow.connection.execute("SELECT min(id), max(id) FROM records").fetchone()
    except sqlite3.Error:
        return None  # the scan itself reports a damaged file
    if low is None or high - low < PARALLEL_ROWS:
        return None
    return low, (low + high) // 2, high


def _twin(sow: SowFile) -> sqlite3.Connection | None:
    """A second read-only connection in the same snapshot as ``sow.connection`` (both now in a
    read transaction), or None (nothing left open) when that cannot be had at once."""
    twin = None
    try:
        sow.connection.execute("BEGIN")
        ours = sow.connection.execute("SELECT value FROM meta WHERE name = 'meta_crc'").fetchone()
        twin = sqlite3.connect(f"file:{quote(os.path.abspath(sow.path))}?mode=ro", uri=True, timeout=0,
                               check_same_thread=False)
        twin.execute("BEGIN")
        if twin.execute("SELECT value FROM meta WHERE name = 'meta_crc'").fetchone() == ours:
            return twin
    except sqlite3.Error:
        pass
    if twin is not None:
        twin.close()
    sow.connection.rollback()
    return None


def _select(where: str, prefilter: str | None, *, bounded: bool = True) -> str:
    """The candidate statement over ``id > ? [AND id <= ?]`` (params: where's, the bounds, the
    pre-filter's)."""
    parts = [f"({where})"] if where else []
    parts.append("id > ? AND id <= ?" if bounded else "id > ?")
    if prefilter is not None:
        parts.append(prefilter)
    return "SELECT id, payload FROM records WHERE " + " AND ".join(parts) + " ORDER BY id"


def _scan(sow: SowFile, connection: sqlite3.Connection, where: str, params: tuple[Any, ...],
          json: JsonPrefilter | None, after: int, upto: int | None) -> Iterator[Row]:
    """Rows with ``after < id <= upto`` (no upper bound for None); without the pre-filter from the
    last row returned on if SQLite cannot parse a payload."""
    last = after
    if json is not None:
        sql = _select(where, json.where, bounded=upto is not None)
        try:
            cursor = connection.execute(sql, (*params, after, *(() if upto is None else (upto,)), *json.params))
            while batch := cursor.fetchmany(4096):
                last = batch[-1][0]
                yield from batch
            return
        except sqlite3.OperationalError as exc:
            if not _malformed(exc):
                raise damaged(sow.path, str(exc)) from None
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise damaged(sow.path, str(exc)) from None
    yield from sow.select(_select(where, None, bounded=upto is not None),
                          (*params, last, *(() if upto is None else (upto,))))


def _malformed(exc: sqlite3.OperationalError) -> bool:
    """SQLite's JSON reader refused a payload (or this SQLite has no JSON functions)."""
    return "json" in str(exc).lower()


class _Half(threading.Thread):
    """The second half of the scan on the twin connection, buffered for the caller's thread."""

    def __init__(self, connection: sqlite3.Connection, sql: str, params: tuple[Any, ...], after: int) -> None:
        super().__init__(name="sow-json-scan", daemon=True)
        self.connection, self.sql, self.params, self.after = connection, sql, params, after
        self.rows: list[Row] = []
        self.resume: int | None = None  # the caller goes on after this id (buffer full, or malformed JSON)
        self.malformed = False
        self.error: BaseException | None = None
        self.stopped = False

    def run(self) -> None:
        try:
            cursor = self.connection.execute(self.sql, self.params)
            while batch := cursor.fetchmany(FETCH_ROWS):
                self.rows += batch
                if len(self.rows) >= BUFFER_ROWS or self.stopped:
                    self.resume = batch[-1][0]
                    return
        except sqlite3.OperationalError as exc:
            if self.stopped:
                return
            if _malformed(exc):
                self.malformed, self.resume = True, self.rows[-1][0] if self.rows else self.after
            else:
                self.error = exc
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            self.error = exc

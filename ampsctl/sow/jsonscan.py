"""The rows a JSON-prefiltered scan of a SOW file hands to Python, on every CPU when it pays.

Theory of operation. ``jsonfilter.json_prefilter`` gives an SQL condition that SQLite's C code
evaluates on every row; Python then checks each row that passes with the exact filter
(``filequery``). A large file is split by id into one part per CPU (at most ``MAX_PARTS``): the
caller's connection reads the first part while helper processes (``scanpart.py``, standard
library only) read the others, and the rows come out in id order, exactly as one scan gives them.

Processes, not threads: SQLite (Debian's build has no lookaside allocator and keeps memory
statistics) takes one process-wide mutex for every allocation, and ``json_extract`` allocates
for every row, so two threads on two connections mostly wait for each other (measured on 1M
rows: one connection 0.81 s; two threads 1.21 s; two processes 0.41 s, docs/sow.md). A
helper is a fresh interpreter, not a fork, so a caller with threads of its own (a progress
display) is safe.

* **One snapshot.** The caller opens a read transaction and reads ``meta_crc`` (a checkpoint
  always rewrites the meta) before starting the helpers; while it holds the transaction no
  writer can commit (the file is in rollback-journal mode). A helper reads only if it finds the
  same ``meta_crc`` inside its own read transaction.
* **Bounded memory.** A helper returns at most ``BUFFER_BYTES`` of rows (counted as their
  payloads plus a fixed allowance per row) and where it stopped; the caller reads the helpers
  one after another, so at worst every helper holds that much (twice, as rows and as their
  marshal'd copy) until the caller gets to it: 64 MiB per helper, at most 7 helpers.
* **Nothing lost.** Whatever a helper did not read (a full buffer, a busy or replaced file,
  damage, a helper that died) the caller scans itself, so damage is reported by the caller's
  own connection.
* **Malformed JSON** (SQLite's reader refusing what orjson took) ends the pre-filter: the scan
  goes on from the last row returned without it.
* **When.** At least two CPUs, the caller's connection not already in a transaction, and
  ``PARALLEL_ROWS`` ids per part.
"""

from __future__ import annotations

import marshal
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ampsctl.sow.jsonfilter import JsonPrefilter
from ampsctl.sow.scanpart import META_CRC, malformed
from ampsctl.sow.sowfile import RECORD_COLUMNS, SowFile, damaged

PARALLEL_ROWS = 100_000  # ids per part at least (a helper costs more than it saves below that)
MAX_PARTS = 8
BUFFER_BYTES = 32 << 20  # of candidate rows (payloads and a per-row allowance) a helper returns at most
FETCH_ROWS = 1024  # rows per fetch in a helper
_BEFORE_ALL = -(1 << 63)
_SCRIPT = str(Path(__file__).with_name("scanpart.py"))
Row = tuple[Any, ...]  # id, then RECORD_COLUMNS


def prefiltered_rows(sow: SowFile, json: JsonPrefilter) -> Iterator[Row]:
    """``(id, *RECORD_COLUMNS)`` of every row the JSON pre-filter passes, in id order."""
    bounds = _parts(sow) if _worth_parts(sow) else None
    if bounds is None:
        yield from _one_scan(sow, json)
        return
    crc, parts = bounds
    helpers: list[_Helper] = []
    try:
        helpers.extend(_Helper(sow, crc, json, after, upto) for after, upto in parts[1:])
        yield from _scan(sow, json, *parts[0])
        for helper, (_, upto) in zip(helpers, parts[1:]):
            rows, resume, prefilter = helper.result()
            yield from rows
            if resume is not None:
                yield from _scan(sow, json if prefilter else None, resume, upto)
    finally:
        for helper in helpers:
            helper.stop()
        sow.connection.rollback()


def _one_scan(sow: SowFile, json: JsonPrefilter) -> Iterator[Row]:
    """The whole scan on the caller's connection, in one read transaction (a malformed payload
    makes the rest a second statement, which must see the same file)."""
    began = not sow.connection.in_transaction
    if began:
        sow.connection.execute("BEGIN")
    try:
        yield from _scan(sow, json, _BEFORE_ALL, None)
    finally:
        if began:
            sow.connection.rollback()


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _worth_parts(sow: SowFile) -> bool:
    """Two CPUs or more and the caller's connection free (the table size is ``_parts``'s).

    A busy machine is no reason to scan in one process: the helpers cost no more CPU than the
    one scan would (measured), and each part still gets its share of the CPUs."""
    return _cpus() >= 2 and not sow.connection.in_transaction


def _parts(sow: SowFile) -> tuple[str, list[tuple[int, int]]] | None:
    """(meta_crc, [(after, upto), ...]) read in a read transaction the caller then holds; None
    (no transaction left open) for a table too small to split or a file that cannot be read."""
    try:
        sow.connection.execute("BEGIN")
        crc = sow.connection.execute(META_CRC).fetchone()
        # Two statements: SQLite reads min() or max() of the rowid from the b-tree's edge, but
        # only when it is the query's one aggregate (together they scan the table).
        (low,), (high,) = (sow.connection.execute(f"SELECT {edge}(id) FROM records").fetchone() for edge in ("min", "max"))
    except sqlite3.Error:
        sow.connection.rollback()
        return None  # the scan itself reports a damaged file
    count = min(_cpus(), MAX_PARTS, (high - low + 1) // PARALLEL_ROWS if low is not None else 0)
    if crc is None or count < 2:
        sow.connection.rollback()
        return None
    step = (high - low + 1) // count
    cuts = [low - 1 + step * index for index in range(count)] + [high]
    return crc[0], [(cuts[index], cuts[index + 1]) for index in range(count)]


class _Helper:
    """A helper process scanning ``after < id <= upto``; started at once, read by ``result``."""

    def __init__(self, sow: SowFile, crc: str, json: JsonPrefilter, after: int, upto: int) -> None:
        self.after = after
        uri = f"file:{quote(os.path.abspath(sow.path))}?mode=ro"
        request = (uri, crc, _select(json.where, bounded=True), (after, upto, *json.params), after, BUFFER_BYTES, FETCH_ROWS)
        self.process: subprocess.Popen[bytes] | None = None
        try:
            self.process = subprocess.Popen([sys.executable, "-I", "-S", _SCRIPT], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            assert self.process.stdin is not None
            self.process.stdin.write(marshal.dumps(request))
            self.process.stdin.close()
        except (OSError, ValueError):
            self.stop()  # result() then hands the whole part to the caller

    def result(self) -> tuple[list[Row], int | None, bool]:
        """(rows, where the caller goes on or None, whether it keeps the pre-filter)."""
        if self.process is None or self.process.stdout is None:
            return [], self.after, True
        try:
            status, rows, resume, _ = marshal.loads(self.process.stdout.read())
        except (OSError, EOFError, ValueError, TypeError):
            return [], self.after, True  # the helper died: the caller scans its part
        finally:
            self.stop()
        if status == "done":
            return rows, None, True
        return rows, resume, status != "malformed"

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.wait()
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()


def _scan(sow: SowFile, json: JsonPrefilter | None, after: int, upto: int | None) -> Iterator[Row]:
    """Rows with ``after < id <= upto`` (no upper bound for None); without the pre-filter from the
    last row returned on if SQLite cannot parse a payload."""
    last = after
    bounds = (after,) if upto is None else (after, upto)
    if json is not None:
        try:
            cursor = sow.connection.execute(_select(json.where, bounded=upto is not None), (*bounds, *json.params))
            while batch := cursor.fetchmany(4096):
                last = batch[-1][0]
                yield from batch
            return
        except sqlite3.OperationalError as exc:
            if not malformed(exc):
                raise damaged(sow.path, str(exc)) from None
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise damaged(sow.path, str(exc)) from None
    yield from sow.select(_select(None, bounded=upto is not None), (last, *bounds[1:]))


def _select(prefilter: str | None, *, bounded: bool) -> str:
    """The candidate statement over ``id > ? [AND id <= ?]`` (params: the bounds, then the pre-filter's)."""
    parts = ["id > ? AND id <= ?" if bounded else "id > ?"]
    if prefilter is not None:
        parts.append(prefilter)
    return f"SELECT id, {RECORD_COLUMNS} FROM records WHERE " + " AND ".join(parts) + " ORDER BY id"

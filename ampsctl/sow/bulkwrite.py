"""Writing a whole SOW file from prepared rows (compaction's fast path).

``write_rows`` gives the file ``checkpoint.write_group`` would write for a group holding
those records: ``write_group`` itself writes the schema and meta (from the group, whose
concrete topics are there but empty), then the rows go in with one transaction of
``executemany`` batches (the SQL indexes dropped and created again with ``schema``'s own
statements after the rows), and the file is renamed into place only when complete and synced.
So the format has one writer; this only adds the bulk insert, with pragmas for a file no one
else can see yet (no rollback journal, no syncs until the end, a large page cache so the key
indexes are built in memory).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any

from ampsctl.errors import EnvironmentProblem
from ampsctl.sow.checkpoint import insert_rows, move_into_place, write_failure, write_group
from ampsctl.sow.sowfile import schema
from ampsctl.sow.store import TopicGroup

CACHE_KIB = 262_144  # 256 MiB of page cache at most, only while the file is written


def write_rows(path: str | os.PathLike[str], group: TopicGroup, rows: Iterable[tuple[Any, ...]], *,
               sequence: int, sync: bool = True) -> int:
    """Write a new SOW file at ``path`` for ``group`` (records: ``rows``); the number of records.

    ``rows`` are complete records-table rows in insert order (``fastcompact.rows``)."""
    target = Path(path)
    scratch = target.with_name(f".{target.name}.bulk-{os.getpid()}")
    try:
        write_group(scratch, group, sequence=sequence, sync=False)  # schema and meta; no records yet
        connection = sqlite3.connect(scratch, isolation_level=None)
        try:
            for pragma in ("journal_mode = OFF", "synchronous = OFF", f"cache_size = -{CACHE_KIB}",
                           "locking_mode = EXCLUSIVE", "temp_store = MEMORY"):
                connection.execute(f"PRAGMA {pragma}")
            connection.execute("BEGIN")
            indexes = _indexes(group)
            for name in indexes:  # built again after the rows: one sort instead of a B-tree insert per row
                connection.execute(f"DROP INDEX {name}")
            count = insert_rows(connection, group, iter(rows))
            for statement in indexes.values():  # schema()'s own statements: the file's schema text is unchanged
                connection.execute(statement)
            connection.execute("COMMIT")
        finally:
            connection.close()
        move_into_place(scratch, target, sync=sync)
    except (OSError, sqlite3.OperationalError, EnvironmentProblem) as exc:
        with suppress(OSError):
            scratch.unlink(missing_ok=True)
        raise _environment(exc, scratch, target) from None
    return count


def _indexes(group: TopicGroup) -> dict[str, str]:
    """The file's SQL indexes: name -> the ``CREATE INDEX`` statement of ``sowfile.schema``."""
    statements = schema(len(group.indexer.hash_fields), len(group.indexer.memo_fields))
    found = {}
    for statement in statements:
        words = statement.split()
        if words[0] == "CREATE" and "INDEX" in words[:3]:
            found[words[words.index("INDEX") + 1]] = statement
    return found


def _environment(exc: BaseException, scratch: Path, target: Path) -> EnvironmentProblem:
    """The error ``checkpoint.write_group`` gives for the same failure, naming the target."""
    if isinstance(exc, EnvironmentProblem):  # from write_group, which named the scratch file
        return EnvironmentProblem(exc.message.replace(str(scratch), str(target)), code=exc.code, hint=exc.hint)
    return write_failure(exc, target)

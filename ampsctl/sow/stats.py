"""What a SOW file holds, and a full check of it (``ampsctl sow stats [--verify]``).

``file_stats`` reads the meta and a few aggregates (cheap: no payload is read). With
``verify`` it also reads every row: each record's CRC, each record's index columns and
``json_plain`` recomputed from its message (a damaged one would make queries miss the
record), each history state's CRC, and SQLite's ``integrity_check``. The first problem found is raised as a
SowFileError naming the record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ampsctl.sow.payloads import Payloads, json_plain
from ampsctl.sow.sowfile import RECORD_COLUMNS, SowFile, damaged, index_columns


def file_stats(sow: SowFile, *, verify: bool = False, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    from ampsctl.journal.bookmarks import format_timestamp

    meta = sow.meta
    expiring, next_expiry = next(sow.select("SELECT count(expires_at), min(expires_at) FROM records"))
    stats: dict[str, Any] = {
        "path": sow.path,
        "format_version": meta.format_version,
        "spec": meta.spec.to_json(),
        "hash_indexes": [list(paths) for paths in meta.hash_paths],
        "memo_indexes": list(meta.memo_paths),
        "last_sequence": meta.last_sequence,
        # the time of the last journal record applied to this SOW (not of ``last_sequence``, which
        # counts every record of the journal up to the checkpoint)
        "last_timestamp": format_timestamp(meta.last_timestamp) if meta.last_timestamp is not None else None,
        "records": sow.count(),
        "topics": sow.counts(),
        "expiring": expiring,
        "next_expiry": format_timestamp(next_expiry) if next_expiry is not None else None,
        "history_states": sow.history_count(),
        "verified": None,
    }
    if verify:
        records, states = verify_file(sow, progress=progress)
        stats["verified"] = (f"ok: {records} record{'' if records == 1 else 's'} and {states} history "
                             f"state{'' if states == 1 else 's'} match their checksums and indexes")
    return stats


def verify_file(sow: SowFile, *, progress: Callable[[int], None] | None = None) -> tuple[int, int]:
    """(records, history states) checked; SowFileError at the first problem."""
    found = list(sow.select("PRAGMA integrity_check"))
    if found != [("ok",)]:
        raise damaged(sow.path, f"SQLite integrity_check: {found[0][0] if found else 'no answer'}")
    meta = sow.meta
    indexer = meta.indexer()
    payloads = Payloads(meta.spec.message_type)
    columns = index_columns(len(indexer.hash_fields), len(indexer.memo_fields))
    plain = meta.format_version >= 2
    if plain:
        columns.append("json_plain")
    indexed = bool(indexer.hash_fields or indexer.memo_fields)
    json = payloads.message_type == "json"
    count = 0
    for row in sow.select(f"SELECT {RECORD_COLUMNS}, {', '.join(columns)} FROM records ORDER BY id"):
        record = sow.record(row[:8])
        expected: tuple[Any, ...] = (0,)
        if indexed:
            fields = payloads.record(payloads.parse(record.payload))
            memo, complex_ = indexer.memo_columns(fields)
            expected = (*indexer.hash_tokens(fields), *memo, 1 if complex_ else 0)
        found = row[8:]
        if plain:
            # A 1 on a row that is not plain would make scans drop matches; a 0 only costs the
            # guards, so it is accepted wherever this orjson would say 1 (another orjson may not).
            marked, found = found[-1], found[:-1]
            if marked not in (0, 1) or (marked == 1 and not (json and json_plain(record.payload))):
                raise damaged(sow.path, f"the json_plain mark of record {record.key!r} does not match its message")
        if tuple(found) != expected:
            raise damaged(sow.path, f"the index columns of record {record.key!r} do not match its message")
        count += 1
        if progress is not None and not count & 0xFFFF:
            progress(count)
    states = sum(1 for _ in sow.history())
    return count, states

"""One part of a JSON-prefiltered SOW scan, in a process of its own (``jsonscan`` starts it).

Run as a script: ``python -I -S scanpart.py`` with a marshal'd request on stdin and a marshal'd
answer on stdout. It imports only the standard library, so it starts in a few milliseconds and
needs neither ampsctl nor the virtual environment on its path.

Request: ``(uri, meta_crc, sql, params, after, buffer_bytes, fetch_rows)``; ``sql`` selects
rows that start with the id, over ``id > ? AND id <= ?`` (the first two params), in id order.
Answer: ``(status, rows, resume, message)``:

* ``"done"``: ``rows`` are every row of the part;
* ``"more"``: ``rows`` stop at ``resume``; the caller scans the rest itself. The buffer is full,
  or this process could not read the file the caller reads (busy, replaced: another
  ``meta_crc``, or damaged: the caller's own scan of the rest then reports the damage);
* ``"malformed"``: SQLite's JSON reader refused a payload after ``resume``; the caller scans the
  rest without the pre-filter.
"""

import marshal
import sqlite3
import sys

META_CRC = "SELECT value FROM meta WHERE name = 'meta_crc'"


def malformed(exc: BaseException) -> bool:
    """SQLite's JSON reader refused a payload (or this SQLite has no JSON functions)."""
    return isinstance(exc, sqlite3.OperationalError) and "json" in str(exc).lower()


ROW_ALLOWANCE = 100  # bytes counted per row for its other columns and the tuple


def scan(uri, crc, sql, params, after, buffer_bytes, fetch_rows):  # type: ignore[no-untyped-def]
    """The answer for one request (see the module docstring); rows are ``(id, ..., payload, ...)``
    with the payload fourth, as ``jsonscan`` selects them."""
    rows = []
    held = 0
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=0)
        connection.execute("PRAGMA mmap_size = 1073741824")  # fewer copies on a read-only scan
        connection.execute("BEGIN")
        found = connection.execute(META_CRC).fetchone()
        if found is None or found[0] != crc:
            return "more", rows, after, "another file"
        cursor = connection.execute(sql, params)
        while batch := cursor.fetchmany(fetch_rows):
            rows += batch
            held += sum(len(row[3]) for row in batch) + ROW_ALLOWANCE * len(batch)
            if held >= buffer_bytes:
                return "more", rows, rows[-1][0], "buffer full"
        return "done", rows, None, ""
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        resume = rows[-1][0] if rows else after
        return "malformed" if malformed(exc) else "more", rows, resume, str(exc)


if __name__ == "__main__":
    answer = scan(*marshal.loads(sys.stdin.buffer.read()))
    sys.stdout.buffer.write(marshal.dumps(answer))

"""What every benchmark prints: a figures table and the ok/MISSED verdict of a target.

The benchmarks run as scripts (``python bench/NAME.py``), so ``bench/`` is on ``sys.path``
and they import this module as ``report``.
"""

from __future__ import annotations


def table(rows: list[tuple[str, ...]]) -> str:
    """Rows as aligned columns: the first left-aligned, the others right-aligned, a rule under the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i])
                               for i, cell in enumerate(row)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"

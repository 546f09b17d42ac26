"""SQL pre-filters on JSON payloads: SQLite's C code drops rows a filter cannot accept.

Theory of operation. For a ``json`` SOW file, ``json_prefilter(expr)`` turns the filter (or a
wider condition) into SQL over SQLite's JSON functions with the guarantee of ``sqlfilter.py``:

    every row whose record the filter accepts makes the condition TRUE.

Rows that pass are still checked by the compiled filter, so results are exact; what SQLite
decides is only which rows never reach Python. The walk (AND, OR, comparisons, BETWEEN, IN with
literals) is ``sqlfilter.narrowing``; this module supplies the atoms, each a test of
``v = coalesce(json_extract(payload, '$."a"."b"'), '')`` (SQLite caches a
payload's parse for every JSON function of the statement, so a row is parsed once however many
atoms read it; SQLite 3.45 and later get the payload cast to text, as they may read a BLOB as
their binary JSONB format):

* ``v`` is an INTEGER or REAL only when the value is a JSON number (or true/false, 1/0, which
  the filter also reads as 1/0). A numeric literal is compared with bounds widened by a
  relative 1e-9: SQLite's text-to-float conversion may differ from orjson's in the last bits,
  and huge integers become REAL. Text, arrays, objects (which json_extract returns as JSON
  text), null and a missing value (``''``) pass: the filter may read them as numbers or
  elements.
* A non-numeric text literal uses SQLite's own order, which is the filter's: numbers sort
  before text, text compares by code point (UTF-8 bytes). A value that might be an array or
  object (text starting with ``[`` or ``{``) or NULL passes.
* What SQLite's JSON reads differently from orjson passes as a whole row: a payload with a
  backslash anywhere (an escaped key name is not matched by a JSON path) and one where a name
  of the path occurs twice (SQLite takes the first duplicate key, orjson the last), tested with
  GLOB on the payload's text, which costs far less than the JSON parse. Rows whose
  ``json_plain`` column (format 2, ``payloads.json_plain``) says neither can happen skip the
  GLOBs: the CAST and GLOBs were a quarter of SQLite's time on a scan.
* Only plain names are translated (no ``@``, quotes, backslashes, GLOB characters or lone
  surrogates, which UTF-8 SQL text cannot hold); a path through an array gives NULL in SQLite
  and therefore passes.
A payload SQLite cannot parse raises "malformed JSON"; ``filequery`` then finishes the scan in
Python from the last row it had (nothing is dropped on the way).
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from ampsctl.filter import ast
from ampsctl.filter.values import parse_number
from ampsctl.sow.query import field_key
from ampsctl.sow.sqlfilter import bounded, join, narrowing, storable

_WIDEN = 1e-9  # relative: far above any float rounding difference, far below real gaps
_TINY = 1e-300  # absolute, for literals at or near zero
_UNSAFE_NAME = set('"\\\'*?[]') | {chr(code) for code in range(32)}
_Condition = tuple[str, list[Any]]
# SQLite before 3.45 reads a BLOB argument as JSON text; later ones may take it for JSONB.
_PAYLOAD = "payload" if sqlite3.sqlite_version_info < (3, 45, 0) else "CAST(payload AS TEXT)"


@dataclass(frozen=True, slots=True)
class JsonPrefilter:
    """A condition on the records table: ``where`` with ``params``."""

    where: str
    params: list[Any]


@dataclass
class _JsonValues:
    """``sqlfilter.Target`` over JSON values; remembers the names of the paths it used."""

    names: set[str] = field(default_factory=set)

    def column(self, expr: ast.Field) -> str | None:
        path = field_key(expr)
        if not path or any(not name or name[0] == "@" or _UNSAFE_NAME.intersection(name) or not storable(name)
                           for name in path):
            return None  # storable: a lone surrogate ([/\udc80] from argv bytes) cannot be SQL text
        self.names.update(path)
        return f"coalesce(json_extract({_PAYLOAD}, '$" + "".join(f'."{name}"' for name in path) + "'), '')"

    def compare(self, v: str, op: str, value: Any) -> _Condition | None:
        if isinstance(value, bool):
            value = 1 if value else 0
        if isinstance(value, str):
            if not value or not storable(value):
                return None
            number = parse_number(value)
            if number is None:
                return f"({v} {op} ? OR {v} = '' OR {v} GLOB '[[{{]*')", [value]
            value = number
        if isinstance(value, int | float):
            return _number(v, op, value)
        return None  # NULL: nothing to narrow with

    def is_null(self, v: str, negated: bool) -> _Condition | None:
        return None


def json_prefilter(expr: ast.Expr, *, plain_column: bool = True) -> JsonPrefilter | None:
    """The pre-filter of ``expr`` on a JSON SOW file, or None when nothing narrows.

    ``plain_column``: the file has ``records.json_plain`` (format 2), so the text guards run
    only on rows it does not vouch for."""
    values = _JsonValues()
    found = bounded(narrowing(expr, values))
    if found is None:
        return None
    guards = ["CAST(payload AS TEXT) GLOB '*\\*'"]
    guards += [f"CAST(payload AS TEXT) GLOB '*{name}\"*{name}\"*'" for name in sorted(values.names)]
    guard = join([(text, []) for text in guards], "OR")
    if plain_column:
        guard = (f"(json_plain = 0 AND {guard[0]})", [])
    sql, params = join([found, guard], "OR")
    return JsonPrefilter(sql, params)


def _number(v: str, op: str, value: int | float) -> _Condition | None:
    """Numbers within the widened bounds, and every text value ('' stands for NULL): numbers
    sort before text in SQLite, so one comparison or BETWEEN reads the value once."""
    try:
        number = float(value)
    except OverflowError:
        return None
    if math.isnan(number) or math.isinf(number):
        return None
    margin = abs(number) * _WIDEN + _TINY
    low, high = number - margin, number + margin
    below, above = f"{v} >= ?", f"NOT ({v} BETWEEN ? AND ?)"
    if op in (">", ">="):
        return below, [low]
    if op in ("<", "<="):
        return above, [math.nextafter(high, math.inf), math.inf]
    if op == "=":
        return f"({below} AND {above})", [low, math.nextafter(high, math.inf), math.inf]
    return None  # != holds for nearly every value

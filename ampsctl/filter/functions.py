"""Implementations of the scalar functions in the catalog (spec/expressions.md §9).

``IMPLEMENTATIONS`` maps each catalog name to a plain Python function that takes the already
evaluated argument values (raw record values: arrays, '' and None included) and returns one
value. Every backend that runs in Python calls these; none keeps a copy.

Rules shared by all of them:
* Functions are not array-aware: they read the first element of an array (§7 rule 2), which is
  what ``values.to_text``/``values.to_number``/``values.scalar`` do.
* NULL in, NULL out (§9 [ASSUME]), except CONCAT (NULL counts as '', A9), COALESCE, IF and the
  typed-value constructors. A string result may be '' -- the caller treats it as NULL (§5).
* Case functions are ASCII-only, as the docs say AMPS is not Unicode-aware.
* ``LAZY`` names the functions whose arguments a backend should evaluate on demand (IF takes
  one branch since 5.3.4; COALESCE stops at the first non-NULL). Their eager versions are here
  too so a backend can call them uniformly when laziness does not matter.
* UNIX_TIMESTAMP is the only clock read in ampsctl/filter/, at evaluation time (DESIGN.md).
Aggregates are not here: they only exist in view projections (§9.6).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

from ampsctl.filter import regexes
from ampsctl.filter.values import fit_int, is_null, scalar, to_number, to_text, truth

_UPPER = {c: c - 32 for c in range(ord("a"), ord("z") + 1)}
_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_ASCII_SPACE = " \t\n\r\f\v"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_STRFTIME_LIMIT = 128  # bytes, §9.4
# ROUND works in decimal with its own context (never the thread's, which callers may change):
# digits are clamped to +-400 places and 800 digits of precision hold any float or int64 there.
_ROUND_LIMIT = 400
_DECIMAL = Context(prec=800)
# CONCAT, REPLACE and REGEXP_REPLACE can build far more text than they read (a 1 MB message
# and a 20 KB replacement: 20 GB); past this many characters the call is an evaluation error.
MAX_TEXT = regexes.MAX_TEXT


def ascii_upper(text: str) -> str:
    return text.translate(_UPPER)


def ascii_lower(text: str) -> str:
    return text.translate(_LOWER)


def _integer(value: Any) -> int | None:
    """An integral argument (positions, lengths, digits): floats truncate, NaN/inf are NULL."""
    number = to_number(value)
    if number is None or (isinstance(number, float) and not math.isfinite(number)):
        return None
    return int(number)


# --- strings -------------------------------------------------------------------------------


def upper(value: Any) -> str | None:
    text = to_text(value)
    return None if text is None else ascii_upper(text)


def lower(value: Any) -> str | None:
    text = to_text(value)
    return None if text is None else ascii_lower(text)


def concat(*values: Any) -> str:
    texts = [text for text in map(to_text, values) if text is not None]
    if sum(map(len, texts)) > MAX_TEXT:
        raise regexes.too_long("CONCAT")
    return "".join(texts)


def instr(haystack: Any, needle: Any) -> int | None:
    h, n = to_text(haystack), to_text(needle)
    return None if h is None or n is None else h.find(n) + 1


def instr_i(haystack: Any, needle: Any) -> int | None:
    h, n = to_text(haystack), to_text(needle)
    return None if h is None or n is None else ascii_lower(h).find(ascii_lower(n)) + 1


def strequal_i(left: Any, right: Any) -> int | None:
    a, b = to_text(left), to_text(right)
    return None if a is None or b is None else int(ascii_lower(a) == ascii_lower(b))


def substr(value: Any, start: Any, length: Any = ...) -> str | None:
    """1-based SUBSTR; position 0 acts as 1 and a negative position counts from the end
    (Spark's ``substring``, which §11 maps SUBSTR to); a negative length gives ''."""
    text, pos = to_text(value), _integer(start)
    if text is None or pos is None:
        return None
    begin = pos - 1 if pos > 0 else (len(text) + pos if pos < 0 else 0)
    if length is ...:
        return text[max(begin, 0) :]
    count = _integer(length)
    if count is None:
        return None
    end = begin + count
    return text[max(begin, 0) : max(end, 0)] if end > begin else ""


def reverse(value: Any) -> str | None:
    text = to_text(value)
    return None if text is None else text[::-1]


def length(value: Any) -> int | None:
    """Length in bytes of the UTF-8 text (§9.2 provisional: AMPS strings are byte sequences)."""
    text = to_text(value)
    return None if text is None else len(text.encode("utf-8", "surrogatepass"))


def _strip_set(chars: Any) -> str | None:
    return _ASCII_SPACE if chars is ... else to_text(chars)


def trim(value: Any, chars: Any = ...) -> str | None:
    text, strip = to_text(value), _strip_set(chars)
    return None if text is None or strip is None else text.strip(strip)


def ltrim(value: Any, chars: Any = ...) -> str | None:
    text, strip = to_text(value), _strip_set(chars)
    return None if text is None or strip is None else text.lstrip(strip)


def rtrim(value: Any, chars: Any = ...) -> str | None:
    text, strip = to_text(value), _strip_set(chars)
    return None if text is None or strip is None else text.rstrip(strip)


def replace(value: Any, old: Any, new: Any) -> str | None:
    """Literal replace-all. A NULL/'' replacement deletes (the common use; '' is NULL in AMPS)."""
    text, target = to_text(value), to_text(old)
    if text is None or target is None:
        return None
    replacement = to_text(new) or ""
    if len(replacement) > len(target) and len(text) + text.count(target) * (len(replacement) - len(target)) > MAX_TEXT:
        raise regexes.too_long("REPLACE")
    return text.replace(target, replacement)


def regexp_match(value: Any, pattern: Any) -> str | None:
    text, expr = to_text(value), to_text(pattern)
    return None if text is None or expr is None else regexes.first_match(expr, text)


def regexp_replace(value: Any, pattern: Any, new: Any) -> str | None:
    """PCRE replace-all with ``\\1`` group references; a NULL/'' replacement deletes."""
    text, expr = to_text(value), to_text(pattern)
    if text is None or expr is None:
        return None
    return regexes.replace_all(expr, text, to_text(new) or "")


# --- numbers -------------------------------------------------------------------------------


def abs_(value: Any) -> int | float | None:
    number = to_number(value)
    if number is None:
        return None
    return fit_int(abs(number)) if isinstance(number, int) else abs(number)


def round_(value: Any, digits: Any = 0) -> int | float | None:
    """Round half away from zero, on the decimal text of a float (``ROUND(2.675, 2)`` = 2.68)."""
    number, places = to_number(value), _integer(digits)
    if number is None or places is None:
        return None
    if isinstance(number, float) and not math.isfinite(number):
        return number
    if (isinstance(number, int) and places >= 0) or places > _ROUND_LIMIT:
        return number  # no float has a digit this far right of the point
    exponent = Decimal(1).scaleb(-max(places, -_ROUND_LIMIT), _DECIMAL)
    exact = Decimal(repr(number)) if isinstance(number, float) else Decimal(number)
    rounded = exact.quantize(exponent, ROUND_HALF_UP, _DECIMAL)
    return float(rounded) if isinstance(number, float) else fit_int(int(rounded))


def _to_integral(value: Any, op: Callable[[float], int]) -> int | float | None:
    number = to_number(value)
    if number is None or isinstance(number, int):
        return number
    return op(number) if math.isfinite(number) else number


def ceiling(value: Any) -> int | float | None:
    return _to_integral(value, math.ceil)


def floor(value: Any) -> int | float | None:
    return _to_integral(value, math.floor)


# --- conditionals and typed values ---------------------------------------------------------


def if_(condition: Any, when_true: Any, when_false: Any) -> Any:
    """IF: a NULL (or false) condition takes the false branch (§9.3 [ASSUME])."""
    return scalar(when_true if truth(condition) is True else when_false)


def coalesce(*values: Any) -> Any:
    """The first argument that is not NULL ('' counts as NULL), or NULL."""
    for value in values:
        first = scalar(value)
        if not is_null(first):
            return first
    return None


def true_value() -> bool:
    return True


def false_value() -> bool:
    return False


def nan_value() -> float:
    return math.nan


def char_value(code: Any) -> str | None:
    """CHAR_VALUE(n): the single byte n (0-255) as a one-character string; NULL outside."""
    number = to_number(code)
    if number is None or not 0 <= number <= 255 or int(number) != number:  # NaN fails the range test
        return None
    return chr(int(number))


# --- date and time -------------------------------------------------------------------------


def unix_timestamp() -> float:
    return time.time()


def _expand_fraction(fmt: str, micros: int) -> str:
    """Replace the AMPS extensions ``%f`` (microseconds) and ``%03f`` (milliseconds)."""
    out: list[str] = []
    i = 0
    while i < len(fmt):
        if fmt.startswith("%03f", i):
            out.append(f"{micros // 1000:03d}")
            i += 4
        elif fmt.startswith("%f", i):
            out.append(f"{micros:06d}")
            i += 2
        elif fmt.startswith("%", i):
            out.append(fmt[i : i + 2])  # `%%` and every strftime(3) specifier pass through
            i += 2
        else:
            out.append(fmt[i])
            i += 1
    return "".join(out)


def strftime(fmt: Any, timestamp: Any) -> str | None:
    """STRFTIME(format, seconds since the epoch) in UTC; the output stops at 128 bytes."""
    pattern, seconds = to_text(fmt), to_number(timestamp)
    if pattern is None or seconds is None:
        return None
    try:
        moment = _EPOCH + timedelta(seconds=seconds)
        text = moment.strftime(_expand_fraction(pattern, moment.microsecond))
    except (OverflowError, ValueError):
        return None
    raw = text.encode("utf-8", "surrogatepass")
    return raw[:_STRFTIME_LIMIT].decode("utf-8", "ignore") if len(raw) > _STRFTIME_LIMIT else text


def strptime(text: Any, fmt: Any) -> float | None:
    """STRPTIME(text, format) -> seconds since the epoch (a double); UTC unless ``%z`` says."""
    source, pattern = to_text(text), to_text(fmt)
    if source is None or pattern is None:
        return None
    # Python's %f reads 1-6 digits as a fraction, so "123" under %03f is 0.123 s as wanted.
    try:
        parsed = datetime.strptime(source, pattern.replace("%03f", "%f"))
    except (ValueError, re.error):  # re.error: Python refuses a directive given twice (%Y%Y)
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return (parsed - _EPOCH).total_seconds()


IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {
    "UPPER": upper,
    "LOWER": lower,
    "CONCAT": concat,
    "INSTR": instr,
    "INSTR_I": instr_i,
    "STREQUAL_I": strequal_i,
    "SUBSTR": substr,
    "REVERSE": reverse,
    "LENGTH": length,
    "LEN": length,
    "TRIM": trim,
    "LTRIM": ltrim,
    "RTRIM": rtrim,
    "REPLACE": replace,
    "REGEXP_MATCH": regexp_match,
    "REGEXP_REPLACE": regexp_replace,
    "ABS": abs_,
    "ROUND": round_,
    "CEILING": ceiling,
    "FLOOR": floor,
    "IF": if_,
    "COALESCE": coalesce,
    "TRUE_VALUE": true_value,
    "FALSE_VALUE": false_value,
    "NAN_VALUE": nan_value,
    "CHAR_VALUE": char_value,
    "UNIX_TIMESTAMP": unix_timestamp,
    "STRFTIME": strftime,
    "STRPTIME": strptime,
}

# Functions whose arguments a backend evaluates on demand (see the module docstring).
LAZY = frozenset({"IF", "COALESCE"})

"""AMPS value units: intervals, byte sizes and counts (spec/config.md §3).

Each parser accepts the documented form silently, accepts a few undocumented but
plausible forms with a note in ``undocumented`` (the linter turns that into a warning),
and raises ``UnitError`` with a fix-it hint for anything else.

Decisions where the AMPS documentation is silent (docs/decisions.md):
- a bare interval number ("30") is read as seconds;
- unit letters are case-insensitive, upper case is noted as undocumented;
- ``KB`` may mean 1000 or 1024 bytes: ``ByteSize`` keeps both readings so a limit is
  only reported when both readings break it;
- a value must fit a signed 64-bit integer (``LARGEST``: an interval of about 292 years in
  nanoseconds, 8 EiB, 9.2e18 things): what AMPS or the broker would do with more is
  undefined, and arithmetic on it would overflow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ampsctl.errors import UnitError

_NANOS = {
    "ns": 1,
    "us": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
    "d": 86400 * 1_000_000_000,
    "w": 7 * 86400 * 1_000_000_000,
}
_INTERVAL = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", re.ASCII)
_BYTES = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", re.ASCII)
_COUNT = re.compile(r"\s*([0-9]+)\s*([kKmM]?)\s*", re.ASCII)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}
LARGEST = (1 << 63) - 1  # every value must fit a signed 64-bit integer (nanoseconds, bytes, counts)
_INTERVAL_HINT = "write a whole number followed by ns, us, ms, s, m, h, d or w, e.g. 250ms or 30s"
_BYTES_HINT = "write a number with an optional k, m, g or t suffix (B optional), e.g. 5MB or 1GB"


@dataclass(frozen=True, slots=True)
class Interval:
    nanos: int
    text: str
    undocumented: str | None = None

    @property
    def seconds(self) -> float:
        return self.nanos / 1e9


@dataclass(frozen=True, slots=True)
class ByteSize:
    """A size in bytes under both readings of k/m/g/t: powers of 1000 (low) and 1024 (high)."""

    low: int
    high: int
    text: str
    undocumented: str | None = None


@dataclass(frozen=True, slots=True)
class Count:
    value: int
    text: str
    undocumented: str | None = None


@lru_cache(maxsize=4096)  # configs repeat a few values many times; results are immutable
def parse_interval(text: str) -> Interval:
    """Parse an AMPS interval such as ``250us``, ``30s`` or ``1d`` into nanoseconds."""
    match = _INTERVAL.fullmatch(text)
    if not match:
        raise UnitError(f"'{text.strip()}' is not an AMPS interval", code="UNIT-001", hint=_INTERVAL_HINT)
    number, unit = match.groups()
    number = _digits(number)
    notes = []
    if not unit:
        notes.append("has no unit (ampsctl reads it as seconds)")
        unit = "s"
    elif unit.lower() in _NANOS and unit != unit.lower():
        notes.append(f"uses an upper-case unit '{unit}'")
    if unit.lower() not in _NANOS:
        raise UnitError(
            f"'{text.strip()}' has an unknown interval unit '{unit}'", code="UNIT-001", hint=_INTERVAL_HINT
        )
    if "." in number:
        notes.append("has a fractional number")
    factor = _NANOS[unit.lower()]
    if _too_many_digits(number):
        nanos = LARGEST + 1
    elif "." in number:
        scaled = float(number) * factor
        nanos = round(scaled) if scaled <= LARGEST else LARGEST + 1
    else:
        nanos = int(number) * factor
    if nanos > LARGEST:
        raise UnitError(f"'{text.strip()}' is too long: an interval is at most {LARGEST} ns (about 292 years)",
                        code="UNIT-001", hint="use a shorter interval, e.g. 30d")
    return Interval(nanos, text, "; ".join(notes) or None)


@lru_cache(maxsize=4096)
def parse_bytes(text: str) -> ByteSize:
    """Parse an AMPS byte size such as ``5MB``, ``2G`` or ``1000000``."""
    match = _BYTES.fullmatch(text)
    if not match:
        raise UnitError(f"'{text.strip()}' is not an AMPS byte size", code="UNIT-003", hint=_BYTES_HINT)
    number, unit = match.groups()
    number = _digits(number)
    lowered = unit.lower()
    if lowered.endswith("ib") and lowered[:-2] in _POWERS:
        raise UnitError(
            f"'{text.strip()}' uses the IEC unit '{unit}', which AMPS does not document",
            code="UNIT-003",
            hint=f"write {number}{unit[0].upper()}B instead",
        )
    prefix, byte_mark = (lowered[:1], lowered[1:]) if lowered[:1] in "kmgt" else ("", lowered)
    if byte_mark not in ("", "b"):
        raise UnitError(
            f"'{text.strip()}' has an unknown size unit '{unit}'", code="UNIT-003", hint=_BYTES_HINT
        )
    power = _POWERS[prefix]
    value = LARGEST + 1 if _too_many_digits(number) else float(number) if "." in number else int(number)
    if value * 1024**power > LARGEST:
        raise UnitError(f"'{text.strip()}' is too large: a size is at most {LARGEST} bytes (8 EiB)",
                        code="UNIT-003", hint="use a smaller size, e.g. 10GB")
    return ByteSize(int(value * 1000**power), int(value * 1024**power), text)


@lru_cache(maxsize=4096)
def parse_count(text: str) -> Count:
    """Parse a non-negative count; a ``k``/``M`` exponent suffix is accepted but noted."""
    match = _COUNT.fullmatch(text)
    if not match:
        raise UnitError(
            f"'{text.strip()}' is not a non-negative whole number",
            code="UNIT-001",
            hint="write digits only, e.g. 1000",
        )
    number, suffix = match.groups()
    number = _digits(number)
    scale = 1 if not suffix else 1_000 if suffix.lower() == "k" else 1_000_000
    value = LARGEST + 1 if _too_many_digits(number) else int(number) * scale
    if value > LARGEST:
        raise UnitError(f"'{text.strip()}' is too large: a count is at most {LARGEST}", code="UNIT-001",
                        hint="use a smaller number")
    return Count(value, text, f"uses the exponent suffix '{suffix}'" if suffix else None)


def _too_many_digits(number: str) -> bool:
    """More whole digits than any value up to ``LARGEST`` has (``int()`` refuses over 4,300)."""
    return len(number.split(".", 1)[0]) > 19


def _digits(number: str) -> str:
    """``number`` without leading zeros (``int()`` counts them against its limit too)."""
    whole, dot, fraction = number.partition(".")
    return (whole.lstrip("0") or "0") + dot + fraction


def format_interval(nanos: int) -> str:
    """The shortest exact AMPS spelling of an interval: 100000000 -> '100ms'."""
    for unit in ("w", "d", "h", "m", "s", "ms", "us"):
        if nanos and nanos % _NANOS[unit] == 0:
            return f"{nanos // _NANOS[unit]}{unit}"
    return f"{nanos}ns"


def format_bytes(size: int) -> str:
    """A decimal AMPS spelling of a byte count: 1000000000 -> '1GB'."""
    for unit, power in (("TB", 4), ("GB", 3), ("MB", 2), ("KB", 1)):
        if size and size % 1000**power == 0:
            return f"{size // 1000**power}{unit}"
    return str(size)

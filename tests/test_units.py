"""AMPS value units: intervals, byte sizes, counts, their errors and hints, and the formatters."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ampsctl.errors import InputError, UnitError
from ampsctl.units import LARGEST, format_bytes, format_interval, parse_bytes, parse_count, parse_interval

NS, US, MS, S = 1, 1_000, 1_000_000, 1_000_000_000
M, H, D, W = 60 * S, 3600 * S, 86400 * S, 7 * 86400 * S
UNITS = {"ns": NS, "us": US, "ms": MS, "s": S, "m": M, "h": H, "d": D, "w": W}

# ---------------------------------------------------------------------------------- intervals


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("0ns", 0),
        ("1ns", 1),
        ("250us", 250 * US),
        ("100ms", 100 * MS),
        ("30s", 30 * S),
        ("5m", 5 * M),
        ("2h", 2 * H),
        ("1d", D),
        ("1w", W),
        ("  250ms  ", 250 * MS),
        ("250 ms", 250 * MS),
        ("\n\t10s\n", 10 * S),
    ],
)
def test_interval_documented_forms(text, nanos):
    parsed = parse_interval(text)
    assert parsed.nanos == nanos
    assert parsed.undocumented is None
    assert parsed.text == text


def test_interval_seconds_property():
    assert parse_interval("1500ms").seconds == 1.5


@pytest.mark.parametrize(
    ("text", "nanos", "note"),
    [
        ("30", 30 * S, "has no unit (ampsctl reads it as seconds)"),
        ("30S", 30 * S, "uses an upper-case unit 'S'"),
        ("5M", 5 * M, "uses an upper-case unit 'M'"),  # minutes, not megaseconds
        ("10Ms", 10 * MS, "uses an upper-case unit 'Ms'"),
        ("1.5s", 1500 * MS, "has a fractional number"),
        ("0.25h", 15 * M, "has a fractional number"),
        ("0.3s", 300 * MS, "has a fractional number"),  # rounded, not 299999999
        ("1.5", 1500 * MS, "has no unit (ampsctl reads it as seconds); has a fractional number"),
    ],
)
def test_interval_undocumented_forms_are_noted(text, nanos, note):
    parsed = parse_interval(text)
    assert parsed.nanos == nanos
    assert parsed.undocumented == note


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "'' is not an AMPS interval"),
        ("   ", "'' is not an AMPS interval"),
        ("-1s", "'-1s' is not an AMPS interval"),
        ("1e3s", "'1e3s' is not an AMPS interval"),
        ("1,5s", "'1,5s' is not an AMPS interval"),
        (".5s", "'.5s' is not an AMPS interval"),
        ("s", "'s' is not an AMPS interval"),
        ("10 parsecs", "'10 parsecs' has an unknown interval unit 'parsecs'"),
        ("10sec", "'10sec' has an unknown interval unit 'sec'"),
        ("5y", "'5y' has an unknown interval unit 'y'"),
        ("١٠s", "'١٠s' is not an AMPS interval"),  # non-ASCII digits are not digits here
    ],
)
def test_interval_errors_have_code_and_hint(text, message):
    with pytest.raises(UnitError) as caught:
        parse_interval(text)
    error = caught.value
    assert error.message == message
    assert error.code == "UNIT-001"
    assert "250ms or 30s" in error.hint
    assert isinstance(error, InputError)  # exit code 3 if it ever reaches the CLI


@pytest.mark.parametrize("text", ["9223372036854775808ns", "106752d", "1" + "0" * 400 + ".5s", "9" * 400 + "h"])
def test_interval_beyond_64_bits_is_refused(text):
    with pytest.raises(UnitError) as caught:
        parse_interval(text)
    assert "is too long" in caught.value.message and caught.value.code == "UNIT-001"


def test_interval_largest_is_kept():
    assert parse_interval("9223372036854775807ns").nanos == LARGEST
    assert parse_interval("106751d").nanos == 106751 * 86400 * 10**9


# --------------------------------------------------------------------------------- byte sizes


@pytest.mark.parametrize(
    ("text", "low", "high"),
    [
        ("0", 0, 0),
        ("1000000", 1_000_000, 1_000_000),
        ("1b", 1, 1),
        ("1 B", 1, 1),
        ("1k", 1000, 1024),
        ("1KB", 1000, 1024),
        ("1kb", 1000, 1024),
        ("5MB", 5_000_000, 5 * 1024**2),
        ("2G", 2 * 1000**3, 2 * 1024**3),
        ("1t", 1000**4, 1024**4),
        ("1.5GB", 1_500_000_000, int(1.5 * 1024**3)),
        (" 64 MB ", 64_000_000, 64 * 1024**2),
    ],
)
def test_bytes_both_readings(text, low, high):
    size = parse_bytes(text)
    assert (size.low, size.high) == (low, high)
    assert size.text == text


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        ("1KiB", "'1KiB' uses the IEC unit 'KiB', which AMPS does not document", "write 1KB instead"),
        ("10mib", "'10mib' uses the IEC unit 'mib', which AMPS does not document", "write 10MB instead"),
        ("10X", "'10X' has an unknown size unit 'X'", "e.g. 5MB or 1GB"),
        ("10KBB", "'10KBB' has an unknown size unit 'KBB'", "e.g. 5MB or 1GB"),
        ("", "'' is not an AMPS byte size", "e.g. 5MB or 1GB"),
        ("-5MB", "'-5MB' is not an AMPS byte size", "e.g. 5MB or 1GB"),
        ("MB", "'MB' is not an AMPS byte size", "e.g. 5MB or 1GB"),
    ],
)
def test_bytes_errors_have_code_and_hint(text, message, hint):
    with pytest.raises(UnitError) as caught:
        parse_bytes(text)
    assert caught.value.message == message
    assert caught.value.code == "UNIT-003"
    assert hint in caught.value.hint


@pytest.mark.parametrize("text", ["8388608TB", "1" + "0" * 400 + ".5GB", "9223372036854775808"])
def test_bytes_beyond_64_bits_are_refused(text):
    with pytest.raises(UnitError) as caught:
        parse_bytes(text)
    assert "is too large" in caught.value.message and caught.value.code == "UNIT-003"


# ------------------------------------------------------------------------------------ counts


@pytest.mark.parametrize(
    ("text", "value", "note"),
    [
        ("0", 0, None),
        ("1000", 1000, None),
        (" 7 ", 7, None),
        ("10k", 10_000, "uses the exponent suffix 'k'"),
        ("10K", 10_000, "uses the exponent suffix 'K'"),
        ("2M", 2_000_000, "uses the exponent suffix 'M'"),
        ("2m", 2_000_000, "uses the exponent suffix 'm'"),
    ],
)
def test_counts(text, value, note):
    count = parse_count(text)
    assert (count.value, count.undocumented) == (value, note)


@pytest.mark.parametrize("text", ["", "1.5", "-3", "3g", "1e6", "ten", "10 000"])
def test_count_errors(text):
    with pytest.raises(UnitError) as caught:
        parse_count(text)
    assert caught.value.message == f"'{text.strip()}' is not a non-negative whole number"
    assert caught.value.hint == "write digits only, e.g. 1000"


@pytest.mark.parametrize("text", ["9223372036854775808", "9223372036854776k", "9" * 400 + "M"])
def test_count_beyond_64_bits_is_refused(text):
    with pytest.raises(UnitError) as caught:
        parse_count(text)
    assert "is too large" in caught.value.message


# -------------------------------------------------------------------------------- formatting


@pytest.mark.parametrize(
    ("nanos", "text"),
    [
        (0, "0ns"),
        (1, "1ns"),
        (1_500, "1500ns"),
        (2 * US, "2us"),
        (100 * MS, "100ms"),
        (1500 * MS, "1500ms"),
        (S, "1s"),
        (90 * S, "90s"),
        (M, "1m"),
        (90 * M, "90m"),
        (H, "1h"),
        (D, "1d"),
        (8 * D, "8d"),
        (W, "1w"),
        (3 * W, "3w"),
    ],
)
def test_format_interval(nanos, text):
    assert format_interval(nanos) == text
    assert parse_interval(text).nanos == nanos


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0"), (1, "1"), (1024, "1024"), (1500, "1500"), (1000, "1KB"), (2_000_000, "2MB"), (10**9, "1GB"), (3 * 10**12, "3TB")],
)
def test_format_bytes(size, text):
    assert format_bytes(size) == text
    assert parse_bytes(text).low == size


# ------------------------------------------------------------------------------- properties

_DOCUMENTED = re.compile(r"[0-9]+(ns|us|ms|s|m|h|d|w)")


@st.composite
def interval_texts(draw) -> str:
    """Any interval text parse_interval accepts: documented or not, with blanks around."""
    whole = draw(st.integers(min_value=0, max_value=10**4))  # 10**4 weeks still fits 64 bits of ns
    fraction = draw(st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=9).map(lambda d: "." + d)))
    unit = draw(st.sampled_from(["", *UNITS]))
    unit = "".join(c.upper() if draw(st.booleans()) else c for c in unit)
    blank = st.sampled_from(["", " ", "\t", "\n "])
    return f"{draw(blank)}{whole}{fraction}{draw(blank)}{unit}{draw(blank)}"


@given(interval_texts())
@example("0ns")
@example("1.5s")
@example("0.0000001ns")
@example("  10000.999999999W ")
def test_format_interval_round_trips(text):
    nanos = parse_interval(text).nanos
    formatted = format_interval(nanos)
    again = parse_interval(formatted)
    assert again.nanos == nanos
    assert _DOCUMENTED.fullmatch(formatted)
    assert again.undocumented is None


@given(st.integers(min_value=0, max_value=10**20))
def test_format_interval_is_exact_and_shortest(nanos):
    formatted = format_interval(nanos)
    number, unit = re.fullmatch(r"([0-9]+)([a-z]+)", formatted).groups()
    assert int(number) * UNITS[unit] == nanos
    larger = [u for u, size in UNITS.items() if size > UNITS[unit]]
    assert nanos == 0 or not any(nanos % UNITS[u] == 0 for u in larger)


@given(st.integers(min_value=0, max_value=10**16))
def test_format_bytes_round_trips(size):
    formatted = format_bytes(size)
    assert parse_bytes(formatted).low == size
    assert parse_bytes(formatted).undocumented is None


@pytest.mark.parametrize("parse", [parse_interval, parse_bytes, parse_count])
def test_thousands_of_digits_are_too_large_not_a_crash(parse) -> None:
    with pytest.raises(UnitError, match="too (long|large)"):
        parse("9" * 5000)
    assert parse("0" * 5000 + "1").text  # leading zeros are not digits that count

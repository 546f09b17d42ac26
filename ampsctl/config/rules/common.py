"""Small helpers shared by rule modules: typed values and flags read without raising."""

from __future__ import annotations

from lxml import etree

from ampsctl.errors import UnitError
from ampsctl.units import ByteSize, Count, Interval, parse_bytes, parse_count, parse_interval

TRUE_WORDS = frozenset({"true", "True", "TRUE", "enabled", "1"})
FALSE_WORDS = frozenset({"false", "False", "FALSE", "disabled", "0"})


def text_of(el: etree._Element | None) -> str | None:
    return None if el is None else (el.text or "").strip()


def interval_of(el: etree._Element | None) -> Interval | None:
    """The element's interval, or None when absent or invalid (UNIT-001 reports invalid ones)."""
    try:
        return parse_interval(el.text or "") if el is not None else None
    except UnitError:
        return None


def bytes_of(el: etree._Element | None) -> ByteSize | None:
    try:
        return parse_bytes(el.text or "") if el is not None else None
    except UnitError:
        return None


def count_of(el: etree._Element | None) -> Count | None:
    try:
        return parse_count(el.text or "") if el is not None else None
    except UnitError:
        return None


def is_true(text: str | None) -> bool:
    return text is not None and text.strip() in TRUE_WORDS

"""Small helpers shared by rule modules: typed values and flags read without raising, and the
few non-expression checks several sections make (unexpanded variables, message type hints,
version numbers, line numbers for messages). Expression tokens are in ``expr_tokens``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from lxml import etree

from ampsctl.config.model import ConfigModel, SowEntry
from ampsctl.config.registry import Issue
from ampsctl.errors import UnitError
from ampsctl.units import ByteSize, Count, Interval, parse_bytes, parse_count, parse_interval

TRUE_WORDS = frozenset({"true", "True", "TRUE", "enabled", "1"})
FALSE_WORDS = frozenset({"false", "False", "FALSE", "disabled", "0"})
_VERSION = re.compile(r"\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?")


def text_of(el: etree._Element | None) -> str | None:
    return None if el is None else (el.text or "").strip()


def interval_of(el: etree._Element | None) -> Interval | None:
    """The element's interval, or None when absent or invalid (UNIT-001 reports invalid ones)."""
    return interval_in(el.text or "") if el is not None else None


def bytes_of(el: etree._Element | None) -> ByteSize | None:
    return bytes_in(el.text or "") if el is not None else None


def count_of(el: etree._Element | None) -> Count | None:
    return count_in(el.text or "") if el is not None else None


def interval_in(text: str) -> Interval | None:
    try:
        return parse_interval(text)
    except UnitError:
        return None


def bytes_in(text: str) -> ByteSize | None:
    try:
        return parse_bytes(text)
    except UnitError:
        return None


def count_in(text: str) -> Count | None:
    try:
        return parse_count(text)
    except UnitError:
        return None


def candidates(model: ConfigModel, name: str, may_report: Callable[[str], bool]) -> Iterator[tuple[SowEntry, etree._Element]]:
    """The (topic, element) pairs of every ``name`` child of a SOW topic whose stripped text
    ``may_report`` accepts.

    Hundreds of topics share a few values, so each distinct text is tested once; the rule then
    checks the elements of an accepted text as it would any other. ``may_report`` must accept
    every text that could give a finding (the element's own text only adds whitespace, which
    either reads the same or does not read at all).
    """
    for text, pairs in model.child_texts(name).items():
        if may_report(text):
            yield from pairs


def is_true(text: str | None) -> bool:
    return text is not None and text.strip() in TRUE_WORDS


def enum_issues(entry: SowEntry, choices: Iterable[tuple[str, tuple[str, ...]]]) -> Iterator[Issue]:
    """An Issue for each (element, documented values) choice whose value is not one of them."""
    for name, allowed in choices:
        for el in entry.all(name):
            value = (el.text or "").strip()
            if value not in allowed:
                yield Issue(el, f"{entry.label()} {name} '{value}' is not one of {', '.join(allowed)}", f"use one of: {', '.join(allowed)}")


def unexpanded(text: str | None) -> bool:
    """A value that still holds ``${VAR}`` (GEN-007 reports it; its real value is unknown)."""
    return text is not None and "${" in text


def line_of(model: ConfigModel, el: etree._Element, here: etree._Element) -> str:
    """The line an element starts on, for messages about ``here`` that point at an earlier
    definition: "12", or "12 of conf/sow.xml" when the two are in different files (includes)."""
    there = model.config.locate(el)
    if there.path == model.config.locate(here).path:
        return str(there.line)
    return f"{there.line} of {there.path}"


def type_module(model: ConfigModel, message_type: str | None) -> str | None:
    """The module behind a message type (an undeclared name stands for itself); None without a type."""
    if not message_type:
        return None
    return model.message_type_modules.get(message_type, message_type)


def unknown_type_hint(mtype: str, known: set[str]) -> str:
    """How to fix a reference to an unknown message type (message type names are case-sensitive)."""
    same = sorted(k for k in known if k.lower() == mtype.lower())
    if same:
        return f"message type names are case-sensitive: write {same[0]}"
    return f"use one of {', '.join(sorted(known))}, or declare it under <MessageTypes>"


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """``5.3.5.0`` -> (5, 3, 5): the first three numbers of a version, None when it has none."""
    match = _VERSION.match(text or "")
    if not match:
        return None
    return tuple(int(part) for part in match.groups() if part is not None)

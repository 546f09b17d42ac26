"""Token-level reading of AMPS expressions and topic regexes, shared by the rule modules.

Placement rules (which functions an expression calls, OF PREVIOUS...) look at expressions
(Filter, Field, BarrierExpression, Enrichment...) as text; whether a filter parses is checked
with the filter parser (filters.py). The convention every helper here keeps:

- ``blank_strings`` first: string literals are blanked (same length, quotes kept), so a
  pattern never matches inside a literal and a match position points into the original text;
- a function call is a name followed by ``(`` that is not part of an identifier, a ``/path``,
  an ``@attribute``, a ``.``-qualified name or a ``[...]`` bracket (``call_pattern``);
- topic regexes are PCRE searches, unanchored like AMPS topic matching; whether two of them
  can match a common topic is proven only in easy cases (``may_overlap``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache

from ampsctl.config.model import SowEntry, has_regex_chars, regex_error, topic_matches
from ampsctl.config.registry import Issue

NONDETERMINISTIC = ("LAST_READ", "UNIX_TIMESTAMP", "VALUE_LOOKUP")
AGGREGATES = ("AVG", "COUNT", "COUNT_DISTINCT", "MAX", "MIN", "STDDEV_POP", "STDDEV_SAMP", "SUM")

_STATE = re.compile(r"(?<![\w/@])OF\s+(PREVIOUS|CURRENT)\b", re.IGNORECASE)


def blank_strings(text: str) -> str:
    """``text`` with the inside of every quoted string literal replaced by spaces.

    Positions are kept, so a match in the result points into the original. Quotes are
    ``'...'`` or ``"..."``; a doubled quote or a backslash escapes a quote inside a literal.
    An unterminated literal runs to the end of the text.
    """
    if "'" not in text and '"' not in text:
        return text  # no literal: most expressions (`/region`, `SUM(/qty) AS /total`)
    out = list(text)
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote is None:
            if ch in "'\"":
                quote = ch
        elif ch == "\\":
            out[i] = " "
            if i + 1 < len(text):
                out[i + 1] = " "
            i += 1
        elif ch == quote:
            if i + 1 < len(text) and text[i + 1] == quote:
                out[i] = out[i + 1] = " "
                i += 1
            else:
                quote = None
        else:
            out[i] = " "
        i += 1
    return "".join(out)


def call_pattern(names: Iterable[str]) -> re.Pattern[str]:
    """A call of one of ``names`` (any case); group 1 is the name as written."""
    return re.compile(r"(?<![\w/@.\]])(" + "|".join(names) + r")\s*\(", re.IGNORECASE)


_NONDETERMINISTIC_CALL = call_pattern(NONDETERMINISTIC)


def nondeterministic_calls(text: str) -> list[str]:
    """Names of non-deterministic functions called in an expression (outside string literals)."""
    if "(" not in text:
        return []  # no call at all: most filters compare fields
    return sorted({m.group(1).upper() for m in _NONDETERMINISTIC_CALL.finditer(blank_strings(text))})


def nondeterministic_issues(entry: SowEntry, elements: Iterable[str], hint: str) -> Iterator[Issue]:
    """An Issue for each of ``entry``'s ``elements`` (Filter, BarrierExpression...) that calls one."""
    for name in elements:
        for el in entry.all(name):
            calls = nondeterministic_calls(el.text or "")
            if calls:
                yield Issue(el, f"{entry.label()} {name} calls non-deterministic {', '.join(calls)}", hint)


def single_argument_call(code: str, open_paren: int) -> bool:
    """Does the call whose '(' is at ``open_paren`` have exactly one top-level argument?"""
    depth = 0
    for ch in code[open_paren:]:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return True
        elif ch == "," and depth == 1:
            return False
    return True


def state_references(code: str) -> list[str]:
    """``PREVIOUS`` / ``CURRENT`` for each ``OF PREVIOUS`` / ``OF CURRENT`` in blanked ``code``, in order."""
    return [m.group(1).upper() for m in _STATE.finditer(code)]


@lru_cache(maxsize=16_384)  # may_overlap asks for the same patterns once per pair
def literal_prefix(pattern: str) -> str:
    """The literal text every match of an (unanchored) pattern starts with; may be empty.

    ``ORDERS_.*`` -> ``ORDERS_``; ``^a\\.b+`` -> ``a.``; a quantifier right after the prefix
    makes its last character optional, so that character is dropped.
    """
    chars: list[str] = []
    i = 1 if pattern.startswith("^") else 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern) and not pattern[i + 1].isalnum():
            chars.append(pattern[i + 1])
            i += 2
            continue
        if ch in ".^$*+?()[]{}|\\":
            if ch in "*?{" and chars:
                chars.pop()
            break
        chars.append(ch)
        i += 1
    return "".join(chars)


def may_overlap(a: str, b: str) -> bool:
    """Can two topic-or-regex values name a common topic? Proven only in the easy cases.

    Equal texts overlap; a literal overlaps a pattern that matches it; two patterns overlap
    when both match the literal prefix of one of them (False means "not proven").
    """
    if a == b:
        return True
    if not has_regex_chars(a):
        return topic_matches(b, a)
    if not has_regex_chars(b):
        return topic_matches(a, b)
    if regex_error(a) or regex_error(b):
        return False
    # A pattern's literal prefix is a usable sample only when the pattern itself matches it.
    sample_b, sample_a = literal_prefix(b), literal_prefix(a)
    return (topic_matches(b, sample_b) and topic_matches(a, sample_b)) or (
        topic_matches(a, sample_a) and topic_matches(b, sample_a)
    )

"""PCRE-like regular expressions for LIKE (spec/expressions.md §6.5, §8).

AMPS uses PCRE; we use the ``regex`` package because it supports the PCRE features the docs
show (``(?i)``, back-references such as ``(.)\\1``, possessive quantifiers, atomic groups) and,
unlike ``re``, a ``timeout`` argument: a catastrophic pattern such as ``(a+)+$`` against a long
string raises instead of hanging the broker or the CLI.

Invariants:
* LIKE is an unanchored search; users anchor with ``^``/``$``.
* Patterns compile with ``ASCII``: ``\\w``, ``\\d``, ``\\b`` and ``(?i)`` are ASCII-only, as in
  PCRE without UTF mode and in Java's default (the Spark backend), matching AMPS's
  "not Unicode-aware" rule.
* Text is matched as Unicode code points, not UTF-8 bytes: ``.`` is one character. The two
  agree on ASCII, and a byte-level ``.`` could split a character and yield invalid text.
* Compiled patterns live in a bounded LRU cache (a few hundred entries), so a stream of
  distinct patterns cannot grow memory without limit. The cache holds only immutable compiled
  patterns, so sharing it between threads is safe.
* Every failure is a FilterError with a hint: an invalid pattern (with the offset inside the
  pattern, and the pattern's position in the filter text when the caller knows it) or a
  search that ran past its timeout.
* Before compiling, ``regexcheck.problem`` refuses the valid patterns that would exhaust
  memory in the package (huge unrolled repeats, left recursion). Our cache is the only one
  (the package's own is bypassed).
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterable

import regex

from ampsctl.filter import regexcheck
from ampsctl.filter.errors import FilterError

DEFAULT_TIMEOUT = 1.0  # seconds per search
CACHE_SIZE = 256
MAX_TEXT = 64 << 20  # characters a replacement (or CONCAT, functions.py) may build

_FLAGS = regex.VERSION0 | regex.ASCII
_METACHAR = re.compile(r"[.^$*+?()\[\]{}|\\]")  # a fixed, safe pattern: the faster re will do


def _problem(exc: regex.error | RecursionError) -> str:
    if isinstance(exc, RecursionError):  # the regex package's parser recurses once per nested group
        return "groups nested too deeply to compile"
    return f"{exc.msg} at offset {exc.pos} of the pattern" if exc.pos is not None else exc.msg


def shown_pattern(pattern: str) -> str:
    """The pattern for a message, quoted: a huge one is cut (the error says what is wrong with it)."""
    return repr(pattern) if len(pattern) <= 200 else repr(pattern[:200]) + f"... ({len(pattern)} characters)"


_shown = shown_pattern


class _Refused(Exception):
    """A valid pattern ``regexcheck`` keeps from the package: (what, offset, hint)."""


@functools.lru_cache(maxsize=CACHE_SIZE)
def _compile(pattern: str) -> regex.Pattern[str]:
    found = regexcheck.problem(pattern, _FLAGS)
    if found is not None:
        raise _Refused(*found)
    return regex.compile(pattern, _FLAGS, cache_pattern=False)


_PATTERN_HINT = "LIKE takes a PCRE pattern: escape literal metacharacters such as ( [ . * + ? with a backslash"


def compile_pattern(
    pattern: str, *, expression: str = "", position: int | None = None, hint: str = _PATTERN_HINT
) -> regex.Pattern[str]:
    """The compiled pattern (cached), or FilterError if it is not a valid regular expression.

    ``position`` is the 0-based offset of the pattern's string literal in ``expression``; the
    parser passes both so the error can point a caret at it.
    """
    try:
        return _compile(pattern)
    except (_Refused, ValueError, regex.error, RecursionError) as exc:
        refused, what, own_hint = _classified(exc)
        message = f"regular expression {_shown(pattern)} {what}" if refused else f"invalid regular expression {_shown(pattern)}: {what}"
        raise FilterError(message, expression=expression, position=position, hint=own_hint or hint,
                          code="FILTER_REGEX") from None


def pattern_problem(pattern: str) -> tuple[str, str | None] | None:
    """(what is wrong, a hint or None) when ``pattern`` is not one ``compile_pattern`` takes,
    else None: the same checks and flags for every topic regex (config Patterns, queue and
    action topics, ``--topic``) as for LIKE, so a SOW Pattern and a subscription agree."""
    try:
        _compile(pattern)
    except (_Refused, ValueError, regex.error, RecursionError) as exc:
        _, what, hint = _classified(exc)
        return what, hint
    return None


def _classified(exc: BaseException) -> tuple[bool, str, str | None]:
    """(refused though valid for the package, what is wrong, the error's own hint or None)."""
    if isinstance(exc, _Refused):  # kept from the package (regexcheck)
        what, offset, hint = exc.args
        return True, what if offset is None else f"{what} (offset {offset} of the pattern)", hint
    if isinstance(exc, ValueError) and not isinstance(exc, regex.error):  # an inline flag at odds with ours
        return False, str(exc), "remove the inline flag (?V1), (?u) or (?L): patterns always run in the PCRE-like, ASCII mode"
    return False, _problem(exc), None  # type: ignore[arg-type]


def _timed_out(pattern: str, timeout: float) -> FilterError:
    return FilterError(
        f"regular expression {pattern!r} ran past its timeout of {timeout:g} s",
        hint="avoid nested quantifiers such as (a|aa)+ and anchor the pattern with ^ or $",
        code="FILTER_REGEX_TIMEOUT",
    )


def search(pattern: str, text: str, *, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """Whether ``pattern`` occurs anywhere in ``text`` (unanchored), within ``timeout`` seconds."""
    return search_compiled(compile_pattern(pattern), text, timeout=timeout)


def search_compiled(compiled: regex.Pattern[str], text: str, *, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """``search`` with a pattern already returned by ``compile_pattern``: the LIKE test.

    The one place a LIKE search meets its timeout: the evaluator (through ``search``) and the
    compiled filter (which compiles its pattern once) both call it, so a timeout is the same
    FilterError on both paths. The error names ``compiled.pattern``, the pattern's own text.
    """
    try:
        return compiled.search(text, timeout=timeout) is not None
    except TimeoutError:
        raise _timed_out(compiled.pattern, timeout) from None


def search_elements(compiled: regex.Pattern[str], texts: Iterable[str | None], *,
                    timeout: float = DEFAULT_TIMEOUT) -> bool | None:
    """LIKE over the texts of an array's elements (None for a NULL element): true if one
    matches, else NULL if one was NULL, else false. The timeout covers the whole array: a
    thousand elements that each take just under the timeout are one timed-out LIKE, not a
    quarter of an hour of searching."""
    deadline = time.monotonic() + timeout
    unknown = False
    for text in texts:
        if text is None:
            unknown = True
            continue
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _timed_out(compiled.pattern, timeout)
        try:
            if compiled.search(text, timeout=remaining) is not None:
                return True
        except TimeoutError:
            raise _timed_out(compiled.pattern, timeout) from None
    return None if unknown else False


def first_match(pattern: str, text: str, *, timeout: float = DEFAULT_TIMEOUT) -> str | None:
    """The text of the first (leftmost) match of ``pattern`` in ``text``, or None."""
    compiled = compile_pattern(pattern, hint=_PATTERN_HINT.replace("LIKE", "REGEXP_MATCH", 1))
    try:
        found = compiled.search(text, timeout=timeout)
    except TimeoutError:
        raise _timed_out(pattern, timeout) from None
    return None if found is None else found.group(0)


def replace_all(pattern: str, text: str, replacement: str, *, timeout: float = DEFAULT_TIMEOUT) -> str:
    """``text`` with every match replaced; ``replacement`` may use ``\\1``-style group references."""
    compiled = compile_pattern(pattern, hint=_PATTERN_HINT.replace("LIKE", "REGEXP_REPLACE", 1))
    size = len(text)

    def expand(match: regex.Match[str]) -> str:
        nonlocal size  # counted as it goes: the finished text could need gigabytes
        out = match.expand(replacement) if "\\" in replacement else replacement
        size += len(out) - (match.end() - match.start())
        if size > MAX_TEXT:
            raise too_long("REGEXP_REPLACE")
        return out

    try:
        return compiled.sub(expand, text, timeout=timeout)
    except TimeoutError:
        raise _timed_out(pattern, timeout) from None
    except (regex.error, IndexError) as exc:  # a bad group reference in the replacement
        raise _bad_replacement(pattern, replacement, exc) from None


def too_long(function: str) -> FilterError:
    return FilterError(
        f"{function} would build a string longer than {MAX_TEXT} characters",
        hint="the result of a string function is limited; replace or join less text",
        code="FILTER_TOO_LONG",
    )


def _bad_replacement(pattern: str, replacement: str, exc: Exception, expression: str = "", position: int | None = None) -> FilterError:
    return FilterError(
        f"invalid replacement {replacement!r} for regular expression {_shown(pattern)}: {exc}",
        expression=expression,
        position=position,
        hint="refer to groups that exist in the pattern (\\1 is the first group); write \\\\ for a backslash",
        code="FILTER_REGEX",
    )


def check_replacement(pattern: str, replacement: str, *, expression: str = "", position: int | None = None) -> None:
    """FilterError if ``replacement`` names a group ``pattern`` lacks or has a bad escape.

    The regex package reads a replacement only when something matches, so it is tried on a
    match that always happens: the pattern with an empty alternative added (``\\n`` first, so
    a verbose-mode comment ends), against empty text. Groups are the pattern's own, unmatched
    ones expand to nothing. If that probe cannot be built, nothing is checked here: a bad
    replacement is then reported when it is used, as before.
    """
    try:
        if regexcheck.problem(pattern, _FLAGS) is not None:
            return
        probe = regex.compile(pattern + "\n|", _FLAGS, cache_pattern=False)
    except (regex.error, RecursionError, ValueError):
        return
    try:
        probe.sub(replacement, "", count=1)
    except (regex.error, IndexError) as exc:
        raise _bad_replacement(pattern, replacement, exc, expression, position) from None


def has_metachars(text: str) -> bool:
    """Whether ``text`` holds a regex metacharacter: AMPS then treats a topic as a pattern."""
    return _METACHAR.search(text) is not None


def cache_clear() -> None:
    """Drop every cached pattern (tests use this to observe the cache bound)."""
    _compile.cache_clear()


def cache_size() -> int:
    return _compile.cache_info().currsize

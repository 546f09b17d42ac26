"""Searching topics with SubscriptionTopic and coverage PCREs, as fast as each pattern allows.

Most of these patterns are a literal with anchors: ``^/symbols/``, ``/space/C.*``, ``_ORDERS$``.
For those a ``str`` method gives the same answer as the regex search, about ten times sooner
(a timed regex search reads the clock). Any other pattern gets the timed PCRE search, where a
search that runs past its timeout finds nothing (docs/affinity.md, "Slow patterns").

Equivalences (patterns compile with VERSION0 | ASCII and no flags, see ampsctl.filter.regexes):
* ``^`` matches only at the start of the text;
* ``$`` matches at the end, or before a newline that ends the text;
* a trailing ``.*`` with no ``$`` after it can always match the empty string, so it changes
  nothing in an unanchored search.
"""

from __future__ import annotations

from collections.abc import Callable

import regex

from ampsctl.filter.errors import FilterError
from ampsctl.filter.regexes import has_metachars, search_compiled

Finder = Callable[[str], bool]
TimedOut = Callable[[regex.Pattern[str], str], None]  # told of each search that ran past its timeout


def search(pattern: regex.Pattern[str], text: str, timed_out: TimedOut | None = None) -> bool:
    """An unanchored PCRE search; one that runs past its timeout matches nothing (and
    ``timed_out`` hears of it: a silent no-match looks like a wrong assignment)."""
    try:
        return search_compiled(pattern, text)
    except FilterError:
        if timed_out is not None:
            timed_out(pattern, text)
        return False


def finder(pattern: regex.Pattern[str], *, remember: int = 0, timed_out: TimedOut | None = None) -> Finder:
    """A function telling whether ``pattern`` finds a match in a text. With ``remember``, a
    pattern that needs the regex engine keeps up to that many verdicts, one per text."""
    body = pattern.pattern
    start = body.startswith("^")
    if start:
        body = body[1:]
    while body.endswith(".*") and not body.endswith("\\.*"):
        body = body[:-2]
    end = body.endswith("$") and not body.endswith("\\$")
    if end:
        body = body[:-1]
    if pattern.flags & regex.IGNORECASE or has_metachars(body):
        return _remembering(pattern, remember, timed_out) if remember else lambda text: search(pattern, text, timed_out)
    lined = body + "\n"
    if start and end:
        return lambda text: text == body or text == lined
    if start:
        return lambda text: text.startswith(body)
    if end:
        return lambda text: text.endswith(body) or text.endswith(lined)
    return lambda text: body in text


def _remembering(pattern: regex.Pattern[str], limit: int, timed_out: TimedOut | None) -> Finder:
    verdicts: dict[str, bool] = {}

    def find(text: str) -> bool:
        found = verdicts.get(text)
        if found is None:
            if len(verdicts) >= limit:
                verdicts.clear()
            found = verdicts[text] = search(pattern, text, timed_out)
        return found

    return find

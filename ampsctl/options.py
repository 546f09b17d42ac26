"""AMPS command option strings: the ``o``/``opts`` header, e.g. ``oof,conflation=1s,select=[-/,+/a]``.

spec/protocol.md §8.1: a comma-separated list of tokens, each a flag (``oof``) or
``name=value``. A value may hold commas inside brackets (``select=[/a,/b]``), so the string is
split only at bracket depth 0. We count ``()``, ``[]`` and ``{}`` alike and honour backslash
escapes, because option values such as a ``udo_coverage`` PCRE (seed 000) carry groups and
quantifiers like ``{1,3}``. Client libraries terminate each constant with a comma (``"oof,"``),
so empty tokens and the spaces around names and values are ignored.

Flags map to ``None``; ``name=`` (an empty value) maps to ``""``. When a name repeats, the last
value wins, as later settings override earlier ones on the same command.
"""

from __future__ import annotations

from ampsctl.errors import InputError

_OPEN = "([{"
_CLOSE = ")]}"
_HINT = "write options as name=value pairs separated by commas, e.g. oof,conflation=1s,select=[/a,/b]"


def split_options(text: str) -> list[str]:
    """The tokens of ``text``, split at commas outside brackets, trimmed, empty ones dropped."""
    tokens: list[str] = []
    start = depth = 0
    escaped = False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(depth - 1, 0)
        elif ch == "," and depth == 0:
            tokens.append(text[start:i])
            start = i + 1
    tokens.append(text[start:])
    return [token.strip() for token in tokens if token.strip()]


def parse_options(text: str) -> dict[str, str | None]:
    """``name -> value`` for every token of ``text``; a flag's value is None."""
    options: dict[str, str | None] = {}
    for token in split_options(text):
        name, eq, value = token.partition("=")
        name = name.strip()
        if not name:
            raise InputError(f"option {token!r} has no name", code="OPTIONS", hint=_HINT)
        options[name] = value.strip() if eq else None
    return options

"""Where a character of an element's value is in the original file (for carets inside values).

``LoadedConfig.locate_text`` gives the first non-blank character of a value. A rule that
blames one character further on (the column of a filter syntax error) reads the original
text from there with ``source_line`` and decodes it as the XML parser did: character and
entity references count as one character, CDATA sections are copied, comments and
processing instructions inside the value count for nothing (the model joins the text
around them), and the value ends at the next tag.

A ``${VAR}`` reference was expanded before parsing, so its value's length is not in the
original text: the decoded pieces are aligned with the value (each reference matches any
text) and a character that came from a variable is placed at its ``$``, as the loader
places everything it expanded. When the alignment fails (markup inside a variable's value,
say) the answer is the start of the value, which is never wrong about the element.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

from lxml import etree

from ampsctl.config.loader import LoadedConfig
from ampsctl.errors import Location

_VAR = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_REFERENCE = re.compile(r"&(?:#[0-9]+|#[xX][0-9A-Fa-f]+|[A-Za-z_][\w.-]*);")
_EXTRA_LINES = 1_000  # lines a value may spend on comments inside it, beyond its own


Lines = dict[tuple[str, int], str]  # (path, line) -> its text: a config on one long line is read once


def value_location(config: LoadedConfig, el: etree._Element, offset: int, text: str | None = None,
                   lines: Lines | None = None) -> Location:
    """The original file:line:col of character ``offset`` of ``el``'s value ``text``
    (``el.text`` by default, as the model joins it). Pass the same ``lines`` for every value
    of one config: each lookup of a line copies it otherwise."""
    text = (el.text or "") if text is None else text
    lines = {} if lines is None else lines
    start = config.locate_text(el)
    lead = len(text) - len(text.lstrip())
    if offset <= lead or not start.line or not start.col:
        return start
    # Raw lines are value lines, plus those of comments inside it; a bound, not a guess.
    pieces = list(_pieces(config, start, text.count("\n") + _EXTRA_LINES, lines))
    end = pieces.pop()[2] if pieces and pieces[-1][0] == "end" else None
    value, index = text[lead:], offset - lead
    if index >= len(value):
        return end or start  # just past the value: where something is missing
    if all(kind == "char" for kind, _, _ in pieces) and "".join(char for _, char, _ in pieces) == value:
        return pieces[index][2]  # the usual case: the i-th decoded character is the i-th of the value
    return _aligned(pieces, value, index) or start


def _aligned(pieces: list[tuple[str, str, Location]], value: str, index: int) -> Location | None:
    """Align literal characters and ``${VAR}`` wildcards with ``value``; where ``index`` lands."""
    pattern: list[str] = []
    for kind, char, _ in pieces:
        pattern.append("(.*?)" if kind == "var" else f"({re.escape(char)})")
    match = re.fullmatch("".join(pattern), value, re.DOTALL)
    if match is None:
        return None
    for group, (_, _, where) in enumerate(pieces, start=1):
        if match.start(group) <= index < match.end(group):
            return where
    return None


def _pieces(config: LoadedConfig, start: Location, count: int, lines: Lines) -> Iterator[tuple[str, str, Location]]:
    """("char", decoded character, where) or ("var", "", where of its $), up to the next tag,
    then ("end", "", where that tag starts)."""
    chars = _raw(config, start, count, lines)
    cdata = False
    for line, i, where in chars:
        raw = line[i]
        if cdata:
            if line.startswith("]]>", i):
                cdata = False
                _skip(chars, 2)
                continue
        elif raw == "<":
            if line.startswith("<![CDATA[", i):
                cdata = True
                _skip(chars, 8)
                continue
            close = "-->" if line.startswith("<!--", i) else "?>" if line.startswith("<?", i) else None
            if close is None:
                yield "end", "", where  # the end tag (or a child element): the value is over
                return
            if not _skip_past(chars, close):
                return
            continue
        elif raw == "&":
            found = _REFERENCE.match(line, i)
            if found:
                _skip(chars, len(found.group(0)) - 1)
                yield "char", html.unescape(found.group(0)), where
                continue
        if raw == "$":  # variables are expanded in CDATA too, before the XML is parsed
            found = _VAR.match(line, i)
            if found:
                _skip(chars, len(found.group(0)) - 1)
                yield "var", "", where
                continue
        yield "char", raw, where


def _raw(config: LoadedConfig, start: Location, count: int, lines: Lines) -> Iterator[tuple[str, int, Location]]:
    """Each original character from ``start`` on, as (its line, its index there, where), for
    at most ``count`` lines; a line break reads as one newline, as XML normalises it."""
    col = start.col
    for line in range(start.line, start.line + count):
        text = lines.get((start.path, line))
        if text is None:
            text = lines[(start.path, line)] = config.source_line(Location(start.path, line))
        for i in range(col - 1, len(text)):
            yield text, i, Location(start.path, line, i + 1)
        yield "\n", 0, Location(start.path, line, len(text) + 1)
        col = 1


def _skip(chars: Iterator[tuple[str, int, Location]], count: int) -> None:
    for _ in range(count):
        next(chars, None)


def _skip_past(chars: Iterator[tuple[str, int, Location]], close: str) -> bool:
    """Consume up to and including ``close``; False when the text ends first."""
    for line, i, _ in chars:
        if line.startswith(close, i):
            _skip(chars, len(close) - 1)
            return True
    return False

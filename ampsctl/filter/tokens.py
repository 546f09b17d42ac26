"""The tokenizer of the AMPS filter language (spec/expressions.md §2).

Theory of operation: one compiled alternation (``_MASTER``) is tried at each offset; its
named group says what was found. Quotes and ``[`` need more than a regex (escapes, the
qualifier chain ``[type].[topic]./x``) and are finished by small functions. Invariants:

- every token records the 0-based offsets ``pos``/``end`` of its text, and every error
  carries the offset of the offending character, so the CLI can draw a caret under it;
- ``/`` and ``-`` are path characters when they touch a step: ``/a/b`` and ``/a-1`` are
  one field each, ``/a / /b`` and ``/a - 1`` are arithmetic (spec §2.1). A ``/`` starts a
  field only when a step-start character (letter, digit, ``_``, ``@``) follows it, so
  ``/6*/14`` lexes as field, ``*``, field;
- a field token already carries its ``Field`` AST node: paths are fully checked here,
  including subscripts (non-negative integers only, spec A11);
- keywords are recognised case-insensitively; the token ``key`` is the upper-cased word, so
  grammar tables never see the user's spelling.

Tokens are NamedTuples rather than dataclasses because a 1 MB filter yields hundreds of
thousands of them and tuple construction is several times cheaper.
"""

from __future__ import annotations

import re
from enum import Enum
from types import MappingProxyType
from typing import NamedTuple

from ampsctl.filter.ast import Field, Step
from ampsctl.filter.errors import FilterSyntaxError
from ampsctl.filter.grammar import KEYWORDS

# Largest integer literal: AMPS integers are signed 64-bit, unsigned above LONG_MAX (§4.1).
MAX_INTEGER = 2**64 - 1
_MAX_DIGITS = len(str(MAX_INTEGER))


class Kind(Enum):
    FIELD = "field"
    STRING = "string"
    NUMBER = "number"
    KEYWORD = "keyword"
    NAME = "name"  # a function name (anything word-like that is not a keyword)
    SYMBOL = "symbol"  # operators and punctuation
    END = "end"


class Token(NamedTuple):
    kind: Kind
    key: str  # keyword/name: the upper-cased word; symbol: its text; otherwise ""
    pos: int
    end: int
    value: object = None  # FIELD: Field; STRING: str; NUMBER: int | float; NAME/KEYWORD: spelling


_STEP = r"@?\w[\w.\-]*(?:\[[0-9]+\])?"
_PATH_TEXT = rf"/{_STEP}(?:/{_STEP})*"
# Leading whitespace is part of every match: one regex call per token.
_MASTER = re.compile(
    rf"""\s*(?:
    (?P<symbol><=|>=|<>|!=|==|[=<>+\-*%(),]|/(?![\w@]))
  | (?P<field>{_PATH_TEXT})
  | (?P<number>[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<quote>['"])
  | (?P<bracket>\[)
  | (?P<end>\Z)
    )""",
    re.VERBOSE,
)
_SPACE = re.compile(r"\s*")
_PATH = re.compile(_PATH_TEXT)
_SUBSCRIPT = re.compile(r"\[([0-9]+)\]")
# Possessive quantifiers: an unterminated 1 MB literal fails in linear time.
_STRING_BODY = MappingProxyType({
    "'": re.compile(r"'((?:[^'\\]++|\\.)*+)'", re.DOTALL),
    '"': re.compile(r'"((?:[^"\\]++|\\.)*+)"', re.DOTALL),
})
_ESCAPE = re.compile(r"\\(?:x([0-9A-Fa-f]{2})|(.))", re.DOTALL)
PLAIN_STEP = re.compile(r"@?\w[\w.\-]*")

_CHARACTER_HINTS = MappingProxyType({
    "!": "did you mean != ?",
    "&": "write AND",
    "|": "write OR (or CONCAT(a, b) to join strings)",
    "@": "an attribute is a path step: /@name or /element/@name",
    "]": "this ] closes nothing",
    ".": "write a number with a digit before the point (0.5); qualified fields are [topic]./field",
    ";": "a filter is a single expression; remove the ;",
    "`": "quote strings with ' or \"; bracket odd field names: [/odd name]",
})


def _error(text: str, pos: int, message: str, hint: str) -> FilterSyntaxError:
    return FilterSyntaxError(message, expression=text, position=pos, hint=hint)


def is_plain_step(name: str) -> bool:
    """True when ``name`` can be written as ``/name`` (otherwise it needs ``[/name]``)."""
    return PLAIN_STEP.fullmatch(name) is not None


def _unescape(match: re.Match[str]) -> str:
    hex_digits, char = match.groups()
    if hex_digits is not None:
        return chr(int(hex_digits, 16))
    if char in "\\'\"":
        return char
    return match.group()  # any other \c stays as written, so regex escapes reach LIKE intact


def _index(text: str, pos: int, digits: str) -> int:
    """The subscript written as ``digits`` at ``pos``; out of the integer range is an error
    (checked on the text: Python refuses int() on more than 4300 digits)."""
    value = _bounded_int(digits)
    if value is None:
        raise _error(text, pos, "subscript out of range",
                     f"subscripts go up to {MAX_INTEGER}; an index past the end of an array is NULL anyway")
    return value


def _bounded_int(digits: str) -> int | None:
    """The value of a run of ASCII digits, or None above MAX_INTEGER (leading zeros allowed)."""
    significant = digits.lstrip("0")
    if len(significant) > _MAX_DIGITS:
        return None
    value = int(significant or "0")
    return value if value <= MAX_INTEGER else None


def _steps(path: str, text: str, start: int) -> tuple[Step, ...]:
    """The steps of a path matched at ``start`` of ``text`` (for the position of an error)."""
    steps = []
    offset = start + 1
    for part in path[1:].split("/"):
        if part.endswith("]"):
            name, _, index = part[:-1].partition("[")
            steps.append(Step(name, _index(text, offset + len(name) + 1, index)))
        else:
            steps.append(Step(part))
        offset += len(part) + 1
    return tuple(steps)


def _subscript(text: str, pos: int, has_index: bool) -> tuple[int | None, int]:
    """Read an optional ``[n]`` at ``pos`` right after a step: (index, end)."""
    if pos >= len(text) or text[pos] != "[":
        return None, pos
    if has_index:
        raise _error(text, pos, "a path step takes one subscript",
                     "index nested arrays through separate steps is not supported; use one [n] per step")
    match = _SUBSCRIPT.match(text, pos)
    if match is not None:
        return _index(text, pos + 1, match.group(1)), match.end()
    after = text[pos + 1 : pos + 2]
    if after == "-":
        raise _error(text, pos + 1, "negative subscript",
                     "subscripts count from 0 at the start of the array: /a[0] is the first element")
    if "]" not in text[pos:]:
        raise _error(text, pos, "unterminated subscript", "close it with ]: /a[0]")
    raise _error(text, pos + 1, "a subscript is a non-negative integer literal",
                 "write /a[0]; expressions and fields are not allowed inside [ ]")


def _field_after(text: str, pos: int, start: int, qualifier: tuple[str, ...]) -> Token:
    """The path that starts at ``pos`` (after a qualifier), as a FIELD token from ``start``."""
    match = _PATH.match(text, pos)
    if match is None:
        raise _error(text, pos, "expected a field after the qualifier",
                     "write [topic]./field, [type].[topic]./field or [topic].[/odd name]")
    path = match.group()
    _, end = _subscript(text, match.end(), path.endswith("]"))  # reports a malformed subscript
    return Token(Kind.FIELD, "", start, end, Field(_steps(path, text, pos), qualifier=qualifier))


def _bracket(text: str, i: int, start: int, qualifier: tuple[str, ...] = ()) -> Token:
    """From the ``[`` at ``i``: ``[/odd name]`` (optionally subscripted), or a qualifier chain
    ``[type].[topic]./x`` / ``[topic].[/odd name]``. The token starts at ``start``."""
    quals = list(qualifier)
    while True:
        if text.startswith("/", i + 1):
            close = text.find("]", i + 2)
            if close < 0:
                raise _error(text, i, "unterminated bracketed field name", "close it with ]: [/odd name]")
            name = text[i + 2 : close]
            if not name:
                raise _error(text, i, "empty field name", "write a name after the slash: [/odd name]")
            index, end = _subscript(text, close + 1, False)
            _subscript(text, end, index is not None)  # reports a second subscript
            field = Field((Step(name, index),), bracketed=True, qualifier=tuple(quals))
            return Token(Kind.FIELD, "", start, end, field)
        close = text.find("]", i + 1)
        if close < 0:
            raise _error(text, i, "unterminated [", "close it with ]: [topic]./field or [/odd name]")
        part = text[i + 1 : close]
        if not part:
            raise _error(text, i, "empty qualifier", "write [topic]./field or [type].[topic]./field")
        quals.append(part)
        if len(quals) > 2:
            raise _error(text, i, "too many qualifiers", "a field takes at most [type].[topic] in front of it")
        dot = close + 1
        if not text.startswith(".", dot):
            hint = ("a subscript follows its step directly, without a space: /a[0]" if part.isdigit()
                    else f"a qualified field is written [{part}]./field")
            raise _error(text, dot, f"expected '.' after [{part}]", hint)
        if text.startswith("[", dot + 1):
            i = dot + 1
            continue
        return _field_after(text, dot + 1, start, tuple(quals))


def _string(text: str, pos: int) -> Token:
    quote = text[pos]
    match = _STRING_BODY[quote].match(text, pos)
    if match is None:
        raise _error(text, pos, "unterminated string",
                     f"close the string with {quote}; write \\{quote} for a quote inside it")
    body = match.group(1)
    value = _ESCAPE.sub(_unescape, body) if "\\" in body else body
    return Token(Kind.STRING, "", pos, match.end(), value)


def _number_value(text: str, pos: int, literal: str) -> int | float:
    if "." in literal or "e" in literal or "E" in literal:
        value = float(literal)
        if value == float("inf"):
            raise _error(text, pos, "number out of range", "a float literal must fit a 64-bit double")
        return value
    integer = _bounded_int(literal)
    if integer is None:
        raise _error(text, pos, "integer out of range",
                     f"integers go up to {MAX_INTEGER}; write a float (1e20) for larger numbers")
    return integer


def _qualified_word(text: str, pos: int, end: int) -> Token:
    """A word followed by ``.``: ``topic./x`` or ``topic.[/x]`` (brackets around a lone topic
    qualifier are optional in view definitions), else the word alone."""
    word = text[pos:end]
    if text.startswith("[/", end + 1):
        return _bracket(text, end + 1, pos, (word,))
    if _PATH.match(text, end + 1):
        return _field_after(text, end + 1, pos, (word,))
    key = word.upper()
    return Token(Kind.KEYWORD if key in KEYWORDS else Kind.NAME, key, pos, end, word)


def _unexpected(text: str, pos: int) -> FilterSyntaxError:
    char = text[pos]
    if char == "/":
        hint = "after / comes a step name (/name, /55, /@attr); division needs spaces: /a / 2"
    else:
        hint = _CHARACTER_HINTS.get(char, "this character is not part of the filter language outside a string")
    return _error(text, pos, f"unexpected character {char!r}", hint)


def tokenize(text: str) -> list[Token]:
    """All tokens of ``text``, ending with one END token; raises FilterSyntaxError."""
    tokens: list[Token] = []
    append = tokens.append
    match = _MASTER.match
    new = tuple.__new__  # Token(...) without the NamedTuple wrapper's extra Python frame
    symbol, field, number = Kind.SYMBOL, Kind.FIELD, Kind.NUMBER
    # Long filters repeat the same fields, words and numbers; AST nodes are immutable, so
    # one instance per spelling can be shared (the caches live for this call only).
    fields: dict[str, Field] = {}
    numbers: dict[str, int | float] = {}
    words: dict[str, tuple[Kind, str]] = {}
    size = len(text)
    pos = 0
    while True:
        found = match(text, pos)
        if found is None:
            raise _unexpected(text, _SPACE.match(text, pos).end())
        group = found.lastgroup
        start = found.start(group)
        end = found.end()
        if group == "symbol":
            append(new(Token, (symbol, found.group(group), start, end, None)))
        elif group == "field":
            path = found.group(group)
            if end < size and text[end] == "[":
                _subscript(text, end, path.endswith("]"))  # raises: a valid subscript was matched already
            value = fields.get(path)
            if value is None:
                value = fields[path] = Field(_steps(path, text, start))
            append(new(Token, (field, "", start, end, value)))
        elif group == "number":
            literal = found.group(group)
            if end < size and (text[end].isalnum() or text[end] in "_."):
                raise _error(text, end, "malformed number",
                             "numbers are 42, 4.2 or 4.2e1; a field name starts with / (/55)")
            value = numbers.get(literal)
            if value is None:
                value = numbers[literal] = _number_value(text, start, literal)
            append(new(Token, (number, "", start, end, value)))
        elif group == "word" and not text.startswith(".", end):
            word = found.group(group)
            kind_key = words.get(word)
            if kind_key is None:
                key = word.upper()
                kind_key = words[word] = (Kind.KEYWORD if key in KEYWORDS else Kind.NAME, key)
            append(new(Token, (kind_key[0], kind_key[1], start, end, word)))
        elif group == "end":
            append(Token(Kind.END, "", size, size))
            return tokens
        else:
            if group == "word":
                token = _qualified_word(text, start, end)
            elif group == "quote":
                token = _string(text, start)
            else:
                token = _bracket(text, start, start)
            append(token)
            end = token.end
        pos = end

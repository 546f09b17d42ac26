"""LIKE patterns for Spark: translate the PCRE subset whose Java semantics agree, refuse the rest.

ampsctl's LIKE is an unanchored search with the ``regex`` package in ASCII mode
(``filter/regexes.py``); Spark's ``rlike`` is ``java.util.regex`` ``find()``. The two agree on
a common core, and differ in ways that change results on ordinary text:

* ``.`` -- Python excludes only ``\\n``; Java also excludes ``\\r``, ``\\u0085``, ``\\u2028``,
  ``\\u2029``. Emitted as ``[^\\n]``.
* ``$`` -- Python: the end, or before a final ``\\n``; Java: also before a final ``\\r``,
  ``\\r\\n`` or Unicode line separator. Emitted as ``(?=\\n?\\z)``.
* ``\\b``/``\\B`` -- Java 17 decides word characters with Unicode letters, Python (ASCII)
  with ``[A-Za-z0-9_]``. Emitted as look-arounds over that class.
* ``\\v``, ``\\e``, ``\\a``, ``\\0``, ``\\x``, ``\\u``, ``\\N``, POSIX classes, ``{,n}``, nested
  classes and ``&&`` mean different things (or nothing) in one of them: refused.

Theory of operation: ``to_java(pattern)`` walks the pattern once, emitting the Java text of
every construct in the supported core and raising ``UnsupportedRegex`` (with the construct and
the reason) for anything else. The core: literals, ``^``, translated ``.``/``$``/``\\b``/
``\\B``, ``\\d \\D \\w \\W \\s \\S`` (ASCII in both by default), escaped punctuation, ``\\t \\n
\\r \\f``, simple character classes and ranges, capturing and ``(?:`` groups, look-aheads,
``|``, quantifiers ``* + ? {n} {n,} {n,m}`` (greedy or lazy) on a single atom, back-references
``\\1``-``\\9`` to groups already closed, and a leading ``(?i)`` (ASCII-only case folding in
both). A quantified group is refused on purpose: Java backtracks a repeated group by
recursion, with no timeout (ampsctl's search stops after 1 s), so ``(a|b)*`` on a long
subject can overflow the executor's stack or run unbounded. Patterns the parser accepted
are valid Python patterns; validity is not re-checked here.
"""

from __future__ import annotations

_WORD = "[A-Za-z0-9_]"
_BOUNDARY = f"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))"
_NOT_BOUNDARY = f"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))"
_CLASS_ESCAPES = frozenset("dDwWsS")
_CONTROL_ESCAPES = frozenset("tnrf")
_QUANTIFIERS = frozenset("*+?")


class UnsupportedRegex(ValueError):
    """A pattern construct whose Java meaning differs from ampsctl's (or may not terminate)."""

    def __init__(self, construct: str, reason: str) -> None:
        super().__init__(f"{construct}: {reason}")
        self.construct = construct
        self.reason = reason


def to_java(pattern: str) -> str:
    """The Java regex with the same matches as ``pattern`` under ampsctl's LIKE, or UnsupportedRegex."""
    return _Translator(pattern).run()


def _literal(char: str) -> str:
    if char.isalnum() or ord(char) > 127 or char in " _,:;=!@#%&~`'\"/<>":
        return char
    return "\\" + char  # a backslash before ASCII punctuation is a literal in Java


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.pos = 0
        self.out: list[str] = []
        self.open: list[int] = []  # group numbers (0 for non-capturing) of the open groups
        self.groups = 0
        self.closed: set[int] = set()
        self.atom = "none"  # what the last emitted item is: none, atom, group, assertion, quantifier

    def refuse(self, construct: str, reason: str) -> UnsupportedRegex:
        return UnsupportedRegex(f"{construct!r} at offset {self.pos} of the LIKE pattern", reason)

    def run(self) -> str:
        text = self.pattern
        if text.startswith("(?i)"):
            self.out.append("(?i)")
            self.pos = 4
        while self.pos < len(text):
            char = text[self.pos]
            if char == "\\":
                self.escape()
            elif char == "[":
                self.char_class()
            elif char == "(":
                self.group()
            elif char == ")":
                if not self.open:
                    raise self.refuse(")", "unbalanced parenthesis")
                number = self.open.pop()
                if number:
                    self.closed.add(number)
                self.emit(")", "group")
            elif char in _QUANTIFIERS:
                self.quantifier(char, 1)
            elif char == "{":
                self.brace()
            elif char == "|":
                self.emit("|", "none")
            elif char == ".":
                self.emit("[^\\n]", "atom")
            elif char == "$":
                self.emit("(?=\\n?\\z)", "assertion")
            elif char == "^":
                self.emit("^", "assertion")
            else:
                self.emit(_literal(char), "atom")
        if self.open:
            raise self.refuse("(", "unbalanced parenthesis")
        return "".join(self.out)

    def emit(self, text: str, atom: str, advance: int = 1) -> None:
        self.out.append(text)
        self.atom = atom
        self.pos += advance

    def escape(self) -> None:
        text, pos = self.pattern, self.pos
        if pos + 1 >= len(text):
            raise self.refuse("\\", "a trailing backslash")
        code = text[pos + 1]
        if code in _CLASS_ESCAPES or code in _CONTROL_ESCAPES:
            self.emit("\\" + code, "atom", 2)
        elif code == "b":
            self.emit(_BOUNDARY, "assertion", 2)
        elif code == "B":
            self.emit(_NOT_BOUNDARY, "assertion", 2)
        elif code in "123456789":
            if pos + 2 < len(text) and text[pos + 2].isdigit():
                raise self.refuse(text[pos:pos + 3], "multi-digit back-references are read differently by Java")
            if int(code) not in self.closed:
                raise self.refuse("\\" + code, "a back-reference to a group that is not closed before it")
            self.emit("\\" + code, "atom", 2)
        elif ord(code) < 128 and not code.isalnum():
            self.emit("\\" + code, "atom", 2)
        else:
            raise self.refuse("\\" + code, "this escape means something else (or nothing) in Java regex")

    def group(self) -> None:
        text, pos = self.pattern, self.pos
        if text.startswith("(?:", pos):
            self.open.append(0)
            self.emit("(?:", "none", 3)
        elif text.startswith("(?=", pos) or text.startswith("(?!", pos):
            self.open.append(0)
            self.emit(text[pos:pos + 3], "none", 3)
        elif text.startswith("(?", pos):
            raise self.refuse(text[pos:pos + 3], "only (?: ...), look-aheads and a leading (?i) translate to Java")
        else:
            self.groups += 1
            self.open.append(self.groups)
            self.emit("(", "none")

    def quantifier(self, text: str, length: int) -> None:
        if self.atom == "group":
            raise self.refuse(text, "a quantified group: Java backtracks it by recursion, without ampsctl's 1 s timeout")
        if self.atom != "atom":
            raise self.refuse(text, "a quantifier that does not follow a single character or class")
        self.pos += length
        following = self.pattern[self.pos:self.pos + 1]
        if following == "?":
            text += "?"
            self.pos += 1
        elif following == "+":
            raise self.refuse(text + "+", "possessive quantifiers are not translated")
        self.out.append(text)
        self.atom = "quantifier"

    def brace(self) -> None:
        text, pos = self.pattern, self.pos
        end = text.find("}", pos)
        body = text[pos + 1:end] if end > 0 else ""
        low, comma, high = body.partition(",")
        if end < 0 or not low.isdigit() or (high and not high.isdigit()):
            raise self.refuse("{", "only {n}, {n,} and {n,m} translate (Python reads other braces as literals)")
        if high and int(high) < int(low):
            raise self.refuse(text[pos:end + 1], "a reversed range")
        self.quantifier(text[pos:end + 1], end + 1 - pos)

    def char_class(self) -> None:
        text = self.pattern
        start = self.pos
        pos = start + 1
        out = ["["]
        if text.startswith("^", pos):
            out.append("^")
            pos += 1
        if text.startswith("]", pos):
            raise self.refuse("[]", "a ']' first in a class is read differently by Java")
        items = 0
        while True:
            if pos >= len(text):
                raise self.refuse("[", "an unterminated character class")
            char = text[pos]
            if char == "]":
                break
            if char == "[" or text.startswith("&&", pos):
                raise self.refuse(char, "nested classes and intersections are Java-only syntax")
            piece, pos = self._class_char(pos)
            if text.startswith("-", pos) and pos + 1 < len(text) and text[pos + 1] != "]":
                if piece.startswith("\\") and piece[1:2] in _CLASS_ESCAPES:
                    raise self.refuse("-", "a range from a class escape")
                upper, pos = self._class_char(pos + 1)
                if upper.startswith("\\") and upper[1:2] in _CLASS_ESCAPES:
                    raise self.refuse("-", "a range to a class escape")
                piece = f"{piece}-{upper}"
            out.append(piece)
            items += 1
        if not items:
            raise self.refuse("[", "an empty character class")
        out.append("]")
        self.pos = start
        self.emit("".join(out), "atom", pos + 1 - start)

    def _class_char(self, pos: int) -> tuple[str, int]:
        text = self.pattern
        char = text[pos]
        if char != "\\":
            return (char if char.isalnum() or ord(char) > 127 else "\\" + char), pos + 1
        if pos + 1 >= len(text):
            raise self.refuse("\\", "a trailing backslash")
        code = text[pos + 1]
        if code in _CLASS_ESCAPES or code in _CONTROL_ESCAPES or (ord(code) < 128 and not code.isalnum()):
            return "\\" + code, pos + 2
        raise self.refuse("\\" + code, "this escape inside a class means something else in Java")

"""Syntax the ``regex`` package accepts but PCRE (what AMPS runs) refuses or reads otherwise.

``regexcheck`` parses every pattern with the package's own parser through ``Reading``, a
``Source`` that notes what the parser read and where: the letter of each escape, each inline
flag letter, each ``{`` that starts an item's suffix and each lookbehind. ``foreign`` then
refuses, at the earliest offset:

* fuzzy constraints (``abc{e<=1}`` matches "abd" in the package; PCRE reads ``{e<=1}`` as
  text), even one the package drops as not fuzzy (``a{e<=0}``);
* ``{,n}``, a count of 0 to n in the package and literal text in PCRE 8;
* inline flags PCRE lacks: ``(?a) (?b) (?e) (?f) (?p) (?r) (?w) (?V0)``. ``(?V1)``, ``(?u)``
  and ``(?L)`` are refused when compiling (regexes.py), as before;
* escapes read differently: ``\\m`` ``\\M`` (word start and end), ``\\g`` (a back-reference
  in the package, a subroutine call or a reference by other spellings in PCRE), ``\\N``
  (a named character or a literal N; "not a newline" in PCRE), ``\\u`` ``\\U`` (PCRE has
  neither), ``\\v`` (one vertical tab; any vertical space in PCRE) and ``\\Z`` (the very end;
  PCRE also matches before a final newline);
* a lookbehind whose top-level alternatives do not each match a fixed number of characters
  (``(?<=a+)``, ``(?<=a(b|cd))``), which the package runs and PCRE 8 refuses.

Nothing is emulated: where PCRE reads the construct as text or as something else, the hint
says how to write what was meant.
"""

from __future__ import annotations

import sys
from typing import Any

from regex import _regex_core as _core

_PCRE_FLAGS = frozenset("imsx")
_LEFT_TO_COMPILE = frozenset("uL")  # regexes.py reports these (ValueError) with its own hint

_FLAG_HINTS = {
    "a": "patterns always run in ASCII mode: remove (?a)",
    "f": "(?i) already folds case (ASCII only): remove (?f)",
    "V": "patterns always run in the PCRE-like mode: remove (?V0)",
}
_FLAG_HINT = "PCRE knows only the inline flags i, m, s and x: remove (?{flag})"

_ESCAPES = {
    "m": ("the word-start escape \\m, which PCRE does not have",
          "write \\b(?=\\w) for the start of a word, or m for the letter"),
    "M": ("the word-end escape \\M, which PCRE does not have",
          "write \\b(?<=\\w) for the end of a word, or M for the letter"),
    "g": ("\\g, which PCRE reads differently (the regex package reads \\g<1> as a back-reference, \\g1 and \\g{1} as a g)",
          "write \\1 or (?P=name) to match a group's text again, (?1) or (?&name) to call a group, or g for the letter"),
    "N": ("\\N, which PCRE reads as any character but a newline (the regex package reads a named character or an N)",
          "write [^\\n] for any character but a newline, or N for the letter"),
    "u": ("the escape \\u, which PCRE does not have", "write the character as \\xhh (\\x41 for A)"),
    "U": ("the escape \\U, which PCRE does not have", "write the character as \\xhh (\\x41 for A)"),
    "v": ("\\v, which PCRE reads as any vertical space (the regex package reads only the vertical tab)",
          "write \\x0b for the vertical tab, or [\\n\\x0b\\f\\r] for vertical space"),
    "Z": ("\\Z, which PCRE reads as the end or just before a final newline (the regex package reads the very end)",
          "write $ for the end or before a final newline, or \\z for the very end"),
}


class Reading(_core.Source):
    """The package's scanner, noting offsets as its parser reads (see the module docstring).
    Which parser function reads a character tells what the character is."""

    def __init__(self, pattern: str) -> None:
        super().__init__(pattern)
        self.escapes: list[int] = []  # offsets of escape letters (the backslash is just before)
        self.flags: list[int] = []  # offsets of inline flag letters
        self.braces: list[tuple[int, bool]] = []  # offsets of an item's "{", and verbose mode then
        self.behinds: list[int] = []  # offsets of "(?<=" and "(?<!", in the order they open
        self._last = ""

    def get(self, override_ignore: bool = False) -> str:
        ch = super().get(override_ignore)
        if ch and (ch in "{=!" or ch.isalpha()):  # only these can start what foreign looks for
            reader = sys._getframe(1).f_code.co_name
            if reader == "parse_escape":
                self.escapes.append(self.pos - 1)
            elif reader == "parse_flag_set" and ch.isalpha():
                self.flags.append(self.pos - 1)
            elif reader == "parse_sequence" and ch == "{":
                self.braces.append((self.pos - 1, self.ignore_space))
            elif reader in ("parse_paren", "parse_conditional") and ch in "=!" and self._last == "<":
                self.behinds.append(self.string.rfind("(", 0, self.pos - 1))
        self._last = ch
        return ch


def foreign(pattern: str, reading: Reading, flags: int, tree: Any) -> tuple[str, int, str] | None:
    """(what, offset, hint) for the first construct PCRE would refuse or read otherwise, or None."""
    found: list[tuple[int, str, str]] = []
    behinds: list[Any] = []
    _lookbehinds(tree, behinds)
    for node, at in zip(behinds, reading.behinds):
        branches = node.subpattern.branches if isinstance(node.subpattern, _core.Branch) else [node.subpattern]
        if any(_width(branch) is None for branch in branches):
            found.append((at, "has a lookbehind that can match strings of different lengths, which PCRE refuses",
                          _BEHIND_HINT))
    for at in reading.escapes:
        letter = pattern[at]
        if letter in _ESCAPES:
            what, hint = _ESCAPES[letter]
            found.append((at - 1, f"uses {what}", hint))
    for at in reading.flags:
        letter = pattern[at]
        if letter not in _PCRE_FLAGS and letter not in _LEFT_TO_COMPILE:
            if letter == "V" and pattern[at + 1 : at + 2] == "1":
                continue
            start = pattern.rfind("(", 0, at)
            shown = "V0" if letter == "V" else letter
            found.append((start if start >= 0 else at, f"uses the inline flag (?{shown}), which PCRE does not have",
                          _FLAG_HINTS.get(letter, _FLAG_HINT.format(flag=shown))))
    for at, verbose in reading.braces:
        brace = _brace(pattern, at, verbose, flags)
        if brace is not None:
            found.append((at, *brace))
    if not found:
        return None
    offset, what, hint = min(found, key=lambda item: item[0])
    return what, offset, hint


def _brace(pattern: str, at: int, verbose: bool, flags: int) -> tuple[str, str] | None:
    """What is wrong with the item suffix that starts with the "{" at ``at``, if anything."""
    source = _core.Source(pattern)
    source.pos, source.ignore_space = at + 1, verbose
    try:
        counts = _core.parse_limited_quantifier(source)
        if counts is not None:
            source.pos = at + 1
            if source.get() != ",":
                return None
            end = pattern.find("}", at)
            shown = pattern[at : end + 1]
            count = "*" if counts[1] is None else f"{{0,{counts[1]}}}"
            return (f"has the count {shown}, which PCRE reads as literal text",
                    f"write {count} for the count, or escape the brace \\{{ to match it")
        source.pos = at + 1
        constraints = _core.parse_fuzzy(source, _core.Info(flags), "{", 0)
    except (_core.error, ValueError):
        return None
    if not constraints:
        return None
    shown = pattern[at : source.pos]
    return (f"has the fuzzy-matching constraint {shown}, which only the regex package knows",
            f"PCRE reads {shown} as literal text: escape the brace \\{{ to match it")


_BEHIND_HINT = ("give each alternative of the lookbehind a fixed length: (?<=ab|cde), not (?<=a+) or (?<=a(b|cd)); "
                "or match the text and use \\K")
_ONE = (_core.Character, _core.SetBase, _core.Any, _core.Property)
_NO_WIDTH = (_core.ZeroWidthBase, _core.LookAround, _core.LookAroundConditional)


def _lookbehinds(node: Any, found: list[Any]) -> None:
    """The lookbehinds under ``node``, in the order they open (as ``Reading.behinds``)."""
    if isinstance(node, (_core.LookAround, _core.LookAroundConditional)) and node.behind:
        found.append(node)
    for name in ("subpattern", "items", "branches", "yes_item", "no_item"):
        child = getattr(node, name, None)
        for item in child if isinstance(child, (list, tuple)) else [child] if child is not None else []:
            _lookbehinds(item, found)


def _width(node: Any) -> int | None:
    """How many characters ``node`` always matches, or None when that varies (PCRE 8's rule
    for the inside of a lookbehind: only its top-level alternatives may differ)."""
    if isinstance(node, _ONE):
        return 0 if getattr(node, "zerowidth", False) else 1
    if isinstance(node, _NO_WIDTH):
        return 0
    if isinstance(node, _core.String):
        return len(node.characters)
    if isinstance(node, _core.Sequence):
        total = 0
        for item in node.items:
            width = _width(item)
            if width is None:
                return None
            total += width
        return total
    if isinstance(node, _core.Branch):
        widths = {_width(branch) for branch in node.branches}
        return widths.pop() if len(widths) == 1 else None
    if isinstance(node, (_core.Group, _core.Atomic)):
        return _width(node.subpattern)
    if isinstance(node, _core.GreedyRepeat):  # lazy and possessive repeats derive from it
        width = _width(node.subpattern)
        return None if width is None or node.min_count != node.max_count else width * node.min_count
    return None  # back-references, group calls, \X, \R, conditionals: no fixed length

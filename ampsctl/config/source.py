"""Source text with `${VAR}` expansion that remembers where every character came from.

AMPS expands environment variables textually before parsing (spec/config.md §6.1), so we do
the same, and keep a sorted list of replacements so that any offset in the expanded text
maps back to the original file. An offset inside an expanded value maps to the `$` of its
`${VAR}` reference.

Decisions (docs/decisions.md): references inside XML comments are left alone; an undefined
variable is reported (GEN-007) and left as written; `$${` is not an escape (AMPS documents none).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ampsctl.errors import Location

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_LINE_BREAK = re.compile(r"\r\n?|\n")


@dataclass(frozen=True, slots=True)
class Replacement:
    """``${VAR}`` at original [orig_start, orig_end) became expanded [exp_start, exp_end)."""

    exp_start: int
    exp_end: int
    orig_start: int
    orig_end: int


@dataclass(frozen=True, slots=True)
class UndefinedVariable:
    name: str
    offset: int  # in the original text


@dataclass
class SourceText:
    """One file's text before and after expansion, with offset mapping between them."""

    path: str
    original: str
    expanded: str
    replacements: list[Replacement] = field(default_factory=list)
    undefined: list[UndefinedVariable] = field(default_factory=list)
    _line_starts: list[int] | None = field(default=None, repr=False)
    _exp_starts: list[int] | None = field(default=None, repr=False)

    @classmethod
    def expand(cls, path: str, text: str, env: Mapping[str, str]) -> SourceText:
        if "$" not in text or "${" not in text:  # "$" alone is a memchr: most files have none
            return cls(path, text, text)  # no reference, nothing to scan
        comments = [(m.start(), m.end()) for m in _COMMENT.finditer(text)]
        pieces: list[str] = []
        replacements: list[Replacement] = []
        undefined: list[UndefinedVariable] = []
        last = shift = 0
        for match in _VAR.finditer(text):
            start, end = match.span()
            if _inside(comments, start):
                continue
            name = match.group(1)
            value = env.get(name)
            if value is None:
                undefined.append(UndefinedVariable(name, start))
                continue
            pieces.append(text[last:start])
            pieces.append(value)
            exp_start = start + shift
            replacements.append(Replacement(exp_start, exp_start + len(value), start, end))
            shift += len(value) - (end - start)
            last = end
        if not replacements:
            return cls(path, text, text, [], undefined)
        pieces.append(text[last:])
        return cls(path, text, "".join(pieces), replacements, undefined)

    def original_offset(self, exp_offset: int) -> int:
        """Map an offset in the expanded text back to the original text."""
        if not self.replacements:
            return exp_offset
        if self._exp_starts is None:
            self._exp_starts = [r.exp_start for r in self.replacements]
        index = bisect.bisect_right(self._exp_starts, exp_offset) - 1
        if index < 0:
            return exp_offset
        rep = self.replacements[index]
        if exp_offset < rep.exp_end:
            return rep.orig_start
        return rep.orig_end + (exp_offset - rep.exp_end)

    def location(self, exp_offset: int) -> Location:
        """The original file:line:col of an offset in the expanded text."""
        return self.original_location(self.original_offset(exp_offset))

    def original_location(self, offset: int) -> Location:
        if self._line_starts is None:
            self._line_starts = line_starts(self.original)
        line = bisect.bisect_right(self._line_starts, offset)
        return Location(self.path, line, offset - self._line_starts[line - 1] + 1)

    def line_text(self, line: int) -> str:
        """One line of the original text (for snippets), without its line break."""
        if self._line_starts is None:
            self.original_location(0)
        assert self._line_starts is not None
        if not 1 <= line <= len(self._line_starts):
            return ""
        start = self._line_starts[line - 1]
        end = self._line_starts[line] if line < len(self._line_starts) else len(self.original)
        return self.original[start:end].rstrip("\r\n")


def line_starts(text: str) -> list[int]:
    """Offsets where lines start. A line ends at LF, CRLF or a lone CR, as in XML (and in
    editors): a file saved with old Mac line endings is not one long line."""
    breaks = _LINE_BREAK if "\r" in text else "\n"
    return [0, *(m.end() for m in re.finditer(breaks, text))]


def _inside(spans: list[tuple[int, int]], offset: int) -> bool:
    index = bisect.bisect_right(spans, (offset, float("inf"))) - 1
    return index >= 0 and spans[index][0] <= offset < spans[index][1]

"""Raw XML text handling: decoding, refusing entity declarations, and a markup scanner.

lxml reports only the line where a start tag *ends* and no column, so we find exact
positions ourselves. ``scan_markup`` walks a well-formed document (lxml has already parsed
it) and yields every element, comment and processing instruction in document order, the
same order as lxml's tree iteration, which lets the loader pair them up.
Invariant: it is only called on text that lxml accepted, so text never contains a bare '<'.

``find_mark`` is the cheap path used for most lookups: lxml does know the line where a
start tag (or comment) ends, so only a few lines before it need to be searched.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from ampsctl.config.source import line_starts as text_line_starts
from ampsctl.errors import InputError, Location

_DECLARATION = re.compile(r"\s*<\?xml\b.*?\?>", re.S)
_DECLARED_ENCODING = re.compile(rb"""\A\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
_ENTITY_DECL = re.compile(r"<!ENTITY\b")
_MARKUP = re.compile(
    r"""<!--(?:.*?)-->
      | <!\[CDATA\[.*?\]\]>
      | <\?.*?\?>
      | <!DOCTYPE(?:[^\[>]|\[.*?\])*>
      | </[^>]*>
      | <(?P<name>[^\s/>!?]+)(?:[^>"']|"[^"]*"|'[^']*')*>""",
    re.S | re.X,
)


class MarkKind(Enum):
    ELEMENT = "element"
    COMMENT = "comment"
    PI = "pi"


@dataclass(frozen=True, slots=True)
class Mark:
    kind: MarkKind
    name: str
    start: int  # offset of '<'
    content_start: int  # offset just after the start tag (or the whole comment)


def decode(data: bytes, path: str) -> str:
    """Bytes to text: a BOM or the XML declaration picks the encoding, UTF-8 otherwise."""
    encoding = "utf-8"
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):  # before UTF-16: FF FE 00 00
        raise InputError(
            "the file is UTF-32 (it starts with a UTF-32 byte order mark), which XML parsers do not read",
            code="GEN-001",
            hint="save the file as UTF-8",
            location=Location(path, 1, 1),
        )
    for bom, name in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            encoding = name
            break
    else:
        _refuse_wide_declaration(data, path)
        if data.startswith(b"<\0"):  # UTF-16 without a byte order mark (XML 1.0 appendix F)
            encoding = "utf-16-le"
        elif data.startswith(b"\0<"):
            encoding = "utf-16-be"
        else:
            declared = _DECLARED_ENCODING.match(data)
            if declared:
                encoding = declared.group(1).decode("ascii")
    if encoding == "utf-8-sig":  # the byte order mark wins over a declaration, but not UTF-16's
        _refuse_wide_declaration(data[len(codecs.BOM_UTF8) :], path)
    try:
        return data.decode(encoding)
    except LookupError:
        raise InputError(
            f"the XML declaration names an unknown encoding '{encoding}'",
            code="GEN-001",
            hint="save the file as UTF-8 and declare encoding=\"UTF-8\"",
            location=Location(path, 1, 1),
        ) from None
    except UnicodeDecodeError as exc:
        # line:col in characters, as every other position: decode what comes before the byte
        before = data[: exc.start].decode(encoding, "replace")
        starts = text_line_starts(before)
        line, col = len(starts), len(before) - starts[-1] + 1
        raise InputError(
            f"the file is not valid {encoding.upper()}: byte 0x{data[exc.start]:02x} cannot be decoded",
            code="GEN-001",
            hint="save the file as UTF-8, or declare its real encoding in <?xml ... encoding=\"...\"?>",
            location=Location(path, line, col),
        ) from None


def _refuse_wide_declaration(data: bytes, path: str) -> None:
    """A declaration of UTF-16 or UTF-32 that can be read byte by byte is wrong: the file is
    not in that encoding (libxml2: "Document labelled UTF-16 but has UTF-8 content")."""
    declared = _DECLARED_ENCODING.match(data)
    if not declared or not declared.group(1).lower().startswith((b"utf-16", b"utf16", b"utf-32", b"utf32", b"ucs")):
        return
    name = declared.group(1).decode("ascii")
    line = data.count(b"\n", 0, declared.start(1)) + 1
    raise InputError(
        f"the XML declaration says encoding=\"{name}\", but the file is not {name} (its declaration is one byte per character)",
        code="GEN-001",
        hint='declare the real encoding, e.g. encoding="UTF-8"',
        location=Location(path, line, declared.start(1) - (data.rfind(b"\n", 0, declared.start(1)) + 1) + 1),
    )


def blank_declaration(text: str) -> str:
    """Replace a leading XML declaration by spaces (same length, same lines).

    lxml refuses str input that declares an encoding, and an included fragment may carry a
    declaration that would be illegal in the middle of the merged document.
    """
    match = _DECLARATION.match(text)
    if not match:
        return text
    start = match.group(0).index("<?")
    blank = re.sub(r"[^\n]", " ", text[start : match.end()])
    return text[:start] + blank + text[match.end() :]


def entity_declaration(text: str) -> int | None:
    """Offset of the first ``<!ENTITY`` inside a DOCTYPE, or None."""
    if "<!DOCTYPE" not in text:
        return None
    match = _ENTITY_DECL.search(text)
    return match.start() if match else None


_COMMENT = re.compile(r"<!--.*?-->", re.S)
SEARCH_LINES = 60  # a start tag spanning more lines than this falls back to a full scan


@lru_cache(maxsize=1024)
def _start_tag(name: str) -> re.Pattern[str]:
    return re.compile("<" + re.escape(name) + r"""(?=[\s/>])(?:[^>"']|"[^"]*"|'[^']*')*>""")


def line_starts(text: str) -> list[int]:
    return [0, *(m.end() for m in re.finditer("\n", text))]


def find_mark(text: str, starts: list[int], kind: MarkKind, name: str, end_line: int, later: int) -> Mark | None:
    """The start tag (or comment) that ends on ``end_line`` with ``later`` more of the same
    kind and name ending on that line after it; None when it cannot be found nearby."""
    if kind is MarkKind.PI or not 1 <= end_line <= len(starts):
        return None
    line_start = starts[end_line - 1]
    line_end = starts[end_line] if end_line < len(starts) else len(text)
    pattern = _COMMENT if kind is MarkKind.COMMENT else _start_tag(name)
    window = starts[max(0, end_line - 1 - SEARCH_LINES)]
    ending_here = [m for m in pattern.finditer(text, window, line_end) if m.end() - 1 >= line_start]
    if later >= len(ending_here):
        return None
    match = ending_here[-1 - later]
    return Mark(kind, name, match.start(), match.end())


def scan_markup(text: str) -> list[Mark]:
    """Every element, comment and PI of a well-formed text, in document order."""
    marks = []
    for match in _MARKUP.finditer(text):
        token = match.group(0)
        name = match.group("name")
        if name is not None:
            marks.append(Mark(MarkKind.ELEMENT, name, match.start(), match.end()))
        elif token.startswith("<!--"):
            marks.append(Mark(MarkKind.COMMENT, "", match.start(), match.end()))
        elif token.startswith("<?"):
            marks.append(Mark(MarkKind.PI, "", match.start(), match.end()))
    return marks

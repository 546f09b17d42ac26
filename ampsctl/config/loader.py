"""Load an AMPS config as AMPS does: `${VAR}` expansion, then `<Include>` expansion.

The result is one lxml tree plus a way back from any node to the original file:line:col,
even for nodes that came from an included file or from an expanded variable.

Safety: the parser never touches the network, never loads a DTD and never expands
entities; a DOCTYPE that declares entities is refused outright (XXE, "billion laughs").
Only files named by the config are read. The total expanded size is capped by the
config's own ``ConfigCycleDetectionThreshold`` (5MB by default, as in AMPS), which also
stops include fan-out bombs that are not strict cycles.

Positions are found lazily, only for nodes that a finding needs: lxml knows the line where
a start tag ends, and ``xmltext.find_mark`` searches just before it. Files that hold
``<Include>`` elements are scanned whole (``xmltext.scan_markup``) before their tree changes,
and a full scan is also the fallback when the quick search finds nothing.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

from ampsctl.config.findings import Finding, Severity
from ampsctl.config.source import SourceText
from ampsctl.config.xmltext import (
    SEARCH_LINES,
    Mark,
    MarkKind,
    blank_declaration,
    decode,
    entity_declaration,
    find_mark,
    line_starts,
    scan_markup,
)
from ampsctl.errors import InputError, Location
from ampsctl.units import parse_bytes

MAX_FILE_BYTES = 64 * 1024 * 1024
DEFAULT_EXPANDED_LIMIT = 5_000_000  # AMPS's default ConfigCycleDetectionThreshold
MAX_INCLUDE_DEPTH = 64
# The quick position lookup gives up (for one full scan of the file) on a line holding more
# than this many nodes or characters: a config written on one line would make it quadratic.
_QUICK_NODES = 256
_QUICK_CHARS = 65_536  # in the lines find_mark searches
ASSUMED_AMPS_VERSION = "5.3.5.0"
_WRAPPER = "ampsctl-include"
_TRUE = {"true", "True", "TRUE", "enabled", "1", "yes"}
_FLAGS = {"true", "false", "True", "False", "TRUE", "FALSE", "enabled", "disabled", "1", "0"}  # the XSD's flagType
# A DOCTYPE with an external identifier: libxml2 opens that file even with load_dtd=False
# (a FIFO or /dev/zero there hangs the parser), so it is refused like entity declarations.
_EXTERNAL_DTD = re.compile(r"<!DOCTYPE\s+[^\s\[>]+\s+(SYSTEM|PUBLIC)\b")
_PROLOG_COMMENT = re.compile(r"<!--.*?-->", re.S)
_FIRST_ELEMENT = re.compile(r"<[^!?]")


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_blank_text=False,
        collect_ids=False,
    )


@dataclass
class _Source:
    text: SourceText
    parse_text: str  # expanded text as given to lxml (declaration blanked, no wrapper)
    tops: list[etree._Element]
    index: dict[etree._Element, Mark] | None = None
    starts: list[int] | None = None  # line starts of parse_text, for find_mark
    wrapper: etree._Element | None = None  # a fragment's parsed wrapper element


@dataclass(frozen=True, eq=False)
class Included:
    """What one <Include> was replaced by, and the file (source) the <Include> was written in."""

    nodes: tuple[etree._Element, ...]
    written_in: object


@dataclass
class LoadedConfig:
    """An expanded config tree and the map back to its sources."""

    path: str
    root: etree._Element
    findings: list[Finding] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    _sources: list[_Source] = field(default_factory=list, repr=False)
    _owner: dict[etree._Element, _Source] = field(default_factory=dict, repr=False)
    _synthetic: dict[etree._Element, Location] = field(default_factory=dict, repr=False)
    _included: dict[etree._Element, list[Included]] = field(default_factory=dict, repr=False)

    def locate(self, node: etree._Element) -> Location:
        """Where the start tag of ``node`` is in its original file."""
        mark, source = self._mark(node)
        if mark is None:
            return self._synthetic.get(node) or Location(source.text.path, node.sourceline or 0, 0)
        return source.text.location(mark.start)

    def locate_text(self, node: etree._Element) -> Location:
        """Where the text value of ``node`` starts (its first non-blank character)."""
        mark, source = self._mark(node)
        if mark is None or mark.kind is not MarkKind.ELEMENT:
            return self.locate(node)
        if len(node) and next(node.iterchildren(tag=etree.Element), None) is None:
            # A comment or PI inside a value: ``text`` is the joined value (model.join_values),
            # so its leading blanks are not those of the file; read the file past them instead.
            return source.text.location(_past_blanks_and_comments(source.text.expanded, mark.content_start))
        text = node.text or ""
        return source.text.location(mark.content_start + len(text) - len(text.lstrip()))

    def inclusions(self, node: etree._Element) -> list[Included]:
        """The <Include> splices that put ``node`` where it is, innermost first (a node of the
        top level of an included file; a nested <Include> adds the outer one)."""
        return self._included.get(node, [])

    def file_of(self, node: etree._Element) -> object:
        """An opaque token of the file (the one inclusion of it) that ``node`` was written in."""
        return self._source_of(node)

    def mentions(self, text: str) -> bool:
        """Does ``text`` occur in the expanded text of any file of the config?

        A quick way to rule things out: what the tree holds (tags, comments, values outside
        character references) is in some file's text.
        """
        return any(text in source.parse_text for source in self._sources)

    def source_line(self, location: Location) -> str:
        """The original text of the line a location points at (for snippets)."""
        for source in self._sources:
            if source.text.path == location.path:
                return source.text.line_text(location.line)
        return ""

    def _mark(self, node: etree._Element) -> tuple[Mark | None, _Source]:
        source = self._source_of(node)
        if source.index is None:
            mark = self._find(node, source)
            if mark is not None:
                return mark, source
            source.index = _index(source)
        return source.index.get(node), source

    def _find(self, node: etree._Element, source: _Source) -> Mark | None:
        """Quick path: search a few lines before the line lxml recorded for ``node``."""
        line = node.sourceline
        kind = MarkKind.ELEMENT if isinstance(node.tag, str) else _KIND.get(node.tag)
        if not line or kind is None:
            return None
        later = 0  # nodes of the same kind and name whose start tag ends on the same line
        for seen, other in enumerate(_following(node)):
            if seen >= _QUICK_NODES:
                return None  # a crowded line: one full scan beats a long walk per lookup
            if other.sourceline is None:
                continue
            if other.sourceline > line:
                break
            if other.tag == node.tag and other.sourceline == line and self._source_of(other) is source:
                later += 1
        if source.starts is None:
            source.starts = line_starts(source.parse_text)
        if line <= len(source.starts) and _line_end(source, line) - source.starts[max(0, line - 1 - SEARCH_LINES)] > _QUICK_CHARS:
            return None  # long lines: searching them for every lookup would be quadratic
        return find_mark(source.parse_text, source.starts, kind, written_name(node) if kind is MarkKind.ELEMENT else "", line, later)

    def _source_of(self, node: etree._Element) -> _Source:
        current: etree._Element | None = node
        while current is not None:
            owner = self._owner.get(current)
            if owner is not None:
                return owner
            current = current.getparent()
        return self._sources[0]


def _line_end(source: _Source, line: int) -> int:
    starts = source.starts
    assert starts is not None
    return starts[line] if line < len(starts) else len(source.parse_text)


def load_config(
    path: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    *,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> LoadedConfig:
    """Read, expand and parse a config. Raises ``InputError`` when the file is unusable."""
    display = str(path)
    real = os.path.realpath(display)
    variables = dict(env if env is not None else os.environ)
    variables.setdefault("AMPS_CONFIG_PATH", real)
    variables.setdefault("AMPS_CONFIG_DIRECTORY", os.path.dirname(real))
    variables.setdefault("AMPS_VERSION", ASSUMED_AMPS_VERSION)

    text = _read(display, max_file_bytes, None)
    if not text or text.isspace():  # not text.strip(), which would copy the whole file
        raise InputError("the file is empty", code="GEN-001", hint="an AMPS config needs at least <AMPSConfig><Name>...</Name></AMPSConfig>", location=Location(display, 1, 1))
    source = _parse(SourceText.expand(display, text, variables), fragment=False)
    root = source.tops[[n.tag for n in source.tops].index(_root_tag(source))]
    if root.tag != "AMPSConfig":
        namespace = etree.QName(root).namespace
        raise InputError(
            f"the root element is <{written_name(root)}>{f' in the XML namespace {namespace!r}' if namespace else ''}, not <AMPSConfig>",
            code="GEN-001",
            hint="remove the xmlns declaration: AMPS configs use no XML namespace" if namespace else "an AMPS config file starts with <AMPSConfig>",
            location=LoadedConfig(display, root, _sources=[source]).locate(root),
        )
    config = LoadedConfig(display, root, files=[display], _sources=[source])
    expander = _IncludeExpander(config, variables, max_file_bytes, _expanded_limit(root))
    expander.size = len(source.text.expanded)
    expander.expand(source, [real])
    return config


def _root_tag(source: _Source) -> str:
    return next(n.tag for n in source.tops if isinstance(n.tag, str))


def _read(path: str, max_file_bytes: int, where: Location | None, shown: str | None = None) -> str:
    """Read and decode ``path``; messages name it as ``shown`` (the path as the user wrote it)."""
    name = shown or path

    def fail(message: str, hint: str) -> InputError:
        return InputError(message, code="GEN-001" if where is None else "GEN-008", hint=hint, location=where or Location(name))

    try:
        # O_NONBLOCK: opening a FIFO that has no writer must not hang (a regular file ignores it).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except IsADirectoryError:
        raise fail(f"'{name}' is a directory, not a config file", "pass the path of an XML file") from None
    except FileNotFoundError:
        hint = "check the path" if name == path else f"check the path (it resolves to '{path}')"
        raise fail(f"no such file: '{name}'", hint) from None
    except PermissionError:
        if os.path.isdir(path):  # how some systems refuse to open a directory
            raise fail(f"'{name}' is a directory, not a config file", "pass the path of an XML file") from None
        raise fail(f"permission denied reading '{name}'", "make the file readable") from None
    except OSError as exc:
        raise fail(f"cannot read '{name}': {exc.strerror}", "check the path") from None
    try:
        # One fstat instead of isdir + getsize, and plain reads instead of a buffered file:
        # system calls are a measurable part of linting hundreds of files.
        status = os.fstat(fd)
        if stat.S_ISDIR(status.st_mode):
            raise fail(f"'{name}' is a directory, not a config file", "pass the path of an XML file")
        if where is not None and (stat.S_ISCHR(status.st_mode) or stat.S_ISBLK(status.st_mode)):
            # /dev/zero would be read up to the size limit, /dev/tty would wait for a typist
            raise fail(f"'{name}' is a device, not a config file", "name an XML file in <Include>")
        size = status.st_size
        if size > max_file_bytes:
            raise fail(
                f"'{name}' is {size / 2**20:.1f} MB, larger than the {max_file_bytes / 2**20:.0f} MB limit",
                "AMPS refuses configs over ConfigCycleDetectionThreshold (5MB by default); raise the limit with --max-file-size",
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        # Ask for the size we expect (a buffer of max_file_bytes per read is costly); read on
        # up to the limit only if there is more (a FIFO reports no size, a file may grow).
        data = _read_up_to(fd, size + 1)
        if len(data) > size:
            data += _read_up_to(fd, max_file_bytes + 1 - len(data))
    except OSError as exc:
        raise fail(f"cannot read '{name}': {exc.strerror}", "check the path") from None
    finally:
        os.close(fd)
    return decode(data, name)


def _read_up_to(fd: int, count: int) -> bytes:
    """Up to ``count`` bytes, fewer only at the end of the file."""
    chunks = []
    while count > 0:
        chunk = os.read(fd, count)
        if not chunk:
            break
        chunks.append(chunk)
        count -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _parse(text: SourceText, *, fragment: bool) -> _Source:
    parse_text = blank_declaration(text.expanded)
    doctype = "<!DOCTYPE" in parse_text  # one search: the checks below concern only a DOCTYPE
    entity_at = entity_declaration(parse_text) if doctype else None
    if entity_at is not None:
        raise InputError(
            "the DOCTYPE declares XML entities, which ampsctl never expands",
            code="GEN-001",
            hint="entities can read arbitrary files (XXE) or explode in size; use <Include>file.xml</Include> instead",
            location=text.location(entity_at),
        )
    external_at = _external_dtd(parse_text) if doctype else None
    if external_at is not None:
        raise InputError(
            "the DOCTYPE names an external DTD, which ampsctl never loads",
            code="GEN-001",
            hint="remove the DOCTYPE: AMPS configs need no DTD",
            location=text.location(external_at),
        )
    prefix = f"<{_WRAPPER}>" if fragment else ""
    document = f"{prefix}{parse_text}</{_WRAPPER}>" if fragment else parse_text
    try:
        top = etree.fromstring(document, _parser())
    except etree.XMLSyntaxError as exc:
        line, col, message = _syntax_error(exc)
        offset = _offset_of(document, line, col) - len(prefix)
        if fragment:
            message = message.replace(_WRAPPER, "end of file")
        raise InputError(
            f"malformed XML: {message}",
            code="GEN-001",
            hint="fix the XML syntax at this position (an editor with XML support can show the unbalanced tag)",
            location=text.location(max(0, min(offset, len(parse_text)))),
        ) from None
    if doctype:
        _refuse_entity_references(top, text, document, len(prefix))
    if fragment:
        return _Source(text, parse_text, list(top), None, wrapper=top)
    preceding = list(top.itersiblings(preceding=True))[::-1]
    return _Source(text, parse_text, [*preceding, top, *top.itersiblings()], None)


def _syntax_error(exc: etree.XMLSyntaxError) -> tuple[int, int, str]:
    """Line, column and message of a parse error. libxml2 has no text for some of its errors
    (a CDATA section left open says "Unregistered error message"): the next error it logged,
    usually the cause at the same place ("PCDATA invalid Char value 1"), is reported instead."""
    line, col = exc.position if exc.position else (1, 1)
    message = str(exc.msg).split(", line ")[0].strip().rstrip(".")
    if message.startswith("Unregistered error") or not message:
        said = next((entry for entry in exc.error_log if entry.message and not entry.message.startswith("Unregistered")), None)
        if said is None:
            return line, col, "syntax error"
        line, col, message = said.line or line, said.column or col, said.message.strip().rstrip(".")
    return line, col, message


def _past_blanks_and_comments(text: str, offset: int) -> int:
    """The offset of the first character from ``offset`` on that is not blank or inside a
    comment or processing instruction (an unclosed one ends the text)."""
    while True:
        while offset < len(text) and text[offset] in " \t\r\n":
            offset += 1
        close = "-->" if text.startswith("<!--", offset) else "?>" if text.startswith("<?", offset) else None
        if close is None:
            return offset
        end = text.find(close, offset + 2)
        if end < 0:
            return len(text)
        offset = end + len(close)


def _external_dtd(text: str) -> int | None:
    """Offset of SYSTEM/PUBLIC in a DOCTYPE of the prolog (comments ignored), or None."""
    if "<!DOCTYPE" not in text:
        return None
    first = _FIRST_ELEMENT.search(text)
    prolog = text[: first.start() if first else len(text)]
    prolog = _PROLOG_COMMENT.sub(lambda m: " " * len(m.group(0)), prolog)
    match = _EXTERNAL_DTD.search(prolog)
    return match.start(1) if match else None


def _refuse_entity_references(top: etree._Element, text: SourceText, document: str, shift: int) -> None:
    """An undeclared ``&name;`` survives parsing when the DOCTYPE holds a parameter-entity
    reference; the schema validator cannot handle such a node, so it is reported here. Without
    a DOCTYPE an undeclared entity does not parse at all, so only a document with one is walked."""
    if "&" not in document:
        return
    entity = next(top.iter(etree.Entity), None)
    if entity is None:
        return
    start = _offset_of(document, entity.sourceline or 1, 1)
    found = document.find(entity.text, start)
    offset = (found if found >= 0 else start) - shift
    raise InputError(
        f"the entity reference {entity.text} is not defined",
        code="GEN-001",
        hint="write the character itself or a character reference such as &#233;; ampsctl never loads DTDs",
        location=text.location(max(0, offset)),
    )


def _offset_of(text: str, line: int, col: int) -> int:
    offset = 0
    for _ in range(max(0, line - 1)):
        found = text.find("\n", offset)
        if found < 0:
            return len(text)
        offset = found + 1
    return offset + max(0, col - 1)


def _walk(tops: list[etree._Element]) -> Iterator[etree._Element]:
    for top in tops:
        if isinstance(top.tag, str):
            yield from top.iter()
        else:
            yield top


_KIND = {etree.Comment: MarkKind.COMMENT, etree.ProcessingInstruction: MarkKind.PI}


def _following(node: etree._Element) -> Iterator[etree._Element]:
    """Every node after ``node`` in document order."""
    yield from node.iterdescendants()
    current: etree._Element | None = node
    while current is not None:
        for sibling in current.itersiblings():
            yield sibling
            yield from sibling.iterdescendants()
        current = current.getparent()


def written_name(node: etree._Element) -> str:
    """An element's name as written in the file: ``x:Foo``, not lxml's ``{urn:x}Foo``."""
    tag = node.tag
    if not tag.startswith("{"):  # type: ignore[union-attr]
        return tag  # type: ignore[return-value]
    local = tag.rpartition("}")[2]  # type: ignore[union-attr]
    return f"{node.prefix}:{local}" if node.prefix else local


def _index(source: _Source) -> dict[etree._Element, Mark]:
    """Pair the source's nodes with the scanner's marks, both in document order."""
    nodes = [n for n in _walk(source.tops) if isinstance(n.tag, str) or n.tag in _KIND]
    marks = scan_markup(source.parse_text)
    index: dict[etree._Element, Mark] = {}
    for node, mark in zip(nodes, marks):
        kind = MarkKind.ELEMENT if isinstance(node.tag, str) else _KIND[node.tag]
        if kind is not mark.kind or (kind is MarkKind.ELEMENT and mark.name != written_name(node)):
            break  # never expected on text lxml accepted; fall back to lxml line numbers
        index[node] = mark
    return index


def _expanded_limit(root: etree._Element) -> int:
    text = root.findtext("ConfigCycleDetectionThreshold")
    try:
        return parse_bytes(text).low if text else DEFAULT_EXPANDED_LIMIT
    except InputError:
        return DEFAULT_EXPANDED_LIMIT


@dataclass
class _IncludeExpander:
    config: LoadedConfig
    env: dict[str, str]
    max_file_bytes: int
    limit: int
    size: int = 0

    def expand(self, source: _Source, stack: list[str]) -> None:
        self._report_undefined(source.text)
        if "<Include" not in source.parse_text:
            return  # most files include nothing: no need to walk the tree for <Include>
        includes = [n for top in source.tops if isinstance(top.tag, str) for n in top.iter("Include")]
        if not includes:
            return
        source.index = _index(source)  # before the tree changes
        default_comment = (self.config.root.findtext("ConfigIncludeCommentDefault") or "").strip() in _TRUE
        for include in includes:
            text, fragment = self._load(include, source, stack)
            comment = (include.get("comment") or "").strip() in _TRUE if include.get("comment") else default_comment
            self._splice(include, text, fragment, comment)

    def _load(self, include: etree._Element, source: _Source, stack: list[str]) -> tuple[str, list[etree._Element]]:
        """The text before the first node of the included file, and its nodes."""
        where = self.config.locate(include)
        target = (include.text or "").strip()
        self._check_attributes(include, where)
        child = next(include.iterchildren(tag=etree.Element), None)
        if child is not None:  # what AMPS would make of it is undocumented: never guess
            return self._problem(where, f"<Include> holds an element <{child.tag}>; it may only hold a file path", "move the element out of <Include>, or into the included file")
        if not target:
            return self._problem(where, "<Include> names no file", "put the path of the file to include inside the element")
        base = os.path.dirname(os.path.realpath(source.text.path))
        path = os.path.join(base, target) if not os.path.isabs(target) else target
        real = os.path.realpath(path)
        if real in stack:
            chain = " -> ".join(Path(p).name for p in [*stack, real])
            return self._problem(where, f"include cycle: {chain}", "remove the <Include> that closes the loop")
        if len(stack) >= MAX_INCLUDE_DEPTH:
            return self._problem(where, f"includes are nested more than {MAX_INCLUDE_DEPTH} deep", "flatten the include chain")
        display = target if os.path.isabs(target) else os.path.normpath(os.path.join(os.path.dirname(source.text.path), target))
        try:
            text = _read(path, self.max_file_bytes, where, shown=display)
        except InputError as exc:
            if exc.code != "GEN-008":  # undecodable bytes: the file is there but unusable
                self.config.findings.append(
                    Finding(exc.code, Severity.ERROR, f"in included file: {exc.message}", exc.location or where, exc.hint, fatal=True)
                )
                return "", []
            return self._problem(where, exc.message, exc.hint or "")
        self.size += len(text)
        if self.size > self.limit:
            return self._problem(
                where,
                f"the expanded config exceeds ConfigCycleDetectionThreshold ({self.limit:,} bytes)",
                "AMPS refuses such a config; remove repeated includes or raise ConfigCycleDetectionThreshold",
            )
        self.config.files.append(display)
        try:
            fragment = _parse(SourceText.expand(display, text, self.env), fragment=True)
        except InputError as exc:
            self.config.findings.append(
                Finding(exc.code, Severity.ERROR, f"in included file: {exc.message}", exc.location or where, exc.hint, fatal=True)
            )
            return "", []
        self.config._sources.append(fragment)
        for top in fragment.tops:
            self.config._owner[top] = fragment
        wrapper = fragment.wrapper
        assert wrapper is not None
        self.expand(fragment, [*stack, real])
        # The wrapper's children now, not fragment.tops: an <Include> at the top level of the
        # fragment has just been replaced by what it names. Its text is part of the content
        # too (an included file may hold just a value: <Name><Include>name.txt</Include></Name>).
        return wrapper.text or "", list(wrapper)

    def _check_attributes(self, include: etree._Element, where: Location) -> None:
        """What the XSD says of <Include>'s attributes: it never sees the element, which the
        file it names replaces before the schema check."""
        for name, value in include.attrib.items():
            if name != "comment":
                self.config.findings.append(Finding("XSD-001", Severity.ERROR, f"<Include> attribute '{name}' is not allowed", where, "<Include> takes only comment=\"true\" or comment=\"false\""))
            elif value.strip() not in _FLAGS:
                self.config.findings.append(Finding("XSD-002", Severity.ERROR, f"'{value}' is not a valid value for <Include> attribute 'comment'", where, "use true or false"))

    def _problem(self, where: Location, message: str, hint: str) -> tuple[str, list[etree._Element]]:
        self.config.findings.append(Finding("GEN-008", Severity.ERROR, message, where, hint or None))
        return "", []

    def _splice(self, include: etree._Element, text: str, nodes: list[etree._Element], comment: bool) -> None:
        """Replace ``include`` by ``text`` and ``nodes``, keeping the surrounding text."""
        parent = include.getparent()
        if parent is None:
            return
        if comment:
            where = self.config.locate(include)
            label = f"<Include>{(include.text or '').strip()}</Include>"
            start, end = etree.Comment(f" Start {label} "), etree.Comment(f" End {label} ")
            self.config._synthetic[start] = self.config._synthetic[end] = where
            start.tail, text = text, ""  # the included text comes after the start comment
            nodes = [start, *nodes, end]
        group = Included(tuple(nodes), self.config._source_of(include))
        for node in group.nodes:  # inner <Include>s were spliced first: innermost first
            self.config._included.setdefault(node, []).append(group)
        position = parent.index(include)
        tail = include.tail
        parent.remove(include)
        for offset, node in enumerate(nodes):
            parent.insert(position + offset, node)
        if nodes:
            nodes[-1].tail = (nodes[-1].tail or "") + (tail or "")
            tail = None
        for piece in (text, tail):  # before the first inserted node, or where the <Include> was
            if not piece:
                continue
            previous = parent[position - 1] if position > 0 else None
            if previous is not None:
                previous.tail = (previous.tail or "") + piece
            else:
                parent.text = (parent.text or "") + piece

    def _report_undefined(self, text: SourceText) -> None:
        for var in text.undefined:
            self.config.findings.append(
                Finding(
                    "GEN-007",
                    Severity.ERROR,
                    f"environment variable ${{{var.name}}} is not defined",
                    text.original_location(var.offset),
                    f"export {var.name}=... before running, or pass --env {var.name}=VALUE",
                )
            )

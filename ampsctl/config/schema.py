"""Structural validation against ``schemas/amps-config.xsd``.

The hot path validates with libxml2 through lxml, the same engine as ``xmllint`` (the
benchmark's peer). The test suite also loads the XSD with ``xmlschema`` and checks that
both engines agree on every sample (docs/architecture.md explains the split).

libxml2 messages are turned into findings: an element name the schema does not know at
all is GEN-006 (with a "did you mean" hint); a known element in the wrong place is
XSD-001; a bad value is XSD-002.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from lxml import etree

from ampsctl.config.loader import written_name
from ampsctl.errors import EnvironmentProblem

_EXPECTED = re.compile(r"Expected is(?: one of)? \( (.*?) \)")
_ELEMENT = re.compile(r"^Element '([^']+)'(?:, attribute '([^']+)')?: (.*)$", re.S)


def schema_path() -> Path:
    packaged = Path(__file__).resolve().parent.parent / "data" / "amps-config.xsd"
    return packaged if packaged.exists() else Path(__file__).resolve().parents[2] / "schemas" / "amps-config.xsd"


@cache
def _schema() -> tuple[etree.XMLSchema, frozenset[str]]:
    path = schema_path()
    try:
        document = etree.parse(str(path))
    except OSError:
        raise EnvironmentProblem(f"the config schema is missing: {path}", hint="reinstall ampsctl") from None
    names = frozenset(document.xpath("//xs:element/@name", namespaces={"xs": "http://www.w3.org/2001/XMLSchema"}))
    return etree.XMLSchema(document), names


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    code: str  # GEN-006, XSD-001 or XSD-002
    node: etree._Element
    message: str
    hint: str | None
    at_text: bool


def validate(root: etree._Element) -> list[SchemaProblem]:
    schema, known = _schema()
    if schema.validate(root):
        return []
    tree = root.getroottree()
    problems = []
    for entry in schema.error_log:
        nodes = _nodes_at(tree, entry.path) if entry.path else []
        node = nodes[0] if nodes else root
        problem = _classify(entry.message, node, known)
        problems.append(problem)
        if "This element is not expected" in entry.message:
            problems.extend(_unknown_after(node, known))
    return problems


def _unknown_after(node: etree._Element, known: frozenset[str]) -> list[SchemaProblem]:
    """libxml2 stops checking a parent's children at the first unexpected one: the siblings
    after it whose names the schema does not know at all are reported too (GEN-006)."""
    found = []
    for sibling in node.itersiblings(tag=etree.Element):
        if not isinstance(sibling.tag, str) or sibling.tag in known:
            continue  # a known element out of place is left to the next run
        close = difflib.get_close_matches(sibling.tag, sorted(known), n=1)
        hint = _namespace_hint(sibling) or (f"did you mean <{close[0]}>?" if close else None)
        parent = sibling.getparent()
        where = f"<{parent.tag}>" if parent is not None else "the document"
        found.append(SchemaProblem("GEN-006", sibling, f"unknown element <{written_name(sibling)}> in {where}", hint, False))
    return found


def _nodes_at(tree: etree._ElementTree, path: str) -> list[etree._Element]:
    """The nodes at libxml2's error path, which names elements with the document's prefixes."""
    try:
        return tree.xpath(path)  # type: ignore[return-value]
    except etree.XPathError:
        namespaces = {prefix: uri for el in tree.iter(etree.Element) for prefix, uri in el.nsmap.items() if prefix}
        try:
            return tree.xpath(path, namespaces=namespaces)  # type: ignore[return-value]
        except etree.XPathError:
            return []


def _classify(message: str, node: etree._Element, known: frozenset[str]) -> SchemaProblem:
    match = _ELEMENT.match(message)
    detail = match.group(3) if match else message
    tag = written_name(node) if isinstance(node.tag, str) else "?"
    expected = _EXPECTED.search(detail)
    allowed = sorted({name.strip() for name in expected.group(1).split(",")}) if expected else []
    if "This element is not expected" in detail:
        parent = node.getparent()
        where = f"<{parent.tag}>" if parent is not None else "the document"
        if tag not in known:
            close = difflib.get_close_matches(tag, allowed or sorted(known), n=1)
            hint = f"did you mean <{close[0]}>?" if close else _allowed_hint(allowed)
            return SchemaProblem("GEN-006", node, f"unknown element <{tag}> in {where}", _namespace_hint(node) or hint, False)
        return SchemaProblem("XSD-001", node, f"<{tag}> is not allowed here in {where}", _namespace_hint(node) or _allowed_hint(allowed), False)
    if "Character content other than whitespace is not allowed" in detail:
        return _stray_text(node, tag)
    if "Missing child element" in detail:
        return SchemaProblem("XSD-001", node, f"<{tag}> is missing a required child", _allowed_hint(allowed), False)
    if match and match.group(2):
        name = _attribute_name(node, match.group(2))
        detail = detail.strip().rstrip(".").replace(f"'{match.group(2)}'", f"'{name}'")
        return SchemaProblem("XSD-001", node, f"<{tag}> attribute '{name}': {detail}", None, False)
    value = (node.text or "").strip()
    enum = re.search(r"set \{(.*?)\}", detail)
    hint = f"use one of: {enum.group(1)}" if enum else None
    return SchemaProblem("XSD-002", node, f"'{value}' is not a valid value for <{tag}>", hint, True)


def _attribute_name(node: etree._Element, clark: str) -> str:
    """``{uri}x`` as written: ``xml:lang``, ``a:x`` (the prefix in scope), else unchanged."""
    if not clark.startswith("{"):
        return clark
    uri, _, local = clark[1:].partition("}")
    if uri == "http://www.w3.org/XML/1998/namespace":
        return f"xml:{local}"
    prefix = next((p for p, u in node.nsmap.items() if u == uri and p), None)
    return f"{prefix}:{local}" if prefix else clark


def _namespace_hint(node: etree._Element) -> str | None:
    if not isinstance(node.tag, str) or not node.tag.startswith("{"):
        return None
    return f"AMPS config elements are in no XML namespace; this one is in '{etree.QName(node).namespace}' (remove the xmlns declaration)"


def _stray_text(node: etree._Element, tag: str) -> SchemaProblem:
    """Text where only elements may be: point at the text, or at the node it follows."""
    hint = "remove the text, or move it into the element it belongs to"
    if node.text and node.text.strip():
        return SchemaProblem("XSD-001", node, f"<{tag}> holds text {_shown(node.text)}; only elements are allowed here", hint, True)
    for child in node:
        if child.tail and child.tail.strip():
            after = f"<{child.tag}>" if isinstance(child.tag, str) else "this comment" if child.tag is etree.Comment else "this node"
            return SchemaProblem("XSD-001", child, f"text {_shown(child.tail)} after {after} in <{tag}>; only elements are allowed here", hint, False)
    return SchemaProblem("XSD-001", node, f"<{tag}> holds text; only elements are allowed here", hint, False)


def _shown(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _allowed_hint(allowed: list[str]) -> str | None:
    if not allowed:
        return None
    shown = ", ".join(f"<{name}>" for name in allowed[:12])
    return f"allowed here: {shown}{', ...' if len(allowed) > 12 else ''}"

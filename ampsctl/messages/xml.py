"""XML payloads: filterable records and the codec (spec/messages.md §2.2, §6, §7).

The root element is the first step (``/Order/Symbol``), ``@name`` reads an attribute, element
text is typed by inference, an empty element is NULL, and repeated sibling elements form an
array. A namespace prefix is part of a step as written (``/ns:Order/@q:id``); an element in a
default namespace is named without one. The parser is hardened like the config loader: no network, no DTD, no entities.

Theory of operation of the codec. A document is an ``XmlDocument`` wrapping the root element.
Elements are mutable, so merge and diff deep-copy what they return and never touch their
inputs; documents compare by content (``canonical``), ignoring whitespace between elements.
Vocabulary: an element with child elements is an *object*; one without is a *leaf* whose value
is its text; a name repeated among siblings is an *array*.

* merge (delta publish, §6.3): attributes present in the delta replace; a name that occurs
  once on both sides merges recursively; an array on either side is replaced whole (R2); new
  names are appended. A delta leaf replaces the content (text and children) of its target, an
  empty one too, whatever attributes it carries (seed 004: an update to the root of a
  subdocument replaces it), so a full republish that empties an object can be sent as a delta;
  only the delta root never empties the document (it is the message, not a field).
* diff (delta subscribe, §7.5): walks ``new``; objects present on both sides are diffed
  recursively, attributes of an object are compared one by one, and leaves and arrays are
  compared and sent whole (a leaf with its attributes). An object that goes out with
  attributes only (changed ones, or a key attribute) goes out with its fields, since without
  child elements it would read as an empty leaf and empty the object. Key fields go out with
  ``send_keys``.
  As for merge, old and new must have the same root element (an InputError otherwise).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lxml import etree

from ampsctl.errors import InputError
from ampsctl.messages.paths import selection, split_path
from ampsctl.messages.scalars import infer

_Path = tuple[str, ...]


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, collect_ids=False)


def _parse_root(raw: bytes) -> etree._Element:
    data = bytes(raw)
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        # libxml2's limits: its text tells users to set a parser flag, which they cannot.
        line = " (line {}, column {})".format(*exc.position) if exc.lineno else ""
        if "Excessive depth" in str(exc.msg):
            raise InputError(
                f"XML message nested too deeply: more than 256 levels of elements{line}",
                code="XML",
                hint="ampsctl reads XML messages nested at most 256 elements deep",
            ) from None
        if "XML_PARSE_HUGE" in str(exc.msg):
            raise InputError(
                f"XML message has a text or attribute value longer than 10,000,000 bytes{line}",
                code="XML",
                hint="ampsctl reads XML text and attribute values of up to 10 MB each",
            ) from None
        raise InputError(f"malformed XML message: {exc.msg}", code="XML", hint="check the message payload") from None
    if root is None:  # lxml returns None for some degenerate inputs (e.g. only whitespace)
        raise InputError("malformed XML message: no root element", code="XML", hint="check the message payload")
    # Cheap: in an encoding where '<' is the ASCII byte (UTF-8, Latin-1 ...) entities need a
    # DOCTYPE; any other encoding (UTF-16, UTF-32) is checked always: a UTF-16 message's
    # declarations had slipped past a test for the ASCII bytes.
    if b"<!DOCTYPE" in data or not _ASCII_START.match(data):
        _refuse_entities(root)
    return root


_ASCII_START = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\r\n]*<")  # a UTF-8 BOM, blanks, then an ASCII '<'


def _refuse_entities(root: etree._Element) -> None:
    """Entities are not expanded (no DTD processing): a reference in text would be dropped
    (``<a>x&b;y</a>`` read as ``x``) and one in an attribute expanded, so a message that
    declares or uses any (but the predefined ones) is refused rather than read with text lost."""
    dtd = root.getroottree().docinfo.internalDTD
    names = [entity.name for entity in dtd.iterentities()] if dtd is not None else []
    if names:
        shown = ", ".join(f"&{name};" for name in names[:5]) + (", ..." if len(names) > 5 else "")
        raise InputError(
            f"XML message declares entities in its DOCTYPE ({shown}), which are not expanded",
            code="XML",
            hint="write the text itself, or a character reference such as &#233;; remove the <!ENTITY> declarations",
        )
    # An external DTD is not read: its entities stay unexpanded references, and a message
    # written without the DOCTYPE (a merge, a diff) would use them undeclared.
    reference = next(root.iter(etree.Entity), None)
    if reference is not None:
        raise InputError(
            f"XML message uses the entity {reference.text}, which is not expanded (ampsctl does not read DTDs)",
            code="XML",
            hint="write the text itself, or a character reference such as &#233;",
        )


@dataclass(frozen=True, slots=True)
class XmlRecord:
    root: etree._Element

    @classmethod
    def from_bytes(cls, raw: bytes) -> XmlRecord:
        return cls(_parse_root(raw))

    def get(self, field: Any) -> Any:
        values = self._values(field)
        return None if values is None else _one_or_many(values)

    def key_value(self, field: Any) -> Any:
        """``get`` for a SOW key: a leaf's text as written (stripped), not typed by inference,
        since hash indexes evaluate values as strings (seed 003): <id>007</id> is not <id>7</id>."""
        values = self._values(field, typed=False)
        return None if values is None else _one_or_many(values)

    def present(self, field: Any) -> bool:
        """Whether ``field`` is in the message: an empty element is there, with a NULL value
        (a key field ``<id/>`` keys on NULL, as JSON null does, and is not missing)."""
        return self._values(field) is not None

    def _values(self, field: Any, typed: bool = True) -> list[Any] | None:
        """The values at ``field`` (typed by inference, or the text), or None when no element
        or attribute is there."""
        value = infer if typed else _same
        steps = field.steps
        if not steps or field.qualifier or steps[0].name != _step(self.root) or steps[0].index not in (None, 0):
            return None
        nodes = [self.root]
        for step in steps[1:]:
            if step.name.startswith("@"):
                values = [_attribute(n, step.name[1:]) for n in nodes]
                return [value(v) for v in values if v is not None] or None
            found = []
            for node in nodes:
                children = _children(node, step.name)
                found.extend(children if step.index is None else children[step.index : step.index + 1])
            if not found:
                return None
            nodes = found
        return [_value(n, value) for n in nodes]


def _value(element: etree._Element, value: Callable[[str], Any] = infer) -> Any:
    children = _elements(element)
    if children:  # a nested element is an object, not a scalar
        return {_step(c): _value(c, value) for c in children}
    return value(_text(element).strip())


def _same(text: str) -> str:
    return text


_XML_NAMESPACE = "http://www.w3.org/XML/1998/namespace"  # the xml: prefix, never in an nsmap


def _step(element: etree._Element) -> str:
    """An element's path step: its name as written, prefix included (``/ns:Order``, spec §2.2),
    not lxml's ``{uri}Order``; an element in a default namespace is just ``Order``."""
    tag = element.tag
    if tag[0] != "{":
        return tag
    local = tag[tag.index("}") + 1 :]
    return f"{element.prefix}:{local}" if element.prefix else local


def _attribute_step(element: etree._Element, name: str) -> str:
    """An attribute's path step without the ``@``: ``q:id`` for lxml's ``{uri}id``."""
    if name[0] != "{":
        return name
    uri, local = name[1:].split("}", 1)
    if uri == _XML_NAMESPACE:
        return f"xml:{local}"
    prefix = next((p for p, u in element.nsmap.items() if u == uri and p), None)
    return f"{prefix}:{local}" if prefix else local


def _attribute(element: etree._Element, step: str) -> str | None:
    """The value of the attribute a path step names (``id`` or ``q:id``), or None."""
    prefix, colon, local = step.partition(":")
    if not colon:
        return element.get(step)
    uri = _XML_NAMESPACE if prefix == "xml" else element.nsmap.get(prefix)
    return element.get(f"{{{uri}}}{local}") if uri else element.get(step)


def _children(element: etree._Element, step: str) -> list[etree._Element]:
    """The child elements a path step names (see ``_step``)."""
    return [c for c in element if isinstance(c.tag, str) and (c.tag == step or (c.tag[0] == "{" and _step(c) == step))]


def _text(element: etree._Element) -> str:
    """The text of a leaf: a comment or processing instruction splits it into the element's
    text and the tails of those nodes, and the value is all of it (``<b>1<!--c-->2</b>`` is 12)."""
    text = element.text or ""
    if len(element):
        text += "".join(child.tail or "" for child in element)
    return text


def _one_or_many(values: list[Any]) -> Any:
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _elements(element: etree._Element) -> list[etree._Element]:
    """Child elements only: comments, processing instructions and entity references are not fields."""
    return [child for child in element if isinstance(child.tag, str)]


def _grouped(element: etree._Element) -> dict[str, list[etree._Element]]:
    groups: dict[str, list[etree._Element]] = {}
    for child in _elements(element):
        groups.setdefault(child.tag, []).append(child)
    return groups


def canonical(element: etree._Element) -> tuple[Any, ...]:
    """Content of an element for equality: the text of a leaf, the child elements of an object.

    Like JSON keys (§2.1), differently named siblings are separate identifiers whose relative
    order is not content; the order inside a repeated name (an array) is.
    """
    groups = _grouped(element)
    text = "" if groups else _text(element)
    children = tuple(sorted((tag, tuple(canonical(c) for c in group)) for tag, group in groups.items()))
    return (element.tag, tuple(sorted(element.attrib.items())), text, children)


@dataclass(frozen=True, slots=True, eq=False)
class XmlDocument:
    """An XML message; equal when the content is equal (see ``canonical``; layout whitespace ignored)."""

    root: etree._Element

    def __eq__(self, other: object) -> bool:
        return isinstance(other, XmlDocument) and canonical(self.root) == canonical(other.root)

    __hash__ = None  # type: ignore[assignment]


def _named(element: etree._Element) -> str:
    """``<prefix:name>`` as written, with the namespace URI when there is one (for errors)."""
    name = etree.QName(element)
    shown = f"<{element.prefix}:{name.localname}>" if element.prefix else f"<{name.localname}>"
    return f"{shown} (namespace {name.namespace})" if name.namespace else shown


def _detached(element: etree._Element) -> etree._Element:
    clone = copy.deepcopy(element)
    clone.tail = None  # the original's trailing whitespace belongs to its old position
    return clone


def _merge_into(target: etree._Element, delta: etree._Element, *, root: bool = False) -> None:
    for name, value in delta.attrib.items():
        target.set(name, value)
    delta_children = _grouped(delta)
    target_children = _elements(target)
    if not delta_children:
        value = _text(delta)
        if root and not value.strip():
            return  # the delta root carries its attributes only (module docstring)
        for child in list(target):
            target.remove(child)
        target.text = value or None  # present NULL or value replaces, never deletes the element
        return
    if not target_children:
        target.text = None  # leaf becomes an object (V9: type change replaces)
    existing = _grouped(target)
    replaced: dict[str, list[etree._Element]] = {}
    for name, news in delta_children.items():
        olds = existing.get(name, [])
        if len(news) == 1 and len(olds) == 1:
            _merge_into(olds[0], news[0])
        else:  # an array on either side (replaced whole, R2) or a new name (appended)
            replaced[name] = [_detached(new) for new in news]
    if replaced:
        _replace_children(target, replaced)


def _attribute_namespaces(delta: etree._Element, target: etree._Element) -> dict[str, str]:
    """The prefixes the delta's namespaced attributes are written with, for namespaces the
    target's root does not declare: lxml would make up a prefix (``ns0:k``) when merge sets
    such an attribute, and the path as written (``/O/a/@q:k``) would no longer read it."""
    declared, missing = target.nsmap, {}
    for element in delta.iter():
        if not isinstance(element.tag, str):  # comments, processing instructions
            continue
        for name in element.attrib:
            if name[0] != "{":
                continue
            uri = name[1 : name.index("}")]
            if uri == _XML_NAMESPACE or uri in declared.values() or uri in missing.values():
                continue
            prefix = next((p for p, u in element.nsmap.items() if u == uri and p), None)
            if prefix and prefix not in declared and prefix not in missing:
                missing[prefix] = uri
    return missing


def _declaring(root: etree._Element, extra: dict[str, str]) -> etree._Element:
    """``root`` with the ``extra`` namespace declarations (lxml cannot add them in place)."""
    out = etree.Element(root.tag, attrib=dict(root.attrib), nsmap={**root.nsmap, **extra})
    out.text = root.text
    out.extend(list(root))
    return out


def _replace_children(target: etree._Element, replaced: dict[str, list[etree._Element]]) -> None:
    """Each name's new elements where its first old one was (at the end for a new name).

    One pass that takes the children out and puts them back: inserting at an index walks the
    children, which made replacing an array of 100,000 elements take a minute.
    """
    children = list(target)
    for child in children:
        target.remove(child)
    placed: set[str] = set()
    for child in children:
        name = child.tag
        if not (isinstance(name, str) and name in replaced):
            target.append(child)
        elif name not in placed:
            target.extend(replaced[name])
            placed.add(name)
    for name, news in replaced.items():
        if name not in placed:
            target.extend(news)


class _Diff:
    """One diff's settings; ``element`` returns (delta element or None, whether a data field changed)."""

    __slots__ = ("keys", "key_prefixes", "send_keys", "select")

    def __init__(self, keys: frozenset[_Path], send_keys: bool, select: tuple[_Path, ...] | None) -> None:
        self.keys = keys
        # Proper prefixes of key paths: elements that hold a nested key field (/o/a/b, /o/a/@k).
        self.key_prefixes = frozenset(path[:n] for path in keys for n in range(1, len(path))) if send_keys else frozenset()
        self.send_keys = send_keys
        self.select = select

    def _selected(self, path: _Path) -> tuple[bool, bool]:
        return selection(path, self.select)

    def _leaf(self, old: etree._Element, new: etree._Element, path: _Path) -> etree._Element:
        """A changed leaf: its text with only its changed (and key) attributes (merge keeps the
        attributes a delta does not name)."""
        out = _detached(new)
        for name, value in new.attrib.items():
            if old.get(name) == value and not (self.send_keys and (*path, "@" + _attribute_step(new, name)) in self.keys):
                del out.attrib[name]
        return out

    def element(self, old: etree._Element | None, new: etree._Element, path: _Path) -> tuple[etree._Element | None, bool]:
        out = etree.Element(new.tag, nsmap=new.nsmap)  # the prefixes as written, not ns0:
        changed = False
        for name, value in new.attrib.items():
            attr_path = (*path, "@" + _attribute_step(new, name))
            if attr_path in self.keys:
                if self.send_keys:
                    out.set(name, value)
            elif self._selected(attr_path)[0] and (old is None or old.get(name) != value):
                out.set(name, value)
                changed = True
        before = _grouped(old) if old is not None else {}
        for name, news in _grouped(new).items():
            child_path = (*path, _step(news[0]))
            olds = before.get(name, [])
            if child_path in self.keys:
                if self.send_keys:
                    out.extend(_detached(n) for n in news)
                continue
            whole, below = self._selected(child_path)
            if not below and child_path not in self.key_prefixes:  # an unselected object still carries its key fields
                continue
            if len(news) == 1 and _elements(news[0]) and (len(olds) == 1 or not whole or old is None):
                # An object: diff leaf by leaf (D7) against the old one, if it was a single element.
                sub, sub_changed = self.element(olds[0] if len(olds) == 1 else None, news[0], child_path)
                if sub is not None:
                    if not len(sub):  # only attributes: as an empty leaf it would empty the object
                        sub.extend(_detached(c) for c in _elements(news[0]) if self._selected((*child_path, _step(c)))[0])
                    out.append(sub)
                changed = changed or sub_changed
            elif whole and [canonical(n) for n in news] != [canonical(o) for o in olds]:
                if len(news) == 1 and len(olds) == 1:
                    out.append(self._leaf(olds[0], news[0], child_path))
                else:
                    out.extend(_detached(n) for n in news)  # arrays go whole (R2)
                changed = True
        if len(out) or out.attrib or changed:
            return out, changed
        return None, False


class XmlCodec:
    """The Codec for ``xml`` (see ampsctl.messages.codec). Stateless: one instance serves all."""

    __slots__ = ()
    name = "xml"

    def parse(self, raw: bytes) -> XmlDocument:
        return XmlDocument(_parse_root(raw))

    def serialize(self, doc: XmlDocument) -> bytes:
        return bytes(etree.tostring(doc.root, encoding="utf-8"))

    def record(self, doc: XmlDocument) -> XmlRecord:
        return XmlRecord(doc.root)

    def merge(self, base: XmlDocument | None, delta: XmlDocument) -> XmlDocument:
        """Delta publish; ``base`` None is an insert (V6). The roots must name the same element."""
        if base is None:
            return XmlDocument(_detached(delta.root))
        if base.root.tag != delta.root.tag:
            raise InputError(
                f"XML delta root {_named(delta.root)} does not match the stored message's {_named(base.root)}",
                code="XML",
                hint="a delta addresses fields from the same root element, like /Order/Symbol",
            )
        out = _detached(base.root)
        missing = _attribute_namespaces(delta.root, out)
        if missing:
            out = _declaring(out, missing)
        _merge_into(out, delta.root, root=True)
        return XmlDocument(out)

    def diff(
        self,
        old: XmlDocument | None,
        new: XmlDocument,
        keys: Sequence[str],
        *,
        no_empties: bool = False,
        send_keys: bool = True,
        select: Sequence[str] | None = None,
    ) -> XmlDocument | None:
        key_paths = frozenset(split_path(key) for key in keys)
        selected = None if select is None else tuple(split_path(path) for path in select)
        walk = _Diff(key_paths, send_keys, selected)
        if old is not None and old.root.tag != new.root.tag:
            # Every path starts at the root: no field of one is a field of the other, and a
            # full message passed off as a delta would not merge onto the old state.
            raise InputError(
                f"XML root {_named(new.root)} of the new message does not match the old message's {_named(old.root)}",
                code="XML",
                hint="a delta compares two states of one record, which share their root element (/Order/...)",
            )
        old_root = old.root if old is not None else None
        path = (_step(new.root),)
        if not _elements(new.root):
            # A leaf root is one value: sent whole when it changed, else only its key attributes.
            changed = old_root is None or canonical(old_root) != canonical(new.root)
            out = _detached(new.root) if changed else etree.Element(new.root.tag, nsmap=new.root.nsmap)
            if not changed and send_keys:
                for name, value in new.root.attrib.items():
                    if (*path, "@" + _attribute_step(new.root, name)) in key_paths:
                        out.set(name, value)
        else:
            sub, changed = walk.element(old_root, new.root, path)
            out = sub if sub is not None else etree.Element(new.root.tag, nsmap=new.root.nsmap)
        if no_empties and not changed:
            return None
        return XmlDocument(out)


XML = XmlCodec()

"""XML payloads as filterable records (spec/messages.md §2.2).

The root element is the first step (``/Order/Symbol``), ``@name`` reads an attribute, element
text is typed by inference, an empty element is NULL, and repeated sibling elements form an
array. The parser is hardened like the config loader: no network, no DTD, no entities.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lxml import etree

from ampsctl.errors import InputError
from ampsctl.messages.scalars import infer


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, collect_ids=False)


@dataclass(frozen=True, slots=True)
class XmlRecord:
    root: etree._Element

    @classmethod
    def from_bytes(cls, raw: bytes) -> XmlRecord:
        try:
            root = etree.fromstring(raw, _parser())
        except etree.XMLSyntaxError as exc:
            raise InputError(f"malformed XML message: {exc.msg}", code="XML", hint="check the message payload") from None
        return cls(root)

    def get(self, field: Any) -> Any:
        steps = field.steps
        if not steps or field.qualifier or steps[0].name != self.root.tag or steps[0].index not in (None, 0):
            return None
        nodes = [self.root]
        for step in steps[1:]:
            if step.name.startswith("@"):
                values = [n.get(step.name[1:]) for n in nodes]
                return _one_or_many([infer(v) for v in values if v is not None])
            found = []
            for node in nodes:
                children = list(node.iterchildren(step.name))
                found.extend(children if step.index is None else children[step.index : step.index + 1])
            if not found:
                return None
            nodes = found
        return _one_or_many([_value(n) for n in nodes])


def _value(element: etree._Element) -> Any:
    children = [c for c in element if isinstance(c.tag, str)]
    if children:  # a nested element is an object, not a scalar
        return {c.tag: _value(c) for c in children}
    return infer((element.text or "").strip())


def _one_or_many(values: list[Any]) -> Any:
    if not values:
        return None
    return values[0] if len(values) == 1 else values

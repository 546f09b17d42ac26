"""The SOW entries of a config (topics, queues, views, conflated topics) and their indexes.

A big config has thousands of entries with a handful of children each, and every lint run
reads all of them, so this is the model's hot path. One pass reads each entry's child
*tags* (not the elements): lxml makes a Python proxy for every element it hands out, and
keeping hundreds of thousands of them alive (then freeing them) cost more than every rule
together. An entry keeps its tags in child order, aligned with ``el[i]`` (comments and
processing instructions hold ``None``), so a child element is fetched by position when a rule
needs it, and the grouped-by-name view of ``Section`` is built only for the entries a rule
looks into.
"""

from __future__ import annotations

from collections import defaultdict

from lxml import etree

SOW_SYNONYMS = {
    "TopicDefinition": "Topic",
    "QueueDefinition": "Queue",
    "ViewDefinition": "View",
    "ReplicaDefinition": "ConflatedTopic",
}
ENTRY_SYNONYMS = {"Topic": "Name", "Duration": "Durability"}
QUEUE_KINDS = frozenset({"Queue", "LocalQueue", "GroupLocalQueue"})

# A Section's children by name: one element, or a list when there are several (most names
# occur once, and hundreds of thousands of one-element lists are measurably slow to make and free).
Children = dict[str, "etree._Element | list[etree._Element]"]


def group_children(el: etree._Element, synonyms: dict[str, str] | None = None) -> Children:
    """``el``'s child elements by tag (synonyms resolved), in file order; comments and PIs skipped."""
    children: Children = {}
    for child in el:
        tag = child.tag
        if tag.__class__ is str:  # a comment's or PI's tag is a function
            if synonyms:
                tag = synonyms.get(tag, tag)
            found = children.get(tag)
            if found is None:
                children[tag] = child
            elif found.__class__ is list:
                found.append(child)
            else:
                children[tag] = [found, child]
    return children


class Section:
    """An element whose children are looked up by canonical name."""

    __slots__ = ("el", "_children")

    def __init__(self, el: etree._Element, synonyms: dict[str, str] | None = None) -> None:
        self.el = el
        children = group_children(el)
        if synonyms and not synonyms.keys().isdisjoint(children):
            children = group_children(el, synonyms)
        self._children = children

    @property
    def tag(self) -> str:
        return self.el.tag

    def all(self, name: str) -> list[etree._Element]:
        found = self._children.get(name)
        if found is None:
            return []
        return found if found.__class__ is list else [found]  # type: ignore[return-value]

    def first(self, name: str) -> etree._Element | None:
        found = self._children.get(name)
        return found[0] if found.__class__ is list else found  # type: ignore[index,return-value]

    def has(self, name: str) -> bool:
        return name in self._children

    def text(self, name: str) -> str | None:
        """Stripped text of the first child called ``name``; None when absent."""
        found = self.first(name)
        return (found.text or "").strip() if found is not None else None

    def names(self) -> list[str]:
        return list(self._children)


class SowEntry(Section):
    """One definition in the SOW section: a topic, queue, view or conflated topic.

    ``tag`` is the tag as spelled, ``kind`` the tag with synonyms resolved, ``legacy_children``
    whether a child is spelled with a synonym (Topic for Name, Duration for Durability), and
    ``name`` and ``message_type`` the texts of the first Name and MessageType (None when absent).
    """

    __slots__ = ("tag", "kind", "order", "legacy_children", "name", "message_type", "tags")

    def __init__(self, el: etree._Element, order: int, tags: list[str | None], name: str | None, message_type: str | None) -> None:
        self.el = el
        self.tag = tag = el.tag
        self.kind = SOW_SYNONYMS.get(tag, tag)
        self.order = order
        self.tags = tags  # canonical child tags, aligned with el[i]; None for a comment or PI
        self.legacy_children = False
        self.name = name
        self.message_type = message_type

    # Children are fetched by position (``el[i]``): no grouping, no proxies kept alive.

    def all(self, name: str) -> list[etree._Element]:
        tags = self.tags
        if name not in tags:
            return []
        el = self.el
        return [el[i] for i, tag in enumerate(tags) if tag == name]

    def first(self, name: str) -> etree._Element | None:
        tags = self.tags
        return self.el[tags.index(name)] if name in tags else None

    def has(self, name: str) -> bool:
        return name in self.tags

    def names(self) -> list[str]:
        return [tag for tag in dict.fromkeys(self.tags) if tag is not None]

    @property
    def is_queue(self) -> bool:
        return self.kind in QUEUE_KINDS

    def label(self) -> str:
        return f"{self.kind} '{self.name or '?'}'"


# Children that every entry has, or many of: their elements are not kept by ``read_entries``.
UNKEPT = frozenset({"Name", "MessageType", "Key"})
_NAME, _MESSAGE_TYPE, _KEY, _SYNONYM = "name", "message type", "key", "synonym"
_SPECIAL = {"Name": _NAME, "MessageType": _MESSAGE_TYPE, "Key": _KEY, **{synonym: _SYNONYM for synonym in ENTRY_SYNONYMS}}
ValueChildren = dict[str, list[tuple[SowEntry, etree._Element]]]


def read_entries(sections: list[etree._Element]) -> tuple[list[SowEntry], ValueChildren]:
    """The entries of ``sections`` in file order, each with its child tags, Name and MessageType;
    and the other children by canonical tag, as (entry, element) in file order.

    The rules check the optional children's values (Durability, FileName, SlabSize...) in
    groups of equal text (``ConfigModel.child_texts``); collecting the elements here, while the
    loop holds them, spares fetching each one again.
    """
    entries: list[SowEntry] = []
    values: defaultdict[str, list[tuple[SowEntry, etree._Element]]] = defaultdict(list)
    special = _SPECIAL.get
    for sow in sections:
        for el in sow:
            if el.tag.__class__ is not str:
                continue  # a comment
            tags: list[str | None] = []
            add = tags.append
            entry = SowEntry(el, len(entries), tags, None, None)
            name = message_type = None
            for child in el:  # one dictionary look-up per child: this loop sees every child of every entry
                tag = child.tag
                what = special(tag)
                if what is None:
                    if tag.__class__ is str:
                        add(tag)
                        values[tag].append((entry, child))
                    else:
                        add(None)  # a comment or PI
                elif what is _KEY:
                    add(tag)
                elif what is _NAME:
                    add(tag)
                    if name is None:
                        name = child.text or ""
                elif what is _MESSAGE_TYPE:
                    add(tag)
                    if message_type is None:
                        message_type = child.text or ""
                else:  # a synonym: Topic for Name, Duration for Durability
                    entry.legacy_children = True
                    tag = ENTRY_SYNONYMS[tag]
                    add(tag)
                    if tag == "Name":
                        if name is None:
                            name = child.text or ""
                    else:
                        values[tag].append((entry, child))
            if name is not None:
                entry.name = name.strip()
            if message_type is not None:
                entry.message_type = message_type.strip()
            entries.append(entry)
    return entries, dict(values)

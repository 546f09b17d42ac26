"""A read-only view of an expanded config tree that rules query.

It resolves the documented synonyms (spec/config.md §1.3) once, so a rule asks for
``Name`` and gets ``<Topic>`` when a legacy file spells it that way, and it indexes what
many rules need (SOW entries, transaction-log coverage, message types, modules, actions).
Everything is computed on first use: a rule that is not selected costs nothing.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

import regex
from lxml import etree

from ampsctl.config.loader import LoadedConfig

DEFAULT_MESSAGE_TYPES = frozenset({"fix", "nvfix", "xml", "json", "msgpack", "bson", "bflat", "binary"})
REGEX_CHARS = frozenset(".^$*+?()[]{}|\\")
_REGEX_CHAR = re.compile(r"[.^$*+?()\[\]{}|\\]")

TOP_SYNONYMS = {"TopicMetaData": "SOW"}
SOW_SYNONYMS = {
    "TopicDefinition": "Topic",
    "QueueDefinition": "Queue",
    "ViewDefinition": "View",
    "ReplicaDefinition": "ConflatedTopic",
}
ENTRY_SYNONYMS = {"Topic": "Name", "Duration": "Durability"}
_ENTRY_SYNONYM_TAGS = ENTRY_SYNONYMS.keys()
TXLOG_SYNONYMS = {"MinJournalSize": "JournalSize"}
QUEUE_KINDS = frozenset({"Queue", "LocalQueue", "GroupLocalQueue"})
# Elements that rules look for anywhere in the tree, not only where the schema puts them. One
# walk collects all of them: a walk over a big config costs about as much whatever it looks for.
DESCENDANT_TAGS = frozenset({
    "Module", "Entitlement",
    "Filter", "Field", "Join", "Condition", "BarrierExpression", "Priority", "DataFilter",  # expressions
})
T = TypeVar("T")


def has_regex_chars(text: str) -> bool:
    return _REGEX_CHAR.search(text) is not None


def regex_error(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid PCRE-style regex, or None when it compiles."""
    try:
        regex.compile(pattern)
    except regex.error as exc:
        return str(exc)
    return None


def topic_matches(pattern: str, topic: str) -> bool:
    """AMPS topic matching: a literal compares equal, a regex is an unanchored search."""
    if not has_regex_chars(pattern):
        return pattern == topic
    try:
        return regex.search(pattern, topic, timeout=0.5) is not None
    except (regex.error, TimeoutError):
        return False


# A Section's children by name: one element, or a list when there are several (most names
# occur once, and hundreds of thousands of one-element lists are measurably slow to make and free).
_Children = dict[str, "etree._Element | list[etree._Element]"]


def _group_children(el: etree._Element) -> _Children:
    """``el``'s child elements by tag, in file order (comments and PIs skipped).

    This runs for every SOW entry (hundreds of thousands of children in a big run), hence the
    plain loop; synonyms are resolved afterwards, and only for an element that uses one.
    """
    children: _Children = {}
    for child in el:
        tag = child.tag
        if tag.__class__ is str:  # a comment's or PI's tag is a function
            found = children.get(tag)
            if found is None:
                children[tag] = child
            elif found.__class__ is list:
                found.append(child)
            else:
                children[tag] = [found, child]
    return children


def _group_canonical(el: etree._Element, synonyms: dict[str, str]) -> _Children:
    """Like ``_group_children``, with each synonym in its canonical name's group (file order kept)."""
    children: dict[str, list[etree._Element]] = {}
    for child in el:
        tag = child.tag
        if tag.__class__ is str:
            children.setdefault(synonyms.get(tag, tag), []).append(child)
    return {name: found if len(found) > 1 else found[0] for name, found in children.items()}


class Section:
    """An element whose children are looked up by canonical name."""

    __slots__ = ("el", "_children")

    def __init__(self, el: etree._Element, synonyms: dict[str, str] | None = None) -> None:
        self.el = el
        children = _group_children(el)
        if synonyms and not synonyms.keys().isdisjoint(children):
            children = _group_canonical(el, synonyms)
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
    """One definition in the SOW section: a topic, queue, view or conflated topic."""

    # Read once, as rules ask for them on every entry: the tag as spelled, the kind (the tag
    # with synonyms resolved), whether a child is spelled with a synonym (Topic for Name,
    # Duration for Durability), the texts of the first Name and MessageType (None when absent).
    __slots__ = ("tag", "kind", "order", "legacy_children", "name", "message_type")

    def __init__(self, el: etree._Element, order: int) -> None:
        self.el = el
        children = _group_children(el)
        self.legacy_children = not _ENTRY_SYNONYM_TAGS.isdisjoint(children)
        self._children = children = _group_canonical(el, ENTRY_SYNONYMS) if self.legacy_children else children
        self.tag = tag = el.tag
        self.kind = SOW_SYNONYMS.get(tag, tag)
        self.order = order
        found = children.get("Name")  # what first() does, inline: this runs for every entry
        if found.__class__ is list:
            found = found[0]  # type: ignore[index]
        self.name = (found.text or "").strip() if found is not None else None  # type: ignore[union-attr]
        found = children.get("MessageType")
        if found.__class__ is list:
            found = found[0]  # type: ignore[index]
        self.message_type = (found.text or "").strip() if found is not None else None  # type: ignore[union-attr]

    @property
    def is_queue(self) -> bool:
        return self.kind in QUEUE_KINDS

    def label(self) -> str:
        return f"{self.kind} '{self.name or '?'}'"


@dataclass(frozen=True, slots=True)
class Step:
    """One On, If or Do step of an action."""

    role: str  # "On", "If" or "Do"
    el: etree._Element
    module: str | None
    options: Section | None


@dataclass(frozen=True, slots=True)
class Action:
    el: etree._Element
    steps: tuple[Step, ...]

    def role(self, role: str) -> list[Step]:
        return [s for s in self.steps if s.role == role]


@dataclass
class _SowIndex:
    """The SOW entries, and the lookups nearly every config needs, built in one pass."""

    entries: list[SowEntry]
    by_kind: dict[str, list[SowEntry]]
    by_name: dict[str, list[SowEntry]]  # non-empty Names only
    unnamed: list[SowEntry]
    repeated: list[str]  # Names of more than one entry
    topics_by_child: dict[str, list[SowEntry]]  # child name (synonyms resolved) -> the topics with one
    topics_by_type: dict[str | None, list[SowEntry]]
    legacy: list[SowEntry]  # spelled with a synonym: the entry's tag or one of its children

    @classmethod
    def build(cls, sections: list[etree._Element]) -> _SowIndex:
        entries: list[SowEntry] = []
        unnamed: list[SowEntry] = []
        repeated: list[str] = []
        legacy: list[SowEntry] = []
        by_kind: defaultdict[str, list[SowEntry]] = defaultdict(list)
        by_name: defaultdict[str, list[SowEntry]] = defaultdict(list)
        by_child: defaultdict[str, list[SowEntry]] = defaultdict(list)
        by_type: defaultdict[str | None, list[SowEntry]] = defaultdict(list)
        for sow in sections:
            for el in sow:
                if el.tag.__class__ is not str:
                    continue  # a comment
                entry = SowEntry(el, len(entries))
                entries.append(entry)
                by_kind[entry.kind].append(entry)
                if entry.name:
                    named = by_name[entry.name]
                    if len(named) == 1:
                        repeated.append(entry.name)
                    named.append(entry)
                else:
                    unnamed.append(entry)
                if entry.kind == "Topic":
                    by_type[entry.message_type].append(entry)
                    for name in entry._children:
                        by_child[name].append(entry)
                if entry.legacy_children or entry.kind != entry.tag:
                    legacy.append(entry)
        return cls(entries, dict(by_kind), dict(by_name), unnamed, repeated, dict(by_child), dict(by_type), legacy)


class ConfigModel:
    """What the rules see: the loaded config plus indexes built on demand."""

    def __init__(self, config: LoadedConfig) -> None:
        self.config = config
        self.root = Section(config.root, TOP_SYNONYMS)
        self._shared: dict[Callable[[ConfigModel], object], object] = {}
        self._child_texts: dict[tuple[str, str, bool], dict[str, list[tuple[SowEntry, etree._Element]]]] = {}

    def shared(self, build: Callable[[ConfigModel], T]) -> T:
        """``build(self)``, computed once per model: rules share derived indexes this way."""
        if build not in self._shared:
            self._shared[build] = build(self)
        return self._shared[build]  # type: ignore[return-value]

    @property
    def instance_name(self) -> str | None:
        return self.root.text("Name")

    @cached_property
    def _sow(self) -> _SowIndex:
        return _SowIndex.build(self.root.all("SOW"))

    @property
    def sow_entries(self) -> list[SowEntry]:
        return self._sow.entries

    def entries(self, *kinds: str) -> list[SowEntry]:
        """The SOW entries of these kinds, in file order."""
        groups = [self._sow.by_kind.get(kind, ()) for kind in kinds]
        if len(groups) == 1:
            return list(groups[0])
        return sorted((entry for group in groups for entry in group), key=lambda entry: entry.order)

    @cached_property
    def topics(self) -> list[SowEntry]:
        return self.entries("Topic")

    def topics_with(self, *names: str) -> list[SowEntry]:
        """The SOW topics that have a child called one of ``names`` (synonyms resolved), in file order.

        Most topic rules are about an optional element (History, RecoveryPoint, SlabSize...):
        this index spares each of them a pass over every topic.
        """
        by_child = self._sow.topics_by_child
        if len(names) == 1:
            return by_child.get(names[0], [])
        found = {topic for name in names for topic in by_child.get(name, ())}
        return sorted(found, key=lambda topic: topic.order)

    def entries_except(self, kind: str) -> list[SowEntry]:
        """The SOW entries of every other kind, in file order (queues, views... without the topics)."""
        others = (e for other, group in self._sow.by_kind.items() if other != kind for e in group)
        return sorted(others, key=lambda entry: entry.order)

    def entries_with(self, name: str) -> list[SowEntry]:
        """The SOW entries of any kind that have a child called ``name``, in file order."""
        others = [e for e in self.entries_except("Topic") if name in e._children]
        topics = self.topics_with(name)
        return sorted(topics + others, key=lambda entry: entry.order) if others else topics

    def topics_without(self, name: str) -> list[SowEntry]:
        """The SOW topics that have no child called ``name`` (synonyms resolved), in file order."""
        if len(self.topics_with(name)) == len(self.topics):
            return []  # the usual case for a required element, found without a pass over the topics
        return [topic for topic in self.topics if name not in topic._children]

    def child_texts(self, name: str, kind: str = "Topic", *, first_only: bool = False) -> dict[str, list[tuple[SowEntry, etree._Element]]]:
        """Every ``name`` child (synonyms resolved) of the SOW entries of ``kind``, by stripped text;
        with ``first_only`` just the first one of each entry (the one ``Section.text`` reads).

        Each group holds (entry, element) pairs in file order. Configs repeat a few values over
        hundreds of topics (``transient``, ``./sow/%n.sow``), so a rule that checks values checks
        each distinct one once this way. Built on first use, and shared.
        """
        found = self._child_texts.get((name, kind, first_only))
        if found is not None:
            return found
        if first_only:
            every = self.child_texts(name, kind)
            if (name, kind, True) in self._child_texts:  # no entry has two: the same groups
                return every
            found = {}
            for text, pairs in every.items():
                firsts = [(entry, el) for entry, el in pairs if entry.first(name) is el]
                if firsts:
                    found[text] = firsts
        else:
            found = {}
            repeated = False
            holders = self.topics_with(name) if kind == "Topic" else [e for e in self.entries(kind) if name in e._children]
            for entry in holders:
                elements = entry._children[name]
                if elements.__class__ is list:
                    repeated = True
                else:
                    elements = (elements,)
                for el in elements:
                    text = (el.text or "").strip()
                    group = found.get(text)
                    if group is None:
                        found[text] = [(entry, el)]
                    else:
                        group.append((entry, el))
            if not repeated:
                self._child_texts[(name, kind, True)] = found
        self._child_texts[(name, kind, first_only)] = found
        return found

    @property
    def topics_by_type(self) -> dict[str | None, list[SowEntry]]:
        """SOW topics by MessageType text (None: no MessageType), in file order."""
        return self._sow.topics_by_type

    @cached_property
    def _descendants(self) -> dict[str, list[etree._Element]]:
        found: dict[str, list[etree._Element]] = {tag: [] for tag in DESCENDANT_TAGS}
        for el in self.config.root.iter(*DESCENDANT_TAGS):
            found[el.tag].append(el)
        return found

    def descendants(self, tag: str) -> list[etree._Element]:
        """Every element called ``tag`` anywhere in the tree, in document order."""
        found = self._descendants.get(tag) if tag in DESCENDANT_TAGS else None
        return found if found is not None else list(self.config.root.iter(tag))

    @cached_property
    def queues(self) -> list[SowEntry]:
        return self.entries(*QUEUE_KINDS)

    @property
    def legacy_entries(self) -> list[SowEntry]:
        """SOW entries spelled with a legacy synonym (TopicDefinition, or a child like Duration), in file order."""
        return self._sow.legacy

    @property
    def entries_by_name(self) -> dict[str, list[SowEntry]]:
        """SOW entries of every kind by (non-empty) Name, in file order."""
        return self._sow.by_name

    @property
    def unnamed_entries(self) -> list[SowEntry]:
        """SOW entries of every kind without a Name, or with an empty one, in file order."""
        return self._sow.unnamed

    @property
    def repeated_names(self) -> list[str]:
        """The Names that more than one SOW entry has (of any kind), in order of the second one."""
        return self._sow.repeated

    @cached_property
    def txlog(self) -> Section | None:
        el = self.root.first("TransactionLog")
        return Section(el, TXLOG_SYNONYMS) if el is not None else None

    @cached_property
    def txlog_topics(self) -> list[tuple[str, str | None, etree._Element]]:
        """(name or regex, message type, element) for each TransactionLog/Topic."""
        covered = []
        for txlog in self.txlog_sections:
            for topic in txlog.all("Topic"):
                name = mtype = None  # the first of each; hundreds of topics, hence no Section
                for child in topic:
                    tag = child.tag
                    if tag == "Name":
                        if name is None:
                            name = (child.text or "").strip()
                    elif tag == "MessageType" and mtype is None:
                        mtype = (child.text or "").strip()
                covered.append((name or "", mtype, topic))
        return covered

    @cached_property
    def txlog_index(self) -> tuple[dict[str, list[tuple[str | None, etree._Element]]], list[tuple[str, str | None, etree._Element]]]:
        """TransactionLog/Topic entries split into literal names, ``name -> [(message type, element)]``,
        and regular expressions, ``[(regex, message type, element)]``, in file order."""
        literal: dict[str, list[tuple[str | None, etree._Element]]] = {}
        patterns: list[tuple[str, str | None, etree._Element]] = []
        topics = self.txlog_topics
        any_regex = has_regex_chars("\n".join(name for name, _, _ in topics))  # one search: most logs name topics literally
        for name, mtype, el in topics:
            if any_regex and has_regex_chars(name):
                patterns.append((name, mtype, el))
            else:
                group = literal.get(name)
                if group is None:
                    literal[name] = [(mtype, el)]
                else:
                    group.append((mtype, el))
        return literal, patterns

    def txlog_covers(self, topic: str, message_type: str | None = None) -> bool:
        """Is a literal topic recorded in the transaction log (for this message type)?"""
        literal, patterns = self.txlog_index
        for mtype, _ in literal.get(topic, ()):
            if message_type is None or mtype is None or mtype == message_type:
                return True
        return any(
            (message_type is None or mtype is None or mtype == message_type) and topic_matches(name, topic)
            for name, mtype, _ in patterns
        )

    @cached_property
    def message_types(self) -> set[str]:
        declared = {
            (Section(mt).text("Name") or "")
            for section in self.root.all("MessageTypes")
            for mt in section
            if isinstance(mt.tag, str)
        }
        return set(DEFAULT_MESSAGE_TYPES) | (declared - {""})

    @cached_property
    def modules(self) -> dict[str, etree._Element]:
        found: dict[str, etree._Element] = {}
        for section in self.root.all("Modules"):
            for module in Section(section).all("Module"):
                name = Section(module).text("Name")
                if name:
                    found.setdefault(name, module)
        return found

    @cached_property
    def transports(self) -> list[Section]:
        return [Section(t) for section in self.root.all("Transports") for t in Section(section).all("Transport")]

    @cached_property
    def actions(self) -> list[Action]:
        actions = []
        for section in self.root.all("Actions"):
            for action in Section(section).all("Action"):
                steps = []
                for child in action:
                    if child.tag in ("On", "If", "Do"):
                        step = Section(child)
                        options = step.first("Options")
                        steps.append(Step(child.tag, child, step.text("Module"), Section(options) if options is not None else None))
                actions.append(Action(action, tuple(steps)))
        return actions

    # Indexes that several rule modules share (each built on first use, like those above).

    @cached_property
    def views(self) -> list[SowEntry]:
        return self.entries("View")

    @cached_property
    def conflated_topics(self) -> list[SowEntry]:
        return self.entries("ConflatedTopic")

    @cached_property
    def pattern_topics(self) -> list[SowEntry]:
        """The regular expression SOW topics: those with a non-empty Pattern, in file order."""
        return [topic for topic in self.topics_with("Pattern") if topic.text("Pattern")]

    @cached_property
    def message_type_modules(self) -> dict[str, str]:
        """Message type name -> the module that implements it (a type's behaviour comes from its module).

        A default type is its own module; a declared type maps to its Module, or to itself (or
        the default it redefines) without one. When a Name is declared twice (MT-006) the first
        declaration with a Module wins.
        """
        modules = {name: name for name in DEFAULT_MESSAGE_TYPES}
        with_module: set[str] = set()
        for section in self.root.all("MessageTypes"):
            for mt in Section(section).all("MessageType"):
                declared = Section(mt)
                name = declared.text("Name")
                if not name:
                    continue
                module = declared.text("Module")
                if module and name not in with_module:
                    modules[name] = module
                    with_module.add(name)
                else:
                    modules.setdefault(name, name)
        return modules

    @cached_property
    def sow_files(self) -> dict[str, list[SowEntry]]:
        """The SOW file of each persistent topic whose file is known: path -> the topics that
        store their SOW in it, in definition order (the paths come in no particular order).

        ``%n`` in FileName expands to ``<name>.<message type>``; paths are normalised
        (``./sow//a`` -> ``sow/a``). A transient topic, a FileName still holding ``${VAR}``, or
        ``%n`` without a name and message type leaves the topic out.
        """
        transient = {topic for topic, _ in self.child_texts("Durability", first_only=True).get("transient", ())}
        files: dict[str, list[SowEntry]] = {}
        shared = []
        for path, holders in self.child_texts("FileName", first_only=True).items():  # few distinct FileNames
            if not path or "${" in path:
                continue
            template = posixpath.normpath(path)
            expands = "%n" in path
            for topic, _ in holders:
                if topic in transient:
                    continue
                if expands:
                    if not topic.name or not topic.message_type:
                        continue
                    value = f"{topic.name}.{topic.message_type}"
                    # Within one path segment (no '/'), and never '.' or '..' (it holds a dot between
                    # two non-empty parts), the value cannot change how the path normalises.
                    file = template.replace("%n", value) if "/" not in value else posixpath.normpath(path.replace("%n", value))
                else:
                    file = template
                owners = files.get(file)
                if owners is None:
                    files[file] = [topic]
                else:
                    owners.append(topic)
                    shared.append(owners)
        for owners in shared:  # topics of different FileName spellings: back in definition order
            owners.sort(key=lambda topic: topic.order)
        return files

    @cached_property
    def txlog_sections(self) -> list[Section]:
        """Every TransactionLog element (a repeated one is GEN-004's), synonyms resolved."""
        return [Section(el, TXLOG_SYNONYMS) for el in self.root.all("TransactionLog")]

    @cached_property
    def replication_destinations(self) -> list[Section]:
        return [Section(el) for section in self.root.all("Replication") for el in Section(section).all("Destination")]

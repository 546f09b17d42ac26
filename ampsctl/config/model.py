"""A read-only view of an expanded config tree that rules query.

It resolves the documented synonyms (spec/config.md §1.3) once, so a rule asks for
``Name`` and gets ``<Topic>`` when a legacy file spells it that way, and it indexes what
many rules need (SOW entries, transaction-log coverage, message types, modules, actions).
Everything is computed on first use: a rule that is not selected costs nothing.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, TypeVar

from lxml import etree

from ampsctl.config.loader import LoadedConfig
from ampsctl.config.sow_index import ENTRY_SYNONYMS, QUEUE_KINDS, SOW_SYNONYMS, UNKEPT, Section, SowEntry, ValueChildren, read_entries

DEFAULT_MESSAGE_TYPES = frozenset({"fix", "nvfix", "xml", "json", "msgpack", "bson", "bflat", "binary"})
REGEX_CHARS = frozenset(".^$*+?()[]{}|\\")
_REGEX_CHAR = re.compile(r"[.^$*+?()\[\]{}|\\]")

TOP_SYNONYMS = {"TopicMetaData": "SOW"}
TXLOG_SYNONYMS = {"MinJournalSize": "JournalSize"}
# Elements that rules look for anywhere in the tree, not only where the schema puts them. One
# walk collects all of them: a walk over a big config costs about as much whatever it looks for.
DESCENDANT_TAGS = frozenset({
    "Module", "Entitlement",
    "Filter", "Field", "Join", "Condition", "BarrierExpression", "Priority", "DataFilter",  # expressions
})
T = TypeVar("T")


def has_regex_chars(text: str) -> bool:
    return _REGEX_CHAR.search(text) is not None


@lru_cache(maxsize=16_384)  # rules ask again for the same patterns (Q-003 once per pair)
def regex_problem(pattern: str) -> tuple[str, str | None] | None:
    """(why, a hint or None) when ``pattern`` is not a topic regex ampsctl runs, else None. The
    checks and flags are LIKE's (``filter.regexes.pattern_problem``: PCRE's syntax, ASCII
    classes; valid patterns that would take the regex package gigabytes are refused), so a SOW
    Pattern, a subscription and the linter agree on what a regex matches."""
    from ampsctl.filter.regexes import pattern_problem  # imports regex (~10 ms): only configs with a regex pay

    return pattern_problem(pattern)


def regex_error(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid topic regex (``regex_problem``), or None."""
    found = regex_problem(pattern)
    return None if found is None else found[0]


def topic_matches(pattern: str, topic: str) -> bool:
    """AMPS topic matching: a literal compares equal, a regex is an unanchored search."""
    if not has_regex_chars(pattern):
        return pattern == topic
    compiled = compiled_regex(pattern)
    if compiled is None or pattern in _UNSEARCHABLE:
        return False
    try:
        return compiled.search(topic, timeout=0.5) is not None
    except (TimeoutError, RecursionError):
        _UNSEARCHABLE.add(pattern)  # one timeout per pattern, not 0.5 s for every topic
        return False


_UNSEARCHABLE: set[str] = set()  # patterns whose search timed out or recursed too deeply


@lru_cache(maxsize=16_384)  # the regex package's own cache holds a few hundred: a config
def compiled_regex(pattern: str) -> Any:  # with more patterns compiled them again on every search
    """``pattern`` compiled once, as LIKE compiles it; None when it is refused (``regex_problem``)."""
    from ampsctl.filter.regexes import compile_pattern

    return None if regex_problem(pattern) is not None else compile_pattern(pattern)


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
    topics_by_child: dict[str, list[SowEntry]]  # child name (synonyms resolved) -> the topics with one; filled on demand
    topics_by_type: dict[str | None, list[SowEntry]]
    legacy: list[SowEntry]  # spelled with a synonym: the entry's tag or one of its children
    values: ValueChildren  # canonical tag -> (entry, element) of every child not in UNKEPT, in file order

    @classmethod
    def build(cls, sections: list[etree._Element]) -> _SowIndex:
        entries, values = read_entries(sections)
        unnamed: list[SowEntry] = []
        repeated: list[str] = []
        legacy: list[SowEntry] = []
        by_kind: dict[str, list[SowEntry]] = {}
        by_name: dict[str, list[SowEntry]] = {}
        by_type: dict[str | None, list[SowEntry]] = {}
        for entry in entries:
            kind = entry.kind
            group = by_kind.get(kind)
            if group is None:
                by_kind[kind] = [entry]
            else:
                group.append(entry)
            name = entry.name
            if name:
                named = by_name.get(name)
                if named is None:
                    by_name[name] = [entry]
                else:
                    if len(named) == 1:
                        repeated.append(name)
                    named.append(entry)
            else:
                unnamed.append(entry)
            if kind == "Topic":
                group = by_type.get(entry.message_type)
                if group is None:
                    by_type[entry.message_type] = [entry]
                else:
                    group.append(entry)
            if entry.legacy_children or kind != entry.tag:
                legacy.append(entry)
        return cls(entries, by_kind, by_name, unnamed, repeated, {}, by_type, legacy, values)


def join_values(root: etree._Element) -> None:
    """Give each value element its whole text: a comment or processing instruction inside a
    value (``<Name>a<!-- x -->b</Name>``) leaves lxml's ``.text`` with the part before it, and
    every reader of a value (rules, broker, simulator) would see ``a``; AMPS and the XSD read
    ``ab``. The text after each such node moves into the element's text; the node stays."""
    for node in root.iter(etree.Comment, etree.ProcessingInstruction):
        tail = node.tail
        parent = node.getparent()
        if tail is None or parent is None or next(parent.iterchildren(tag=etree.Element), None) is not None:
            continue  # text beside child elements is not a value (the XSD reports it)
        parent.text = (parent.text or "") + tail
        node.tail = None


class ConfigModel:
    """What the rules see: the loaded config plus indexes built on demand."""

    def __init__(self, config: LoadedConfig) -> None:
        self.config = config
        join_values(config.root)
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
        if len(names) == 1:
            return self._topics_with(names[0])
        found = {topic for name in names for topic in self._topics_with(name)}
        return sorted(found, key=lambda topic: topic.order)

    def _topics_with(self, name: str) -> list[SowEntry]:
        by_child = self._sow.topics_by_child
        found = by_child.get(name)
        if found is None:
            if name in UNKEPT:
                found = [topic for topic in self.topics if name in topic.tags]
            else:  # from the children collected while reading the entries: no pass over the topics
                found = []
                for entry, _ in self._sow.values.get(name, ()):
                    if entry.kind == "Topic" and (not found or found[-1] is not entry):
                        found.append(entry)
            by_child[name] = found
        return found

    def entries_except(self, kind: str) -> list[SowEntry]:
        """The SOW entries of every other kind, in file order (queues, views... without the topics)."""
        others = (e for other, group in self._sow.by_kind.items() if other != kind for e in group)
        return sorted(others, key=lambda entry: entry.order)

    def entries_with(self, name: str) -> list[SowEntry]:
        """The SOW entries of any kind that have a child called ``name``, in file order."""
        others = [e for e in self.entries_except("Topic") if name in e.tags]
        topics = self.topics_with(name)
        return sorted(topics + others, key=lambda entry: entry.order) if others else topics

    def topics_without(self, name: str) -> list[SowEntry]:
        """The SOW topics that have no child called ``name`` (synonyms resolved), in file order."""
        if len(self.topics_with(name)) == len(self.topics):
            return []  # the usual case for a required element, found without a pass over the topics
        return [topic for topic in self.topics if name not in topic.tags]

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
            previous = None
            for entry, el in self._children_named(name, kind):
                if entry is previous:
                    repeated = True
                previous = entry
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

    def _children_named(self, name: str, kind: str) -> list[tuple[SowEntry, etree._Element]]:
        """(entry, element) of every ``name`` child of the entries of ``kind``, in file order."""
        if name not in UNKEPT:
            pairs = self._sow.values.get(name, [])
            return pairs if kind == "Topic" and len(self.topics_with(name)) == len(pairs) else [p for p in pairs if p[0].kind == kind]
        holders = self.topics_with(name) if kind == "Topic" else [e for e in self.entries(kind) if name in e.tags]
        return [(entry, el) for entry in holders for el in entry.all(name)]

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

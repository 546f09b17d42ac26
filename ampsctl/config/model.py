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
TXLOG_SYNONYMS = {"MinJournalSize": "JournalSize"}
QUEUE_KINDS = frozenset({"Queue", "LocalQueue", "GroupLocalQueue"})
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


class Section:
    """An element whose children are looked up by canonical name."""

    __slots__ = ("el", "_children")

    def __init__(self, el: etree._Element, synonyms: dict[str, str] | None = None) -> None:
        self.el = el
        children: dict[str, list[etree._Element]] = {}
        for child in el:
            tag = child.tag
            if isinstance(tag, str):
                children.setdefault(synonyms.get(tag, tag) if synonyms else tag, []).append(child)
        self._children = children

    @property
    def tag(self) -> str:
        return self.el.tag

    def all(self, name: str) -> list[etree._Element]:
        return self._children.get(name, [])

    def first(self, name: str) -> etree._Element | None:
        found = self._children.get(name)
        return found[0] if found else None

    def has(self, name: str) -> bool:
        return name in self._children

    def text(self, name: str) -> str | None:
        """Stripped text of the first child called ``name``; None when absent."""
        found = self._children.get(name)
        return (found[0].text or "").strip() if found else None

    def names(self) -> list[str]:
        return list(self._children)


class SowEntry(Section):
    """One definition in the SOW section: a topic, queue, view or conflated topic."""

    __slots__ = ("kind", "order", "_name", "_message_type")

    def __init__(self, el: etree._Element, order: int) -> None:
        super().__init__(el, ENTRY_SYNONYMS)
        self.kind = SOW_SYNONYMS.get(el.tag, el.tag)
        self.order = order
        # Read once: rules ask for these on every entry, many times over.
        self._name = self.text("Name")
        self._message_type = self.text("MessageType")

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def message_type(self) -> str | None:
        return self._message_type

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


class ConfigModel:
    """What the rules see: the loaded config plus indexes built on demand."""

    def __init__(self, config: LoadedConfig) -> None:
        self.config = config
        self.root = Section(config.root, TOP_SYNONYMS)
        self._shared: dict[Callable[[ConfigModel], object], object] = {}

    def shared(self, build: Callable[[ConfigModel], T]) -> T:
        """``build(self)``, computed once per model: rules share derived indexes this way."""
        if build not in self._shared:
            self._shared[build] = build(self)
        return self._shared[build]  # type: ignore[return-value]

    @property
    def instance_name(self) -> str | None:
        return self.root.text("Name")

    @cached_property
    def sow_entries(self) -> list[SowEntry]:
        entries = []
        for sow in self.root.all("SOW"):
            for child in sow:
                if isinstance(child.tag, str):
                    entries.append(SowEntry(child, len(entries)))
        return entries

    def entries(self, *kinds: str) -> list[SowEntry]:
        return [e for e in self.sow_entries if e.kind in kinds]

    @cached_property
    def topics(self) -> list[SowEntry]:
        return self.entries("Topic")

    @cached_property
    def _topics_by_child(self) -> dict[str, list[SowEntry]]:
        index: dict[str, list[SowEntry]] = {}
        for topic in self.topics:
            for name in topic._children:
                index.setdefault(name, []).append(topic)
        return index

    def topics_with(self, *names: str) -> list[SowEntry]:
        """The SOW topics that have a child called one of ``names`` (synonyms resolved), in file order.

        Most topic rules are about an optional element (History, RecoveryPoint, SlabSize...):
        this index spares each of them a pass over every topic.
        """
        if len(names) == 1:
            return self._topics_by_child.get(names[0], [])
        found = {topic for name in names for topic in self._topics_by_child.get(name, ())}
        return sorted(found, key=lambda topic: topic.order)

    @cached_property
    def queues(self) -> list[SowEntry]:
        return self.entries(*QUEUE_KINDS)

    @cached_property
    def entries_by_name(self) -> dict[str, list[SowEntry]]:
        index: dict[str, list[SowEntry]] = {}
        for entry in self.sow_entries:
            if entry.name:
                index.setdefault(entry.name, []).append(entry)
        return index

    @cached_property
    def txlog(self) -> Section | None:
        el = self.root.first("TransactionLog")
        return Section(el, TXLOG_SYNONYMS) if el is not None else None

    @cached_property
    def txlog_topics(self) -> list[tuple[str, str | None, etree._Element]]:
        """(name or regex, message type, element) for each TransactionLog/Topic."""
        covered = []
        for txlog in self.root.all("TransactionLog"):
            for topic in Section(txlog, TXLOG_SYNONYMS).all("Topic"):
                section = Section(topic)
                covered.append((section.text("Name") or "", section.text("MessageType"), topic))
        return covered

    @cached_property
    def _txlog_index(self) -> tuple[dict[str, set[str | None]], list[tuple[str, str | None]]]:
        literal: dict[str, set[str | None]] = {}
        patterns: list[tuple[str, str | None]] = []
        for name, mtype, _ in self.txlog_topics:
            if has_regex_chars(name):
                patterns.append((name, mtype))
            else:
                literal.setdefault(name, set()).add(mtype)
        return literal, patterns

    def txlog_covers(self, topic: str, message_type: str | None = None) -> bool:
        """Is a literal topic recorded in the transaction log (for this message type)?"""
        literal, patterns = self._txlog_index

        def fits(mtype: str | None) -> bool:
            return message_type is None or mtype is None or mtype == message_type

        if any(fits(m) for m in literal.get(topic, ())):
            return True
        return any(fits(mtype) and topic_matches(name, topic) for name, mtype in patterns)

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
    def sow_files(self) -> list[tuple[SowEntry, str]]:
        """(persistent SOW topic, its file) in definition order, for every topic whose file is known.

        ``%n`` in FileName expands to ``<name>.<message type>``; paths are normalised
        (``./sow//a`` -> ``sow/a``). A transient topic, a FileName still holding ``${VAR}``, or
        ``%n`` without a name and message type leaves the topic out.
        """
        files = []
        for topic in self.topics:
            if topic.text("Durability") == "transient":
                continue
            path = topic.text("FileName")
            if not path or "${" in path:
                continue
            if "%n" in path:
                if not topic.name or not topic.message_type:
                    continue
                path = path.replace("%n", f"{topic.name}.{topic.message_type}")
            files.append((topic, posixpath.normpath(path)))
        return files

    @cached_property
    def txlog_sections(self) -> list[Section]:
        """Every TransactionLog element (a repeated one is GEN-004's), synonyms resolved."""
        return [Section(el, TXLOG_SYNONYMS) for el in self.root.all("TransactionLog")]

    @cached_property
    def replication_destinations(self) -> list[Section]:
        return [Section(el) for section in self.root.all("Replication") for el in Section(section).all("Destination")]

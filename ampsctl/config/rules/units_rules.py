"""Value-format rules (UNIT-001..006): spec/config.md §3 and the limits of §8.

One table, ``value_types.VALUE_TYPES``, says which elements hold an interval, a byte size, a count,
a flag (with its documented spelling), a percentage or an octal mask, for every section
of spec §1.2, §2.1, §2.3, §2.4, §4.x and TransactionLog. Paths use the canonical element
names; the walk resolves the documented synonyms (TopicMetaData, TopicDefinition,
MinJournalSize, ...) on the way down and only visits elements the table names.

Ownership, so that each bad value is reported once:
- Queue/LocalQueue/GroupLocalQueue children are not in the table: Q-022 checks them.
- SOW Topic ``Expiration`` and ``History/Window``/``Granularity`` are checked for validity by
  SOWT-011 and SOWT-021 (their grammar is the section rule itself); UNIT-002 still warns
  about undocumented interval spellings there.
- View ``JoinNullEquivalency`` is an enum owned by VW-008; FIX separators by MT-007.
- Limits owned by section rules (SOWT-017/018, Q-010, CT-005, TXL-004, ADM-001) are not in
  UNIT-006; what remains is ``Tuning/Queue/QueueDeliveryFlushInterval`` >= 1us.
- An invalid flag word (e.g. ``yes``) is left to the schema (XSD-002 lists the accepted words).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, SowEntry
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.common import FALSE_WORDS, TRUE_WORDS
from ampsctl.config.rules.value_types import SYNONYMS_UNDER, VALUE_TYPES, Kind, ValueType
from ampsctl.errors import UnitError
from ampsctl.units import format_interval, parse_bytes, parse_count, parse_interval


_PERCENT = re.compile(r"[0-9]+(\.[0-9]+)?%")
_OCTAL = re.compile(r"0[0-7]{3}")
_LIST_SPLIT = re.compile(r"\s*[,;]\s*|\s+")
_OFF_WORDS = frozenset({"false", "0", "no", "off", "none"})


class _Node:
    __slots__ = ("value_type", "children", "synonyms", "path", "tags")

    def __init__(self, path: str) -> None:
        self.path = path
        self.value_type: ValueType | None = None
        self.children: dict[str, _Node] = {}
        self.synonyms: dict[str, str] = SYNONYMS_UNDER.get(path, {})
        self.tags: tuple[str, ...] = ()  # the child tags to look at, synonyms included


def _build_tree() -> _Node:
    root = _Node("")
    for path, value_type in VALUE_TYPES.items():
        node = root
        for part in path.split("/"):
            child = node.children.get(part)
            if child is None:
                child = node.children[part] = _Node(f"{node.path}/{part}" if node.path else part)
            node = child
        node.value_type = value_type
    nodes = [root]
    while nodes:
        node = nodes.pop()
        node.tags = (*node.children, *(tag for tag, canonical in node.synonyms.items() if canonical in node.children))
        nodes.extend(node.children.values())
    return root


_TREE = _build_tree()
_SOW_NODE = _TREE.children["SOW"]


# Where an element is, e.g. ("Topic 'orders'",), or a function that works it out: most values
# are never reported, so their place is not worth naming up front.
_Where = tuple[str, ...] | Callable[[], tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class _Value:
    el: etree._Element
    value_type: ValueType
    text: str
    where: _Where

    @property
    def subject(self) -> str:
        """``<SlabSize> in Topic 'orders'``: how a message names the element."""
        where = _place(self.where)
        return f"<{self.el.tag}> in {'/'.join(where)}" if where else f"<{self.el.tag}>"


def _place(where: _Where) -> tuple[str, ...]:
    return where() if callable(where) else where


@dataclass(slots=True)
class _Group:
    """The typed values with one value type and text: the rules check each group once."""

    value_type: ValueType
    text: str
    found: list[_Value] | Callable[[], list[_Value]]  # or a function that lists them, when they are many

    def values(self) -> list[_Value]:
        return self.found() if callable(self.found) else self.found


def _first_child(el: etree._Element, tag: str) -> etree._Element | None:
    return next(el.iterchildren(tag), None)  # el.find(tag), at half the cost


def _name_of(el: etree._Element) -> str | None:
    name = _first_child(el, "Name")
    text = (name.text or "").strip() if name is not None else ""
    return text or None


def _entry_name(entry: SowEntry) -> str | None:
    """A SOW entry's <Name>, else its legacy <Topic> (even when that comes first)."""
    spelled = entry.all("Name")  # <Name> and <Topic>, in file order
    if not spelled:
        return None
    name = spelled[0]
    if name.tag != "Name":  # a legacy <Topic> first: a later <Name> still wins
        name = next((el for el in spelled if el.tag == "Name"), name)
    return (name.text or "").strip() or None


def _typed_values(model: ConfigModel) -> list[_Group]:
    """Every element the table types, grouped by value type and text: one walk per config
    that the six UNIT rules share."""
    return model.shared(_collect_typed_values)


def _collect_typed_values(model: ConfigModel) -> list[_Group]:
    return [*_collect_groups(_walk_typed_values(model)), *_sow_entry_values(model)]


_Pending = list[tuple[etree._Element, _Node, _Where]]  # elements still to walk, with their place


def _walk_typed_values(model: ConfigModel) -> Iterator[_Value]:
    """Walk the tree along the table, outside the SOW entries (``_sow_entry_values``)."""
    pending: _Pending = []
    for child in model.root.el:
        tag = child.tag
        if not isinstance(tag, str):
            continue
        sub = _TREE.children.get(_TREE.synonyms.get(tag, tag))
        if sub is not None and sub is not _SOW_NODE:
            yield from _visit(child, sub, (), pending)
    yield from _walk(pending)


def _sow_entry_values(model: ConfigModel) -> Iterator[_Group]:
    """The typed children of SOW entries. There are hundreds of entries per config, so they are
    not walked: the model's index of their children by text gives each group directly."""
    sow_where = {}
    for sow in model.root.all("SOW"):
        name = _name_of(sow)
        sow_where[sow] = (f"SOW '{name}'",) if name else ("SOW",)

    def where(entry: SowEntry) -> tuple[str, ...]:
        name = _entry_name(entry)
        return (f"{entry.kind} '{name}'",) if name else (*sow_where[entry.el.getparent()], entry.kind)

    for kind, node in _SOW_NODE.children.items():
        for canonical, sub in node.children.items():
            found = model.child_texts(canonical, kind)
            if sub.value_type is not None:
                for text, pairs in found.items():
                    if "${" not in text:  # an undefined variable is GEN-007
                        yield _Group(sub.value_type, text, partial(_leaf_values, pairs, sub.value_type, text, where))
            if sub.children:  # deeper values (History/Window...) are rare: walked as elsewhere
                pending: _Pending = []
                for pairs in found.values():
                    for entry, el in pairs:
                        pending.append((el, sub, partial(_nested_place, el, canonical, partial(where, entry))))
                yield from _collect_groups(_walk(pending))


def _leaf_values(
    pairs: list[tuple[SowEntry, etree._Element]], value_type: ValueType, text: str, where: Callable[[SowEntry], tuple[str, ...]]
) -> list[_Value]:
    """The values among SOW entry children with one text (an element with child elements has no value)."""
    return [
        _Value(el, value_type, text, partial(where, entry))
        for entry, el in pairs
        if len(el) == 0 or not any(isinstance(c.tag, str) for c in el)
    ]


def _collect_groups(values: Iterator[_Value]) -> list[_Group]:
    """Values grouped by value type and text, for the walks that list them one by one."""
    groups: dict[tuple[int, str], _Group] = {}
    for value in values:
        key = (id(value.value_type), value.text)
        group = groups.get(key)
        if group is None:
            groups[key] = _Group(value.value_type, value.text, [value])
        else:
            group.values().append(value)
    return list(groups.values())


def _walk(pending: _Pending) -> Iterator[_Value]:
    """The typed values below the pending elements."""
    while pending:
        el, node, where = pending.pop()
        for child in el.iterchildren(*node.tags):  # only the tags the table names (not every txlog Topic)
            tag = child.tag
            yield from _visit(child, node.children[node.synonyms.get(tag, tag)], where, pending)


def _visit(el: etree._Element, node: _Node, where: _Where, pending: _Pending) -> Iterator[_Value]:
    """The value of ``el`` if the table types it; ``el`` is queued when the table goes deeper."""
    if node.value_type is not None and (len(el) == 0 or not any(isinstance(c.tag, str) for c in el)):
        text = (el.text or "").strip()
        if "${" not in text:  # an undefined variable is GEN-007
            yield _Value(el, node.value_type, text, where)
    if node.children:
        pending.append((el, node, partial(_nested_place, el, node.path.rsplit("/", 1)[-1], where)))


def _nested_place(el: etree._Element, canonical: str, where: _Where) -> tuple[str, ...]:
    """Where the values below ``el`` are: ``el`` by its Name, else ``el`` inside ``where``."""
    name = _name_of(el)
    return (f"{canonical} '{name}'",) if name else (*_place(where), canonical)


def _reports(model: ConfigModel, check: Callable[[ValueType, str], tuple[str, str | None] | None]) -> Iterator[Issue]:
    """``check`` each group once; a (detail, hint) it returns is reported for every element of
    the group, as "<subject><detail>"."""
    for group in _typed_values(model):
        found = check(group.value_type, group.text)
        if found is not None:
            detail, hint = found
            for value in group.values():
                yield Issue(value.el, f"{value.subject}{detail}", hint)


def _interval_text(nanos: int) -> str:
    return "0s" if nanos == 0 else format_interval(nanos)


def _intervals(value_type: ValueType, text: str) -> list[str]:
    if value_type.kind is Kind.INTERVAL_LIST:
        return [part for part in _LIST_SPLIT.split(text) if part] or [""]
    return [text]


# ---------------------------------------------------------------------------------------
# rules
# ---------------------------------------------------------------------------------------


@rule(
    "UNIT-001", "unit-invalid-value", Severity.ERROR,
    "An interval, count, percentage or octal mask is not written in its documented form.",
    description="Intervals are a number and a unit: `ns`, `us`, `ms`, `s`, `m` (minutes), `h`, `d` or `w` "
    "(`250us`, `30s`, `1d`). Counts are whole numbers, percentages look like `50%`, file masks are four "
    "octal digits (`0640`). Which elements hold which type is one table in ampsctl "
    "(`ampsctl.config.rules.value_types.VALUE_TYPES`). Queue values are Q-022's; SOW Topic Expiration "
    "and History intervals are SOWT-011/SOWT-021's.",
    source="spec/config.md §3.1, §3.3, §3.4",
    bad="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <FlushInterval>100 msec</FlushInterval>
  </TransactionLog>""",
    good="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <FlushInterval>100ms</FlushInterval>
  </TransactionLog>""",
)
def invalid_value(model: ConfigModel) -> Iterator[Issue]:
    return _reports(model, _invalid_value)


def _invalid_value(value_type: ValueType, text: str) -> tuple[str, str | None] | None:
    kind = value_type.kind
    if text in value_type.words:
        return None
    if kind in (Kind.INTERVAL, Kind.INTERVAL_LIST):
        if value_type.owner:
            return None
        for part in _intervals(value_type, text):
            try:
                parse_interval(part)
            except UnitError as exc:
                return f": {exc.message if part else 'the interval is empty'}", exc.hint
    elif kind is Kind.COUNT:
        try:
            parse_count(text)
        except UnitError as exc:
            return f": {exc.message}", exc.hint
    elif kind is Kind.PERCENT and not _PERCENT.fullmatch(text):
        number = text.rstrip("% ")
        hint = f"write {number}%" if re.fullmatch(r"[0-9]+(\.[0-9]+)?", number) else "write a percentage such as 50%"
        return f": '{text}' is not a percentage", hint
    elif kind is Kind.OCTAL and not _OCTAL.fullmatch(text):
        hint = f"write 0{text}" if re.fullmatch(r"[0-7]{3}", text) else "write four octal digits, e.g. 0640"
        return f": '{text}' is not a 4-digit octal file mask", hint
    return None


@rule(
    "UNIT-002", "unit-undocumented-interval", Severity.WARNING,
    "An interval is written without a unit, with a fraction, or with an upper-case unit.",
    description="AMPS documents intervals as a whole number followed by a lower-case unit. Whether it accepts "
    "`30` (and in which unit), `1.5s` or `30S` is not documented; ampsctl reads a bare number as seconds "
    "and the others as written, and suggests the documented spelling of the same duration.",
    source="spec/config.md §3.1, §11 q4",
    bad="""  <Admin>
    <InetAddr>8085</InetAddr>
    <Interval>10</Interval>
  </Admin>""",
    good="""  <Admin>
    <InetAddr>8085</InetAddr>
    <Interval>10s</Interval>
  </Admin>""",
)
def undocumented_interval(model: ConfigModel) -> Iterator[Issue]:
    return _reports(model, _undocumented_interval)


def _undocumented_interval(value_type: ValueType, text: str) -> tuple[str, str | None] | None:
    if value_type.kind not in (Kind.INTERVAL, Kind.INTERVAL_LIST) or text in value_type.words:
        return None
    for part in _intervals(value_type, text):
        try:
            interval = parse_interval(part)
        except UnitError:
            continue  # UNIT-001 (or the owning section rule)
        if interval.undocumented:
            return f": '{part}' {interval.undocumented}", f"write {_interval_text(interval.nanos)}"
    return None


@rule(
    "UNIT-003", "unit-invalid-byte-size", Severity.ERROR,
    "A byte size is not a number with an optional k/m/g/t (B) suffix, or uses IEC units (KiB, MiB).",
    description="AMPS sizes are written like `5MB`, `1GB`, `2G` or `1000000`; the B is optional and case "
    "varies in the documentation. IEC units such as `MiB` are not documented.",
    source="spec/config.md §3.2",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <SlabSize>8MiB</SlabSize>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <SlabSize>8MB</SlabSize>
    </Topic>
  </SOW>""",
)
def invalid_byte_size(model: ConfigModel) -> Iterator[Issue]:
    return _reports(model, _invalid_byte_size)


def _invalid_byte_size(value_type: ValueType, text: str) -> tuple[str, str | None] | None:
    if value_type.kind is not Kind.BYTES:
        return None
    try:
        parse_bytes(text)
    except UnitError as exc:
        return f": {exc.message if text else 'the size is empty'}", exc.hint
    return None


@rule(
    "UNIT-004", "unit-count-exponent", Severity.WARNING,
    "A count is written with a k/M exponent suffix (e.g. 10k).",
    description="The AMPS documentation mentions `k` (10^3) and `M` (10^6) exponent units for plain numbers "
    "but never says which elements accept them. Write the digits to be sure the value is read as meant.",
    source="spec/config.md §3.3, §11 q6",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <ExpectedKeyCountHint>1M</ExpectedKeyCountHint>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <ExpectedKeyCountHint>1048576</ExpectedKeyCountHint>
    </Topic>
  </SOW>""",
)
def count_exponent(model: ConfigModel) -> Iterator[Issue]:
    return _reports(model, _count_exponent)


def _count_exponent(value_type: ValueType, text: str) -> tuple[str, str | None] | None:
    if value_type.kind is not Kind.COUNT:
        return None
    try:
        count = parse_count(text)
    except UnitError:
        return None  # UNIT-001
    if count.undocumented:
        return f": '{text}' {count.undocumented}", f"write {count.value}"
    return None


@rule(
    "UNIT-005", "unit-flag-spelling", Severity.INFO,
    "An on/off value is spelled differently from the documentation for that element.",
    description="Depending on the element, the documentation writes flags as `enabled`/`disabled` (O_DIRECT, "
    "InitialState, NUMA, ...), `true`/`false` (RegexTopicSupport, AllowSpoofing, ...) or `True`/`False` "
    "(VerifyClient, Override). Whether AMPS accepts the other spellings is not documented, so ampsctl "
    "suggests the documented one. `MiniDumpDirectory` is a directory unless it is exactly `disabled`: "
    "`false` there would be read as a directory name.",
    source="spec/config.md §3.5, §11 q7",
    bad="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <O_DIRECT>true</O_DIRECT>
  </TransactionLog>""",
    good="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <O_DIRECT>enabled</O_DIRECT>
  </TransactionLog>""",
)
def flag_spelling(model: ConfigModel) -> Iterator[Issue]:
    return _reports(model, _flag_spelling)


def _flag_spelling(value_type: ValueType, text: str) -> tuple[str, str | None] | None:
    kind = value_type.kind
    if kind is Kind.FLAG and value_type.flag and text not in value_type.flag:
        on, off = value_type.flag
        if text in TRUE_WORDS:
            return f": '{text}' is documented as {on} for this element", f"write {on}"
        if text in FALSE_WORDS:
            return f": '{text}' is documented as {off} for this element", f"write {off}"
    elif kind is Kind.PATH_OR_DISABLED and text != "disabled" and text.lower() in _OFF_WORDS | {"disabled"}:
        return f": '{text}' would be read as a directory name; only 'disabled' turns minidumps off", "write disabled"
    return None


@rule(
    "UNIT-006", "unit-limit", Severity.ERROR,
    "A value is outside a documented minimum or maximum that no section rule checks.",
    description="Spec §8 collects the documented limits. Most belong to a section rule (SOWT-017/018, "
    "Q-010, CT-005, TXL-004, ADM-001); UNIT-006 checks the rest: "
    "`Tuning/Queue/QueueDeliveryFlushInterval` must be at least 1us.",
    source="spec/config.md §4.9, §8",
    bad="""  <Tuning>
    <Queue><QueueDeliveryFlushInterval>0us</QueueDeliveryFlushInterval></Queue>
  </Tuning>""",
    good="""  <Tuning>
    <Queue><QueueDeliveryFlushInterval>250us</QueueDeliveryFlushInterval></Queue>
  </Tuning>""",
)
def limit(model: ConfigModel) -> Iterator[Issue]:
    return _reports(model, _limit)


def _limit(value_type: ValueType, text: str) -> tuple[str, str | None] | None:
    minimum = value_type.min_nanos
    if minimum is None or value_type.kind is not Kind.INTERVAL:
        return None
    try:
        interval = parse_interval(text)
    except UnitError:
        return None  # UNIT-001
    if interval.nanos < minimum:
        return (
            f" is {text}, below the documented minimum of {_interval_text(minimum)}",
            f"use at least {_interval_text(minimum)}",
        )
    return None

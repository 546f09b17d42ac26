"""Value-format rules (UNIT-001..006): spec/config.md §3 and the limits of §8.

One table, ``VALUE_TYPES``, says which elements hold an interval, a byte size, a count,
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
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import ENTRY_SYNONYMS, SOW_SYNONYMS, TOP_SYNONYMS, TXLOG_SYNONYMS, ConfigModel, SowEntry
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.common import FALSE_WORDS, TRUE_WORDS
from ampsctl.errors import UnitError
from ampsctl.units import format_interval, parse_bytes, parse_count, parse_interval


class Kind(Enum):
    INTERVAL = "interval"
    INTERVAL_LIST = "interval list"
    BYTES = "byte size"
    COUNT = "count"
    FLAG = "flag"
    PERCENT = "percentage"
    OCTAL = "octal mask"
    PATH_OR_DISABLED = "path or disabled"


@dataclass(frozen=True, slots=True)
class ValueType:
    kind: Kind
    words: tuple[str, ...] = ()  # special values accepted besides the grammar
    flag: tuple[str, str] | None = None  # documented (on, off) spelling of a flag
    min_nanos: int | None = None  # documented minimum of an interval (UNIT-006)
    owner: str | None = None  # rule that reports an invalid value instead of UNIT-001


INTERVAL = ValueType(Kind.INTERVAL)
INTERVAL_LIST = ValueType(Kind.INTERVAL_LIST)
BYTES = ValueType(Kind.BYTES)
COUNT = ValueType(Kind.COUNT)
PERCENT = ValueType(Kind.PERCENT)
OCTAL = ValueType(Kind.OCTAL)
ENABLED = ValueType(Kind.FLAG, flag=("enabled", "disabled"))
TRUE = ValueType(Kind.FLAG, flag=("true", "false"))
TRUE_CAPS = ValueType(Kind.FLAG, flag=("True", "False"))

_AUTH_BLOCKS = (
    "Authentication",
    "Entitlement",
    "Transports/Transport/Authentication",
    "Transports/Transport/Entitlement",
    "Admin/Authentication",
    "Admin/Entitlement",
    "Replication/Destination/Transport/Authenticator",
    "Modules/Module",
)
# Options of the shipped authentication/entitlement/authenticator modules (spec §4.8).
_AUTH_OPTIONS = {
    "AllowSpoofing": TRUE,
    "RequireLogon": TRUE,
    "RequireUsername": TRUE,
    "AllowUnverifiedPeer": TRUE,
    "RetryCount": COUNT,
    "MaxLength": COUNT,
}

VALUE_TYPES: dict[str, ValueType] = {
    # §1.2 AMPSConfig
    "ConfigIncludeCommentDefault": TRUE,
    "ConfigCycleDetectionThreshold": BYTES,
    "ConfigValidation": ENABLED,
    "MessageMemoryLimit": BYTES,
    "MessageDiskLimit": BYTES,
    "ClientMessageAgeLimit": INTERVAL,
    "ClientMaxCapacity": PERCENT,
    "MiniDumpDirectory": ValueType(Kind.PATH_OR_DISABLED, words=("disabled",)),
    "MiniDumpFileMask": OCTAL,
    "SOWStatsInterval": INTERVAL,
    "SOWStatisticsInterval": INTERVAL,
    "RegexTopicSupport": TRUE,
    # §2.1 SOW/Topic
    "SOW/Topic/Expiration": ValueType(Kind.INTERVAL, words=("enabled", "disabled"), owner="SOWT-011"),
    "SOW/Topic/SlabSize": BYTES,
    "SOW/Topic/InitialSlabCount": COUNT,
    "SOW/Topic/RecordSize": BYTES,
    "SOW/Topic/InitialSize": COUNT,
    "SOW/Topic/IncrementSize": COUNT,
    "SOW/Topic/ExpectedKeyCountHint": COUNT,
    "SOW/Topic/History/Window": ValueType(Kind.INTERVAL, owner="SOWT-021"),
    "SOW/Topic/History/Granularity": ValueType(Kind.INTERVAL, owner="SOWT-021"),
    "SOW/Topic/KeyGenerator/Options/Validation": TRUE,
    # §2.3 SOW/View: JoinNullEquivalency is VW-008's enum; nothing else is typed.
    # §2.4 SOW/ConflatedTopic
    "SOW/ConflatedTopic/Interval": INTERVAL,
    # §4.1 Protocols and Transports
    "Protocols/Protocol/TrustedAdmin": ENABLED,
    "Transports/Transport/InitialState": ENABLED,
    "Transports/Transport/MessageMemoryLimit": BYTES,
    "Transports/Transport/MessageDiskLimit": BYTES,
    "Transports/Transport/ClientMessageAgeLimit": INTERVAL,
    "Transports/Transport/ClientMaxCapacity": PERCENT,
    "Transports/Transport/VerifyClient": TRUE_CAPS,
    "Transports/Transport/FileMask": OCTAL,
    "Transports/Transport/PerMessageDeflate": ENABLED,
    "Transports/Transport/TransportFilter/Options/Override": TRUE_CAPS,
    # §4.2 MessageTypes (separators: MT-007)
    "MessageTypes/MessageType/EarlyTerminationOptimization": TRUE,
    # §4.3 TransactionLog (limits: TXL-004)
    "TransactionLog/PreallocatedJournalFiles": COUNT,
    "TransactionLog/JournalSize": BYTES,
    "TransactionLog/FlushInterval": INTERVAL,
    "TransactionLog/O_DIRECT": ENABLED,
    "TransactionLog/InactiveClientAckExpiration": INTERVAL,
    "TransactionLog/CompressedJournalCacheMemoryLimit": BYTES,
    # §4.4 Logging
    "Logging/Target/RotationThreshold": BYTES,
    # §4.5 Modules and UserDefinedFunctions
    "Modules/Module/Options/Override": TRUE_CAPS,
    "Modules/Module/Options/Validation": TRUE,
    "UserDefinedFunctions/Function/ParameterCount": COUNT,
    # §4.6 Admin (limit: ADM-001)
    "Admin/Interval": INTERVAL,
    "Admin/Galvanometer": ENABLED,
    # §4.7 Replication
    "Replication/Destination/AckConflationInterval": INTERVAL,
    "Replication/Destination/Transport/ReconnectTimeout": INTERVAL_LIST,
    "Replication/Destination/Transport/VerifyClient": TRUE_CAPS,
    # §4.8 module options
    **{f"{block}/Options/{option}": kind for block in _AUTH_BLOCKS for option, kind in _AUTH_OPTIONS.items()},
    # §4.9 Tuning
    "Tuning/NUMA/Enabled": ENABLED,
    "Tuning/Replication/MinSyncDestinations": COUNT,
    "Tuning/Queue/QueueDeliveryFlushInterval": ValueType(Kind.INTERVAL, min_nanos=1_000),
    "Tuning/Admin/Statistics/Indexing/Enabled": ENABLED,
}

# Synonyms resolved under each path (spec §1.3).
_SYNONYMS_UNDER = {
    "": TOP_SYNONYMS,
    "SOW": SOW_SYNONYMS,
    "SOW/Topic": ENTRY_SYNONYMS,
    "SOW/View": ENTRY_SYNONYMS,
    "SOW/ConflatedTopic": ENTRY_SYNONYMS,
    "TransactionLog": TXLOG_SYNONYMS,
}
_PERCENT = re.compile(r"[0-9]+(\.[0-9]+)?%")
_OCTAL = re.compile(r"0[0-7]{3}")
_LIST_SPLIT = re.compile(r"\s*[,;]\s*|\s+")
_OFF_WORDS = frozenset({"false", "0", "no", "off", "none"})


class _Node:
    __slots__ = ("value_type", "children", "synonyms", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self.value_type: ValueType | None = None
        self.children: dict[str, _Node] = {}
        self.synonyms: dict[str, str] = _SYNONYMS_UNDER.get(path, {})


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
    return root


_TREE = _build_tree()
_SOW_NODE = _TREE.children["SOW"]


@dataclass(frozen=True, slots=True)
class _Value:
    el: etree._Element
    value_type: ValueType
    text: str
    subject: str  # "<SlabSize> in Topic 'orders'"


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


def _typed_values(model: ConfigModel) -> tuple[_Value, ...]:
    """Every element the table types, with its value and a readable place: one walk per config
    that the six UNIT rules share."""
    return model.shared(_collect_typed_values)


def _collect_typed_values(model: ConfigModel) -> tuple[_Value, ...]:
    return tuple(_walk_typed_values(model))


_Pending = list[tuple[etree._Element, _Node, tuple[str, ...]]]  # elements still to walk, with their place


def _walk_typed_values(model: ConfigModel) -> Iterator[_Value]:
    """Walk the tree along the table. SOW entries (hundreds per config) are not scanned child
    by child: the model's sections of them are asked for the names the table types."""
    sow_where: dict[etree._Element, tuple[str, ...]] = {}
    pending: _Pending = []
    for child in model.root.el:
        tag = child.tag
        if not isinstance(tag, str):
            continue
        sub = _TREE.children.get(_TREE.synonyms.get(tag, tag))
        if sub is _SOW_NODE:
            name = _name_of(child)
            sow_where[child] = (f"SOW '{name}'",) if name else ("SOW",)
        elif sub is not None:
            yield from _visit(child, sub, (), pending)
    yield from _walk(pending)
    for entry in model.sow_entries:
        node = _SOW_NODE.children.get(entry.kind)
        if node is None:
            continue
        name = _entry_name(entry)
        where = (f"{entry.kind} '{name}'",) if name else (*sow_where[entry.el.getparent()], entry.kind)
        for canonical in entry.names():
            sub = node.children.get(canonical)
            if sub is not None:
                for child in entry.all(canonical):
                    yield from _visit(child, sub, where, pending)
        yield from _walk(pending)


def _walk(pending: _Pending) -> Iterator[_Value]:
    """The typed values below the pending elements."""
    while pending:
        el, node, where = pending.pop()
        for child in el:
            tag = child.tag
            if isinstance(tag, str):
                sub = node.children.get(node.synonyms.get(tag, tag))
                if sub is not None:
                    yield from _visit(child, sub, where, pending)


def _visit(el: etree._Element, node: _Node, where: tuple[str, ...], pending: _Pending) -> Iterator[_Value]:
    """The value of ``el`` if the table types it; ``el`` is queued when the table goes deeper."""
    if node.value_type is not None and (len(el) == 0 or not any(isinstance(c.tag, str) for c in el)):
        text = (el.text or "").strip()
        if "${" not in text:  # an undefined variable is GEN-007
            subject = f"<{el.tag}> in {'/'.join(where)}" if where else f"<{el.tag}>"
            yield _Value(el, node.value_type, text, subject)
    if node.children:
        canonical = node.path.rsplit("/", 1)[-1]
        name = _name_of(el)
        pending.append((el, node, (f"{canonical} '{name}'",) if name else (*where, canonical)))


def _interval_text(nanos: int) -> str:
    return "0s" if nanos == 0 else format_interval(nanos)


def _intervals(value: _Value) -> list[str]:
    if value.value_type.kind is Kind.INTERVAL_LIST:
        return [part for part in _LIST_SPLIT.split(value.text) if part] or [""]
    return [value.text]


# ---------------------------------------------------------------------------------------
# rules
# ---------------------------------------------------------------------------------------


@rule(
    "UNIT-001", "unit-invalid-value", Severity.ERROR,
    "An interval, count, percentage or octal mask is not written in its documented form.",
    description="Intervals are a number and a unit: `ns`, `us`, `ms`, `s`, `m` (minutes), `h`, `d` or `w` "
    "(`250us`, `30s`, `1d`). Counts are whole numbers, percentages look like `50%`, file masks are four "
    "octal digits (`0640`). Which elements hold which type is one table in ampsctl "
    "(`ampsctl.config.rules.units_rules.VALUE_TYPES`). Queue values are Q-022's; SOW Topic Expiration "
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
    for value in _typed_values(model):
        kind = value.value_type.kind
        if value.text in value.value_type.words:
            continue
        if kind in (Kind.INTERVAL, Kind.INTERVAL_LIST):
            if value.value_type.owner:
                continue
            for part in _intervals(value):
                try:
                    parse_interval(part)
                except UnitError as exc:
                    yield Issue(value.el, f"{value.subject}: {exc.message if part else 'the interval is empty'}", exc.hint)
                    break
        elif kind is Kind.COUNT:
            try:
                parse_count(value.text)
            except UnitError as exc:
                yield Issue(value.el, f"{value.subject}: {exc.message}", exc.hint)
        elif kind is Kind.PERCENT and not _PERCENT.fullmatch(value.text):
            number = value.text.rstrip("% ")
            hint = f"write {number}%" if re.fullmatch(r"[0-9]+(\.[0-9]+)?", number) else "write a percentage such as 50%"
            yield Issue(value.el, f"{value.subject}: '{value.text}' is not a percentage", hint)
        elif kind is Kind.OCTAL and not _OCTAL.fullmatch(value.text):
            hint = f"write 0{value.text}" if re.fullmatch(r"[0-7]{3}", value.text) else "write four octal digits, e.g. 0640"
            yield Issue(value.el, f"{value.subject}: '{value.text}' is not a 4-digit octal file mask", hint)


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
    for value in _typed_values(model):
        if value.value_type.kind not in (Kind.INTERVAL, Kind.INTERVAL_LIST) or value.text in value.value_type.words:
            continue
        for part in _intervals(value):
            try:
                interval = parse_interval(part)
            except UnitError:
                continue  # UNIT-001 (or the owning section rule)
            if interval.undocumented:
                yield Issue(
                    value.el,
                    f"{value.subject}: '{part}' {interval.undocumented}",
                    f"write {_interval_text(interval.nanos)}",
                )
                break


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
    for value in _typed_values(model):
        if value.value_type.kind is not Kind.BYTES:
            continue
        try:
            parse_bytes(value.text)
        except UnitError as exc:
            yield Issue(value.el, f"{value.subject}: {exc.message if value.text else 'the size is empty'}", exc.hint)


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
    for value in _typed_values(model):
        if value.value_type.kind is not Kind.COUNT:
            continue
        try:
            count = parse_count(value.text)
        except UnitError:
            continue  # UNIT-001
        if count.undocumented:
            yield Issue(value.el, f"{value.subject}: '{value.text}' {count.undocumented}", f"write {count.value}")


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
    for value in _typed_values(model):
        kind = value.value_type.kind
        if kind is Kind.FLAG and value.value_type.flag and value.text not in value.value_type.flag:
            on, off = value.value_type.flag
            if value.text in TRUE_WORDS:
                yield Issue(value.el, f"{value.subject}: '{value.text}' is documented as {on} for this element", f"write {on}")
            elif value.text in FALSE_WORDS:
                yield Issue(value.el, f"{value.subject}: '{value.text}' is documented as {off} for this element", f"write {off}")
        elif kind is Kind.PATH_OR_DISABLED and value.text != "disabled" and value.text.lower() in _OFF_WORDS | {"disabled"}:
            yield Issue(
                value.el,
                f"{value.subject}: '{value.text}' would be read as a directory name; only 'disabled' turns minidumps off",
                "write disabled",
            )


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
    for value in _typed_values(model):
        minimum = value.value_type.min_nanos
        if minimum is None or value.value_type.kind is not Kind.INTERVAL:
            continue
        try:
            interval = parse_interval(value.text)
        except UnitError:
            continue  # UNIT-001
        if interval.nanos < minimum:
            yield Issue(
                value.el,
                f"{value.subject} is {value.text}, below the documented minimum of {_interval_text(minimum)}",
                f"use at least {_interval_text(minimum)}",
            )

"""General rules that apply to the whole file: spec/config.md §1.4 (GEN-002..005, GEN-009..012).

GEN-001, GEN-006, GEN-007 and GEN-008 are reported while loading and schema-checking
(rules/loading.py). Synonyms follow spec/config.md §1.3; the model resolves them, the rules
here look at the raw tags because their subject is the spelling itself.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import SOW_SYNONYMS, ConfigModel
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.common import line_of
from ampsctl.config.rules.expr_tokens import blank_strings

_INSTANCE_NAME_BAD = re.compile(r"[\s/\\$~]")
_ENTRY_TAGS = frozenset({"Topic", "Queue", "LocalQueue", "GroupLocalQueue", "View", "ConflatedTopic", *SOW_SYNONYMS})
# Elements whose text AMPS parses as an expression (filter, field constructor, join, condition).
_EXPRESSION_TAGS = ("Filter", "Field", "Join", "Condition", "BarrierExpression", "Priority", "DataFilter")
_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|apos|#[0-9]+|#[xX][0-9A-Fa-f]+);")
_DEPRECATED_MODULES = {"amps-action-do-vacuum-statistics": "amps-action-do-truncate-statistics"}
_RESERVED_PREFIX = "/AMPS/"
_ENTRY_SYNONYM_PAIRS = (("Name", "Topic"),)  # (canonical, synonym) spellings in a SOW entry
_TOPIC_SYNONYM_PAIRS = (("Name", "Topic"), ("Durability", "Duration"))


def _children(el: etree._Element) -> Iterator[etree._Element]:
    return (child for child in el if isinstance(child.tag, str))


def _entry_label(entry: etree._Element) -> str:
    kind = SOW_SYNONYMS.get(entry.tag, entry.tag)
    name = entry.find("Name")
    if name is None:
        name = entry.find("Topic")
    return f"{kind} '{(name.text or '').strip() if name is not None else '?'}'"


@dataclass(frozen=True, slots=True)
class _Synonym:
    """An element spelled with a legacy synonym (``el.tag``) of ``canonical``."""

    el: etree._Element
    canonical: str
    conflict: str | None  # where the canonical spelling is present too (GEN-005); None: legacy only (GEN-010)


def _first(elements: list[etree._Element], tag: str) -> etree._Element | None:
    for el in elements:
        if el.tag == tag:
            return el
    return None


def _synonyms(model: ConfigModel) -> list[_Synonym]:
    """Every legacy spelling in the file, found in one walk for GEN-005 and GEN-010.

    The model's sections already group a synonym with its canonical element (``Topic`` is
    filed under ``Name``), so the raw tags in one group say which spellings are present.
    """
    found: list[_Synonym] = []
    sections = model.root.all("SOW")  # <SOW> and <TopicMetaData>, in file order
    legacy = [el for el in sections if el.tag == "TopicMetaData"]
    if legacy and _first(sections, "SOW") is not None:
        found.append(_Synonym(legacy[0], "SOW", "<AMPSConfig>"))
    else:
        found.extend(_Synonym(el, "SOW", None) for el in legacy)
    for entry in model.legacy_entries:  # most entries use no synonym
        tag = entry.tag
        if tag not in _ENTRY_TAGS:
            continue
        if tag in SOW_SYNONYMS:
            found.append(_Synonym(entry.el, SOW_SYNONYMS[tag], None))
        for canonical, synonym in _TOPIC_SYNONYM_PAIRS if entry.kind == "Topic" else _ENTRY_SYNONYM_PAIRS:
            spelled = entry.all(canonical)
            old = _first(spelled, synonym)
            if old is not None:
                both = _first(spelled, canonical) is not None
                found.append(_Synonym(old, canonical, _entry_label(entry.el) if both else None))
    for txlog in model.txlog_sections:
        spelled = txlog.all("JournalSize")
        old = _first(spelled, "MinJournalSize")
        if old is not None:
            both = _first(spelled, "JournalSize") is not None
            found.append(_Synonym(old, "JournalSize", "<TransactionLog>" if both else None))
    for block in model.descendants("Entitlement"):
        options = block.find("Options")
        if options is not None and options.find("CredentialStore") is not None and options.find("ResourceURI") is not None:
            found.append(_Synonym(options.find("ResourceURI"), "CredentialStore", "an <Entitlement> block"))
    return found


# ---------------------------------------------------------------------------------------
# GEN-002 / GEN-003: the instance name
# ---------------------------------------------------------------------------------------


@rule(
    "GEN-002", "instance-name-required", Severity.ERROR,
    "The instance needs a non-empty <Name>.",
    description="`AMPSConfig/Name` is the only mandatory element of an AMPS configuration: it names the "
    "instance in logs, in journal file names and in replication, where every instance must have a unique name.",
    source="spec/config.md §1.2",
    bad="""<AMPSConfig>
  <Transports/>
</AMPSConfig>""",
    good="""<AMPSConfig>
  <Name>amps-ny-1</Name>
</AMPSConfig>""",
)
def instance_name_required(model: ConfigModel) -> Iterator[Issue]:
    names = model.root.all("Name")
    if not names:
        yield Issue(model.root.el, "the instance has no <Name>", "add <Name>your-instance-name</Name> under <AMPSConfig>", at_text=False)
        return
    if not (names[0].text or "").strip():
        yield Issue(names[0], "the instance <Name> is empty", "write a unique instance name, e.g. <Name>amps-ny-1</Name>", at_text=False)


@rule(
    "GEN-003", "instance-name-characters", Severity.WARNING,
    "The instance Name or Group contains a space, '/', '\\', '$' or '~'.",
    description="AMPS uses the instance name (and group) in journal file names and replication client names; "
    "60East advises against spaces, `/`, `\\`, `$` and `~` in them. A value that still holds an unexpanded "
    "`${VAR}` is left to GEN-007.",
    source="spec/config.md §1.2 [D-INST]",
    bad="""<AMPSConfig>
  <Name>amps ny/1</Name>
</AMPSConfig>""",
    good="""<AMPSConfig>
  <Name>amps-ny-1</Name>
</AMPSConfig>""",
)
def instance_name_characters(model: ConfigModel) -> Iterator[Issue]:
    for tag in ("Name", "Group"):
        for el in model.root.all(tag):
            value = (el.text or "").strip()
            if not value or "${" in value:
                continue
            bad = sorted({ch for ch in value if _INSTANCE_NAME_BAD.match(ch)})
            if bad:
                shown = ", ".join("a space" if ch.isspace() else f"'{ch}'" for ch in bad)
                suggestion = re.sub(r"[\s/\\$~]+", "-", value).strip("-") or "amps-1"
                yield Issue(el, f"the instance <{tag}> '{value}' contains {shown}", f"use letters, digits, '-' or '_', e.g. {suggestion}")


# ---------------------------------------------------------------------------------------
# GEN-004 / GEN-005: repeated sections and canonical + synonym pairs
# ---------------------------------------------------------------------------------------


@rule(
    "GEN-004", "duplicate-section", Severity.WARNING,
    "A top-level element (SOW, Transports, Logging, ...) appears more than once.",
    description="The AMPS documentation never says whether two `<SOW>` or two `<Transports>` blocks are merged, "
    "rejected, or whether the later one wins. Every top-level element is reported from its second "
    "occurrence on; merge the blocks into one. (`SOW` next to its synonym `TopicMetaData` is GEN-005.)",
    source="spec/config.md §1.2, §11 q8",
    bad="""  <Logging>
    <Target><Protocol>stdout</Protocol><Level>info</Level></Target>
  </Logging>
  <Logging>
    <Target><Protocol>stderr</Protocol><Level>error</Level></Target>
  </Logging>""",
    good="""  <Logging>
    <Target><Protocol>stdout</Protocol><Level>info</Level></Target>
    <Target><Protocol>stderr</Protocol><Level>error</Level></Target>
  </Logging>""",
)
def duplicate_section(model: ConfigModel) -> Iterator[Issue]:
    first: dict[str, etree._Element] = {}
    for el in _children(model.root.el):
        if el.tag in first:
            yield Issue(
                el,
                f"<{el.tag}> appears more than once (first on line {line_of(model, first[el.tag], el)})",
                f"merge the content into the first <{el.tag}>; AMPS does not document how repeated sections combine",
                at_text=False,
            )
        else:
            first[el.tag] = el


@rule(
    "GEN-005", "synonym-conflict", Severity.ERROR,
    "An element and its legacy synonym are both present in the same parent.",
    description="AMPS documents each synonym (`Topic` for `Name`, `Duration` for `Durability`, `TopicMetaData` "
    "for `SOW`, `MinJournalSize` for `JournalSize`, `ResourceURI` for `CredentialStore` in entitlement "
    "options) only for the case where the canonical element is absent, so which value wins when both are "
    "written is undefined. Durability versus Duration decides whether the topic survives a restart and is an "
    "error; the other pairs are warnings.",
    source="spec/config.md §1.3, seed 001",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Durability>transient</Durability>
      <Duration>persistent</Duration>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Durability>transient</Durability>
    </Topic>
  </SOW>""",
)
def synonym_conflict(model: ConfigModel) -> Iterator[Issue]:
    for found in model.shared(_synonyms):
        if found.conflict is None:
            continue
        canonical, synonym = found.canonical, found.el.tag
        yield Issue(
            found.el,
            f"{found.conflict} has both <{canonical}> and its synonym <{synonym}>; AMPS reads <{synonym}> only when <{canonical}> is absent",
            f"keep one of them: delete <{synonym}> (and put its value in <{canonical}> if that is the one you meant)",
            at_text=False,
            severity=None if canonical == "Durability" else Severity.WARNING,
        )


# ---------------------------------------------------------------------------------------
# GEN-009: expressions escaped twice
# ---------------------------------------------------------------------------------------


@rule(
    "GEN-009", "expression-double-escaped", Severity.WARNING,
    "An expression still contains an XML escape such as '&lt;' after XML parsing (escaped twice).",
    description="A raw `<` or `&` in a filter, field, join or condition makes the file malformed (GEN-001), so "
    "the parser already enforces escaping. The trap that survives parsing is escaping twice: `&lt;` "
    "inside a CDATA section, or `&amp;lt;` in element text, reaches AMPS as the four characters `&lt;`, "
    "and the expression fails to parse or means something else. ampsctl reports an expression "
    "(Filter, Field, Join, Condition, BarrierExpression, Priority, DataFilter) whose parsed text still "
    "contains an XML character reference outside string literals (checked at token level).",
    source="spec/config.md §1.4",
    bad="""  <SOW>
    <View>
      <Name>big-orders</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Filter><![CDATA[/qty &gt; 1000]]></Filter>
      <Projection><Field>/id</Field></Projection>
      <Grouping><Field>/id</Field></Grouping>
    </View>
  </SOW>""",
    good="""  <SOW>
    <View>
      <Name>big-orders</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Filter><![CDATA[/qty > 1000]]></Filter>
      <Projection><Field>/id</Field></Projection>
      <Grouping><Field>/id</Field></Grouping>
    </View>
  </SOW>""",
)
def expression_double_escaped(model: ConfigModel) -> Iterator[Issue]:
    for el in (el for tag in _EXPRESSION_TAGS for el in model.descendants(tag)):
        text = el.text or ""
        if "&" not in text:
            continue
        found = _ENTITY.search(blank_strings(text))
        if found:
            entity = found.group(0)
            plain = html.unescape(entity)
            yield Issue(
                el,
                f"<{el.tag}> contains '{entity}' after XML parsing, so AMPS sees the escape itself, not '{plain}'",
                f"escape once: write {plain} inside <![CDATA[...]]>, or {entity} in plain element text (not &amp;{entity[1:]})",
            )


# ---------------------------------------------------------------------------------------
# GEN-010 / GEN-011 / GEN-012
# ---------------------------------------------------------------------------------------


@rule(
    "GEN-010", "legacy-synonym", Severity.INFO,
    "A legacy element name is used where a current one exists (e.g. TopicDefinition for Topic).",
    description="AMPS still accepts the names of older releases: `TopicMetaData` (SOW), `TopicDefinition`, "
    "`QueueDefinition`, `ViewDefinition`, `ReplicaDefinition` (ConflatedTopic), `Topic` for `Name` in SOW "
    "definitions, `Duration` (Durability) and `MinJournalSize` (JournalSize). They work, but current "
    "documentation and tools use the new names. When both spellings are present GEN-005 reports instead.",
    source="spec/config.md §1.3",
    bad="""  <SOW>
    <TopicDefinition>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </TopicDefinition>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
)
def legacy_synonym(model: ConfigModel) -> Iterator[Issue]:
    for found in model.shared(_synonyms):
        if found.conflict is None:
            el, canonical = found.el, found.canonical
            yield Issue(el, f"<{el.tag}> is the legacy name of <{canonical}>", f"rename <{el.tag}> to <{canonical}>", at_text=False)


@rule(
    "GEN-011", "deprecated-module", Severity.WARNING,
    "A deprecated module is used (amps-action-do-vacuum-statistics).",
    description="`amps-action-do-vacuum-statistics` is deprecated; trim the statistics database with "
    "`amps-action-do-truncate-statistics`. The deprecated SOW Topic elements `RecordSize`, `InitialSize` "
    "and `IncrementSize` are reported by SOWT-029, so each deprecated item is reported once.",
    source="spec/config.md §1.4, §5.3",
    bad="""  <Actions>
    <Action>
      <On><Module>amps-action-on-schedule</Module><Options><Every>1d</Every></Options></On>
      <Do><Module>amps-action-do-vacuum-statistics</Module></Do>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On><Module>amps-action-on-schedule</Module><Options><Every>1d</Every></Options></On>
      <Do><Module>amps-action-do-truncate-statistics</Module><Options><Age>7d</Age></Options></Do>
    </Action>
  </Actions>""",
)
def deprecated_module(model: ConfigModel) -> Iterator[Issue]:
    for action in model.actions:
        for step in action.steps:
            replacement = _DEPRECATED_MODULES.get(step.module or "")
            if replacement:
                module = step.el.find("Module")
                yield Issue(
                    module if module is not None else step.el,
                    f"{step.role} step uses the deprecated module {step.module}",
                    f"use {replacement} instead",
                )


@rule(
    "GEN-012", "reserved-amps-topic", Severity.INFO,
    "A View, queue, conflated topic or published topic is named in the reserved /AMPS/ namespace.",
    description="Topics under `/AMPS/` are where AMPS publishes its own events and statistics "
    "(`/AMPS/SOWStats`, `/AMPS/ClientStatus`, ...). Recording such an event topic in a SOW `Topic` is a "
    "documented use and is not reported; defining a View, queue or conflated topic under `/AMPS/`, or "
    "publishing there from an action, mixes your data with the server's.",
    source="spec/config.md §1.4 [DIG]",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
    <ConflatedTopic>
      <Name>/AMPS/orders-C</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
    </ConflatedTopic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>/AMPS/SOWStats</Name>
      <MessageType>json</MessageType>
      <Key>/SOWStats/topic</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
)
def reserved_amps_topic(model: ConfigModel) -> Iterator[Issue]:
    for entry in model.entries_except("Topic"):
        name = entry.name or ""
        if name.startswith(_RESERVED_PREFIX) or name == "/AMPS":
            yield Issue(
                entry.first("Name"),
                f"{entry.label()} is named in the reserved /AMPS/ namespace",
                "pick a name outside /AMPS/ (that namespace holds the server's own event topics)",
            )
    for action in model.actions:
        for step in action.steps:
            if step.role != "Do" or step.module != "amps-action-do-publish-message" or step.options is None:
                continue
            topic = step.options.first("Topic")
            value = (topic.text or "").strip() if topic is not None else ""
            if value.startswith(_RESERVED_PREFIX) or value == "/AMPS":
                yield Issue(
                    topic,
                    f"the action publishes to '{value}' in the reserved /AMPS/ namespace",
                    "publish to a topic of your own outside /AMPS/",
                )

"""Rules for SOW/ConflatedTopic (synonym ReplicaDefinition): spec/config.md §2.4, seed 001.

A conflated topic is a copy of a SOW topic, view or other conflated topic that is refreshed
every Interval. Its UnderlyingTopic must be the exact Name of one of those (for a regular
expression SOW topic: its Name, not its Pattern, plus a TopicFormat that builds each
conflated topic name from ``%n``), and its MessageType must be the underlying topic's.
``_targets`` resolves the UnderlyingTopic once per conflated topic.

Which functions Filter and Enrichment call is checked at token level; whether the Filter
parses at all is GEN-013's (filters.py).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import REGEX_CHARS, ConfigModel, SowEntry
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.common import interval_of
from ampsctl.config.rules.expr_tokens import blank_strings, nondeterministic_issues, state_references

TARGET_KINDS = frozenset({"Topic", "View", "ConflatedTopic"})
MIN_INTERVAL_NANOS = 100_000_000  # 100ms


def _targets(model: ConfigModel, conflated: SowEntry) -> list[SowEntry]:
    """SOW topics, views and conflated topics whose Name is exactly the UnderlyingTopic."""
    underlying = conflated.text("UnderlyingTopic")
    if not underlying:
        return []
    return [e for e in model.entries_by_name.get(underlying, ()) if e.kind in TARGET_KINDS and e is not conflated]


def _typed_targets(model: ConfigModel, conflated: SowEntry) -> list[SowEntry]:
    """The targets with the conflated topic's message type, or all targets when none has it."""
    targets = _targets(model, conflated)
    same = [t for t in targets if t.message_type == conflated.message_type]
    return same or targets


def _pattern_topics(model: ConfigModel) -> dict[str, SowEntry]:
    """Pattern text -> regex SOW topic."""
    found: dict[str, SowEntry] = {}
    for topic in model.pattern_topics:
        found.setdefault(topic.text("Pattern") or "", topic)
    return found


def _target_names(model: ConfigModel) -> list[str]:
    """Every name a conflated topic can copy, for "did you mean" hints (built on first use)."""
    return sorted({e.name for e in model.sow_entries if e.kind in TARGET_KINDS and e.name})


_BASE = """  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/orderId</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
    <ConflatedTopic>
{body}
    </ConflatedTopic>
  </SOW>"""

_REGEX_BASE = """  <SOW>
    <Topic>
      <Name>all_orders</Name>
      <Pattern>^orders_[a-z]+$</Pattern>
      <MessageType>json</MessageType>
      <Key>/orderId</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
    <ConflatedTopic>
{body}
    </ConflatedTopic>
  </SOW>"""

_GOOD = _BASE.format(body="""      <Name>orders-C</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Interval>1s</Interval>""")

_GOOD_REGEX = _REGEX_BASE.format(body="""      <Name>all_orders-C</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>all_orders</UnderlyingTopic>
      <TopicFormat>%n-C</TopicFormat>""")


@rule(
    "CT-001", "conflated-required-elements", Severity.ERROR,
    "A conflated topic needs Name, UnderlyingTopic and MessageType.",
    description="The Name (or legacy Topic) is what subscribers use, UnderlyingTopic is the SOW topic, view or "
    "conflated topic it copies, and MessageType must be that topic's message type.",
    source="seed 001 (SOW/ConflatedTopic)",
    bad=_BASE.format(body="""      <Name>orders-C</Name>
      <UnderlyingTopic>orders</UnderlyingTopic>"""),
    good=_GOOD,
)
def required_elements(model: ConfigModel) -> Iterator[Issue]:
    for conflated in model.conflated_topics:
        missing = [name for name in ("Name", "UnderlyingTopic", "MessageType") if not conflated.text(name)]
        if missing:
            yield Issue(conflated.el, f"{conflated.label()} is missing {', '.join(missing)}",
                        "add " + ", ".join(f"<{m}>" for m in missing), at_text=False)


@rule(
    "CT-002", "conflated-underlying-defined", Severity.ERROR,
    "A conflated topic's UnderlyingTopic must be the Name of a SOW Topic, View or ConflatedTopic.",
    description="AMPS requires an exact match with the Name of a topic that keeps a State of the World: a SOW "
    "Topic, a View or another ConflatedTopic in this file. Queues and plain (non-SOW) topics cannot be conflated.",
    source="seed 001 (SOW/ConflatedTopic)",
    bad=_BASE.format(body="""      <Name>orders-C</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>Orders</UnderlyingTopic>"""),
    good=_GOOD,
)
def underlying_defined(model: ConfigModel) -> Iterator[Issue]:
    conflated_topics = model.conflated_topics
    if not conflated_topics:
        return
    patterns = _pattern_topics(model)
    for conflated in conflated_topics:
        underlying = conflated.text("UnderlyingTopic")
        if not underlying or _targets(model, conflated) or underlying in patterns:
            continue
        others = [e for e in model.entries_by_name.get(underlying, ()) if e is not conflated]
        if others:
            hint = f"'{underlying}' is a {others[0].kind}; conflate a SOW Topic, View or ConflatedTopic instead"
        else:
            names = [n for n in model.shared(_target_names) if n != conflated.name]
            close = difflib.get_close_matches(underlying, names, n=1, cutoff=0.8)
            hint = f"did you mean '{close[0]}'?" if close else f"define a SOW <Topic> named '{underlying}'"
        yield Issue(conflated.first("UnderlyingTopic"),
                    f"{conflated.label()} UnderlyingTopic '{underlying}' is not the Name of a SOW Topic, View or "
                    "ConflatedTopic", hint)


@rule(
    "CT-003", "conflated-underlying-pattern-text", Severity.ERROR,
    "For a regex SOW topic, UnderlyingTopic must be its Name, not its Pattern.",
    description="When the underlying topic is a regular expression SOW topic, the conflated topic names it by "
    "its Name; AMPS then creates one conflated topic per logical topic, named by TopicFormat.",
    source="seed 001 (SOW/ConflatedTopic)",
    bad=_REGEX_BASE.format(body="""      <Name>all_orders-C</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>^orders_[a-z]+$</UnderlyingTopic>
      <TopicFormat>%n-C</TopicFormat>"""),
    good=_GOOD_REGEX,
)
def underlying_pattern_text(model: ConfigModel) -> Iterator[Issue]:
    conflated_topics = model.conflated_topics
    if not conflated_topics:
        return
    patterns = _pattern_topics(model)
    for conflated in conflated_topics:
        underlying = conflated.text("UnderlyingTopic")
        if underlying and underlying in patterns and not _targets(model, conflated):
            owner = patterns[underlying]
            yield Issue(conflated.first("UnderlyingTopic"),
                        f"{conflated.label()} UnderlyingTopic is the Pattern of SOW Topic '{owner.name}', not its Name",
                        f"write <UnderlyingTopic>{owner.name}</UnderlyingTopic>")


@rule(
    "CT-004", "conflated-message-type", Severity.ERROR,
    "A conflated topic's MessageType must be the underlying topic's MessageType.",
    description="A conflated topic is a copy of its underlying topic, so it has the same message type. Topic "
    "identity is (Name, MessageType): the underlying Name must exist with this type.",
    source="seed 001 (SOW/ConflatedTopic)",
    bad=_BASE.format(body="""      <Name>orders-C</Name>
      <MessageType>nvfix</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>"""),
    good=_GOOD,
)
def message_type(model: ConfigModel) -> Iterator[Issue]:
    for conflated in model.conflated_topics:
        mtype = conflated.message_type
        targets = _targets(model, conflated)
        if not mtype or not targets or any(not t.message_type or t.message_type == mtype for t in targets):
            continue
        types = sorted({t.message_type or "" for t in targets})
        yield Issue(conflated.first("MessageType"),
                    f"{conflated.label()} is {mtype} but its underlying topic '{targets[0].name}' is {', '.join(types)}",
                    f"write <MessageType>{types[0]}</MessageType>")


@rule(
    "CT-005", "conflated-interval-minimum", Severity.ERROR,
    "A conflated topic's Interval must be at least 100ms.",
    description="Interval is how often AMPS refreshes the conflated copy (default 5s); the documented minimum is "
    "100ms. Values that are not intervals at all are reported by UNIT-001.",
    source="seed 001 (SOW/ConflatedTopic)",
    bad=_BASE.format(body="""      <Name>orders-C</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Interval>50ms</Interval>"""),
    good=_GOOD,
)
def interval_minimum(model: ConfigModel) -> Iterator[Issue]:
    for conflated in model.conflated_topics:
        for el in conflated.all("Interval"):
            interval = interval_of(el)
            if interval is not None and interval.nanos < MIN_INTERVAL_NANOS:
                yield Issue(el, f"{conflated.label()} Interval '{(el.text or '').strip()}' is below the minimum of 100ms",
                            "use 100ms or more (the default is 5s)")


@rule(
    "CT-006", "conflated-topic-format-required", Severity.ERROR,
    "Conflating a regex SOW topic needs a TopicFormat.",
    description="For a regular expression SOW topic AMPS creates one conflated topic per logical topic, and "
    "TopicFormat (which must contain %n) gives their names; it has no default.",
    source="seed 001 (SOW/ConflatedTopic)",
    bad=_REGEX_BASE.format(body="""      <Name>all_orders-C</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>all_orders</UnderlyingTopic>"""),
    good=_GOOD_REGEX,
)
def topic_format_required(model: ConfigModel) -> Iterator[Issue]:
    for conflated in model.conflated_topics:
        if conflated.text("TopicFormat"):
            continue
        owner = next((t for t in _typed_targets(model, conflated) if t.kind == "Topic" and t.text("Pattern")), None)
        if owner is not None:
            yield Issue(conflated.el, f"{conflated.label()} conflates the regex SOW Topic '{owner.name}' but has "
                        "no TopicFormat", "add <TopicFormat>%n-C</TopicFormat>", at_text=False)


@rule(
    "CT-007", "conflated-topic-format-value", Severity.ERROR,
    "TopicFormat must contain %n and no regular expression characters.",
    description="%n is replaced by each logical topic name of the underlying regex topic (e.g. %n-C turns "
    "/my/orders into /my/orders-C). The result must be a literal topic name, so . ^ $ * + ? ( ) [ ] { } | \\ are "
    "not allowed.",
    source="seed 001 (SOW/ConflatedTopic)",
    bad=_REGEX_BASE.format(body="""      <Name>all_orders-C</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>all_orders</UnderlyingTopic>
      <TopicFormat>conflated.orders</TopicFormat>"""),
    good=_GOOD_REGEX,
)
def topic_format_value(model: ConfigModel) -> Iterator[Issue]:
    for conflated in model.conflated_topics:
        for el in conflated.all("TopicFormat"):
            value = (el.text or "").strip()
            problems = []
            if "%n" not in value:
                problems.append("does not contain %n")
            specials = "".join(sorted({ch for ch in value if ch in REGEX_CHARS}))
            if specials:
                problems.append(f"contains regular expression characters {' '.join(specials)}")
            if problems:
                yield Issue(el, f"{conflated.label()} TopicFormat '{value}' {' and '.join(problems)}",
                            "use %n plus literal text, e.g. %n-C or conflated-%n")


@rule(
    "CT-008", "conflated-topic-format-ignored", Severity.WARNING,
    "TopicFormat only applies when the underlying topic is a regex SOW topic.",
    description="For an ordinary underlying topic the conflated topic is simply its Name; TopicFormat is ignored.",
    source="spec/config.md §2.4",
    bad=_BASE.format(body="""      <Name>orders-C</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <TopicFormat>%n-C</TopicFormat>"""),
    good=_GOOD,
)
def topic_format_ignored(model: ConfigModel) -> Iterator[Issue]:
    for conflated in model.conflated_topics:
        el = conflated.first("TopicFormat")
        if el is None:
            continue
        targets = _typed_targets(model, conflated)
        if targets and not any(t.kind == "Topic" and t.text("Pattern") for t in targets):
            yield Issue(el, f"{conflated.label()} has a TopicFormat but '{targets[0].name}' is not a regex SOW topic",
                        "remove TopicFormat; the conflated topic is named by its Name", at_text=False)


@rule(
    "CT-009", "conflated-nondeterministic-expression", Severity.ERROR,
    "Conflated topic Filter must be deterministic and Enrichment cannot use OF PREVIOUS.",
    description="LAST_READ, UNIX_TIMESTAMP and VALUE_LOOKUP are not allowed in a conflated topic Filter, and "
    "conflated topic Enrichment (AMPS 5.3.5) has no previous state to read with OF PREVIOUS. Checked at token "
    "level, outside string literals.",
    source="spec/config.md §2.4, §9 (DIG)",
    bad=_BASE.format(body="""      <Name>orders-C</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Filter>LAST_READ(/orderId) IS NULL</Filter>"""),
    good=_BASE.format(body="""      <Name>orders-C</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Filter>/region = 'A'</Filter>"""),
)
def nondeterministic_expression(model: ConfigModel) -> Iterator[Issue]:
    for conflated in model.conflated_topics:
        yield from nondeterministic_issues(conflated, ("Filter",), "filter on message fields and constants only")
        for block in conflated.all("Enrichment"):
            for field in block:
                if field.tag == "Field" and "PREVIOUS" in state_references(blank_strings(field.text or "")):
                    yield Issue(field, f"{conflated.label()} Enrichment field uses OF PREVIOUS",
                                "remove OF PREVIOUS; only SOW Topic Enrichment can read the previous state")


@rule(
    "CT-010", "conflated-name-collision", Severity.WARNING,
    "A conflated topic should not have the same Name and MessageType as its underlying topic.",
    description="Topic identity is (Name, MessageType). A conflated topic named like the topic it copies, with "
    "the same type, makes subscriptions to that name ambiguous. The usual convention is a suffix, e.g. orders-C.",
    source="spec/config.md §2.4",
    bad=_BASE.format(body="""      <Name>orders</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>"""),
    good=_GOOD,
)
def name_collision(model: ConfigModel) -> Iterator[Issue]:
    for conflated in model.conflated_topics:
        name = conflated.name
        if not name or name != conflated.text("UnderlyingTopic"):
            continue
        mtype = conflated.message_type
        if any(not mtype or not t.message_type or t.message_type == mtype for t in _targets(model, conflated)):
            yield Issue(conflated.first("Name"), f"{conflated.label()} has the same name as its underlying topic",
                        f"rename it, e.g. <Name>{name}-C</Name>")

"""SOW/Topic (synonym TopicDefinition) identity: which topic a definition stands for.

A SOW topic is identified by its Name and MessageType (spec/config.md §2.1, seeds 001 and
003): SOWT-001..003 check that both are there and that the type exists; SOWT-027 and SOWT-028
check the definitions against each other, since AMPS applies the first definition that
matches a topic, in file order.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator


from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, SowEntry, compiled_regex, regex_problem
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.common import line_of, unexpanded


_META = frozenset(".^$*+?{}[]()|\\")


class _Pattern:
    """A Pattern compiled once (a config with thousands of them overflows the regex package's
    cache, and every search compiled again), with its literal prefix as a cheap pre-check."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.compiled = compiled_regex(text)  # None: reported by SOWT-031
        self.prefix = _literal_prefix(text)

    def search(self, topic: str) -> bool:
        """Unanchored search, like AMPS topic regexes; a pattern that times out once is dropped."""
        if self.compiled is None or (self.prefix and not topic.startswith(self.prefix)):
            return False
        try:
            return self.compiled.search(topic, timeout=0.5) is not None
        except (TimeoutError, RecursionError):
            self.compiled = None  # catastrophic backtracking: do not pay 0.5 s per topic
            return False


def _literal_prefix(pattern: str) -> str:
    """What every match of ``^literal...`` starts with; "" when that is not certain."""
    if not pattern.startswith("^") or "|" in pattern or "(?" in pattern:
        return ""
    literal = []
    for char in pattern[1:]:
        if char in _META:
            if char in "*?{" and literal:
                literal.pop()  # the previous character may repeat zero times
            break
        literal.append(char)
    return "".join(literal)


# ---------------------------------------------------------------------------------------
# SOWT-001 .. SOWT-003: name and message type
# ---------------------------------------------------------------------------------------


@rule(
    "SOWT-001", "sow-topic-name-required", Severity.ERROR,
    "A SOW Topic needs a non-empty Name (or its legacy synonym Topic).",
    description="The Name is the topic whose State of the World AMPS keeps; with `Pattern` it names the physical "
    "topic that holds all matching topics. Releases before 5.0 spelled it `<Topic>`, which AMPS still "
    "accepts when `<Name>` is absent.",
    source="seed 001 (SOW/Topic)",
    bad="""  <SOW>
    <Topic>
      <MessageType>json</MessageType>
      <FileName>./sow/orders.sow</FileName>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
)
def name_required(model: ConfigModel) -> Iterator[Issue]:
    for topic in model.unnamed_entries:
        if topic.kind != "Topic":
            continue
        names = topic.all("Name")
        if not names:
            yield Issue(topic.el, f"SOW <{topic.el.tag}> has no <Name>", "add <Name>topic-name</Name>", at_text=False)
        else:  # the first of them is empty
            yield Issue(names[0], f"SOW <{topic.el.tag}> has an empty <{names[0].tag}>", "write the topic name", at_text=False)


@rule(
    "SOWT-002", "sow-topic-message-type-required", Severity.ERROR,
    "A SOW Topic needs a MessageType.",
    description="Topics are scoped by message type: a json topic `orders` and an nvfix topic `orders` are "
    "different topics, so a SOW definition without a MessageType does not say which one it stores.",
    source="seed 001 (SOW/Topic), seed 003",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <FileName>./sow/orders.sow</FileName>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
)
def message_type_required(model: ConfigModel) -> Iterator[Issue]:
    by_type = model.topics_by_type
    for topic in [*by_type.get(None, ()), *by_type.get("", ())]:
        element = topic.first("MessageType")
        if element is None:
            yield Issue(
                topic.el,
                f"{topic.label()} has no <MessageType>",
                "add <MessageType>json</MessageType> (or the type its publishers use)",
                at_text=False,
            )
        elif not topic.message_type:
            yield Issue(element, f"{topic.label()} has an empty <MessageType>", "write the message type, e.g. json", at_text=False)


@rule(
    "SOWT-003", "sow-topic-message-type-unknown", Severity.ERROR,
    "A SOW Topic's MessageType is neither a default type nor declared in MessageTypes.",
    description="AMPS loads fix, nvfix, xml, json, msgpack, bson, bflat and binary by default. Other types "
    "(protobuf, struct, composite types, custom modules) must be declared under "
    "`MessageTypes/MessageType` before a SOW topic can use them.",
    source="seed 001 (SOW/Topic)",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>jsno</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
    good="""  <MessageTypes>
    <MessageType>
      <Name>orders-pb</Name>
      <Module>protobuf</Module>
      <Type>acme.Order</Type>
      <ProtoPath>;/etc/amps/proto</ProtoPath>
      <ProtoFile>order.proto</ProtoFile>
    </MessageType>
  </MessageTypes>
  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>orders-pb</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
)
def message_type_unknown(model: ConfigModel) -> Iterator[Issue]:
    known = model.message_types
    for mtype, topics in model.topics_by_type.items():
        if not mtype or unexpanded(mtype) or mtype in known:
            continue
        close = difflib.get_close_matches(mtype, sorted(known), n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        for topic in topics:
            yield Issue(
                topic.first("MessageType"),
                f"{topic.label()} uses message type '{mtype}', which is not a default type and is not declared",
                hint + f"declare it under <MessageTypes><MessageType><Name>{mtype}</Name>...</MessageType></MessageTypes>",
            )


# ---------------------------------------------------------------------------------------
# SOWT-027 / SOWT-028: definitions that interact
# ---------------------------------------------------------------------------------------


@rule(
    "SOWT-027", "sow-topic-after-pattern", Severity.WARNING,
    "A Topic is defined after a Pattern topic whose regular expression already matches it.",
    description="AMPS applies the first SOW definition that matches a topic, in file order. A stand-alone "
    "Topic placed after a `Pattern` topic (of the same message type) whose pattern matches its name is "
    "captured by the pattern topic; define it before the pattern topic. Patterns are matched as "
    "unanchored PCRE searches, as AMPS does for topic regexes.",
    source="spec/config.md §2 [DIG Configuration File Precedence]",
    bad="""  <SOW>
    <Topic>
      <Name>all-orders</Name>
      <Pattern>^orders/.*</Pattern>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
    <Topic>
      <Name>orders/priority</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/priority.sow</FileName>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders/priority</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/priority.sow</FileName>
    </Topic>
    <Topic>
      <Name>all-orders</Name>
      <Pattern>^orders/.*</Pattern>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
)
def topic_after_pattern(model: ConfigModel) -> Iterator[Issue]:
    if not model.pattern_topics:
        return
    patterns: list[tuple[SowEntry, _Pattern]] = []
    for topic in model.topics:
        pattern = topic.text("Pattern")
        if pattern:
            if not unexpanded(pattern):
                patterns.append((topic, _Pattern(pattern)))
            continue
        name = topic.name
        if not name or not patterns:
            continue
        for holder, compiled in patterns:
            same_type = not holder.message_type or not topic.message_type or holder.message_type == topic.message_type
            if same_type and compiled.search(name):
                yield Issue(
                    topic.el,
                    f"{topic.label()} comes after {holder.label()} (line {line_of(model, holder.el, topic.el)}), whose Pattern "
                    f"'{compiled.text}' matches it, so the pattern topic captures it",
                    f"move this definition above {holder.label()}",
                    at_text=False,
                )
                break


@rule(
    "SOWT-028", "sow-topic-duplicate", Severity.WARNING,
    "Two SOW Topic definitions have the same Name and MessageType.",
    description="A topic is identified by its name and message type. The documentation does not say whether "
    "a second definition of the same topic is rejected, ignored or merged; keep one.",
    source="spec/config.md §2.1, §11 q9",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
    <TopicDefinition>
      <Topic>orders</Topic>
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
    <Topic>
      <Name>orders</Name>
      <MessageType>nvfix</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
)
def duplicate_topic(model: ConfigModel) -> Iterator[Issue]:
    seen: dict[tuple[str, str | None], SowEntry] = {}
    for name in model.repeated_names:  # only a repeated Name can be a duplicate
        for topic in model.entries_by_name[name]:
            if topic.kind != "Topic":
                continue
            key = (name, topic.message_type)
            first = seen.setdefault(key, topic)
            if first is topic:
                continue
            yield Issue(
                topic.el,
                f"{topic.label()} ({topic.message_type}) is already defined on line {line_of(model, first.el, topic.el)}",
                "merge the two definitions into one",
                at_text=False,
            )


@rule(
    "SOWT-031", "sow-topic-pattern-regex", Severity.ERROR,
    "A Topic's Pattern must be a valid PCRE.",
    description="`Pattern` makes a SOW topic a regex topic: every topic name the regular expression matches "
    "(an unanchored PCRE search) is stored under this definition. A pattern that does not compile matches "
    "nothing. Patterns that PCRE refuses although the regex package would compile them slowly (counted "
    "repeats that unroll to more than 65535 copies, a group that calls itself before matching a character) "
    "are errors too.",
    source="seed 001 (SOW/Topic Pattern)",
    bad="""  <SOW>
    <Topic>
      <Name>all-orders</Name>
      <Pattern>^orders/(.*</Pattern>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>all-orders</Name>
      <Pattern>^orders/(.*)</Pattern>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
)
def pattern_regex(model: ConfigModel) -> Iterator[Issue]:
    for topic in model.pattern_topics:
        for el in topic.all("Pattern"):
            pattern = (el.text or "").strip()
            found = regex_problem(pattern) if pattern and not unexpanded(pattern) else None
            if found:
                from ampsctl.filter.regexes import shown_pattern  # only for a bad pattern: it imports regex

                error, hint = found
                yield Issue(el, f"{topic.label()} Pattern {shown_pattern(pattern)} is not a valid regular expression: {error}",
                            hint or "fix the pattern (escape literal characters such as ( [ { with a backslash)")

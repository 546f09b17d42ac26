"""Cross-section SOW rules: definitions that must agree across SOW topics, queues and the
transaction log (spec/config.md §2.5).

XS-001: a name cannot be both a SOW Topic and a queue of the same message type. XS-002: a
regex (Pattern) SOW topic is recorded in the transaction log under its physical Name.
"""

from __future__ import annotations

from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, has_regex_chars, regex_error, topic_matches
from ampsctl.config.registry import Issue, rule


@rule(
    "XS-001", "sow-topic-and-queue-same-name", Severity.ERROR,
    "A name is defined both as a SOW Topic and as a queue with the same message type.",
    description="A topic cannot have two State of the World personalities: a last-value SOW topic and a queue. "
    "AMPS documentation is silent on which definition wins. Topic identity is (Name, MessageType); when either "
    "side has no MessageType the name alone decides. Reported at the queue's Name.",
    source="spec/config.md §2.5",
    bad="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <Topic><Name>orders</Name><MessageType>json</MessageType><FileName>./sow/%n.sow</FileName></Topic>
    <Queue><Name>orders</Name><MessageType>json</MessageType></Queue>
  </SOW>""",
    good="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <Topic><Name>orders</Name><MessageType>json</MessageType><FileName>./sow/%n.sow</FileName></Topic>
    <Queue><Name>orders-queue</Name><MessageType>json</MessageType><UnderlyingTopic>orders</UnderlyingTopic></Queue>
  </SOW>""",
)
def topic_and_queue_same_name(model: ConfigModel) -> Iterator[Issue]:
    by_name = model.entries_by_name
    for queue in model.queues:
        name = queue.name
        if not name:
            continue
        mtype = queue.message_type
        for other in by_name.get(name, ()):
            if other.kind == "Topic" and (not mtype or not other.message_type or other.message_type == mtype):
                same = f" and MessageType ({mtype})" if mtype and other.message_type else ""
                yield Issue(queue.first("Name"), f"{queue.label()} has the same name{same} as a SOW Topic",
                            "rename the queue (its UnderlyingTopic can still be the SOW topic), or drop one definition")
                break


@rule(
    "XS-002", "txlog-pattern-topic-logical-name", Severity.INFO,
    "Record a regex SOW topic in the transaction log under its physical Name.",
    description="A SOW Topic with a Pattern stores many logical topics under one physical topic, its Name. "
    "Transaction-log coverage for it is declared with that Name, not with the logical names or the Pattern. "
    "ampsctl reports a TransactionLog Topic that names a logical topic (or repeats the Pattern) when the "
    "physical Name itself is not recorded.",
    source="spec/config.md §2.5 (DIG)",
    bad="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>orders_us</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <Topic>
      <Name>all_orders</Name>
      <Pattern>^orders_[a-z]+$</Pattern>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
    good="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>all_orders</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <Topic>
      <Name>all_orders</Name>
      <Pattern>^orders_[a-z]+$</Pattern>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
)
def txlog_pattern_topic_logical_name(model: ConfigModel) -> Iterator[Issue]:
    patterned = [t for t in model.pattern_topics if t.name]
    if not patterned or not model.txlog_topics:
        return
    for topic in patterned:
        pattern = topic.text("Pattern") or ""
        physical = topic.name or ""
        mtype = topic.message_type
        if model.txlog_covers(physical, mtype):
            continue
        for name, other, el in model.txlog_topics:
            if not name or (mtype and other and mtype != other) or name == physical:
                continue
            logical = not has_regex_chars(name) and regex_error(pattern) is None and topic_matches(pattern, name)
            if name == pattern or logical:
                what = "repeats the Pattern" if name == pattern else "names a logical topic"
                yield Issue(el.find("Name"),
                            f"TransactionLog Topic '{name}' {what} of regex SOW Topic '{physical}' "
                            f"(Pattern '{pattern}'), which AMPS records under its physical Name",
                            f"use <Name>{physical}</Name> in this TransactionLog Topic")

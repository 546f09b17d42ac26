"""SOW/Topic recovery: how a topic's State of the World comes back after a restart.

A persistent topic reloads its SOW file; a transient one is rebuilt from the transaction log,
starting at RecoveryPoint (spec/config.md §2.1, seeds 001 and 003). SOWT-008 checks the
RecoveryPoint value, SOWT-009 and SOWT-010 that the transaction log records the topic.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.common import unexpanded

RECOVERY_WORDS = ("epoch", "now")
_TIMESTAMP = re.compile(
    r"[0-9]{8}T[0-9]{6}(\.[0-9]+)?Z?"
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+\-][0-9]{2}:?[0-9]{2})?"
)


@rule(
    "SOWT-008", "sow-topic-recovery-point-value", Severity.ERROR,
    "RecoveryPoint must be epoch, now or a timestamp.",
    description="`epoch` (the default) replays the transaction log from its start, `now` keeps only new "
    "publishes. The User Guide (seed 003) also allows a point in time; ampsctl accepts the timestamp "
    "forms AMPS uses for bookmarks (`20240131T120000`, optional fraction and `Z`) and ISO-8601.",
    source="seed 001 (SOW/Topic RecoveryPoint), seed 003",
    bad="""  <SOW>
    <Topic>
      <Name>quotes</Name>
      <MessageType>json</MessageType>
      <Durability>transient</Durability>
      <RecoveryPoint>latest</RecoveryPoint>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>quotes</Name>
      <MessageType>json</MessageType>
      <Durability>transient</Durability>
      <RecoveryPoint>now</RecoveryPoint>
    </Topic>
  </SOW>""",
)
def recovery_point_value(model: ConfigModel) -> Iterator[Issue]:
    for value, found in model.child_texts("RecoveryPoint", first_only=True).items():
        if value in RECOVERY_WORDS or _TIMESTAMP.fullmatch(value) or unexpanded(value):
            continue
        if value.lower() in RECOVERY_WORDS:
            hint = f"write {value.lower()} (lower case)"
        else:
            hint = "use epoch, now or a timestamp such as 20240131T120000Z"
        for topic, element in found:
            yield Issue(element, f"{topic.label()} has RecoveryPoint '{value}', which is not epoch, now or a timestamp", hint)


@rule(
    "SOWT-009", "sow-topic-recovery-point-without-txlog", Severity.INFO,
    "RecoveryPoint is set on a topic that no TransactionLog/Topic records, so it has no effect.",
    description="RecoveryPoint says where AMPS starts replaying the transaction log to rebuild the topic. "
    "When the topic is not recorded in the transaction log there is nothing to replay.",
    source="seed 001 (SOW/Topic RecoveryPoint)",
    bad="""  <SOW>
    <Topic>
      <Name>quotes</Name>
      <MessageType>json</MessageType>
      <Durability>transient</Durability>
      <RecoveryPoint>now</RecoveryPoint>
    </Topic>
  </SOW>""",
    good="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>quotes</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <Topic>
      <Name>quotes</Name>
      <MessageType>json</MessageType>
      <Durability>transient</Durability>
      <RecoveryPoint>now</RecoveryPoint>
    </Topic>
  </SOW>""",
)
def recovery_point_without_txlog(model: ConfigModel) -> Iterator[Issue]:
    for topic in model.topics_with("RecoveryPoint"):
        element = topic.first("RecoveryPoint")
        if element is None or not topic.name or model.txlog_covers(topic.name, topic.message_type):
            continue
        yield Issue(
            element,
            f"{topic.label()} sets RecoveryPoint but is not recorded in the transaction log, so the setting has no effect",
            f"add <Topic><Name>{topic.name}</Name><MessageType>{topic.message_type or 'json'}</MessageType></Topic> "
            "to <TransactionLog>, or remove <RecoveryPoint>",
            at_text=False,
        )


@rule(
    "SOWT-010", "sow-topic-transient-without-txlog", Severity.WARNING,
    "A transient SOW topic is not in the transaction log, so it starts empty after every restart.",
    description="A transient topic is kept in memory. When the transaction log records it, AMPS rebuilds it "
    "at startup from RecoveryPoint; without that, every restart loses the whole State of the World of "
    "the topic.",
    source="seed 001 (SOW/Topic Durability), seed 003",
    bad="""  <SOW>
    <Topic>
      <Name>quotes</Name>
      <MessageType>json</MessageType>
      <Durability>transient</Durability>
    </Topic>
  </SOW>""",
    good="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>quotes</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <Topic>
      <Name>quotes</Name>
      <MessageType>json</MessageType>
      <Durability>transient</Durability>
    </Topic>
  </SOW>""",
)
def transient_without_txlog(model: ConfigModel) -> Iterator[Issue]:
    for topic, _ in model.child_texts("Durability", first_only=True).get("transient", ()):
        if not topic.name:
            continue
        if model.txlog_covers(topic.name, topic.message_type):
            continue
        yield Issue(
            topic.first("Durability"),
            f"{topic.label()} is transient and not recorded in the transaction log, so its contents are lost at every restart",
            f"record it: add <Topic><Name>{topic.name}</Name><MessageType>{topic.message_type or 'json'}</MessageType></Topic> "
            "to <TransactionLog>, or make it persistent with a FileName",
        )

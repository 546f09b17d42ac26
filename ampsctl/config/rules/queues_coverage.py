"""Queues and their underlying topics: transaction-log coverage and the publish target
(spec/config.md §2.2, seed 001).

A queue is a view over underlying topics that the transaction log records, so these checks
are cross references: the underlying topic (UnderlyingTopic, or the queue Name when it is
absent) against TransactionLog/Topic, and DefaultPublishTarget against the underlying topic.
Topics may be literal names or PCRE patterns; AMPS matches a pattern anywhere in a topic name
(unanchored search), which ``topic_matches`` implements.

Whether two patterns overlap is undecidable in general. ``TxlogCoverage.overlapping`` proves
an overlap only in the easy cases (same text, a recorded literal the pattern matches, or two
patterns that both match the literal prefix of one of them: ``may_overlap``); when it cannot
prove one, Q-003 warns instead of failing. The coverage index is built once per config
(``model.shared``) for Q-003 and Q-004.
"""

from __future__ import annotations

from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, has_regex_chars, regex_error, topic_matches
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.expr_tokens import literal_prefix, may_overlap
from ampsctl.config.rules.queues_definition import GOOD_QUEUE, queue_doc, underlying_topic


class TxlogCoverage:
    """TransactionLog/Topic entries split into a literal index and a pattern list.

    Built once per config: ``model.shared(TxlogCoverage)``.
    """

    def __init__(self, model: ConfigModel) -> None:
        literals, self.patterns = model.txlog_index  # a regex is never empty
        self.literals = {name: found for name, found in literals.items() if name} if "" in literals else literals

    def covering(self, topic: str) -> list[tuple[str, str | None]]:
        """(txlog name, message type) of every entry that records the literal ``topic``."""
        found = [(topic, mtype) for mtype, _ in self.literals.get(topic, ())]
        found += [(name, mtype) for name, mtype, _ in self.patterns if topic_matches(name, topic)]
        return found

    def overlapping(self, pattern: str) -> list[tuple[str, str | None]]:
        """Entries that provably record some topic the ``pattern`` matches (see ``may_overlap``).

        Recorded literals are first narrowed to those containing the pattern's literal prefix
        (every match of a pattern without alternation or inline flags starts with it), so a
        config with hundreds of recorded names runs only a few regex searches per queue.
        """
        prefix = literal_prefix(pattern) if not ("|" in pattern or "(?" in pattern) else ""
        names = [name for name in self.literals if prefix in name] if prefix else list(self.literals)
        found = [(name, mtype) for name in names if topic_matches(pattern, name) for mtype, _ in self.literals[name]]
        found += [(name, mtype) for name, mtype, _ in self.patterns if may_overlap(name, pattern)]
        return found


# ---------------------------------------------------------------------------------------------
# the transaction log records the underlying topics
# ---------------------------------------------------------------------------------------------


@rule(
    "Q-003", "queue-underlying-in-txlog", Severity.ERROR,
    "A queue's underlying topics must be recorded in the transaction log.",
    description="AMPS builds queues from the transaction log, so every underlying topic (UnderlyingTopic, or the "
    "queue Name when it is absent) must be covered by a TransactionLog/Topic. A literal topic must be matched by a "
    "recorded name or pattern. For a pattern UnderlyingTopic ampsctl can only look for an overlap (same pattern, a "
    "recorded name it matches, or a recorded pattern that matches its literal prefix) and warns when it finds none. "
    "An UnderlyingTopic that is not a valid regular expression can never be covered and is an error.",
    source="seed 001 (SOW/Queue); spec/config.md §2.2",
    bad="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>trades</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <Queue>
      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
    </Queue>
  </SOW>""",
    good="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <Queue>
      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
    </Queue>
  </SOW>""",
)
def underlying_in_txlog(model: ConfigModel) -> Iterator[Issue]:
    if not model.queues:
        return
    has_txlog = bool(model.root.all("TransactionLog"))
    coverage = model.shared(TxlogCoverage)
    recorded = bool(coverage.literals or coverage.patterns)
    for queue in model.queues:
        topic, el = underlying_topic(queue)
        if not topic or el is None:
            continue
        if not has_txlog:
            yield Issue(el, f"{queue.label()} reads topic '{topic}' but the config has no TransactionLog",
                        f"add a <TransactionLog> with a <Topic><Name>{topic}</Name>"
                        f"<MessageType>{queue.message_type or 'json'}</MessageType></Topic>")
        elif has_regex_chars(topic):
            problem = regex_error(topic)
            if problem:
                yield Issue(el, f"{queue.label()} UnderlyingTopic '{topic}' is not a valid regular expression ({problem})",
                            "fix the pattern, or escape the special characters to make it a literal topic")
            elif not recorded:
                yield Issue(el, f"{queue.label()} reads topics matching '{topic}' but the TransactionLog records no Topic",
                            f"add <Topic><Name>{topic}</Name><MessageType>{queue.message_type or 'json'}</MessageType>"
                            "</Topic> to the TransactionLog")
            elif not coverage.overlapping(topic):
                yield Issue(el, f"{queue.label()} reads topics matching '{topic}' but no TransactionLog Topic is known "
                            "to record any of them",
                            f"record the pattern itself: <Topic><Name>{topic}</Name><MessageType>"
                            f"{queue.message_type or 'json'}</MessageType></Topic> in the TransactionLog",
                            severity=Severity.WARNING)
        elif not coverage.covering(topic):
            yield Issue(el, f"{queue.label()} reads topic '{topic}' but the transaction log does not record it",
                        f"add <Topic><Name>{topic}</Name><MessageType>{queue.message_type or 'json'}</MessageType>"
                        "</Topic> to the TransactionLog")


@rule(
    "Q-004", "queue-txlog-message-type", Severity.ERROR,
    "The transaction log must record a queue's underlying topics with the queue's MessageType.",
    description="Topic identity in AMPS is the pair (name, message type): a TransactionLog/Topic that records "
    "'orders' as nvfix does not record the json topic 'orders' that a json queue reads. ampsctl reports the "
    "queue when every transaction-log entry that covers its underlying topic has a different MessageType.",
    source="seed 001 (SOW/Queue)",
    bad="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>orders</Name><MessageType>nvfix</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <Queue>
      <Name>orders</Name>
      <MessageType>json</MessageType>
    </Queue>
  </SOW>""",
    good="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <Queue>
      <Name>orders</Name>
      <MessageType>json</MessageType>
    </Queue>
  </SOW>""",
)
def txlog_message_type(model: ConfigModel) -> Iterator[Issue]:
    if not model.queues or not model.txlog_topics:
        return
    coverage = model.shared(TxlogCoverage)
    for queue in model.queues:
        topic, _ = underlying_topic(queue)
        mtype = queue.message_type
        el = queue.first("MessageType")
        if not topic or not mtype or el is None:
            continue
        if has_regex_chars(topic):
            if regex_error(topic):
                continue
            entries = coverage.overlapping(topic)
        else:
            entries = coverage.covering(topic)
        if entries and not any(other is None or other == mtype for _, other in entries):
            recorded = ", ".join(sorted({f"'{name}' as {other}" for name, other in entries}))
            yield Issue(el, f"{queue.label()} is {mtype} but the transaction log records {recorded}",
                        f"record the underlying topic with <MessageType>{mtype}</MessageType>, "
                        "or give the queue the message type of its topics")


# ---------------------------------------------------------------------------------------------
# Q-005 ..: the publish target and the queue's own name
# ---------------------------------------------------------------------------------------------


@rule(
    "Q-005", "queue-default-publish-target-required", Severity.ERROR,
    "A queue whose UnderlyingTopic is a regular expression needs a DefaultPublishTarget.",
    description="When UnderlyingTopic contains regular expression characters (. ^ $ * + ? ( ) [ ] { } | \\), AMPS "
    "cannot tell which topic a publish to the queue name should go to, so DefaultPublishTarget is required. "
    "With a literal UnderlyingTopic it is optional and defaults to that topic.",
    source="seed 001 (SOW/Queue)",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>"""),
    good=GOOD_QUEUE,
)
def default_publish_target_required(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        underlying = queue.text("UnderlyingTopic")
        if underlying and has_regex_chars(underlying) and not queue.text("DefaultPublishTarget"):
            yield Issue(queue.el, f"{queue.label()} has the pattern UnderlyingTopic '{underlying}' but no DefaultPublishTarget",
                        "add <DefaultPublishTarget> naming one literal topic that the pattern matches", at_text=False)


@rule(
    "Q-006", "queue-default-publish-target-covered", Severity.ERROR,
    "DefaultPublishTarget must be one of the queue's underlying topics.",
    description="Messages published to the queue name are routed to DefaultPublishTarget, which must be one of "
    "the topics the queue reads: equal to a literal UnderlyingTopic (or to the queue Name when there is none), or "
    "matched by a pattern UnderlyingTopic (AMPS patterns match anywhere in the topic name).",
    source="seed 001 (SOW/Queue)",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>TRADES_DIRECT</DefaultPublishTarget>"""),
    good=GOOD_QUEUE,
)
def default_publish_target_covered(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        target = queue.text("DefaultPublishTarget")
        topic, _ = underlying_topic(queue)
        if not target or not topic or (has_regex_chars(topic) and regex_error(topic)):
            continue
        if not topic_matches(topic, target):
            how = "matched by" if has_regex_chars(topic) else "equal to"
            yield Issue(queue.first("DefaultPublishTarget"),
                        f"{queue.label()} DefaultPublishTarget '{target}' is not {how} its underlying topic '{topic}'",
                        "name one of the queue's underlying topics, or widen UnderlyingTopic to include it")


@rule(
    "Q-007", "queue-default-publish-target-literal", Severity.WARNING,
    "DefaultPublishTarget should be a literal topic name, not a pattern.",
    description="DefaultPublishTarget is where publishes to the queue name are stored: one concrete topic. "
    "AMPS documentation does not say what happens with regular expression characters in it, so write the literal name.",
    source="spec/config.md §2.2",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_.*</DefaultPublishTarget>"""),
    good=GOOD_QUEUE,
)
def default_publish_target_literal(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        target = queue.text("DefaultPublishTarget")
        if target and has_regex_chars(target):
            yield Issue(queue.first("DefaultPublishTarget"),
                        f"{queue.label()} DefaultPublishTarget '{target}' contains regular expression characters",
                        "write the one literal topic that publishes to the queue should go to")


@rule(
    "Q-024", "queue-name-matches-own-pattern", Severity.WARNING,
    "A queue's pattern UnderlyingTopic should not match the queue's own Name.",
    description="A queue Name is itself a topic that consumers subscribe to. When the UnderlyingTopic pattern "
    "also matches that name, publishes to the queue name are ambiguous (queue topic or underlying topic). "
    "AMPS documentation does not describe this case; rename the queue or tighten the pattern.",
    source="spec/config.md §2.2",
    bad=queue_doc("""      <Name>ORDERS_QUEUE</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>"""),
    good=GOOD_QUEUE,
)
def name_matches_own_pattern(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        underlying = queue.text("UnderlyingTopic")
        name = queue.name
        if name and underlying and has_regex_chars(underlying) and regex_error(underlying) is None:
            if topic_matches(underlying, name):
                yield Issue(queue.first("UnderlyingTopic"),
                            f"{queue.label()} UnderlyingTopic '{underlying}' also matches the queue name itself",
                            "rename the queue to a name the pattern does not match, or narrow the pattern "
                            "(anchor it with ^ and $)")

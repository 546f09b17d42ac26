"""Rules for TransactionLog: spec/config.md §4.3.

The transaction log records the topics listed in its Topic children into journal files in
JournalDirectory. Queues, replication and transient SOW recovery depend on it; the rules
that check those cross references live with their sections (Q-003, SOWT-009, ...). This
module checks the section itself. Every TransactionLog element is checked (a duplicate
section is reported by GEN-004).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.common import bytes_of, count_of, interval_of, unknown_type_hint

MIN_JOURNAL_SIZE = 10_000_000  # 10M; compared with the larger (1024-based) reading of the value
MIN_FLUSH_NANOS = 1_000  # 1us
MAX_FLUSH_NANOS = 1_000_000_000  # 1000ms




_TOPIC = "    <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>"


def _txlog_doc(*lines: str) -> str:
    return "  <TransactionLog>\n" + "\n".join(lines) + "\n  </TransactionLog>"


_GOOD = _txlog_doc("    <JournalDirectory>./journal</JournalDirectory>", _TOPIC)


@rule(
    "TXL-001", "txlog-journal-directory", Severity.ERROR,
    "A TransactionLog needs a JournalDirectory.",
    description="JournalDirectory is where AMPS writes the journal files. Use one directory per AMPS instance.",
    source="spec/config.md §4.3",
    bad=_txlog_doc(_TOPIC),
    good=_GOOD,
)
def journal_directory(model: ConfigModel) -> Iterator[Issue]:
    for txlog in model.txlog_sections:
        if not txlog.text("JournalDirectory"):
            el = txlog.first("JournalDirectory")
            yield Issue(el if el is not None else txlog.el, "TransactionLog has no JournalDirectory",
                        "add <JournalDirectory>./journal</JournalDirectory> (one directory per instance)", at_text=False)


@rule(
    "TXL-002", "txlog-topic-fields", Severity.ERROR,
    "A TransactionLog Topic needs a Name and a MessageType.",
    description="Each TransactionLog/Topic records the topics whose name matches Name (a literal or a regular "
    "expression) for one MessageType.",
    source="spec/config.md §4.3",
    bad=_txlog_doc("    <JournalDirectory>./journal</JournalDirectory>", "    <Topic><Name>orders</Name></Topic>"),
    good=_GOOD,
)
def topic_fields(model: ConfigModel) -> Iterator[Issue]:
    for name, mtype, topic in model.txlog_topics:
        if name and mtype:
            continue  # hundreds of topics: the usual case first
        missing = [part for part, value in (("Name", name), ("MessageType", mtype)) if not value]
        if missing:
            label = f"TransactionLog Topic '{name}'" if name else "TransactionLog Topic"
            yield Issue(topic, f"{label} has no {' or '.join(missing)}",
                        "add " + " and ".join(f"<{m}>" for m in missing), at_text=False)


@rule(
    "TXL-003", "txlog-topic-message-type", Severity.ERROR,
    "A TransactionLog Topic's MessageType must be a default or declared message type.",
    description="The default types are fix, nvfix, xml, json, msgpack, bson, bflat and binary; any other must be "
    "declared under MessageTypes.",
    source="spec/config.md §4.3",
    bad=_txlog_doc("    <JournalDirectory>./journal</JournalDirectory>",
                   "    <Topic><Name>orders</Name><MessageType>jsn</MessageType></Topic>"),
    good=_GOOD,
)
def topic_message_type(model: ConfigModel) -> Iterator[Issue]:
    if not model.txlog_topics:
        return
    known = model.message_types
    for name, mtype, topic in model.txlog_topics:
        if mtype and mtype not in known:
            yield Issue(topic.find("MessageType"),
                        f"TransactionLog Topic '{name or '?'}' uses unknown MessageType '{mtype}'",
                        unknown_type_hint(mtype, known))


@rule(
    "TXL-004", "txlog-limits", Severity.ERROR,
    "TransactionLog values must respect the documented limits.",
    description="PreallocatedJournalFiles is at least 1 (default 2); JournalSize (legacy MinJournalSize) is at "
    "least 10M (default 1GB); FlushInterval is between 1us and 1000ms (default 100ms). A size is only reported "
    "when both the 1000- and the 1024-based readings are below the minimum. Unreadable values are reported by "
    "the UNIT rules.",
    source="spec/config.md §4.3, §8",
    bad=_txlog_doc("    <JournalDirectory>./journal</JournalDirectory>",
                   "    <FlushInterval>5s</FlushInterval>", _TOPIC),
    good=_txlog_doc("    <JournalDirectory>./journal</JournalDirectory>",
                    "    <FlushInterval>100ms</FlushInterval>", "    <JournalSize>1GB</JournalSize>", _TOPIC),
)
def limits(model: ConfigModel) -> Iterator[Issue]:
    for txlog in model.txlog_sections:
        for el in txlog.all("PreallocatedJournalFiles"):
            count = count_of(el)
            if count is not None and count.value < 1:
                yield Issue(el, f"TransactionLog PreallocatedJournalFiles {count.value} is below the minimum of 1",
                            "use 1 or more (the default is 2)")
        for el in txlog.all("JournalSize"):
            size = bytes_of(el)
            if size is not None and size.high < MIN_JOURNAL_SIZE:
                yield Issue(el, f"TransactionLog {el.tag} '{(el.text or '').strip()}' is below the minimum of 10M",
                            "use 10MB or more (the default is 1GB)")
        for el in txlog.all("FlushInterval"):
            interval = interval_of(el)
            if interval is None:
                continue
            if interval.nanos < MIN_FLUSH_NANOS:
                yield Issue(el, f"TransactionLog FlushInterval '{(el.text or '').strip()}' is below the minimum of 1us",
                            "use a value from 1us to 1000ms (the default is 100ms)")
            elif interval.nanos > MAX_FLUSH_NANOS:
                yield Issue(el, f"TransactionLog FlushInterval '{(el.text or '').strip()}' is above the maximum of 1000ms",
                            "use a value from 1us to 1000ms (the default is 100ms)")


def _same_path(a: str, b: str) -> bool:
    return os.path.normpath(a) == os.path.normpath(b)


@rule(
    "TXL-005", "txlog-archive-same-as-journal", Severity.WARNING,
    "JournalArchiveDirectory should differ from JournalDirectory.",
    description="Archiving moves completed journal files out of JournalDirectory; the documentation recommends "
    "an archive on a different device. Archiving into the journal directory itself does nothing useful. Paths "
    "are compared after normalisation (./journal equals journal/).",
    source="spec/config.md §4.3",
    bad=_txlog_doc("    <JournalDirectory>./journal</JournalDirectory>",
                   "    <JournalArchiveDirectory>journal/</JournalArchiveDirectory>", _TOPIC),
    good=_txlog_doc("    <JournalDirectory>./journal</JournalDirectory>",
                    "    <JournalArchiveDirectory>/archive/journal</JournalArchiveDirectory>", _TOPIC),
)
def archive_same_as_journal(model: ConfigModel) -> Iterator[Issue]:
    for txlog in model.txlog_sections:
        journal = txlog.text("JournalDirectory")
        if not journal:
            continue
        for el in txlog.all("JournalArchiveDirectory"):
            archive = (el.text or "").strip()
            if archive and _same_path(archive, journal):
                yield Issue(el, f"TransactionLog JournalArchiveDirectory '{archive}' is the JournalDirectory",
                            "archive to another directory, preferably on a different device")


@rule(
    "TXL-006", "txlog-no-topics", Severity.INFO,
    "A TransactionLog without Topic children records nothing.",
    description="AMPS initialises the transaction log but records no messages until a Topic is listed, so "
    "queues, replication and bookmark replay have nothing to work with.",
    source="spec/config.md §4.3",
    bad=_txlog_doc("    <JournalDirectory>./journal</JournalDirectory>"),
    good=_GOOD,
)
def no_topics(model: ConfigModel) -> Iterator[Issue]:
    for txlog in model.txlog_sections:
        if not txlog.has("Topic"):
            yield Issue(txlog.el, "TransactionLog records no Topic",
                        "add <Topic><Name>...</Name><MessageType>...</MessageType></Topic> for each topic to record",
                        at_text=False)


@rule(
    "TXL-007", "txlog-unique-client-names", Severity.INFO,
    "With a transaction log, every client must use a unique client name.",
    description="AMPS uses the client name with the publish sequence number to detect duplicate publishes and "
    "to identify messages in the journal. Two clients with the same name, or a client that reuses a name with a "
    "new sequence, can have messages discarded as duplicates. This cannot be checked statically, so the rule is "
    "opt-in (it would fire on every config with a transaction log): run it with --select TXL-007 to get the "
    "reminder once per TransactionLog section.",
    source="seed 002; spec/config.md §4.3",
    opt_in=True,
    bad=_GOOD,
    good="""  <SOW>
    <Topic><Name>orders</Name><MessageType>json</MessageType><Durability>transient</Durability></Topic>
  </SOW>""",
)
def unique_client_names(model: ConfigModel) -> Iterator[Issue]:
    for txlog in model.txlog_sections:
        yield Issue(txlog.el, "TransactionLog is configured: every client must connect with a unique client name",
                    "make client names unique per process, e.g. include host and process id", at_text=False)

"""Rules for Replication/Destination: spec/config.md §4.7.

REP-007 and the queue rule Q-021 share one concern (a LocalQueue replicated). Q-021 reports a
Destination Topic whose Name covers a local queue; REP-007 reports only the Topics that have
no Name (every topic of the type), so one mistake gives one finding.
"""

from __future__ import annotations

from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, Section, SowEntry, has_regex_chars, topic_matches
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.transports import CLIENT_TYPES, REPLICATION_TYPES

SYNC_TYPES = ("sync", "async")
EXCLUDABLE = ("txlog", "replicate", "sow", "cascade", "keys", "replicate_filter", "queue_passthrough")
NOT_EXCLUDABLE = frozenset({"queue", "queue_underlying"})


def label(dest: Section) -> str:
    """How findings name a Replication/Destination (also those about its Authenticator)."""
    name = dest.text("Name")
    return f"Destination '{name}'" if name else "Destination (unnamed)"


def _topics(dest: Section) -> list[Section]:
    return [Section(el) for el in dest.all("Topic")]


def _replicated(topic: Section, entries: list[tuple[SowEntry, list[str]]]) -> SowEntry | None:
    """The first SOW entry that this Destination/Topic replicates (by name, or its literal
    underlying topic); ``entries`` pairs each entry with those names (``_replica_names``).

    A Topic without a Name replicates every topic of its MessageType.
    """
    pattern = topic.text("Name")
    mtype = topic.text("MessageType")
    if not pattern and not mtype:
        return None
    literal = not has_regex_chars(pattern or "")
    for entry, names in entries:
        if mtype and entry.message_type and mtype != entry.message_type:
            continue
        if not pattern or (pattern in names if literal else any(topic_matches(pattern, name) for name in names)):
            return entry
    return None


def _replica_names(entries: list[SowEntry]) -> list[tuple[SowEntry, list[str]]]:
    """Each entry with the names a Destination/Topic can replicate it by: its Name, and its
    UnderlyingTopic when that is literal (empty ones left out)."""
    found = []
    for entry in entries:
        underlying = entry.text("UnderlyingTopic") or ""
        names = [entry.name or ""] + ([underlying] if underlying and not has_regex_chars(underlying) else [])
        found.append((entry, [name for name in names if name]))
    return found


_DESTINATION = """  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <Replication>
    <Destination>
      <Name>amps-b</Name>
      <SyncType>sync</SyncType>
      <Transport>
        <Type>amps-replication</Type>
        <InetAddr>amps-b.example.com:10004</InetAddr>
      </Transport>
      <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
    </Destination>
  </Replication>"""


@rule(
    "REP-001", "replication-destination-required", Severity.ERROR,
    "A replication Destination needs a SyncType (sync or async), a Transport with an InetAddr, and a Topic.",
    description="SyncType says whether publishers wait for this destination's acknowledgement; Transport "
    "(one or more, a failover list) says where to connect; Topic (one or more) says which messages to send.",
    source="spec/config.md §4.7",
    bad="""  <Replication>
    <Destination>
      <Name>amps-b</Name>
      <Transport><Type>amps-replication</Type><InetAddr>amps-b.example.com:10004</InetAddr></Transport>
      <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
    </Destination>
  </Replication>""",
    good=_DESTINATION,
)
def destination_required(model: ConfigModel) -> Iterator[Issue]:
    for dest in model.replication_destinations:
        missing = [child for child in ("SyncType", "Transport", "Topic") if not dest.has(child)]
        if missing:
            yield Issue(dest.el, f"{label(dest)} has no {', no '.join(missing)}",
                        "add <SyncType>sync</SyncType>, a <Transport> and at least one <Topic>", at_text=False)
        sync = dest.text("SyncType")
        if sync is not None and sync not in SYNC_TYPES:
            yield Issue(dest.first("SyncType"), f"{label(dest)} has SyncType '{sync}'", "use sync or async")
        for transport in dest.all("Transport"):
            if not Section(transport).text("InetAddr"):
                yield Issue(transport, f"A Transport of {label(dest)} has no InetAddr",
                            "add <InetAddr>host:port</InetAddr> of the downstream replication transport",
                            at_text=False)


@rule(
    "REP-002", "replication-transport-type", Severity.ERROR,
    "A Destination Transport's Type must be amps-replication or amps-replication-secure.",
    description="Outgoing replication connects to the downstream instance's incoming replication transport, "
    "so its Type is one of the two replication types.",
    source="spec/config.md §4.7",
    bad="""  <Replication>
    <Destination>
      <SyncType>async</SyncType>
      <Transport><Type>tcp</Type><InetAddr>amps-b.example.com:10004</InetAddr></Transport>
      <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
    </Destination>
  </Replication>""",
    good="""  <Replication>
    <Destination>
      <SyncType>async</SyncType>
      <Transport><Type>amps-replication</Type><InetAddr>amps-b.example.com:10004</InetAddr></Transport>
      <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
    </Destination>
  </Replication>""",
)
def transport_type(model: ConfigModel) -> Iterator[Issue]:
    for dest in model.replication_destinations:
        for el in dest.all("Transport"):
            transport = Section(el)
            kind = transport.text("Type")
            if not kind:
                yield Issue(el, f"A Transport of {label(dest)} has no Type",
                            "add <Type>amps-replication</Type>", at_text=False)
            elif kind not in REPLICATION_TYPES:
                yield Issue(transport.first("Type"), f"A Transport of {label(dest)} has Type '{kind}'",
                            "use amps-replication or amps-replication-secure")


@rule(
    "REP-003", "replication-topic-message-type", Severity.ERROR,
    "Each Destination Topic needs a known MessageType.",
    description="Replication selects messages by message type (and optionally topic name); the MessageType "
    "must be a default type or one declared in MessageTypes.",
    source="spec/config.md §4.7",
    bad="""  <Replication>
    <Destination>
      <SyncType>async</SyncType>
      <Transport><Type>amps-replication</Type><InetAddr>amps-b.example.com:10004</InetAddr></Transport>
      <Topic><Name>orders</Name></Topic>
    </Destination>
  </Replication>""",
    good=_DESTINATION,
)
def topic_message_type(model: ConfigModel) -> Iterator[Issue]:
    for dest in model.replication_destinations:
        for topic in _topics(dest):
            mtype = topic.text("MessageType")
            if not mtype:
                yield Issue(topic.el, f"A Topic of {label(dest)} has no MessageType",
                            "add <MessageType>json</MessageType> (the type of the replicated topics)", at_text=False)
            elif mtype not in model.message_types:
                yield Issue(topic.first("MessageType"), f"A Topic of {label(dest)} has an unknown MessageType "
                            f"'{mtype}'", "use a default message type or declare it in MessageTypes")


@rule(
    "REP-004", "replication-topic-in-txlog", Severity.ERROR,
    "Replicated topics must be recorded in this instance's transaction log.",
    description="AMPS replicates from the transaction log, so every replicated topic must be covered by a "
    "TransactionLog/Topic with the same message type. A regex Destination topic is only reported when the "
    "log records nothing of that message type (overlap of two regexes cannot be decided).",
    source="spec/config.md §4.7",
    bad="""  <Replication>
    <Destination>
      <SyncType>async</SyncType>
      <Transport><Type>amps-replication</Type><InetAddr>amps-b.example.com:10004</InetAddr></Transport>
      <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
    </Destination>
  </Replication>""",
    good=_DESTINATION,
)
def topic_in_txlog(model: ConfigModel) -> Iterator[Issue]:
    logged_types = {mtype for _, mtype, _ in model.txlog_topics}
    for dest in model.replication_destinations:
        for topic in _topics(dest):
            name, mtype = topic.text("Name"), topic.text("MessageType")
            if not mtype:
                continue  # REP-003
            if not model.txlog_topics:
                covered = False
            elif not name or has_regex_chars(name):
                covered = mtype in logged_types or None in logged_types
            else:
                covered = model.txlog_covers(name, mtype)
            if not covered:
                what = f"Topic '{name}' ({mtype}) of {label(dest)} is" if name else \
                    f"The {mtype} topics replicated by {label(dest)} are"
                yield Issue(topic.first("Name") if name else topic.el,
                            f"{what} not recorded in the transaction log",
                            f"add <Topic><Name>{name or '.*'}</Name><MessageType>{mtype}</MessageType></Topic> "
                            "to TransactionLog", at_text=bool(name))


@rule(
    "REP-005", "replication-exclude-validation", Severity.ERROR,
    "ExcludeValidation lists only excludable checks: txlog, replicate, sow, cascade, keys, replicate_filter, "
    "queue_passthrough.",
    description="When a replication link connects, AMPS validates that both sides agree on each replicated "
    "topic. Most checks can be turned off per Topic; `queue` and `queue_underlying` cannot, and any other "
    "word is not a check at all.",
    source="spec/config.md §4.7",
    bad="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <Replication>
    <Destination>
      <SyncType>async</SyncType>
      <Transport><Type>amps-replication</Type><InetAddr>amps-b.example.com:10004</InetAddr></Transport>
      <Topic><Name>orders</Name><MessageType>json</MessageType><ExcludeValidation>txlog,queue</ExcludeValidation></Topic>
    </Destination>
  </Replication>""",
    good="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <Replication>
    <Destination>
      <SyncType>async</SyncType>
      <Transport><Type>amps-replication</Type><InetAddr>amps-b.example.com:10004</InetAddr></Transport>
      <Topic><Name>orders</Name><MessageType>json</MessageType><ExcludeValidation>txlog,replicate</ExcludeValidation></Topic>
    </Destination>
  </Replication>""",
)
def exclude_validation(model: ConfigModel) -> Iterator[Issue]:
    for dest in model.replication_destinations:
        for topic in _topics(dest):
            for el in topic.all("ExcludeValidation"):
                tokens = [t.strip() for t in (el.text or "").split(",")]
                mandatory = [t for t in tokens if t in NOT_EXCLUDABLE]
                unknown = [t for t in tokens if t not in EXCLUDABLE and t not in NOT_EXCLUDABLE]
                if mandatory:
                    yield Issue(el, f"ExcludeValidation of {label(dest)} tries to exclude the mandatory "
                                f"check{'s' if len(mandatory) > 1 else ''} {', '.join(mandatory)}",
                                "queue and queue_underlying are always validated; remove them")
                if unknown:
                    yield Issue(el, f"ExcludeValidation of {label(dest)} has unknown "
                                f"entr{'ies' if len(unknown) > 1 else 'y'} {', '.join(repr(t) for t in unknown)}",
                                f"use a comma list of {', '.join(EXCLUDABLE)}")


@rule(
    "REP-006", "replication-queue-passthrough", Severity.WARNING,
    "A replicated queue needs PassThrough on the Destination.",
    description="Distributed queues move ownership between instances over replication, so every instance "
    "must pass queue messages through for every group that replicates the queue, including its own group. "
    "A Destination that replicates a Queue or GroupLocalQueue without PassThrough breaks that chain.",
    source="spec/config.md §4.7",
    bad="""  <SOW>
    <Queue><Name>work</Name><MessageType>json</MessageType></Queue>
  </SOW>
  <Replication>
    <Destination>
      <SyncType>sync</SyncType>
      <Transport><Type>amps-replication</Type><InetAddr>amps-b.example.com:10004</InetAddr></Transport>
      <Topic><Name>work</Name><MessageType>json</MessageType></Topic>
    </Destination>
  </Replication>""",
    good="""  <SOW>
    <Queue><Name>work</Name><MessageType>json</MessageType></Queue>
  </SOW>
  <Replication>
    <Destination>
      <SyncType>sync</SyncType>
      <Transport><Type>amps-replication</Type><InetAddr>amps-b.example.com:10004</InetAddr></Transport>
      <Topic><Name>work</Name><MessageType>json</MessageType></Topic>
      <PassThrough>.*</PassThrough>
    </Destination>
  </Replication>""",
)
def queue_passthrough(model: ConfigModel) -> Iterator[Issue]:
    queues = model.entries("Queue", "GroupLocalQueue")
    if not queues:
        return
    named = _replica_names(queues)
    for dest in model.replication_destinations:
        if dest.text("PassThrough"):
            continue
        for topic in _topics(dest):
            queue = _replicated(topic, named)
            if queue is not None:
                name = topic.first("Name")
                yield Issue(name if topic.text("Name") else topic.el,
                            f"{label(dest)} replicates {queue.label()} but has no PassThrough",
                            "add <PassThrough>.*</PassThrough> (or a regex matching every group that "
                            "replicates the queue, including this one)", at_text=bool(topic.text("Name")))


@rule(
    "REP-007", "replication-local-queue", Severity.WARNING,
    "A Destination Topic without a Name replicates every topic of a type, including a LocalQueue's.",
    description="A LocalQueue exists on this instance only and is never replicated. A Destination Topic "
    "with only a MessageType replicates every topic of that type, so the local queue's topic goes to the "
    "downstream instance too, where a queue over the same topic would deliver the messages again. A Topic "
    "whose Name covers the local queue is reported by Q-021; this rule covers the Name-less form.",
    source="spec/config.md §4.7, §2.2",
    bad="""  <SOW>
    <LocalQueue><Name>local-work</Name><MessageType>json</MessageType></LocalQueue>
  </SOW>
  <Replication>
    <Destination>
      <SyncType>sync</SyncType>
      <Transport><Type>amps-replication</Type><InetAddr>amps-b.example.com:10004</InetAddr></Transport>
      <Topic><MessageType>json</MessageType></Topic>
    </Destination>
  </Replication>""",
    good="""  <SOW>
    <LocalQueue><Name>local-work</Name><MessageType>json</MessageType></LocalQueue>
  </SOW>
  <Replication>
    <Destination>
      <SyncType>sync</SyncType>
      <Transport><Type>amps-replication</Type><InetAddr>amps-b.example.com:10004</InetAddr></Transport>
      <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
    </Destination>
  </Replication>""",
)
def local_queue(model: ConfigModel) -> Iterator[Issue]:
    local = model.entries("LocalQueue")
    if not local:
        return
    named = _replica_names(local)
    for dest in model.replication_destinations:
        for topic in _topics(dest):
            if topic.text("Name"):
                continue
            queue = _replicated(topic, named)
            if queue is not None:
                yield Issue(topic.el, f"{label(dest)} replicates every {topic.text('MessageType')} topic, "
                            f"including {queue.label()}, which is local to this instance",
                            "list the replicated topics by Name so the local queue's topic is left out, or make "
                            "the queue a Queue or GroupLocalQueue", at_text=False)


@rule(
    "REP-008", "replication-destination-self", Severity.WARNING,
    "A Destination's Name equals this instance's Name.",
    description="Destination Name should be the downstream instance's Name; using this instance's own name "
    "usually means a copied configuration that replicates to itself or mislabels the link in logs.",
    source="spec/config.md §4.7",
    bad="""  <Replication>
    <Destination>
      <Name>demo</Name>
      <SyncType>async</SyncType>
      <Transport><Type>amps-replication</Type><InetAddr>amps-b.example.com:10004</InetAddr></Transport>
      <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
    </Destination>
  </Replication>""",
    good="""  <Replication>
    <Destination>
      <Name>amps-b</Name>
      <SyncType>async</SyncType>
      <Transport><Type>amps-replication</Type><InetAddr>amps-b.example.com:10004</InetAddr></Transport>
      <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
    </Destination>
  </Replication>""",
)
def destination_self(model: ConfigModel) -> Iterator[Issue]:
    instance = model.instance_name
    for dest in model.replication_destinations:
        if instance and dest.text("Name") == instance:
            yield Issue(dest.first("Name"), f"Destination Name '{instance}' is this instance's own Name",
                        "use the Name of the downstream instance")


@rule(
    "REP-009", "replication-one-way", Severity.INFO,
    "The instance replicates out but has no incoming replication transport.",
    description="Without an `amps-replication` transport this instance cannot receive replication, so the "
    "link is one-way: after a failover the downstream instance cannot send back what it received.",
    source="spec/config.md §4.7",
    bad=_DESTINATION,
    good=_DESTINATION + """
  <Transports>
    <Transport><Name>repl</Name><Type>amps-replication</Type><InetAddr>10004</InetAddr></Transport>
  </Transports>""",
)
def one_way(model: ConfigModel) -> Iterator[Issue]:
    if not model.replication_destinations or any(t.text("Type") in REPLICATION_TYPES for t in model.transports):
        return
    yield Issue(model.root.first("Replication"), "This instance replicates to other instances but has no "
                "incoming replication transport (one-way replication)",
                "add a Transport with <Type>amps-replication</Type> if the peers replicate back", at_text=False)


@rule(
    "REP-010", "replication-no-sync-destination", Severity.WARNING,
    "Client publishes are accepted but no Destination is sync.",
    description="With only async destinations a publisher's message is acknowledged before any other "
    "instance has it, so a failover can lose acknowledged messages. The docs advise at least one `sync` "
    "destination on an instance that accepts publishes.",
    source="spec/config.md §4.7",
    bad="""  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol></Transport>
  </Transports>
  <Replication>
    <Destination>
      <Name>amps-b</Name>
      <SyncType>async</SyncType>
      <Transport><Type>amps-replication</Type><InetAddr>amps-b.example.com:10004</InetAddr></Transport>
      <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
    </Destination>
  </Replication>""",
    good="""  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol></Transport>
  </Transports>
  <Replication>
    <Destination>
      <Name>amps-b</Name>
      <SyncType>sync</SyncType>
      <Transport><Type>amps-replication</Type><InetAddr>amps-b.example.com:10004</InetAddr></Transport>
      <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
    </Destination>
  </Replication>""",
)
def no_sync_destination(model: ConfigModel) -> Iterator[Issue]:
    destinations = model.replication_destinations
    if not destinations or any(d.text("SyncType") == "sync" for d in destinations):
        return
    if any(t.text("Type") in CLIENT_TYPES for t in model.transports):
        yield Issue(model.root.first("Replication"), "No replication Destination is sync although this "
                    "instance accepts client publishes", "make at least one Destination <SyncType>sync</SyncType>",
                    at_text=False)

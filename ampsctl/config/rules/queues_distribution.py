"""Where a queue lives: distributed Queue, LocalQueue or GroupLocalQueue (spec/config.md §2.2,
seed 001).

A Queue is distributed across replicated instances, a LocalQueue exists on this instance
only, and a GroupLocalQueue has an InitialOwner that first owns its messages. These rules check
the elements that only one kind accepts, that the InitialOwner is reachable (this instance or
a Replication/Destination), and that no replication Topic covers a LocalQueue.
"""

from __future__ import annotations

from collections.abc import Iterator

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, Section, topic_matches
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.expr_tokens import may_overlap
from ampsctl.config.rules.queues_definition import queue_doc, queue_tag, underlying_topic


def _destination_names(model: ConfigModel) -> set[str]:
    return {name for destination in model.replication_destinations if (name := destination.text("Name"))}


def _replicated_topics(model: ConfigModel) -> Iterator[tuple[str, str | None, etree._Element, str]]:
    """(topic name or regex, message type, Name element, destination label) per Destination/Topic."""
    for dest in model.replication_destinations:
        label = f"Destination '{dest.text('Name')}'" if dest.text("Name") else "a Destination"
        for topic in dest.all("Topic"):
            section = Section(topic)
            name_el = section.first("Name")
            if name_el is not None and section.text("Name"):
                yield section.text("Name") or "", section.text("MessageType"), name_el, label


@rule(
    "Q-015", "queue-initial-owner-required", Severity.ERROR,
    "A GroupLocalQueue needs an InitialOwner.",
    description="InitialOwner is the instance Name that owns a message when it is first published. It is "
    "required for GroupLocalQueue and has no default.",
    source="seed 001 (SOW/GroupLocalQueue)",
    bad=queue_doc("""      <Name>GroupQueue</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>""", kind="GroupLocalQueue"),
    good=queue_doc("""      <Name>GroupQueue</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <InitialOwner>demo</InitialOwner>""", kind="GroupLocalQueue"),
)
def initial_owner_required(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        if queue.kind == "GroupLocalQueue" and not queue.text("InitialOwner"):
            yield Issue(queue.el, f"{queue.label()} has no InitialOwner",
                        f"add <InitialOwner>{model.instance_name or 'instance-name'}</InitialOwner> "
                        "naming the instance that first owns messages", at_text=False)


@rule(
    "Q-016", "queue-initial-owner-not-allowed", Severity.ERROR,
    "InitialOwner is only valid on a GroupLocalQueue.",
    description="InitialOwner is not supported for fully distributed queues (Queue, QueueDefinition) or for "
    "local queues (LocalQueue).",
    source="seed 001 (SOW/GroupLocalQueue)",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <InitialOwner>demo</InitialOwner>"""),
    good=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <InitialOwner>demo</InitialOwner>""", kind="GroupLocalQueue"),
)
def initial_owner_not_allowed(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        if queue.kind != "GroupLocalQueue":
            for el in queue.all("InitialOwner"):
                yield Issue(el, f"InitialOwner is not supported on {queue_tag(queue)} '{queue.name or '?'}'",
                            "remove InitialOwner, or define the queue as a <GroupLocalQueue>", at_text=False)


@rule(
    "Q-017", "queue-group-local-domain-misplaced", Severity.WARNING,
    "GroupLocalQueueDomain only applies to a GroupLocalQueue.",
    description="GroupLocalQueueDomain (AMPS 5.3.4+) identifies a group local queue across replication groups. "
    "On a Queue or LocalQueue it has no documented effect.",
    source="seed 001 (SOW/GroupLocalQueue)",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <GroupLocalQueueDomain>CONSUME_INSTANCES</GroupLocalQueueDomain>""", kind="LocalQueue"),
    good=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <InitialOwner>demo</InitialOwner>
      <GroupLocalQueueDomain>CONSUME_INSTANCES</GroupLocalQueueDomain>""", kind="GroupLocalQueue"),
)
def group_local_domain_misplaced(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        if queue.kind != "GroupLocalQueue":
            for el in queue.all("GroupLocalQueueDomain"):
                yield Issue(el, f"GroupLocalQueueDomain has no effect on {queue_tag(queue)} '{queue.name or '?'}'",
                            "remove it, or define the queue as a <GroupLocalQueue>", at_text=False)


@rule(
    "Q-018", "queue-initial-owner-unreachable", Severity.WARNING,
    "A GroupLocalQueue's InitialOwner should be this instance or a replication destination.",
    description="AMPS does not check that InitialOwner exists or is reachable. ampsctl warns when it is neither "
    "this instance's Name nor the Name of a Replication/Destination, since messages would then be owned by an "
    "instance this one cannot reach. All instances that define the queue must use the same InitialOwner "
    "(not checked: ampsctl sees one file at a time).",
    source="seed 001 (SOW/GroupLocalQueue)",
    bad=queue_doc("""      <Name>GroupQueue</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <InitialOwner>amps-9</InitialOwner>""", kind="GroupLocalQueue"),
    good=queue_doc("""      <Name>GroupQueue</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <InitialOwner>demo</InitialOwner>""", kind="GroupLocalQueue"),
)
def initial_owner_unreachable(model: ConfigModel) -> Iterator[Issue]:
    queues = [q for q in model.queues if q.kind == "GroupLocalQueue" and q.text("InitialOwner")]
    if not queues:
        return
    reachable = _destination_names(model) | {model.instance_name or ""}
    for queue in queues:
        owner = queue.text("InitialOwner") or ""
        if owner not in reachable:
            yield Issue(queue.first("InitialOwner"),
                        f"{queue.label()} InitialOwner '{owner}' is neither this instance nor a replication destination",
                        f"check the spelling; add a Replication/Destination named '{owner}', or use this instance "
                        f"'{model.instance_name or '?'}'")


@rule(
    "Q-021", "queue-local-replicated", Severity.WARNING,
    "A LocalQueue (or its underlying topic) should not be listed in Replication/Destination/Topic.",
    description="A LocalQueue exists on this instance only and is never replicated. A replication Topic that "
    "names it (or, when it has none, its underlying topic) suggests a queue that was meant to be distributed: "
    "use Queue or GroupLocalQueue, or stop replicating it. Reported at the replication Topic's Name.",
    source="spec/config.md §2.2 (DIG)",
    bad="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>jobs</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <LocalQueue><Name>jobs</Name><MessageType>json</MessageType></LocalQueue>
  </SOW>
  <Replication>
    <Destination>
      <Name>amps-b</Name>
      <SyncType>async</SyncType>
      <Transport><Type>amps-replication</Type><InetAddr>host-b:10005</InetAddr></Transport>
      <Topic><Name>jobs</Name><MessageType>json</MessageType></Topic>
    </Destination>
  </Replication>""",
    good="""  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>jobs</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <Queue><Name>jobs</Name><MessageType>json</MessageType></Queue>
  </SOW>
  <Replication>
    <Destination>
      <Name>amps-b</Name>
      <SyncType>async</SyncType>
      <Transport><Type>amps-replication</Type><InetAddr>host-b:10005</InetAddr></Transport>
      <Topic><Name>jobs</Name><MessageType>json</MessageType></Topic>
    </Destination>
  </Replication>""",
)
def local_queue_replicated(model: ConfigModel) -> Iterator[Issue]:
    local = [q for q in model.queues if q.kind == "LocalQueue" and q.name]
    if not local:
        return
    for pattern, rep_type, name_el, destination in _replicated_topics(model):
        for queue in local:
            if rep_type and queue.message_type and rep_type != queue.message_type:
                continue
            topic, _ = underlying_topic(queue)
            if topic_matches(pattern, queue.name or "") or (topic and may_overlap(pattern, topic)):
                yield Issue(name_el, f"{destination} replicates '{pattern}', which covers {queue.label()}; "
                            "local queues are never replicated",
                            "define the queue as <Queue> or <GroupLocalQueue> to distribute it, "
                            "or remove it from the replication Topic")

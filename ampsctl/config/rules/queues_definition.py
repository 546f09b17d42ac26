"""SOW/Queue (synonym QueueDefinition), LocalQueue and GroupLocalQueue: the definition itself
(spec/config.md §2.2, seed 001).

Q-001 and Q-002 check the queue's Name and MessageType; Q-020, Q-022 and Q-023 the values
of its own elements (RecoveryPoint, the intervals and counts this rule family owns instead of
the UNIT rules, and the version-gated ExpirationModel). The other queue modules share the
helpers below: ``queue_tag`` and ``underlying_topic`` read a definition, ``queue_doc`` builds
the documentation examples.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, SowEntry
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.common import unknown_type_hint, version_tuple
from ampsctl.errors import UnitError
from ampsctl.units import parse_count, parse_interval

INTERVAL_CHILDREN = ("LeasePeriod", "Expiration", "DeferredAckExpiration")
COUNT_CHILDREN = ("MaxBacklog", "MaxPerSubscriptionBacklog", "MaxDeliveries", "MaxCancels", "TargetQueueDepth")
EXPIRATION_MODEL_VERSION = (5, 3, 5)

_BOOKMARK = re.compile(r"[0-9]+(\|[0-9]+)*\|?")
_TIMESTAMP = re.compile(r"(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\.\d+)?Z?")


def underlying_topic(queue: SowEntry) -> tuple[str | None, etree._Element | None]:
    """The queue's underlying topic text and the element that holds it (UnderlyingTopic or Name)."""
    text = queue.text("UnderlyingTopic")
    if text:
        return text, queue.first("UnderlyingTopic")
    return queue.name, queue.first("Name")


def queue_tag(queue: SowEntry) -> str:
    """The queue element as spelled in the file (QueueDefinition stays QueueDefinition)."""
    return str(queue.el.tag)


def _bad_recovery_point(value: str) -> str | None:
    """Why a queue RecoveryPoint is not valid, or None when it is."""
    if value in ("epoch", "now", "creation") or _BOOKMARK.fullmatch(value):
        return None
    stamp = _TIMESTAMP.fullmatch(value)
    if stamp:
        _, month, day, hour, minute, second = (int(stamp.group(n)) for n in range(1, 7))
        if 1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second <= 60:
            return None
        return "is not a real date and time"
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}T.*", value):
        return "uses the extended ISO-8601 form; AMPS expects the timestamp-bookmark form YYYYmmddTHHMMSS"
    return "is not epoch, now, creation, an AMPS bookmark or a YYYYmmddTHHMMSS[.ffffff][Z] timestamp"


# ---------------------------------------------------------------------------------------------
# Documentation examples, shared by the queue modules
# ---------------------------------------------------------------------------------------------


_TXLOG_ORDERS = """  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>ORDERS_.*</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>"""


def queue_doc(body: str, txlog: str = _TXLOG_ORDERS, kind: str = "Queue") -> str:
    return f"""{txlog}
  <SOW>
    <{kind}>
{body}
    </{kind}>
  </SOW>"""


GOOD_QUEUE = queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>""")


# ---------------------------------------------------------------------------------------------
# name and message type
# ---------------------------------------------------------------------------------------------


@rule(
    "Q-001", "queue-name-required", Severity.ERROR,
    "A queue needs a Name (or its legacy synonym Topic).",
    description="The Name is the topic that consumers subscribe to, and the default underlying topic. "
    "AMPS accepts Topic in its place for configurations written before 5.0.",
    source="seed 001 (SOW/Queue)",
    bad=queue_doc("""      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>"""),
    good=GOOD_QUEUE,
)
def name_required(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        name_el = queue.first("Name")
        if name_el is None:
            yield Issue(queue.el, f"{queue_tag(queue)} has no Name", "add <Name>queue-topic</Name>", at_text=False)
        elif not queue.name:
            yield Issue(name_el, f"{queue_tag(queue)} has an empty <{name_el.tag}>",
                        "write the queue topic name consumers subscribe to", at_text=False)


@rule(
    "Q-002", "queue-message-type", Severity.ERROR,
    "A queue needs a MessageType that is a default or declared message type.",
    description="All underlying topics of a queue must have the queue's message type. The default types are "
    "fix, nvfix, xml, json, msgpack, bson, bflat and binary; any other type must be declared under MessageTypes.",
    source="seed 001 (SOW/Queue)",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>jsn</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>"""),
    good=GOOD_QUEUE,
)
def message_type(model: ConfigModel) -> Iterator[Issue]:
    known = model.message_types
    for queue in model.queues:
        el = queue.first("MessageType")
        mtype = queue.message_type
        if el is None or not mtype:
            yield Issue(el if el is not None else queue.el, f"{queue.label()} has no MessageType",
                        "add <MessageType>json</MessageType> (the type of its underlying topics)", at_text=False)
        elif mtype not in known:
            yield Issue(el, f"{queue.label()} uses unknown MessageType '{mtype}'", unknown_type_hint(mtype, known))


# ---------------------------------------------------------------------------------------------
# values of the queue's own elements
# ---------------------------------------------------------------------------------------------


@rule(
    "Q-020", "queue-recovery-point", Severity.ERROR,
    "A queue RecoveryPoint is epoch, now, creation, an AMPS bookmark or a timestamp.",
    description="The timestamp must use the format of AMPS timestamp bookmarks: YYYYmmddTHHMMSS with optional "
    "fractional seconds and Z (e.g. 20240131T120000Z). `creation` currently behaves like `now`.",
    source="seed 001 (SOW/Queue)",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <RecoveryPoint>yesterday</RecoveryPoint>"""),
    good=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <RecoveryPoint>20240131T120000Z</RecoveryPoint>"""),
)
def recovery_point(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        for el in queue.all("RecoveryPoint"):
            value = (el.text or "").strip()
            problem = _bad_recovery_point(value)
            if problem:
                yield Issue(el, f"{queue.label()} RecoveryPoint '{value}' {problem}",
                            "use epoch, now, creation, a bookmark, or a timestamp such as 20240131T120000Z")


@rule(
    "Q-022", "queue-value-types", Severity.ERROR,
    "Queue intervals and counts must be valid values.",
    description="LeasePeriod, Expiration and DeferredAckExpiration are intervals (e.g. 60s, 15m, 1d); MaxBacklog, "
    "MaxPerSubscriptionBacklog, MaxDeliveries, MaxCancels and TargetQueueDepth are non-negative whole numbers. "
    "Invalid values are errors. Undocumented but readable forms (an interval without a unit, read as seconds; "
    "a fraction; an upper-case unit; a k/M suffix on a count) are reported as warnings. This rule owns these "
    "checks for queue children; the UNIT rules skip them.",
    source="seed 001 (SOW/Queue); spec/config.md §3",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <LeasePeriod>one minute</LeasePeriod>"""),
    good=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <LeasePeriod>60s</LeasePeriod>
      <MaxBacklog>3</MaxBacklog>"""),
)
def value_types(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        for child in queue.el:
            tag = child.tag
            if tag in INTERVAL_CHILDREN:
                parse, kind = parse_interval, "an interval"
            elif tag in COUNT_CHILDREN:
                parse, kind = parse_count, "a count"
            else:
                continue
            value = (child.text or "").strip()
            try:
                parsed = parse(child.text or "")
            except UnitError as exc:
                yield Issue(child, f"{queue.label()} {tag}: {exc.message}", exc.hint)
                continue
            if parsed.undocumented:
                yield Issue(child, f"{queue.label()} {tag} '{value}' {parsed.undocumented}",
                            f"write {kind} in the documented form, e.g. "
                            + ("60s or 15m" if kind == "an interval" else "1000"),
                            severity=Severity.WARNING)


@rule(
    "Q-023", "queue-expiration-model-version", Severity.WARNING,
    "ExpirationModel needs AMPS 5.3.5 or later.",
    description="ExpirationModel appears only in the AMPS 5.3.5 documentation. ampsctl warns unless the config "
    "declares RequiredMinimumVersion 5.3.5 or later, which makes older servers refuse the file.",
    source="spec/config.md §2.2 (DIG)",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <ExpirationModel>latest</ExpirationModel>"""),
    good="""<AMPSConfig>
  <Name>demo</Name>
  <RequiredMinimumVersion>5.3.5.0</RequiredMinimumVersion>
""" + queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <ExpirationModel>latest</ExpirationModel>""") + "\n</AMPSConfig>",
)
def expiration_model_version(model: ConfigModel) -> Iterator[Issue]:
    required = version_tuple(model.root.text("RequiredMinimumVersion"))
    if required is not None and required >= EXPIRATION_MODEL_VERSION:
        return
    for queue in model.queues:
        for el in queue.all("ExpirationModel"):
            yield Issue(el, f"{queue.label()} uses ExpirationModel, which AMPS supports from 5.3.5",
                        "add <RequiredMinimumVersion>5.3.5.0</RequiredMinimumVersion>, or remove ExpirationModel "
                        "for older servers", at_text=False)

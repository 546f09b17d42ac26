"""How a queue delivers: Semantics, Leasing, FairnessModel, TargetQueueDepth, Priority,
BarrierExpression, FileBackedMetadata and the queue Filter (spec/config.md §2.2, §9, seed 001).

The values are enumerations documented per element, plus the combinations AMPS refuses
(TargetQueueDepth with Priority or BarrierExpression, Priority with BarrierExpression, a
non-round-robin fairness model on an at-most-once queue). Filter and BarrierExpression decide
membership and barriers, so they must be deterministic (checked at token level, ``expr_tokens``).
"""

from __future__ import annotations

from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.common import count_of, enum_issues
from ampsctl.config.rules.expr_tokens import nondeterministic_issues
from ampsctl.config.rules.queues_definition import queue_doc

SEMANTICS = ("at-least-once", "at-most-once")
LEASING = ("strict", "sublet")
FAIRNESS = ("fast", "round-robin", "proportional")
MIN_TARGET_QUEUE_DEPTH = 1000


@rule(
    "Q-008", "queue-enumerated-values", Severity.ERROR,
    "Semantics, Leasing and FairnessModel must use their documented values.",
    description="Semantics is at-least-once (default) or at-most-once; Leasing is strict or sublet (default); "
    "FairnessModel is fast, round-robin or proportional.",
    source="seed 001 (SOW/Queue)",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <Semantics>exactly-once</Semantics>"""),
    good=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <Semantics>at-least-once</Semantics>"""),
)
def enumerated_values(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        yield from enum_issues(queue, (("Semantics", SEMANTICS), ("Leasing", LEASING), ("FairnessModel", FAIRNESS)))


@rule(
    "Q-009", "queue-at-most-once-fairness", Severity.ERROR,
    "An at-most-once queue only supports the round-robin FairnessModel.",
    description="round-robin is the default and the only valid delivery model for at-most-once queues; "
    "fast and proportional apply to at-least-once queues.",
    source="seed 001 (SOW/Queue)",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <Semantics>at-most-once</Semantics>
      <FairnessModel>proportional</FairnessModel>"""),
    good=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <Semantics>at-most-once</Semantics>
      <FairnessModel>round-robin</FairnessModel>"""),
)
def at_most_once_fairness(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        if queue.text("Semantics") != "at-most-once":
            continue
        for el in queue.all("FairnessModel"):
            value = (el.text or "").strip()
            if value in FAIRNESS and value != "round-robin":
                yield Issue(el, f"{queue.label()} is at-most-once but uses FairnessModel '{value}'",
                            "use <FairnessModel>round-robin</FairnessModel> or remove it")


@rule(
    "Q-010", "queue-target-depth-minimum", Severity.ERROR,
    "TargetQueueDepth must be at least 1000.",
    description="TargetQueueDepth limits how many messages AMPS keeps active state for. The documented minimum "
    "is 1000; a good value covers several seconds of queue traffic.",
    source="seed 001 (SOW/Queue)",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <TargetQueueDepth>500</TargetQueueDepth>"""),
    good=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <TargetQueueDepth>15000</TargetQueueDepth>"""),
)
def target_depth_minimum(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        for el in queue.all("TargetQueueDepth"):
            count = count_of(el)
            if count is not None and count.value < MIN_TARGET_QUEUE_DEPTH:
                yield Issue(el, f"{queue.label()} TargetQueueDepth {count.value} is below the minimum of 1000",
                            "set at least 1000, e.g. a few seconds of traffic (2500 msg/s -> 12500), or remove it")


@rule(
    "Q-011", "queue-target-depth-exclusive", Severity.ERROR,
    "TargetQueueDepth cannot be combined with Priority or BarrierExpression.",
    description="A queue with a Priority or a BarrierExpression needs the full queue state to order or "
    "synchronise delivery, so AMPS does not allow TargetQueueDepth with either of them. Reported at TargetQueueDepth.",
    source="seed 001 (SOW/Queue)",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <TargetQueueDepth>15000</TargetQueueDepth>
      <Priority>/priority</Priority>"""),
    good=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <Priority>/priority</Priority>"""),
)
def target_depth_exclusive(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        el = queue.first("TargetQueueDepth")
        others = [name for name in ("Priority", "BarrierExpression") if queue.has(name)]
        if el is not None and others:
            yield Issue(el, f"{queue.label()} sets TargetQueueDepth together with {' and '.join(others)}",
                        f"remove TargetQueueDepth, or remove {' and '.join(others)}", at_text=False)


@rule(
    "Q-012", "queue-priority-barrier-exclusive", Severity.ERROR,
    "Priority cannot be combined with BarrierExpression.",
    description="Priority reorders delivery while a barrier message waits for every earlier message to be "
    "acknowledged; AMPS does not allow both on one queue. Reported at Priority.",
    source="seed 001 (SOW/Queue)",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <Priority>/priority</Priority>
      <BarrierExpression>/isSyncPoint IS NOT NULL</BarrierExpression>"""),
    good=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <BarrierExpression>/isSyncPoint IS NOT NULL</BarrierExpression>"""),
)
def priority_barrier_exclusive(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        el = queue.first("Priority")
        if el is not None and queue.has("BarrierExpression"):
            yield Issue(el, f"{queue.label()} sets Priority together with BarrierExpression",
                        "keep one of them: Priority orders delivery, BarrierExpression marks synchronisation points",
                        at_text=False)


@rule(
    "Q-013", "queue-target-depth-with-file-backed-metadata", Severity.INFO,
    "TargetQueueDepth is usually unnecessary when FileBackedMetadata is enabled.",
    description="With FileBackedMetadata enabled AMPS keeps the full queue state and pages unused state out to "
    "the journal directory, which already bounds memory; TargetQueueDepth then mostly hides messages from consumers.",
    source="seed 001 (SOW/Queue)",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <FileBackedMetadata>enabled</FileBackedMetadata>
      <TargetQueueDepth>15000</TargetQueueDepth>"""),
    good=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <FileBackedMetadata>enabled</FileBackedMetadata>"""),
)
def target_depth_with_file_backed(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        el = queue.first("TargetQueueDepth")
        if el is not None and queue.text("FileBackedMetadata") == "enabled":
            yield Issue(el, f"{queue.label()} sets TargetQueueDepth although FileBackedMetadata is enabled",
                        "consider removing TargetQueueDepth: file-backed metadata already limits memory", at_text=False)


@rule(
    "Q-014", "queue-file-backed-metadata-value", Severity.ERROR,
    "FileBackedMetadata can only be set to enabled (or left out).",
    description="The documented values are 'unset' (element absent: queue metadata is not persisted) and "
    "'enabled'. To turn it off, remove the element.",
    source="seed 001 (SOW/Queue)",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <FileBackedMetadata>true</FileBackedMetadata>"""),
    good=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <FileBackedMetadata>enabled</FileBackedMetadata>"""),
)
def file_backed_metadata_value(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        for el in queue.all("FileBackedMetadata"):
            value = (el.text or "").strip()
            if value != "enabled":
                yield Issue(el, f"{queue.label()} FileBackedMetadata '{value}' is not 'enabled'",
                            "write <FileBackedMetadata>enabled</FileBackedMetadata>, or remove the element to leave it unset")


@rule(
    "Q-019", "queue-nondeterministic-expression", Severity.ERROR,
    "Queue Filter and BarrierExpression must not call non-deterministic functions.",
    description="LAST_READ, UNIX_TIMESTAMP and VALUE_LOOKUP can return a different result each time, so "
    "AMPS does not allow them where a queue decides membership or barriers. Checked at token level: a call "
    "of one of these functions outside string literals.",
    source="spec/config.md §2.2, §9",
    bad=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <Filter>/expires &gt; UNIX_TIMESTAMP()</Filter>"""),
    good=queue_doc("""      <Name>work</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>ORDERS_.*</UnderlyingTopic>
      <DefaultPublishTarget>ORDERS_DIRECT</DefaultPublishTarget>
      <Filter>/status = 'UNIX_TIMESTAMP()'</Filter>"""),
)
def nondeterministic_expression(model: ConfigModel) -> Iterator[Issue]:
    for queue in model.queues:
        yield from nondeterministic_issues(queue, ("Filter", "BarrierExpression"),
                                           "compare against fields of the message or constants instead")

"""Actions rules ACT-016, ACT-017, ACT-020, ACT-024 and XS-003: the topics an action names.

Triggers and Do steps name a topic by `Topic` (or `DataTopic`) and `MessageType`. These rules
check it against the SOW section (spec §2.5, §5.6): a queue where an internal subscription
would steal messages or add nothing, a SOW-only trigger on a topic the SOW does not define,
and a message type other than the one the SOW defines the topic with.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, Step, has_regex_chars, regex_error
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules import action_modules as am
from ampsctl.config.rules.action_sow_index import (
    kinds_of,
    literal_topic,
    looks_like_regex,
    message_types_compatible,
    message_types_of,
    regex_hits_sow,
)
from ampsctl.config.rules.action_steps import catalogued_steps, first_option, option_text

_SOW_KINDS = frozenset({"Topic", "View", "ConflatedTopic"})


def _topic_option(step: Step, option: str) -> tuple[etree._Element, str] | None:
    """The option element and the topic it names, unless it is absent, empty or a {{template}}."""
    topic = option_text(step, option)
    return (first_option(step, option), topic) if topic and "{{" not in topic else None


def _queue_option(model: ConfigModel, step: Step, option: str) -> tuple[etree._Element, str] | None:
    """The option element and the queue it names literally, with a compatible message type."""
    topic = literal_topic(option_text(step, option))
    message_type = option_text(step, "MessageType")
    if topic and any(
        entry.is_queue and message_types_compatible(entry.message_type, message_type)
        for entry in model.entries_by_name.get(topic, ())
    ):
        return first_option(step, option), topic
    return None


@rule(
    "ACT-016", "action-on-queue-topic", Severity.WARNING,
    "Publish, OOF, alert and condition-timeout triggers should not watch a queue topic.",
    description="These `On` modules create an internal subscription. On a queue topic that subscription "
    "leases messages it never acknowledges, which starves real consumers (and a queue never produces OOF "
    "messages). Watch the queue's underlying topic instead.",
    source="spec §5.6; AMPS docs (on-publish-message, on-oof-message)",
    bad="""  <SOW>
    <Queue><Name>jobs</Name><MessageType>json</MessageType></Queue>
  </SOW>
  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-publish-message</Module>
        <Options><Topic>jobs</Topic><MessageType>json</MessageType></Options>
      </On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
    good="""  <SOW>
    <Queue><Name>jobs</Name><MessageType>json</MessageType><UnderlyingTopic>job-requests</UnderlyingTopic></Queue>
  </SOW>
  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-publish-message</Module>
        <Options><Topic>job-requests</Topic><MessageType>json</MessageType></Options>
      </On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
)
def on_queue_topic(model: ConfigModel) -> Iterator[Issue]:
    for _, step, module in catalogued_steps(model, *am.QUEUE_DISCOURAGED):
        found = _queue_option(model, step, "Topic")
        if found is not None:
            node, topic = found
            yield Issue(
                node,
                f"{module.name} watches Queue '{topic}': its internal subscription leases queue messages "
                "and never acknowledges them",
                "watch the queue's underlying topic instead",
            )


@rule(
    "ACT-017", "action-topic-not-sow", Severity.ERROR,
    "SOW expire/delete, alert and condition-timeout triggers need a literal SOW topic, view or conflated topic.",
    description="`amps-action-on-sow-expire-message` and `amps-action-on-sow-delete-message` watch a SOW "
    "topic, view, conflated topic or queue; `amps-action-on-alert` and "
    "`amps-action-on-message-condition-timeout` a SOW topic, view or conflated topic. None of them accepts "
    "a regular expression. A topic that the SOW section does not define never produces these events. "
    "(A queue given to alert/condition-timeout is reported by ACT-016.)",
    source="spec §5.2, §5.6",
    bad="""  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-sow-expire-message</Module>
        <Options><Topic>orders</Topic><MessageType>json</MessageType></Options>
      </On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
    good="""  <SOW>
    <Topic><Name>orders</Name><MessageType>json</MessageType><Key>/id</Key><FileName>./sow/%n.sow</FileName></Topic>
  </SOW>
  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-sow-expire-message</Module>
        <Options><Topic>orders</Topic><MessageType>json</MessageType></Options>
      </On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
)
def topic_not_sow(model: ConfigModel) -> Iterator[Issue]:
    for _, step, module in catalogued_steps(model, *am.SOW_TOPIC_REQUIRED):
        found = _topic_option(step, "Topic")
        if found is None:
            continue
        node, topic = found
        if looks_like_regex(topic):
            yield Issue(
                node,
                f"{module.name} does not accept a regular expression as Topic ('{topic}')",
                "name one SOW topic, view or conflated topic literally; use one action per topic",
            )
            continue
        kinds = kinds_of(model, topic)
        if kinds & _SOW_KINDS or kinds & {"Queue", "LocalQueue", "GroupLocalQueue"}:
            continue  # queues: fine for expire/delete, ACT-016 for alert/condition-timeout
        what = "SOW topic, view, conflated topic or queue" if am.SOW_TOPIC_REQUIRED[module.name] else (
            "SOW topic, view or conflated topic")
        yield Issue(
            node,
            f"Topic '{topic}' watched by {module.name} is not a {what} in this config",
            f"define '{topic}' in the <SOW> section, or correct the topic name",
        )


@rule(
    "XS-003", "action-watched-topic-not-sow", Severity.WARNING,
    "Message-affinity and OOF actions watch a topic that is not a SOW topic, view or conflated topic.",
    description="`amps-action-on-message-affinity` (its `DataTopic`) and `amps-action-on-oof-message` work on "
    "records held in the State of the World: a topic that the SOW section does not define produces no "
    "affinity or out-of-focus events. A regex topic is accepted when it matches some SOW entry name (or "
    "when Pattern topics make it undecidable). Queues are reported by ACT-016/ACT-024 and "
    "condition-timeout/alert topics by ACT-017.",
    source="spec §2.5, §5.2",
    bad="""  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-oof-message</Module>
        <Options><Topic>orders</Topic><MessageType>json</MessageType></Options>
      </On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
    good="""  <SOW>
    <Topic><Name>orders</Name><MessageType>json</MessageType><Key>/id</Key><FileName>./sow/%n.sow</FileName></Topic>
  </SOW>
  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-oof-message</Module>
        <Options><Topic>orders</Topic><MessageType>json</MessageType></Options>
      </On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
)
def watched_topic_not_sow(model: ConfigModel) -> Iterator[Issue]:
    for _, step, module in catalogued_steps(model, am.MESSAGE_AFFINITY, am.OOF):
        option = "DataTopic" if module.name == am.MESSAGE_AFFINITY else "Topic"
        found = _topic_option(step, option)
        if found is None:
            continue
        node, topic = found
        if looks_like_regex(topic):
            if regex_error(topic) is None and not regex_hits_sow(model, topic):
                yield Issue(
                    node,
                    f"<{option}> '{topic}' of {module.name} matches no SOW topic, view or conflated topic",
                    "define the topics in the <SOW> section, or correct the pattern",
                )
            continue
        if not kinds_of(model, topic):
            yield Issue(
                node,
                f"<{option}> '{topic}' of {module.name} is not a SOW topic, view or conflated topic",
                f"define '{topic}' in the <SOW> section, or correct the topic name",
            )


@rule(
    "ACT-020", "action-message-type-mismatch", Severity.WARNING,
    "An action's MessageType is unknown, or differs from the SOW definition of the topic it names.",
    description="AMPS identifies a topic by name and message type, so an action step whose `MessageType` "
    "is not a built-in or declared message type, or whose `Topic`/`DataTopic` is defined in the SOW "
    "only with other message types, watches or writes a different topic than intended.",
    source="spec §2 (topic identity), §5.6",
    bad="""  <SOW>
    <Topic><Name>orders</Name><MessageType>nvfix</MessageType><Key>/1</Key><FileName>./sow/%n.sow</FileName></Topic>
  </SOW>
  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-sow-delete-message</Module>
        <Options><Topic>orders</Topic><MessageType>json</MessageType></Options>
      </On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
    good="""  <SOW>
    <Topic><Name>orders</Name><MessageType>nvfix</MessageType><Key>/1</Key><FileName>./sow/%n.sow</FileName></Topic>
  </SOW>
  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-sow-delete-message</Module>
        <Options><Topic>orders</Topic><MessageType>nvfix</MessageType></Options>
      </On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
)
def message_type_mismatch(model: ConfigModel) -> Iterator[Issue]:
    known = model.message_types
    for _, step, module in catalogued_steps(model):
        node = first_option(step, "MessageType")
        mtype = (node.text or "").strip() if node is not None else ""
        if not mtype or "{{" in mtype or has_regex_chars(mtype):
            continue
        if mtype not in known:
            close = difflib.get_close_matches(mtype, sorted(known), n=1, cutoff=0.6)
            yield Issue(
                node,
                f"MessageType '{mtype}' of {module.name} is not a built-in or declared message type",
                f"did you mean '{close[0]}'?" if close else "declare it under <MessageTypes>, or correct the name",
            )
            continue
        for option in am.TOPIC_OPTIONS:
            topic = literal_topic(option_text(step, option))
            defined = message_types_of(model, topic) if topic else None
            if defined and mtype not in defined:
                shown = ", ".join(sorted(defined))
                yield Issue(
                    node,
                    f"{module.name} uses MessageType '{mtype}' for {option} '{topic}', which the SOW defines "
                    f"with message type {shown}",
                    f"use <MessageType>{sorted(defined)[0]}</MessageType>, or correct the topic",
                )


@rule(
    "ACT-024", "action-affinity-on-queue", Severity.INFO,
    "amps-action-on-message-affinity on a queue topic is not useful.",
    description="Message affinity assigns SOW records to the clients subscribed to the control topic; a "
    "queue already delivers each message to one consumer, so affinity on a queue `DataTopic` adds nothing.",
    source="spec §5.6",
    bad="""  <SOW>
    <Queue><Name>jobs</Name><MessageType>json</MessageType></Queue>
  </SOW>
  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-message-affinity</Module>
        <Options><MessageType>json</MessageType><ControlTopic>workers</ControlTopic><DataTopic>jobs</DataTopic></Options>
      </On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
    good="""  <SOW>
    <Topic><Name>jobs</Name><MessageType>json</MessageType><Key>/id</Key><FileName>./sow/%n.sow</FileName></Topic>
  </SOW>
  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-message-affinity</Module>
        <Options><MessageType>json</MessageType><ControlTopic>workers</ControlTopic><DataTopic>jobs</DataTopic></Options>
      </On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
)
def affinity_on_queue(model: ConfigModel) -> Iterator[Issue]:
    for _, step, module in catalogued_steps(model, am.MESSAGE_AFFINITY):
        found = _queue_option(model, step, "DataTopic")
        if found is not None:
            node, topic = found
            yield Issue(
                node,
                f"{module.name} DataTopic is Queue '{topic}': a queue already gives each message to one consumer",
                "use message affinity on a SOW topic, view or conflated topic",
            )

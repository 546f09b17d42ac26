"""Actions rule ACT-015: a do-publish-message that triggers its own action again (spec §5.6).

Each publish is an edge from its action to every action with an on-publish-message or
on-deliver-message trigger that its topic (or a view or conflated topic over it) matches with
a compatible message type; a publish to {{AMPS_TOPIC}} is an edge back to its own action. A
publish on a cycle through its own action is a loop, reported once per publish step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import Action, ConfigModel, Step, compiled_regex, has_regex_chars
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules import action_modules as am
from ampsctl.config.rules.action_sow_index import derived_topics, message_types_compatible
from ampsctl.config.rules.action_steps import catalogued_steps, first_option, option_text
from ampsctl.config.rules.common import line_of


@dataclass(frozen=True)
class _Publish:
    action: Action
    step: Step
    node: etree._Element
    target: str | None  # None: the topic that triggered the action ({{AMPS_TOPIC}})
    message_type: str | None


def _topic_matcher(pattern: str) -> Callable[[str], bool]:
    """``topic_matches(pattern, topic)`` with the pattern compiled once (same AMPS semantics)."""
    if not has_regex_chars(pattern):
        return pattern.__eq__
    compiled = compiled_regex(pattern)  # None: refused (model.regex_error), reported by another rule
    if compiled is None:
        return lambda topic: False

    def search(topic: str) -> bool:
        try:
            return compiled.search(topic, timeout=0.5) is not None
        except TimeoutError:
            return False

    return search


def _publish_loops(model: ConfigModel) -> Iterator[tuple[_Publish, Action, Step, str]]:
    triggers: dict[int, list[tuple[Step, Callable[[str], bool], str | None]]] = {}
    for action, step, _module in catalogued_steps(model, *am.PUBLISH_TRIGGERS):
        pattern = option_text(step, "Topic")
        if pattern and "{{" not in pattern:
            trigger = (step, _topic_matcher(pattern), option_text(step, "MessageType"))
            triggers.setdefault(id(action), []).append(trigger)
    if not triggers:
        return
    publishes = []
    for action, step, _module in catalogued_steps(model, am.PUBLISH):
        node = first_option(step, "Topic")
        target = (node.text or "").strip() if node is not None else ""
        mtype = option_text(step, "MessageType")
        if target == "{{AMPS_TOPIC}}" and id(action) in triggers:
            if any(message_types_compatible(t[2], mtype) for t in triggers[id(action)]):
                publishes.append(_Publish(action, step, node, None, mtype))
        elif target and "{{" not in target:
            publishes.append(_Publish(action, step, node, target, mtype))
    by_id = {id(a): a for a in model.actions}

    def fires(publish: _Publish, trigger: tuple[Step, Callable[[str], bool], str | None]) -> str | None:
        """None when the publish cannot fire the trigger, else "" or " through <derived topic>"."""
        _, matches, mtype = trigger
        if publish.target is None or not message_types_compatible(mtype, publish.message_type):
            return None
        if matches(publish.target):
            return ""
        for derived, sources in derived_topics(model).items():
            if publish.target in sources and matches(derived):
                return f" through '{derived}'"
        return None

    edges: dict[int, list[tuple[_Publish, int, Step, str]]] = {}
    for publish in publishes:
        if publish.target is None:
            first_trigger = triggers[id(publish.action)][0][0]
            edges.setdefault(id(publish.action), []).append((publish, id(publish.action), first_trigger, ""))
            continue
        for target_id, action_triggers in triggers.items():
            for trigger in action_triggers:
                via = fires(publish, trigger)
                if via is not None:
                    edges.setdefault(id(publish.action), []).append((publish, target_id, trigger[0], via))
                    break
    reach: dict[int, set[int]] = {}

    def reachable(start: int) -> set[int]:
        if start not in reach:
            seen: set[int] = set()
            todo = [start]
            while todo:
                for _, nxt, _step, _via in edges.get(todo.pop(), ()):
                    if nxt not in seen:
                        seen.add(nxt)
                        todo.append(nxt)
            reach[start] = seen
        return reach[start]

    reported: set[int] = set()
    for source_id, outgoing in edges.items():
        for publish, target_id, trigger_step, via in outgoing:
            if id(publish) in reported:
                continue
            if target_id == source_id or source_id in reachable(target_id):
                reported.add(id(publish))
                yield publish, by_id[target_id], trigger_step, via


@rule(
    "ACT-015", "action-publish-loop", Severity.WARNING,
    "A publish action feeds a publish/deliver trigger that leads back to itself (publish loop).",
    description="`amps-action-do-publish-message` publishes like an ordinary client. When the topic it "
    "publishes to is watched by an `amps-action-on-publish-message` or `amps-action-on-deliver-message` "
    "trigger of the same action (directly, through a view or conflated topic over it, or through other "
    "actions that publish back), every publish runs the action again. AMPS does not support unterminated "
    "publish loops.",
    source="spec §5.6; AMPS docs (do-publish-message)",
    bad="""  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-publish-message</Module>
        <Options><Topic>orders</Topic><MessageType>json</MessageType></Options>
      </On>
      <Do>
        <Module>amps-action-do-publish-message</Module>
        <Options><Topic>orders</Topic><MessageType>json</MessageType><Data>{{AMPS_DATA}}</Data></Options>
      </Do>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-publish-message</Module>
        <Options><Topic>orders</Topic><MessageType>json</MessageType></Options>
      </On>
      <Do>
        <Module>amps-action-do-publish-message</Module>
        <Options><Topic>orders-audit</Topic><MessageType>json</MessageType><Data>{{AMPS_DATA}}</Data></Options>
      </Do>
    </Action>
  </Actions>""",
)
def publish_loop(model: ConfigModel) -> Iterator[Issue]:
    for publish, target, trigger, via in _publish_loops(model):
        shown = f"'{publish.target}'" if publish.target is not None else "the triggering topic ({{AMPS_TOPIC}})"
        if target is publish.action:
            message = (
                f"amps-action-do-publish-message publishes to {shown}, which this action's {trigger.module} "
                f"watches{via}: every publish triggers the action again (publish loop)"
            )
        else:
            message = (
                f"amps-action-do-publish-message publishes to {shown}, which triggers the action at line "
                f"{line_of(model, target.el, publish.node)}{via}, and that leads back to this action (publish loop)"
            )
        yield Issue(
            publish.node,
            message,
            "publish to a topic no trigger watches, or narrow the trigger's Topic or Filter so the loop terminates",
        )

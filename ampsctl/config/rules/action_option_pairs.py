"""Actions rules ACT-018, ACT-019 and ACT-023: options that must agree with each other.

Each option may be fine on its own; these rules check combinations (spec §5.3, §5.6): Topic
with MessageType on do-compact-sow, no top_n in do-query-sow's query Options, an
upgrade-replication Age against the downgrade-replication Ages of the config, and exactly one
of Event and EventVariable on do-execute-event.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules import action_modules as am
from ampsctl.config.rules.action_steps import all_options, catalogued_steps, first_option, option_text
from ampsctl.config.rules.common import interval_of
from ampsctl.units import format_interval


@rule(
    "ACT-018", "action-sow-options-conflict", Severity.ERROR,
    "do-compact-sow needs both or neither of Topic/MessageType; do-query-sow Options cannot use top_n.",
    description="`amps-action-do-compact-sow` compacts every SOW topic, or one topic named by `Topic` and "
    "`MessageType` together; one without the other is ambiguous. `amps-action-do-query-sow` already "
    "returns a single record, so its `Options` cannot contain `top_n`.",
    source="spec §5.3, §5.6",
    bad="""  <Actions>
    <Action>
      <On><Module>amps-action-on-schedule</Module><Options><Every>1d</Every></Options></On>
      <Do><Module>amps-action-do-compact-sow</Module><Options><Topic>orders</Topic></Options></Do>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On><Module>amps-action-on-schedule</Module><Options><Every>1d</Every></Options></On>
      <Do><Module>amps-action-do-compact-sow</Module><Options><Topic>orders</Topic><MessageType>json</MessageType></Options></Do>
    </Action>
  </Actions>""",
)
def sow_options_conflict(model: ConfigModel) -> Iterator[Issue]:
    for _, step, module in catalogued_steps(model, am.COMPACT_SOW, am.QUERY_SOW):
        if module.name == am.COMPACT_SOW:
            has_topic, has_type = bool(option_text(step, "Topic")), bool(option_text(step, "MessageType"))
            if has_topic != has_type:
                present, absent = ("Topic", "MessageType") if has_topic else ("MessageType", "Topic")
                yield Issue(
                    step.el,
                    f"amps-action-do-compact-sow has <{present}> but no <{absent}>",
                    f"add <{absent}> to compact one topic, or remove <{present}> to compact every SOW topic",
                    at_text=False,
                )
            continue
        for el in all_options(step, "Options"):
            if re.search(r"\btop_n\b", el.text or ""):
                yield Issue(
                    el,
                    "amps-action-do-query-sow <Options> contains top_n; the query already returns one record",
                    "remove top_n from <Options>",
                )


@rule(
    "ACT-019", "action-replication-upgrade-age", Severity.INFO,
    "Upgrade-replication Age is usually about half the downgrade-replication Age.",
    description="`amps-action-do-downgrade-replication` demotes a sync destination that has fallen `Age` "
    "behind; `amps-action-do-upgrade-replication` promotes it again once it is within its own `Age`. The "
    "usual advice is an upgrade `Age` of roughly half the downgrade `Age`, so a destination is not "
    "upgraded while it is still near the downgrade threshold (flapping). ampsctl reports an upgrade Age "
    "outside 25%-75% of every downgrade Age in the config.",
    source="spec §5.3, §5.6",
    bad="""  <Actions>
    <Action>
      <On><Module>amps-action-on-schedule</Module><Options><Every>30s</Every></Options></On>
      <Do><Module>amps-action-do-downgrade-replication</Module><Options><Age>2m</Age></Options></Do>
      <Do><Module>amps-action-do-upgrade-replication</Module><Options><Age>2m</Age></Options></Do>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On><Module>amps-action-on-schedule</Module><Options><Every>30s</Every></Options></On>
      <Do><Module>amps-action-do-downgrade-replication</Module><Options><Age>2m</Age></Options></Do>
      <Do><Module>amps-action-do-upgrade-replication</Module><Options><Age>1m</Age></Options></Do>
    </Action>
  </Actions>""",
)
def replication_upgrade_age(model: ConfigModel) -> Iterator[Issue]:
    downgrades = [
        age
        for _, step, _module in catalogued_steps(model, am.DOWNGRADE)
        if (age := interval_of(first_option(step, "Age"))) is not None and age.nanos > 0
    ]
    if not downgrades:
        return
    for _, step, _module in catalogued_steps(model, am.UPGRADE):
        node = first_option(step, "Age")
        age = interval_of(node)
        if age is None:
            continue
        if not any(0.25 * down.nanos <= age.nanos <= 0.75 * down.nanos for down in downgrades):
            shown = ", ".join(f"'{down.text.strip()}'" for down in downgrades)
            yield Issue(
                node,
                f"upgrade-replication Age '{age.text.strip()}' is not about half of the "
                f"downgrade-replication Age {shown}",
                f"set the upgrade Age to about {format_interval(downgrades[0].nanos // 2)}",
            )


@rule(
    "ACT-023", "action-execute-event-target", Severity.WARNING,
    "do-execute-event needs exactly one of Event or EventVariable.",
    description="`amps-action-do-execute-event` raises the custom event named by `Event`, or by the value of "
    "the variable named in `EventVariable`. With neither it raises nothing; with both it is unclear which "
    "event runs.",
    source="spec §5.3, §5.6",
    bad="""  <Actions>
    <Action>
      <On><Module>amps-action-on-startup</Module></On>
      <Do><Module>amps-action-do-execute-event</Module></Do>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On><Module>amps-action-on-startup</Module></On>
      <Do><Module>amps-action-do-execute-event</Module><Options><Event>warm-cache</Event></Options></Do>
    </Action>
  </Actions>""",
)
def execute_event_target(model: ConfigModel) -> Iterator[Issue]:
    for _, step, _module in catalogued_steps(model, am.EXECUTE_EVENT):
        has_event, has_variable = bool(option_text(step, "Event")), bool(option_text(step, "EventVariable"))
        if has_event == has_variable:
            message = (
                "amps-action-do-execute-event has both <Event> and <EventVariable>"
                if has_event
                else "amps-action-do-execute-event has neither <Event> nor <EventVariable>"
            )
            hint = "give exactly one: <Event>name</Event> or <EventVariable>VAR</EventVariable>"
            yield Issue(step.el, message, hint, at_text=False)

"""Actions rules ACT-005..ACT-010 and ACT-014: option values of the built-in action modules.

The XSD leaves every ``Options`` block lax, so these checks are driven by the catalogue in
``action_modules``: required options, closed value sets, schedules, signals, admin paths,
intervals and percentages, and the manifold-affinity subscription pattern (spec §5.2-§5.4,
seed 000).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, regex_error
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules import action_modules as am
from ampsctl.config.rules.action_steps import SAMPLE_MANIFOLD, all_options, catalogued_steps
from ampsctl.errors import UnitError
from ampsctl.units import parse_interval

_PERCENT = re.compile(r"[0-9]+(?:\.[0-9]+)?%")
_TIME_OF_DAY = re.compile(
    r"(?:(?P<day>[A-Za-z]+)\s+at\s+)?(?P<hour>[0-9]{1,2}):(?P<minute>[0-9]{2})Z?", re.IGNORECASE
)


def _is_empty(el: etree._Element) -> bool:
    return not (el.text or "").strip() and not any(isinstance(child.tag, str) for child in el)


@rule(
    "ACT-005", "action-required-option-missing", Severity.ERROR,
    "A built-in action module is missing an option it requires.",
    description="Each built-in module documents the options it cannot work without: `Topic` and "
    "`MessageType` for the message-watching `On` modules, `Every` for schedules, `Topic`, `MessageType` "
    "and `Data` for `amps-action-do-publish-message`, `Age` for journal and file maintenance, and "
    "`MessageType`, `ControlTopic` and `SubscriptionTopic` for `amps-action-on-manifold-affinity` "
    "(seed 000). A required option that is present but empty is reported too.",
    source="spec §5.2-§5.4; seed 000 (manifold affinity)",
    bad="""  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-manifold-affinity</Module>
        <Options>
          <MessageType>json</MessageType>
          <ControlTopic>faucet_control</ControlTopic>
        </Options>
      </On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-manifold-affinity</Module>
        <Options>
          <MessageType>json</MessageType>
          <ControlTopic>faucet_control</ControlTopic>
          <SubscriptionTopic>/symbols/.*</SubscriptionTopic>
        </Options>
      </On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
)
def required_option_missing(model: ConfigModel) -> Iterator[Issue]:
    for _, step, module in catalogued_steps(model):
        missing = []
        for option in module.required:
            found = all_options(step, option)
            if not found:
                missing.append(option)
            elif all(_is_empty(el) for el in found) and (module.name, option) not in am.CONTENT_CHECKED:
                yield Issue(
                    found[0],
                    f"required option <{option}> of {module.name} is empty",
                    f"give <{option}> a value",
                    at_text=False,
                )
        if missing:
            names = ", ".join(f"<{name}>" for name in missing)
            plural = "options" if len(missing) > 1 else "option"
            yield Issue(
                step.el,
                f"{module.name} is missing required {plural} {names}",
                f"add {names} inside the step's <Options>",
                at_text=False,
            )


@rule(
    "ACT-006", "action-option-value-not-allowed", Severity.ERROR,
    "An enumerated action option has a value outside its documented set.",
    description="Options with a closed set of values: `MessageSource` (all, local, replicated) of "
    "`amps-action-on-publish-message`, `Type` (match, delete, expire, all) of `amps-action-on-oof-message`, "
    "`Announcements` (default, all) of `amps-action-on-manifold-affinity` and the comma-delimited `Reason` "
    "list (time_limit, forced_expire, max_cancels, max_deliveries) of `amps-action-on-sow-expire-message`. "
    "Values are case-sensitive.",
    source="spec §5.2, §5.4; seed 000 (Announcements)",
    bad=SAMPLE_MANIFOLD % ("\n          <Announcements>every</Announcements>", '{"t":"{{AMPS_TOPIC}}"}'),
    good=SAMPLE_MANIFOLD % ("\n          <Announcements>all</Announcements>", '{"t":"{{AMPS_TOPIC}}"}'),
)
def option_value_not_allowed(model: ConfigModel) -> Iterator[Issue]:
    for _, step, module in catalogued_steps(model):
        for option, allowed in module.enums.items():
            for el in all_options(step, option):
                value = (el.text or "").strip()
                if value not in allowed:
                    yield Issue(
                        el,
                        f"<{option}> '{value}' of {module.name} is not one of: {', '.join(sorted(allowed))}",
                        f"use one of: {', '.join(sorted(allowed))}",
                    )
        for option, allowed in module.token_enums.items():
            for el in all_options(step, option):
                tokens = [t.strip() for t in (el.text or "").split(",")]
                bad = [t for t in tokens if t not in allowed]
                if bad:
                    shown = ", ".join(f"'{t}'" for t in bad)
                    yield Issue(
                        el,
                        f"<{option}> of {module.name} has unknown value(s) {shown}",
                        f"write a comma-delimited list of: {', '.join(sorted(allowed))}",
                    )


def _every_ok(value: str) -> bool:
    match = _TIME_OF_DAY.fullmatch(value)
    if match:
        day = match.group("day")
        return (
            int(match.group("hour")) <= 23
            and int(match.group("minute")) <= 59
            and (day is None or day.lower() in am.WEEKDAYS)
        )
    try:
        return parse_interval(value).nanos > 0
    except UnitError:
        return False


@rule(
    "ACT-007", "action-schedule-every-invalid", Severity.ERROR,
    "amps-action-on-schedule Every must be an interval, HH:MM, or '<Day> at HH:MM' (Z = UTC).",
    description="`Every` takes three forms: a timer (`4h`, `1d`), a daily time in 24-hour notation (`17:47`), "
    "or a weekly day and time (`Saturday at 11:00`). A trailing `Z` means UTC. Anything else is not a "
    "schedule AMPS can run.",
    source="spec §5.2, §3.4",
    bad="""  <Actions>
    <Action>
      <On><Module>amps-action-on-schedule</Module><Options><Every>daily at 2am</Every></Options></On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On><Module>amps-action-on-schedule</Module><Options><Every>Saturday at 02:00Z</Every></Options></On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
)
def schedule_every_invalid(model: ConfigModel) -> Iterator[Issue]:
    for _, step, _module in catalogued_steps(model, "amps-action-on-schedule"):
        for el in all_options(step, "Every"):
            value = (el.text or "").strip()
            if value and not _every_ok(value):
                yield Issue(
                    el,
                    f"<Every> '{value}' of amps-action-on-schedule is not a schedule",
                    "write an interval (4h), a time of day (17:47, 17:47Z) or a weekday and time (Saturday at 11:00)",
                )


@rule(
    "ACT-008", "action-signal-sigquit-reserved", Severity.ERROR,
    "amps-action-on-signal cannot use SIGQUIT.",
    description="AMPS reserves SIGQUIT (it writes a minidump); it is the one signal whose binding cannot be "
    "overridden by an action.",
    source="spec §5.2",
    bad="""  <Actions>
    <Action>
      <On><Module>amps-action-on-signal</Module><Options><Signal>SIGQUIT</Signal></Options></On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On><Module>amps-action-on-signal</Module><Options><Signal>SIGUSR2</Signal></Options></On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
)
def signal_sigquit(model: ConfigModel) -> Iterator[Issue]:
    for _, step, _module in catalogued_steps(model, "amps-action-on-signal"):
        for el in all_options(step, "Signal"):
            if (el.text or "").strip().upper() == "SIGQUIT":
                yield Issue(
                    el, "SIGQUIT is reserved by AMPS and cannot trigger an action", "use SIGUSR1, SIGUSR2 or SIGHUP"
                )


@rule(
    "ACT-009", "action-admin-path-segment", Severity.ERROR,
    "amps-action-on-admin Path is a single segment (no '/').",
    description="The admin action is published under `/amps/administrator/actions/<Path>`; `Path` is one "
    "segment of that URL and cannot contain `/`.",
    source="spec §5.2",
    bad="""  <Actions>
    <Action>
      <On><Module>amps-action-on-admin</Module><Options><Path>ops/flush</Path></Options></On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On><Module>amps-action-on-admin</Module><Options><Path>flush</Path></Options></On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
)
def admin_path_segment(model: ConfigModel) -> Iterator[Issue]:
    for _, step, _module in catalogued_steps(model, "amps-action-on-admin"):
        for el in all_options(step, "Path"):
            value = (el.text or "").strip()
            if "/" in value:
                yield Issue(
                    el,
                    f"<Path> '{value}' of amps-action-on-admin contains '/'",
                    f"use a single segment such as '{value.strip('/').replace('/', '_') or 'action'}'",
                )


@rule(
    "ACT-010", "action-option-interval-invalid", Severity.ERROR,
    "Action options Age, Duration and GracePeriod are intervals; GreaterThan is a percentage.",
    description="Journal, file, statistics and replication maintenance modules take an `Age` (and "
    "`GracePeriod`) interval such as `7d`; condition-timeout and alert modules take a `Duration`; "
    "`amps-action-if-file-system-usage` compares against `GreaterThan`, a percentage such as `80%`.",
    source="spec §5.3, §3.1, §3.4",
    bad="""  <Actions>
    <Action>
      <On><Module>amps-action-on-schedule</Module><Options><Every>1d</Every></Options></On>
      <Do><Module>amps-action-do-remove-journal</Module><Options><Age>a week</Age></Options></Do>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On><Module>amps-action-on-schedule</Module><Options><Every>1d</Every></Options></On>
      <Do><Module>amps-action-do-remove-journal</Module><Options><Age>7d</Age></Options></Do>
    </Action>
  </Actions>""",
)
def option_interval_invalid(model: ConfigModel) -> Iterator[Issue]:
    for _, step, module in catalogued_steps(model):
        for option in module.intervals:
            for el in all_options(step, option):
                try:
                    parse_interval(el.text or "")
                except UnitError as exc:
                    yield Issue(el, f"<{option}> of {module.name}: {exc.message}", exc.hint)
        for option in module.percents:
            for el in all_options(step, option):
                value = (el.text or "").strip()
                if not _PERCENT.fullmatch(value):
                    yield Issue(
                        el,
                        f"<{option}> '{value}' of {module.name} is not a percentage",
                        "write a number followed by %, e.g. 80%",
                    )


@rule(
    "ACT-014", "action-manifold-subscription-topic-regex", Severity.ERROR,
    "Manifold SubscriptionTopic must be a valid PCRE.",
    description="`SubscriptionTopic` is the PCRE pattern of the subscriptions "
    "`amps-action-on-manifold-affinity` monitors; every matching concrete topic is assigned on its own. "
    "`CoverageSubsetOption` is not checked: it names a subscribe option, and the pattern in it arrives "
    "at run time (an invalid one makes AMPS ignore that control subscription).",
    source="seed 000 (manifold affinity)",
    bad=SAMPLE_MANIFOLD.replace("/symbols/.*", "/symbols/(.*") % ("", '{"t":"{{AMPS_TOPIC}}"}'),
    good=SAMPLE_MANIFOLD % ("", '{"t":"{{AMPS_TOPIC}}"}'),
)
def manifold_subscription_regex(model: ConfigModel) -> Iterator[Issue]:
    for _, step, _module in catalogued_steps(model, am.MANIFOLD):
        for el in all_options(step, "SubscriptionTopic"):
            pattern = (el.text or "").strip()
            error = regex_error(pattern) if pattern else None
            if error:
                yield Issue(
                    el,
                    f"<SubscriptionTopic> '{pattern}' is not a valid regular expression: {error}",
                    "fix the pattern (escape literal characters such as ( [ { with a backslash)",
                )

"""Actions rules ACT-011..ACT-013 and ACT-021: the {{VARIABLES}} of If and Do steps (spec §5.5).

Before each If/Do step AMPS expands ``{{NAME}}`` from the action context: the default
variables, those of the On module(s) (some only under an option value, such as manifold
Announcements=all) and those added by earlier Do steps. ``_analyse_templates`` works this out
once per model (through ``model.shared``) for every action whose variables can be known from
the config; an action with a custom module or an open-context trigger is left alone. ACT-021
parses the Data of a json do-publish-message with placeholders for the variables.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import Action, ConfigModel, Step
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules import action_modules as am
from ampsctl.config.rules.action_steps import (
    SAMPLE_MANIFOLD,
    TEMPLATE,
    all_options,
    catalogued_steps,
    module_of,
    option_text,
)


def _templates(step: Step) -> Iterator[tuple[etree._Element, str]]:
    """Each (element, variable name) used as ``{{NAME}}`` in a step's options, once."""
    if step.options is None:
        return
    seen: set[tuple[etree._Element, str]] = set()
    for el in step.options.el.iter():
        if not isinstance(el.tag, str) or not el.text or "{{" not in el.text:
            continue
        for match in TEMPLATE.finditer(el.text):
            key = (el, match.group(1))
            if key not in seen:
                seen.add(key)
                yield key


@dataclass(frozen=True)
class _Use:
    action: Action
    step: Step
    node: etree._Element
    name: str
    status: str  # "defined", "undefined", or "unmet" (defined only under another option value)


def _defined_by(module: am.ActionModule, step: Step) -> set[str]:
    names = set(module.variables)
    for option in module.names_variable:
        names |= {(el.text or "").strip() for el in all_options(step, option)} - {""}
    for option in module.assigns:
        for el in all_options(step, option):
            variable, sep, _ = (el.text or "").partition("=")
            if sep and variable.strip():
                names.add(variable.strip())
    return names


def _analyse_templates(model: ConfigModel) -> list[_Use]:
    uses: list[_Use] = []
    for action in model.actions:
        known = set(am.DEFAULT_VARIABLES)
        conditional: dict[str, bool] = {}  # variable -> some On step meets its condition
        is_open = False
        for step in action.role("On"):
            module = module_of(step)
            if module is None:  # custom, misspelt or missing module: its variables are unknown
                is_open = True
                continue
            is_open = is_open or module.open_context
            known |= _defined_by(module, step)
            for variable, (option, wanted) in module.conditional.items():
                value = option_text(step, option)
                allowed = module.enums.get(option)
                undecided = value is not None and allowed is not None and value not in allowed  # ACT-006
                conditional[variable] = conditional.get(variable, False) or value == wanted or undecided
        for step in action.steps:
            if step.role == "On":
                continue
            if not is_open:
                for node, name in _templates(step):
                    if name in known or am.BYTE_VARIABLE.fullmatch(name):
                        status = "defined"
                    elif name in conditional:
                        status = "defined" if conditional[name] else "unmet"
                    else:
                        status = "undefined"
                    uses.append(_Use(action, step, node, name, status))
            module = module_of(step)
            if module is not None:
                known |= _defined_by(module, step)
            elif step.role == "Do":
                is_open = True  # a custom Do module may add anything
    return uses


def _template_uses(model: ConfigModel) -> list[_Use]:
    """Every template use of the config, analysed on first use and shared by ACT-011..ACT-013."""
    return model.shared(_analyse_templates)


@rule(
    "ACT-011", "action-variable-undefined", Severity.WARNING,
    "A {{VARIABLE}} used in an If or Do step is not defined by any earlier step.",
    description="Before each `If`/`Do` step AMPS expands `{{NAME}}` from the action context: the defaults "
    "`AMPS_INSTANCE_NAME`, `AMPS_DATETIME`, `AMPS_UNIX_TIMESTAMP` and `AMPS_BYTE_XX` (two upper-case hex "
    "digits), the variables of the action's `On` module(s), and those added by earlier `Do` steps "
    "(`CaptureData`, `Value`, extracted values). An unknown name silently expands to an empty string. "
    "Names are matched exactly (case-sensitive). Actions triggered by `amps-action-on-admin` or "
    "`amps-action-on-execute-event`, or that use a custom module, are not checked: their variables "
    "cannot be known from the config. `On` options are not checked.",
    source="spec §5.1, §5.5; seed 000",
    bad=SAMPLE_MANIFOLD % ("", '{"topic":"{{AMPS_TOPIC}}","data":"{{AMPS_DATA}}"}'),
    good=SAMPLE_MANIFOLD % ("", '{"topic":"{{AMPS_TOPIC}}","event":"{{AMPS_AFFINITY_ACTION}}"}'),
)
def variable_undefined(model: ConfigModel) -> Iterator[Issue]:
    for use in _template_uses(model):
        if use.status != "undefined":
            continue
        known = _known_names(use)
        close = [n for n in known if n.upper() == use.name.upper()] or difflib.get_close_matches(
            use.name, known, n=1, cutoff=0.8
        )
        hint = f"did you mean {{{{{close[0]}}}}}?" if close else (
            "define it in an earlier <Do> step (do-extract-values, do-query-sow CaptureData, do-translate-data) "
            "or use a variable the <On> module provides"
        )
        yield Issue(
            use.node,
            f"{{{{{use.name}}}}} in <{use.node.tag}> of {use.step.module} is not defined by this action "
            "and expands to an empty string",
            hint,
        )


def _known_names(use: _Use) -> list[str]:
    """Variables available before the step of ``use``: defaults, all On steps, earlier Do steps."""
    names = set(am.DEFAULT_VARIABLES)
    before = True
    for step in use.action.steps:
        before = before and step is not use.step
        module = module_of(step)
        if module is not None and (before or step.role == "On"):
            names |= _defined_by(module, step) | set(module.conditional)
    return sorted(names)


@rule(
    "ACT-012", "action-manifold-subscriber-variable-empty", Severity.WARNING,
    "AMPS_SUBSCRIBER_* variables are only set when manifold Announcements is all.",
    description="`amps-action-on-manifold-affinity` adds `AMPS_SUBSCRIBER_CLIENT_NAME` and "
    "`AMPS_SUBSCRIBER_CONNECTION_NAME` only in `Announcements=all` mode. In the default mode (also when "
    "`Announcements` is absent) neither exists and both expand to empty strings.",
    source="seed 000 (manifold affinity)",
    bad=SAMPLE_MANIFOLD % ("", '{"topic":"{{AMPS_TOPIC}}","subscriber":"{{AMPS_SUBSCRIBER_CLIENT_NAME}}"}'),
    good=SAMPLE_MANIFOLD % (
        "\n          <Announcements>all</Announcements>",
        '{"topic":"{{AMPS_TOPIC}}","subscriber":"{{AMPS_SUBSCRIBER_CLIENT_NAME}}"}',
    ),
)
def manifold_subscriber_variable(model: ConfigModel) -> Iterator[Issue]:
    for use in _template_uses(model):
        if use.status == "unmet":
            yield Issue(
                use.node,
                f"{{{{{use.name}}}}} is always empty: amps-action-on-manifold-affinity sets it only with "
                "<Announcements>all</Announcements>",
                "add <Announcements>all</Announcements> to the On step's options, or drop the variable",
            )


@rule(
    "ACT-013", "action-manifold-no-handlers-client-empty", Severity.INFO,
    "Manifold publisher variables are empty on no_handlers events; pass or test AMPS_AFFINITY_ACTION.",
    description="On a `no_handlers` event (interest but no eligible publisher) "
    "`amps-action-on-manifold-affinity` omits `AMPS_CLIENT_NAME` and `AMPS_CONNECTION_NAME`. An action that "
    "uses them without also using `{{AMPS_AFFINITY_ACTION}}` (in its message or in an `If` condition) "
    "cannot tell such an event from a real assignment.",
    source="seed 000 (manifold affinity)",
    bad=SAMPLE_MANIFOLD % ("", '{"topic":"{{AMPS_TOPIC}}","client":"{{AMPS_CLIENT_NAME}}"}'),
    good=SAMPLE_MANIFOLD % (
        "", '{"topic":"{{AMPS_TOPIC}}","client":"{{AMPS_CLIENT_NAME}}","event":"{{AMPS_AFFINITY_ACTION}}"}'
    ),
)
def manifold_no_handlers(model: ConfigModel) -> Iterator[Issue]:
    by_action: dict[int, list[_Use]] = {}
    for use in _template_uses(model):
        by_action.setdefault(id(use.action), []).append(use)
    for action in model.actions:
        if not any(step.module == am.MANIFOLD for step in action.role("On")):
            continue
        uses = by_action.get(id(action), [])
        if any(use.name == "AMPS_AFFINITY_ACTION" for use in uses):
            continue
        first = next((u for u in uses if u.name in ("AMPS_CLIENT_NAME", "AMPS_CONNECTION_NAME")), None)
        if first is not None:
            yield Issue(
                first.node,
                f"{{{{{first.name}}}}} is empty on no_handlers events and this action never uses "
                "{{AMPS_AFFINITY_ACTION}} to tell them apart",
                'include "event":"{{AMPS_AFFINITY_ACTION}}" in the message, '
                "or test it in an amps-action-if-condition step",
            )


def _json_error(text: str) -> str | None:
    first = None
    for placeholder in ("0", ""):
        try:
            json.loads(TEMPLATE.sub(placeholder, text))
            return None
        except ValueError as exc:
            if first is None:
                first = f"{exc.msg} (line {exc.lineno}, column {exc.colno})" if isinstance(
                    exc, json.JSONDecodeError) else str(exc)
    return first


@rule(
    "ACT-021", "action-publish-json-invalid", Severity.WARNING,
    "do-publish-message Data for a json MessageType is not valid JSON (heuristic).",
    description="With `MessageType` json, the `Data` template should expand to a JSON document. ampsctl "
    "replaces each `{{...}}` with a placeholder (a number, then nothing) and parses the result; when "
    "neither parses, the published message is very likely malformed. Substituted values are not escaped "
    "by AMPS, so this cannot prove the expanded text is valid.",
    source="spec §5.5, §5.6",
    bad="""  <Actions>
    <Action>
      <On><Module>amps-action-on-startup</Module></On>
      <Do>
        <Module>amps-action-do-publish-message</Module>
        <Options><Topic>events</Topic><MessageType>json</MessageType><Data>{"instance":"{{AMPS_INSTANCE_NAME}}",}</Data></Options>
      </Do>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On><Module>amps-action-on-startup</Module></On>
      <Do>
        <Module>amps-action-do-publish-message</Module>
        <Options><Topic>events</Topic><MessageType>json</MessageType><Data>{"instance":"{{AMPS_INSTANCE_NAME}}"}</Data></Options>
      </Do>
    </Action>
  </Actions>""",
)
def publish_json_invalid(model: ConfigModel) -> Iterator[Issue]:
    for _, step, _module in catalogued_steps(model, am.PUBLISH):
        if option_text(step, "MessageType") != "json":
            continue
        for el in all_options(step, "Data"):
            if len(el) or not (el.text or "").strip():
                continue
            error = _json_error(el.text or "")
            if error:
                yield Issue(
                    el,
                    f"Data of amps-action-do-publish-message is not valid JSON: {error}",
                    "check quotes, commas and braces; put {{VARIABLES}} inside string quotes unless they hold JSON",
                )

"""Actions rules ACT-001..ACT-004: the On/If/Do shape of an action and its module names (spec §5.1).

``module_problem`` is the one judgement of a step's module name. MOD-003 (rules/modules.py)
asks it too, so a misspelt or misplaced built-in module is reported once, here, and MOD-003
reports only the undeclared custom modules this judgement leaves alone.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, Step
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules import action_modules as am


@rule(
    "ACT-001", "action-needs-on-and-do", Severity.ERROR,
    "An Action needs at least one On and at least one Do.",
    description="An action runs its `Do` steps when one of its `On` triggers fires. Without an `On` it never "
    "runs; without a `Do` it runs and does nothing. Either way the block is dead configuration.",
    source="spec §5.1",
    bad="""  <Actions>
    <Action>
      <On><Module>amps-action-on-startup</Module></On>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On><Module>amps-action-on-startup</Module></On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
)
def needs_on_and_do(model: ConfigModel) -> Iterator[Issue]:
    for action in model.actions:
        missing = [role for role in ("On", "Do") if not action.role(role)]
        if missing:
            what = " or ".join(f"<{role}>" for role in missing)
            yield Issue(
                action.el,
                f"Action has no {what} step",
                "add an <On> step (when to run) and a <Do> step (what to do), or remove the action",
                at_text=False,
            )


@rule(
    "ACT-002", "action-step-module-missing", Severity.ERROR,
    "Every On, If and Do step names its Module.",
    description="The `Module` element says which action module implements the step; a step without one "
    "cannot be loaded.",
    source="spec §5.1",
    bad="""  <Actions>
    <Action>
      <On><Options><Every>1h</Every></Options></On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On><Module>amps-action-on-schedule</Module><Options><Every>1h</Every></Options></On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
)
def step_module_missing(model: ConfigModel) -> Iterator[Issue]:
    for action in model.actions:
        for step in action.steps:
            if step.module:
                continue
            hint = f"add <Module>{am.ROLE_PREFIX[step.role]}...</Module> naming the module for this step"
            module_el = next((c for c in step.el if c.tag == "Module"), None)
            if module_el is None:
                yield Issue(step.el, f"<{step.role}> step has no <Module>", hint, at_text=False)
            else:
                yield Issue(module_el, f"<{step.role}> step has an empty <Module>", hint, at_text=False)


def _close_match(name: str, role: str) -> str | None:
    for pool in (am.NAMES_BY_ROLE[role], tuple(am.MODULES)):
        found = difflib.get_close_matches(name, pool, n=1, cutoff=0.8)
        if found:
            return found[0]
    return None


def module_problem(model: ConfigModel, step: Step) -> tuple[str, str | None] | None:
    """("role", other role) for a module in the wrong step, ("unknown", suggestion) for a typo,
    ("not-action", None) for a non-action built-in; None when fine or not ours to judge."""
    name = step.module
    if not name or name in model.modules:
        return None
    module = am.MODULES.get(name)
    if module is not None:
        return None if module.role == step.role else ("role", module.role)
    if name.startswith(am.ACTION_PREFIX):
        return ("unknown", _close_match(name, step.role))
    suggestion = _close_match(name, step.role)
    if suggestion:
        return ("unknown", suggestion)
    if name.startswith("amps-"):
        return ("not-action", None)
    return None  # a custom module that is not declared: MOD-003 reports it


def _module_el(step: Step) -> etree._Element:
    return next((c for c in step.el if c.tag == "Module"), step.el)


@rule(
    "ACT-003", "action-module-wrong-role", Severity.ERROR,
    "On steps use amps-action-on-* modules, Do steps amps-action-do-*, If steps amps-action-if-*.",
    description="Built-in action modules are split by role: `amps-action-on-*` modules decide when an action "
    "runs, `amps-action-do-*` modules what it does and `amps-action-if-*` modules whether it continues. "
    "A module in the wrong kind of step, or a built-in module that is not an action module at all "
    "(for example an authentication module), cannot run there. Custom modules declared in `Modules` are "
    "not checked.",
    source="spec §5.1, §5.6",
    bad="""  <Actions>
    <Action>
      <On><Module>amps-action-do-shutdown</Module></On>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On><Module>amps-action-on-signal</Module><Options><Signal>SIGUSR1</Signal></Options></On>
      <Do><Module>amps-action-do-shutdown</Module></Do>
    </Action>
  </Actions>""",
)
def module_wrong_role(model: ConfigModel) -> Iterator[Issue]:
    for action in model.actions:
        for step in action.steps:
            problem = module_problem(model, step)
            if problem is None or problem[0] == "unknown":
                continue
            prefix = am.ROLE_PREFIX[step.role]
            if problem[0] == "role":
                article = "an" if problem[1] in ("On", "If") else "a"
                message = f"<{step.role}> uses {step.module}, which is {article} <{problem[1]}> module"
                hint = f"move it into a <{problem[1]}> step, or use an {prefix}* module here"
            else:
                message = f"<{step.role}> uses {step.module}, which is not an action module"
                hint = f"use an {prefix}* module, or declare a custom module in <Modules>"
            yield Issue(_module_el(step), message, hint)


@rule(
    "ACT-004", "action-module-unknown", Severity.ERROR,
    "An amps-action-* module name that AMPS does not ship (usually a typo).",
    description="AMPS refuses to load an action whose module it cannot find. Names starting with "
    "`amps-action-` (and names within a few letters of a built-in one) are compared with the list of "
    "built-in action modules; a custom module must be declared in `Modules` (undeclared custom modules "
    "are reported by MOD-003).",
    source="spec §5.2, §5.3, §5.6",
    bad="""  <Actions>
    <Action>
      <On><Module>amps-action-on-startup</Module></On>
      <Do><Module>amps-action-do-remove-journals</Module><Options><Age>7d</Age></Options></Do>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On><Module>amps-action-on-startup</Module></On>
      <Do><Module>amps-action-do-remove-journal</Module><Options><Age>7d</Age></Options></Do>
    </Action>
  </Actions>""",
)
def module_unknown(model: ConfigModel) -> Iterator[Issue]:
    for action in model.actions:
        for step in action.steps:
            problem = module_problem(model, step)
            if problem is None or problem[0] != "unknown":
                continue
            suggestion = problem[1]
            hint = (
                f"did you mean {suggestion}?"
                if suggestion
                else f"use a built-in {am.ROLE_PREFIX[step.role]}* module, or declare the module in <Modules>"
            )
            yield Issue(_module_el(step), f"unknown action module '{step.module}' in <{step.role}>", hint)

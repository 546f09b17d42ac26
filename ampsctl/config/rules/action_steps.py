"""How the Actions rules read a step: its catalogue entry and its options (spec/config.md §5).

The ``ConfigModel`` gives each On/If/Do step its module name and its ``Options`` block. These
helpers add the step's entry in the ``action_modules`` catalogue (only for a built-in module
used in its own role: a misplaced module is judged once, by ACT-003) and read options from a
step that may have no ``Options`` at all. Every ``action_*`` rule module reads steps this way.
"""

from __future__ import annotations

import re

from lxml import etree

from ampsctl.config.model import Action, ConfigModel, Step
from ampsctl.config.rules import action_modules as am

# A ``{{NAME}}`` reference, expanded from the action context before each If/Do step (spec §5.5).
TEMPLATE = re.compile(r"\{\{([^{}]*)\}\}")

# A doc example several rules share: a manifold-affinity action that publishes a message.
# The two %s take extra On options and the Data template.
SAMPLE_MANIFOLD = """  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-manifold-affinity</Module>
        <Options>
          <MessageType>json</MessageType>
          <ControlTopic>faucet_control</ControlTopic>
          <SubscriptionTopic>/symbols/.*</SubscriptionTopic>%s
        </Options>
      </On>
      <Do>
        <Module>amps-action-do-publish-message</Module>
        <Options>
          <MessageType>json</MessageType>
          <Topic>faucet_control</Topic>
          <Data>%s</Data>
        </Options>
      </Do>
    </Action>
  </Actions>"""


def module_of(step: Step) -> am.ActionModule | None:
    """The catalogue entry for a step's module, when it is built in and used in its role."""
    module = am.MODULES.get(step.module or "")
    return module if module is not None and module.role == step.role else None


def catalogued_steps(model: ConfigModel, *names: str) -> list[tuple[Action, Step, am.ActionModule]]:
    """The steps whose module is in the catalogue (and one of ``names``, when given), in file order."""
    steps = model.shared(_catalogued)
    return steps if not names else [found for found in steps if found[2].name in names]


def _catalogued(model: ConfigModel) -> list[tuple[Action, Step, am.ActionModule]]:
    """Worked out once per config: two dozen rules look at the catalogued steps."""
    return [(action, step, module) for action in model.actions for step in action.steps if (module := module_of(step)) is not None]


def first_option(step: Step, name: str) -> etree._Element | None:
    return step.options.first(name) if step.options is not None else None


def option_text(step: Step, name: str) -> str | None:
    return step.options.text(name) if step.options is not None else None


def all_options(step: Step, name: str) -> list[etree._Element]:
    return step.options.all(name) if step.options is not None else []

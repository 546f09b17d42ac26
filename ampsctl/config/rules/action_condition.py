"""Actions rule ACT-022: the Condition of amps-action-if-condition must parse as a filter.

Each ``{{...}}`` is replaced by a constant of the same width (the action expands it before
the condition is evaluated), then the condition goes through ampsctl's filter parser and
compiler (``filters.filter_issue``, shared with GEN-013), so an error is reported at its own
line and column.
"""

from __future__ import annotations

from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules import action_modules as am
from ampsctl.config.rules.action_steps import all_options, catalogued_steps
from ampsctl.config.rules.filters import filter_issue


@rule(
    "ACT-022", "action-condition-not-filter", Severity.ERROR,
    "amps-action-if-condition Condition must be a filter expression.",
    description="`Condition` is expanded (`{{...}}`) and then evaluated as an AMPS filter; a condition that "
    "cannot be parsed stops the action. ampsctl replaces each `{{...}}` with a value and parses and compiles "
    "the condition as `ampsctl filter check` does, reporting an empty condition or the first error at its "
    "line and column. Functions are accepted as in GEN-013 (LAST_READ, VALUE_LOOKUP, UserDefinedFunctions, "
    "any with a `libamps_udf_*` library).",
    source="spec §5.3, §5.6",
    bad="""  <Actions>
    <Action>
      <On><Module>amps-action-on-startup</Module></On>
      <If><Module>amps-action-if-condition</Module><Options><Condition>('{{AMPS_INSTANCE_NAME}}' = 'east' AND</Condition></Options></If>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
    good="""  <Actions>
    <Action>
      <On><Module>amps-action-on-startup</Module></On>
      <If><Module>amps-action-if-condition</Module><Options><Condition>'{{AMPS_INSTANCE_NAME}}' = 'east'</Condition></Options></If>
      <Do><Module>amps-action-do-nothing</Module></Do>
    </Action>
  </Actions>""",
)
def condition_not_filter(model: ConfigModel) -> Iterator[Issue]:
    for _, step, _module in catalogued_steps(model, am.IF_CONDITION):
        for el in all_options(step, "Condition"):
            if not (el.text or "").strip():
                yield Issue(el, "Condition of amps-action-if-condition is empty",
                            "write a filter, e.g. '{{AMPS_AFFINITY_ACTION}}' = 'assign'", at_text=False)
                continue
            issue = filter_issue(model, el, "Condition of amps-action-if-condition", templates=True)
            if issue is not None:
                yield issue

"""Actions rule ACT-022: the Condition of amps-action-if-condition, checked at token level.

Until ampsctl has a filter parser, a condition is reduced to coarse tokens (parentheses,
AND/OR/NOT, values, operators) after each ``{{...}}`` is replaced by a placeholder. That is
enough to catch an empty condition, unbalanced quotes, parentheses and brackets, and a
dangling AND/OR/NOT; deeper syntax errors are not detected yet.
"""

from __future__ import annotations

from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules import action_modules as am
from ampsctl.config.rules.action_steps import TEMPLATE, all_options, catalogued_steps


_KEYWORDS = frozenset({"AND", "OR", "NOT"})


def _condition_tokens(text: str) -> tuple[list[str], str | None]:
    """Coarse tokens of a filter: '(' ')' AND OR NOT and 'v' (anything else); or a problem."""
    tokens: list[str] = []
    depth = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"":
            j = i + 1
            while True:
                if j >= n:
                    return tokens, f"has an unterminated string starting at {text[i:i + 12]!r}"
                if text[j] == "\\":
                    j += 2
                    continue
                if text[j] == ch:
                    if j + 1 < n and text[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            tokens.append("v")
            i = j + 1
            continue
        if ch == "(":
            depth += 1
            tokens.append("(")
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return tokens, "has a ')' without a matching '('"
            tokens.append(")")
        elif ch in "/@[":  # identifiers: /a/b, /@attr, [/odd name]
            end = text.find("]", i) + 1 if ch == "[" else i + 1
            if ch == "[" and end == 0:
                return tokens, "has a '[' without a matching ']'"
            while ch != "[" and end < n and (text[end].isalnum() or text[end] in "_@/-"):
                end += 1
            tokens.append("v")
            i = max(end, i + 1)
            continue
        elif ch.isalpha() or ch == "_":
            end = i + 1
            while end < n and (text[end].isalnum() or text[end] == "_"):
                end += 1
            word = text[i:end].upper()
            tokens.append(word if word in _KEYWORDS else "v")
            i = end
            continue
        elif not ch.isspace():
            tokens.append("v" if ch.isdigit() else "op")
        i += 1
    if depth > 0:
        return tokens, "has an unclosed '('"
    return tokens, None


def _condition_problem(text: str) -> str | None:
    text = TEMPLATE.sub("0", text)
    if not text.strip():
        return "is empty"
    tokens, problem = _condition_tokens(text)
    if problem:
        return problem
    for k, token in enumerate(tokens):
        before = tokens[k - 1] if k else None
        after = tokens[k + 1] if k + 1 < len(tokens) else None
        if token in ("AND", "OR"):
            if before in (None, "(", "AND", "OR", "NOT", "op"):
                return f"has {token} without a left operand"
            if after in (None, ")", "AND", "OR"):
                return f"has {token} without a right operand"
        elif token == "NOT" and after in (None, ")", "AND", "OR"):
            return "has NOT without an operand"
        elif token == "(" and after == ")" and before != "v":  # `UNIX_TIMESTAMP()` is a call
            return "has empty parentheses '()'"
    return None


@rule(
    "ACT-022", "action-condition-not-filter", Severity.ERROR,
    "amps-action-if-condition Condition must be a filter expression (checked at token level).",
    description="`Condition` is expanded (`{{...}}`) and then evaluated as an AMPS filter; a condition that "
    "cannot be parsed stops the action. Until ampsctl has a full filter parser the condition is checked at "
    "token level, after replacing each `{{...}}` with a placeholder: it must not be empty, quotes and "
    "parentheses must balance, and AND/OR/NOT must not dangle. Deeper syntax errors are not detected yet.",
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
            problem = _condition_problem(el.text or "")
            if problem:
                yield Issue(
                    el,
                    f"Condition of amps-action-if-condition {problem}",
                    _condition_hint(problem),
                    at_text=problem != "is empty",
                )


def _condition_hint(problem: str) -> str:
    if problem == "is empty":
        return "write a filter, e.g. '{{AMPS_AFFINITY_ACTION}}' = 'assign'"
    if "unterminated string" in problem:
        return "close the string with the quote that opened it; inside a string, double a quote ('it''s')"
    if "unclosed '('" in problem:
        return "add the missing ')'"
    if "')'" in problem:
        return "remove the extra ')' or add the '(' it closes"
    if "'['" in problem:
        return "close the bracketed identifier with ']'"
    if "parentheses" in problem:
        return "put a condition inside the parentheses, or remove them"
    if "left operand" in problem:
        return "add a condition before it, or remove it"
    return "add the condition it applies to, or remove it"

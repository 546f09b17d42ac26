"""GEN-013: every filter in the config is checked with ampsctl's filter parser and compiler.

The places AMPS reads a filter from (queue Filter and BarrierExpression, queue Priority,
View and ConflatedTopic Filter, replication Destination/Topic Filter, the Filter option of
built-in action steps) are parsed and compiled as ``ampsctl filter check`` does, and a
refusal is reported at the line:col of the offending character inside the value. ACT-022
reads action Conditions with the same ``filter_problem``.

What the parser does not know is not an error here: LAST_READ and VALUE_LOOKUP (AMPS
functions whose placement CT-009, Q-019, VW-009 and MOD-005 judge), the functions a config
declares in UserDefinedFunctions, and any function at all once a `libamps_udf_*` library is
loaded. Such a call is replaced by a constant of the same width and the rest still parsed.
A double escape (`&lt;` left after XML parsing) is GEN-009's. ``{{VARIABLE}}`` templates in
action options are replaced by a constant first, as the action expands them before use.

The filter package is imported on the first filter only (``ampsctl --help`` and configs
without filters never load it), and results are cached by text: configs repeat filters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, Section
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.action_steps import TEMPLATE, all_options, catalogued_steps
from ampsctl.config.rules.modules import library_stem
from ampsctl.config.rules.value_positions import Lines, value_location

# AMPS functions outside ampsctl's catalogue that other rules place (expr_tokens.NONDETERMINISTIC).
KNOWN_ELSEWHERE = frozenset({"LAST_READ", "VALUE_LOOKUP"})
_DOUBLE_ESCAPE = re.compile(r"&(?:lt|gt|amp|quot|apos|#[0-9]+|#[xX][0-9A-Fa-f]+);")
_UNDEFINED = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")  # left as written by the loader
_QUEUE_EXPRESSIONS = (("Filter", False), ("BarrierExpression", False), ("Priority", True))  # (tag, is a value)
_MAX_MASKED = 256  # calls of unknown-but-allowed functions masked in one filter


@dataclass(frozen=True, slots=True)
class FilterProblem:
    position: int | None  # offset in the text given to filter_problem; None: the whole filter
    message: str
    hint: str | None


def allowed_functions(model: ConfigModel) -> frozenset[str] | None:
    """Upper-case names of functions the parser does not know but this config may call;
    None when any name may be a function (a `libamps_udf_*` library is loaded)."""
    return model.shared(_allowed)


def _allowed(model: ConfigModel) -> frozenset[str] | None:
    if any((library_stem(model, name) or "").startswith("libamps_udf") for name in model.modules):
        return None
    names = set(KNOWN_ELSEWHERE)
    for block in model.root.all("UserDefinedFunctions"):
        for function in Section(block).all("Function"):
            name = Section(function).text("Name")
            if name:
                names.add(name.upper())
    return frozenset(names)


def mask_templates(text: str) -> str:
    """``text`` with each ``{{NAME}}`` replaced by a constant of the same width."""
    if "{{" not in text:
        return text
    return TEMPLATE.sub(lambda m: "0".ljust(len(m.group(0))), text)


@lru_cache(maxsize=16_384)
def filter_problem(text: str, value: bool = False, allowed: frozenset[str] | None = KNOWN_ELSEWHERE) -> FilterProblem | None:
    """Why ampsctl's parser or compiler refuses ``text`` as a filter (``value``: as a value
    expression, e.g. a queue Priority), or None when it is accepted."""
    from ampsctl.filter.compiler import compile_filter, compile_value
    from ampsctl.filter.errors import FilterError
    from ampsctl.filter.parser import parse

    source = text
    for _ in range(_MAX_MASKED):
        try:
            tree = parse(source)
            # Compiling refuses what parsing accepts only for aggregate calls: skip it without one.
            if "(" in source and _aggregate_call().search(source):
                (compile_value if value else compile_filter)(tree)
            return None
        except FilterError as exc:
            masked = _mask_call(source, exc.position, allowed)
            if masked is None:
                if exc.position is not None and (_DOUBLE_ESCAPE.match(text, exc.position) or _UNDEFINED.match(text, exc.position)):
                    return None  # a double escape is GEN-009's, an undefined ${VAR} GEN-007's
                return FilterProblem(exc.position, exc.message, exc.hint)
            source = masked
    return None


@lru_cache(maxsize=1)
def _aggregate_call() -> re.Pattern[str]:
    """A call of an aggregate function, any case (a word followed by '(': a cheap over-match)."""
    from ampsctl.filter.catalog import AGGREGATES

    return re.compile(r"\b(?:" + "|".join(sorted(AGGREGATES)) + r")\s*\(", re.IGNORECASE)


def _mask_call(source: str, position: int | None, allowed: frozenset[str] | None) -> str | None:
    """``source`` with the call at ``position`` replaced by ``0`` and spaces, when it calls a
    function the parser does not know and the config allows; otherwise None."""
    from ampsctl.filter.catalog import FUNCTIONS
    from ampsctl.filter.errors import FilterError
    from ampsctl.filter.tokens import Kind, tokenize

    if position is None or not (source[position:position + 1].isalpha() or source[position:position + 1] == "_"):
        return None  # not a name: nothing to mask (and no second tokenising)
    try:
        tokens = tokenize(source)
    except FilterError:
        return None  # the error is the tokeniser's own: no call to mask
    for index, token in enumerate(tokens[:-1]):
        if token.pos != position:
            continue
        opening = tokens[index + 1]
        if token.kind is not Kind.NAME or opening.key != "(" or token.key in FUNCTIONS:
            return None
        if allowed is not None and token.key not in allowed:
            return None
        depth = 0
        for closing in tokens[index + 1:]:
            if closing.kind is Kind.SYMBOL and closing.key in ("(", ")"):
                depth += 1 if closing.key == "(" else -1
                if depth == 0:
                    return source[: token.pos] + "0".ljust(closing.end - token.pos) + source[closing.end:]
        return None
    return None


def filter_issue(model: ConfigModel, el: etree._Element, what: str, *, value: bool = False, templates: bool = False) -> Issue | None:
    """An Issue at the offending character of ``el``'s filter, or None when it is valid."""
    text = el.text or ""
    if not text.strip():
        return None  # an empty value is the schema's (XSD-002) or the caller's
    problem = filter_problem(mask_templates(text) if templates else text, value, allowed_functions(model))
    if problem is None:
        return None
    position = problem.position or 0
    message = problem.message
    if templates:
        for template in TEMPLATE.finditer(text):
            if template.start() <= position < template.end():  # name it, not the constant that stood in
                message = message.replace("number 0", template.group(0), 1)
    kind = "expression" if value else "filter"
    where = value_location(model.config, el, position, lines=model.shared(_lines))
    return Issue(el, f"{what} is not a valid {kind}: {message}", problem.hint, where=where)


def _lines(model: ConfigModel) -> Lines:
    return {}


def _places(model: ConfigModel) -> Iterator[tuple[etree._Element, str, bool, bool]]:
    """(element, what it is, a value expression?, holds {{templates}}?) for every filter."""
    for queue in model.queues:
        for tag, value in _QUEUE_EXPRESSIONS:
            for el in queue.all(tag):
                yield el, f"{queue.label()} {tag}", value, False
    for entry in model.views + model.conflated_topics:
        for el in entry.all("Filter"):
            yield el, f"{entry.label()} Filter", False, False
    for destination in model.replication_destinations:
        for topic in destination.all("Topic"):
            for el in Section(topic).all("Filter"):
                yield el, "Replication Destination/Topic Filter", False, False
    for _, step, module in catalogued_steps(model):
        for el in all_options(step, "Filter"):
            yield el, f"Filter option of {module.name}", False, True


@rule(
    "GEN-013", "filter-invalid", Severity.ERROR,
    "A filter (or queue Priority) must be accepted by ampsctl's filter parser, as `ampsctl filter check` does.",
    description="AMPS refuses to start when a configured filter does not parse. ampsctl parses and compiles "
    "each queue Filter, BarrierExpression and Priority, View and ConflatedTopic Filter, replication "
    "Destination/Topic Filter and Filter option of a built-in action step with the parser of "
    "`ampsctl filter check` (docs/filter-language.md), and reports the first error at its line and column "
    "inside the value. LAST_READ and VALUE_LOOKUP, functions declared in UserDefinedFunctions, and every "
    "function once a `libamps_udf_*` library is loaded are accepted (other rules judge where they may be "
    "used); `{{VARIABLE}}` templates in action options count as values. A Condition is ACT-022's, a "
    "double escape such as `&lt;` GEN-009's.",
    source="spec/config.md §2.2-§2.4, §5.3; spec/expressions.md",
    bad="""  <SOW>
    <ConflatedTopic>
      <Name>orders-C</Name>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <MessageType>json</MessageType>
      <Interval>1s</Interval>
      <Filter>/qty &gt; AND /region = 'A'</Filter>
    </ConflatedTopic>
  </SOW>""",
    good="""  <SOW>
    <ConflatedTopic>
      <Name>orders-C</Name>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <MessageType>json</MessageType>
      <Interval>1s</Interval>
      <Filter>/qty &gt; 100 AND /region = 'A'</Filter>
    </ConflatedTopic>
  </SOW>""",
)
def filter_invalid(model: ConfigModel) -> Iterator[Issue]:
    for el, what, value, templates in _places(model):
        issue = filter_issue(model, el, what, value=value, templates=templates)
        if issue is not None:
            yield issue


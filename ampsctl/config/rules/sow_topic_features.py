"""SOW/Topic features: Expiration, History, Pattern topics, Preprocessing and Enrichment.

These are the optional behaviours of a SOW topic and the documented ways they exclude each
other (spec/config.md §2.1, §9, seed 001). Two values have a grammar that is this section's
own rule: ``Expiration`` (SOWT-011: an interval, ``enabled`` or ``disabled``) and
``History/Window``/``Granularity`` (SOWT-021); UNIT-001 leaves those to these rules so that
each bad value is reported once. Enrichment fields are checked at token level
(``expr_tokens``), outside string literals.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.common import type_module, unexpanded
from ampsctl.config.rules.expr_tokens import AGGREGATES, blank_strings, call_pattern, single_argument_call, state_references
from ampsctl.errors import UnitError
from ampsctl.units import parse_interval

NO_ENRICHMENT_MODULES = frozenset({"protobuf", "struct"})
_HISTORY_EXAMPLES = {"Window": "7d", "Granularity": "15m"}
_QUALIFIED = re.compile(r"\[\s*(?!/)[^\]]*\]\s*\.\s*[\[/]")
# Enrichment cannot aggregate at all; ANY is refused too although views do not offer it.
_AGGREGATE = call_pattern((*AGGREGATES, "ANY"))


# ---------------------------------------------------------------------------------------
# SOWT-011 / SOWT-012: expiration
# ---------------------------------------------------------------------------------------


def _expiration_ok(value: str) -> bool:
    if value in ("enabled", "disabled"):
        return True
    try:
        parse_interval(value)
    except UnitError:
        return False
    return True


@rule(
    "SOWT-011", "sow-topic-expiration-value", Severity.ERROR,
    "Expiration must be an interval (e.g. 30s), enabled or disabled.",
    description="An interval sets the default lifetime of records; `enabled` expires only records whose "
    "message carries an expiration; `disabled` (the default) stores but never applies expirations. "
    "Undocumented interval spellings (`30S`, `1.5h`, a bare number) are accepted here and warned about by UNIT-002.",
    source="seed 001 (SOW/Topic Expiration), seed 003",
    bad="""  <SOW>
    <Topic>
      <Name>quotes</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <Expiration>never</Expiration>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>quotes</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <Expiration>30s</Expiration>
    </Topic>
  </SOW>""",
)
def expiration_value(model: ConfigModel) -> Iterator[Issue]:
    for value, found in model.child_texts("Expiration").items():
        if unexpanded(value) or _expiration_ok(value):
            continue
        if value.lower() in ("enabled", "disabled"):
            hint = f"write {value.lower()} (lower case)"
        else:
            hint = "write an interval such as 30s or 1d, or enabled / disabled"
        for topic, element in found:
            yield Issue(element, f"{topic.label()} has Expiration '{value}', which is not an interval, enabled or disabled", hint)


@rule(
    "SOWT-012", "sow-topic-history-expiration", Severity.ERROR,
    "A topic with History must not enable Expiration.",
    description="The configuration reference states that Expiration must be `disabled` (or absent) when "
    "History is enabled for the topic: historical snapshots and record expiration cannot be combined.",
    source="seed 001 (SOW/Topic Expiration)",
    bad="""  <SOW>
    <Topic>
      <Name>catalog</Name>
      <MessageType>json</MessageType>
      <Key>/sku</Key>
      <FileName>./sow/%n.sow</FileName>
      <Expiration>1d</Expiration>
      <History><Window>7d</Window><Granularity>15m</Granularity></History>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>catalog</Name>
      <MessageType>json</MessageType>
      <Key>/sku</Key>
      <FileName>./sow/%n.sow</FileName>
      <Expiration>disabled</Expiration>
      <History><Window>7d</Window><Granularity>15m</Granularity></History>
    </Topic>
  </SOW>""",
)
def history_expiration(model: ConfigModel) -> Iterator[Issue]:
    for topic in model.topics_with("History"):
        for element in topic.all("Expiration"):
            value = (element.text or "").strip()
            if value == "disabled" or unexpanded(value) or not _expiration_ok(value):
                continue  # an invalid value is SOWT-011
            yield Issue(
                element,
                f"{topic.label()} keeps History, so Expiration must be disabled, not '{value}'",
                "remove <Expiration> (or set it to disabled), or drop <History>",
            )


# ---------------------------------------------------------------------------------------
# SOWT-021 / SOWT-022: history and pattern topics
# ---------------------------------------------------------------------------------------


@rule(
    "SOWT-021", "sow-topic-history-incomplete", Severity.ERROR,
    "History needs both Window and Granularity, each an interval.",
    description="`History/Window` is how long history is kept (e.g. `7d`) and `History/Granularity` how often a "
    "record's state is saved (`0s` = every update). Both are required when History is present. An "
    "invalid interval in either is reported here rather than by UNIT-001.",
    source="seed 001 (SOW/Topic History)",
    bad="""  <SOW>
    <Topic>
      <Name>catalog</Name>
      <MessageType>json</MessageType>
      <Key>/sku</Key>
      <FileName>./sow/%n.sow</FileName>
      <History><Window>7d</Window></History>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>catalog</Name>
      <MessageType>json</MessageType>
      <Key>/sku</Key>
      <FileName>./sow/%n.sow</FileName>
      <History><Window>7d</Window><Granularity>15m</Granularity></History>
    </Topic>
  </SOW>""",
)
def history_incomplete(model: ConfigModel) -> Iterator[Issue]:
    for topic in model.topics_with("History"):
        for history in topic.all("History"):
            missing = [part for part in ("Window", "Granularity") if history.find(part) is None]
            if missing:
                yield Issue(
                    history,
                    f"{topic.label()} has History without {' and '.join(missing)}",
                    "add " + " and ".join(f"<{part}>{_HISTORY_EXAMPLES[part]}</{part}>" for part in missing) + " inside <History>",
                    at_text=False,
                )
            for part in ("Window", "Granularity"):
                element = history.find(part)
                if element is None:
                    continue
                value = (element.text or "").strip()
                if unexpanded(value):
                    continue
                try:
                    parse_interval(value)
                except UnitError as exc:
                    yield Issue(element, f"{topic.label()} History/{part}: {exc.message}", exc.hint)


@rule(
    "SOWT-022", "sow-topic-pattern-restrictions", Severity.ERROR,
    "A Pattern (regular expression) topic cannot have History, Preprocessing or Enrichment.",
    description="The configuration reference states that a topic with `Pattern` cannot specify History, "
    "Preprocessing or Enrichment. (The 5.3.5 digest lists only History; ampsctl keeps all three, as the "
    "reference does.)",
    source="seed 001 (SOW/Topic Pattern)",
    bad="""  <SOW>
    <Topic>
      <Name>all-orders</Name>
      <Pattern>^orders/.*</Pattern>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
      <Enrichment><Field>UNIX_TIMESTAMP() AS /seen</Field></Enrichment>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>all-orders</Name>
      <Pattern>^orders/.*</Pattern>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
)
def pattern_restrictions(model: ConfigModel) -> Iterator[Issue]:
    for topic in model.topics_with("Pattern"):
        for part in ("History", "Preprocessing", "Enrichment"):
            for element in topic.all(part):
                yield Issue(
                    element,
                    f"{topic.label()} is a regular expression topic (Pattern), which cannot have <{part}>",
                    f"remove <{part}>, or define the topics one by one without <Pattern>",
                    at_text=False,
                )


# ---------------------------------------------------------------------------------------
# SOWT-023 .. SOWT-025: preprocessing and enrichment
# ---------------------------------------------------------------------------------------


@rule(
    "SOWT-023", "sow-topic-enrichment-empty", Severity.ERROR,
    "Preprocessing and Enrichment must contain at least one Field.",
    description="Each `Field` is a constructor such as `CONCAT(/first, ' ', /last) AS /fullName`; the "
    "configuration reference requires one or more of them in every Preprocessing or Enrichment element.",
    source="seed 001 (SOW/Topic Preprocessing/Enrichment)",
    bad="""  <SOW>
    <Topic>
      <Name>sales-reps</Name>
      <MessageType>json</MessageType>
      <Key>/employeeId</Key>
      <FileName>./sow/%n.sow</FileName>
      <Enrichment/>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>sales-reps</Name>
      <MessageType>json</MessageType>
      <Key>/employeeId</Key>
      <FileName>./sow/%n.sow</FileName>
      <Enrichment><Field>CONCAT(/firstName, " ", /lastName) AS /fullName</Field></Enrichment>
    </Topic>
  </SOW>""",
)
def enrichment_empty(model: ConfigModel) -> Iterator[Issue]:
    for topic in model.topics_with("Preprocessing", "Enrichment"):
        for part in ("Preprocessing", "Enrichment"):
            for element in topic.all(part):
                if element.find("Field") is None:
                    yield Issue(
                        element,
                        f"{topic.label()} has <{part}> without any <Field>",
                        f"add <Field>expression AS /field</Field> inside <{part}>, or remove <{part}>",
                        at_text=False,
                    )


def _field_problems(text: str, preprocessing: bool) -> list[str]:
    code = blank_strings(text)
    problems = []
    states = state_references(code)
    if preprocessing and states:
        problems.append(f"uses OF {states[0]}, which Preprocessing cannot see (it runs before the record is found)")
    if _QUALIFIED.search(code):
        problems.append("names a topic or message type in an identifier ([topic]./x), which only views support")
    for match in _AGGREGATE.finditer(code):
        name = match.group(1).upper()
        if name in ("MIN", "MAX") and not single_argument_call(code, match.end() - 1):
            continue  # a two-argument MIN/MAX is not an aggregate
        problems.append(f"uses the aggregate function {name}, which only view projections support")
        break
    return problems


@rule(
    "SOWT-024", "sow-topic-enrichment-field-forbidden", Severity.ERROR,
    "A Preprocessing/Enrichment field uses OF PREVIOUS in Preprocessing, a topic-qualified identifier, or an aggregate.",
    description="Preprocessing runs before AMPS computes the SOW key, so it has no previous record: `OF "
    "PREVIOUS`/`OF CURRENT` belong in Enrichment only. Neither phase may name a topic or message type in an "
    "identifier (`[orders]./x` is view syntax) or use aggregate functions (SUM, COUNT, AVG, ...), which "
    "exist only in view projections. Checked at token level (string literals are skipped).",
    source="spec/config.md §2.1, §9 [DIG]",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
      <Preprocessing><Field>/qty OF PREVIOUS + /qty AS /total</Field></Preprocessing>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
      <Enrichment><Field>/qty OF PREVIOUS + /qty AS /total</Field></Enrichment>
    </Topic>
  </SOW>""",
)
def enrichment_field_forbidden(model: ConfigModel) -> Iterator[Issue]:
    for topic in model.topics_with("Preprocessing", "Enrichment"):
        for part in ("Preprocessing", "Enrichment"):
            for element in topic.all(part):
                for field in element.iter("Field"):
                    problems = _field_problems(field.text or "", part == "Preprocessing")
                    if problems:
                        yield Issue(
                            field,
                            f"{topic.label()} {part} field {'; '.join(problems)}",
                            "move OF PREVIOUS/OF CURRENT to <Enrichment>, use plain /field identifiers, "
                            "and compute aggregates in a <View> instead",
                        )


@rule(
    "SOWT-025", "sow-topic-enrichment-message-type", Severity.ERROR,
    "Preprocessing and Enrichment are not supported for protobuf and struct message types.",
    description="AMPS cannot rewrite protobuf or struct messages, so a topic of such a type (a declared "
    "MessageType whose Module is `protobuf` or `struct`) cannot use Preprocessing or Enrichment.",
    source="spec/config.md §2.1, §4.2 [DIG]",
    bad="""  <MessageTypes>
    <MessageType>
      <Name>orders-pb</Name>
      <Module>protobuf</Module>
      <Type>acme.Order</Type>
      <ProtoPath>;/etc/amps/proto</ProtoPath>
      <ProtoFile>order.proto</ProtoFile>
    </MessageType>
  </MessageTypes>
  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>orders-pb</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
      <Enrichment><Field>UNIX_TIMESTAMP() AS /seen</Field></Enrichment>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
      <Enrichment><Field>UNIX_TIMESTAMP() AS /seen</Field></Enrichment>
    </Topic>
  </SOW>""",
)
def enrichment_message_type(model: ConfigModel) -> Iterator[Issue]:
    for topic in model.topics_with("Preprocessing", "Enrichment"):
        module = type_module(model, topic.message_type)
        if module not in NO_ENRICHMENT_MODULES:
            continue
        for part in ("Preprocessing", "Enrichment"):
            for element in topic.all(part):
                yield Issue(
                    element,
                    f"{topic.label()} stores {module} messages ({topic.message_type}), which do not support <{part}>",
                    f"remove <{part}>, or store the topic in a type that supports enrichment (json, xml, fix, nvfix, bson, bflat)",
                    at_text=False,
                )

"""SOW/View (synonym ViewDefinition): the definition itself (spec/config.md §2.3, seed 001).

What a view must have (Name, MessageType, UnderlyingTopic, Projection and Grouping: VW-001),
the output message types a view can produce (VW-003), the documented values of Conflation and
JoinNullEquivalency (VW-008), and the elements a view does not use or accept: a Filter with
Join (VW-002), a non-deterministic Filter (VW-009, token level), a FileName (VW-011).
"""

from __future__ import annotations

from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.common import enum_issues, unknown_type_hint
from ampsctl.config.rules.expr_tokens import nondeterministic_issues
from ampsctl.config.rules.views_fields import view_fields
from ampsctl.config.rules.views_underlying import GOOD_VIEW, view_doc, view_joins

NOT_VIEW_OUTPUT = frozenset({"binary", "protobuf", "struct", "composite-global"})
LIMITED_VIEW_OUTPUT = frozenset({"msgpack"})
CONFLATION = ("none", "inline")
JOIN_NULL_EQUIVALENCY = ("enabled", "disabled")


@rule(
    "VW-001", "view-required-elements", Severity.ERROR,
    "A view needs Name, MessageType, UnderlyingTopic, Projection and Grouping.",
    description="A view is defined by its topic Name (or legacy Topic), its output MessageType, the "
    "UnderlyingTopic it reads (a topic name or Join elements), a Projection with at least one Field (AMPS adds no "
    "field implicitly) and a Grouping with at least one Field (like SQL GROUP BY).",
    source="seed 001 (SOW/View); spec/config.md §2.3 (DIG)",
    bad=view_doc("""      <Name>by-region</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Projection>
        <Field>COUNT(/orderId) AS /orders</Field>
      </Projection>"""),
    good=GOOD_VIEW,
)
def required_elements(model: ConfigModel) -> Iterator[Issue]:
    for view in model.views:
        missing = []
        if not view.name:
            missing.append("Name")
        if not view.message_type:
            missing.append("MessageType")
        underlying = view.first("UnderlyingTopic")
        if underlying is None or (not (underlying.text or "").strip() and not view_joins(view)):
            missing.append("UnderlyingTopic")
        for container in ("Projection", "Grouping"):
            if not any((f.text or "").strip() for f in view_fields(view, container)):
                missing.append(f"{container}/Field" if view.has(container) else container)
        if missing:
            parts = [f"a <Field> in <{m[:-6]}>" if m.endswith("/Field") else f"<{m}>" for m in missing]
            yield Issue(view.el, f"{view.label()} is missing {', '.join(missing)}", "add " + ", ".join(parts),
                        at_text=False)


@rule(
    "VW-002", "view-filter-with-join", Severity.ERROR,
    "A view Filter cannot be combined with Join.",
    description="Filter is only valid when the view reads a single UnderlyingTopic. When the UnderlyingTopic "
    "holds Join specifications, AMPS does not accept a Filter.",
    source="seed 001 (SOW/View)",
    bad="""  <SOW>
    <Topic><Name>ORDERS</Name><MessageType>nvfix</MessageType><Key>/OrderID</Key><FileName>./sow/%n.sow</FileName></Topic>
    <Topic><Name>COMPANIES</Name><MessageType>nvfix</MessageType><Key>/CompanyId</Key><FileName>./sow/%n.sow</FileName></Topic>
    <View>
      <Name>TOTAL_COMPANY_VOLUME</Name>
      <UnderlyingTopic>
        <Join>[ORDERS]./Tick = [COMPANIES]./Tick</Join>
      </UnderlyingTopic>
      <MessageType>nvfix</MessageType>
      <Projection>
        <Field>[ORDERS]./Tick</Field>
        <Field>SUM([ORDERS]./Shares) AS /TotalVolume</Field>
      </Projection>
      <Grouping><Field>[ORDERS]./Tick</Field></Grouping>
      <Filter>[ORDERS]./Shares &gt; 0</Filter>
    </View>
  </SOW>""",
    good="""  <SOW>
    <Topic><Name>ORDERS</Name><MessageType>nvfix</MessageType><Key>/OrderID</Key><FileName>./sow/%n.sow</FileName></Topic>
    <View>
      <Name>TOTAL_VOLUME</Name>
      <UnderlyingTopic>ORDERS</UnderlyingTopic>
      <MessageType>nvfix</MessageType>
      <Projection>
        <Field>/Tick</Field>
        <Field>SUM(/Shares) AS /TotalVolume</Field>
      </Projection>
      <Grouping><Field>/Tick</Field></Grouping>
      <Filter>/Shares &gt; 0</Filter>
    </View>
  </SOW>""",
)
def filter_with_join(model: ConfigModel) -> Iterator[Issue]:
    for view in model.views:
        if not view_joins(view):
            continue
        for el in view.all("Filter"):
            yield Issue(el, f"{view.label()} has a Filter but its UnderlyingTopic uses Join",
                        "remove the Filter (filter the underlying topics with their own views), "
                        "or base the view on a single UnderlyingTopic", at_text=False)


@rule(
    "VW-003", "view-message-type", Severity.ERROR,
    "A view's MessageType must be a known type that can be a view output.",
    description="binary has no fixed format, and protobuf, struct and composite-global types can be read by a "
    "view but not produced by one. fix, xml, nvfix, json, bson and bflat have full view support; msgpack may have "
    "limitations (reported as a warning). Custom types are resolved through MessageTypes/MessageType/Module; an "
    "undeclared type is an error too.",
    source="seed 001 (SOW/View); spec/config.md §4.2 (DIG)",
    bad=view_doc("""      <Name>by-region</Name>
      <MessageType>binary</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Projection>
        <Field>/region</Field>
        <Field>COUNT(/orderId) AS /orders</Field>
      </Projection>
      <Grouping>
        <Field>/region</Field>
      </Grouping>"""),
    good=GOOD_VIEW,
)
def view_message_type(model: ConfigModel) -> Iterator[Issue]:
    views = model.views
    if not views:
        return
    modules = model.message_type_modules
    for view in views:
        el = view.first("MessageType")
        mtype = view.message_type
        if el is None or not mtype:
            continue
        module = modules.get(mtype)
        if module is None:
            yield Issue(el, f"{view.label()} uses unknown MessageType '{mtype}'",
                        unknown_type_hint(mtype, set(modules)))
        elif module in NOT_VIEW_OUTPUT:
            shown = f"'{mtype}'" if module == mtype else f"'{mtype}' (module {module})"
            yield Issue(el, f"{view.label()} cannot produce MessageType {shown}",
                        "use a type with view support: json, xml, fix, nvfix, bson or bflat (or a composite-local type)")
        elif module in LIMITED_VIEW_OUTPUT:
            yield Issue(el, f"{view.label()} produces {mtype}, which may have limitations in views",
                        "check the Message Types chapter, or use json, xml, fix, nvfix, bson or bflat",
                        severity=Severity.WARNING)


@rule(
    "VW-008", "view-enumerated-values", Severity.ERROR,
    "Conflation is none or inline; JoinNullEquivalency is enabled or disabled.",
    description="Conflation defaults to none (every update processed in order); inline conflates pending "
    "updates to the same record. JoinNullEquivalency defaults to disabled.",
    source="seed 001 (SOW/View)",
    bad=view_doc("""      <Name>by-region</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Projection>
        <Field>/region</Field>
        <Field>COUNT(/orderId) AS /orders</Field>
      </Projection>
      <Grouping>
        <Field>/region</Field>
      </Grouping>
      <Conflation>1s</Conflation>"""),
    good=view_doc("""      <Name>by-region</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Projection>
        <Field>/region</Field>
        <Field>COUNT(/orderId) AS /orders</Field>
      </Projection>
      <Grouping>
        <Field>/region</Field>
      </Grouping>
      <Conflation>inline</Conflation>"""),
)
def enumerated_values(model: ConfigModel) -> Iterator[Issue]:
    for view in model.views:
        yield from enum_issues(view, (("Conflation", CONFLATION), ("JoinNullEquivalency", JOIN_NULL_EQUIVALENCY)))


@rule(
    "VW-009", "view-nondeterministic-filter", Severity.ERROR,
    "A view Filter must not call non-deterministic functions.",
    description="LAST_READ, UNIX_TIMESTAMP and VALUE_LOOKUP can give a different answer each time, so view "
    "membership would depend on when a record was processed. Checked at token level: a call of one of these "
    "functions outside string literals.",
    source="spec/config.md §2.3, §9 (DIG)",
    bad=view_doc("""      <Name>by-region</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Projection>
        <Field>/region</Field>
        <Field>COUNT(/orderId) AS /orders</Field>
      </Projection>
      <Grouping>
        <Field>/region</Field>
      </Grouping>
      <Filter>/expires &gt; UNIX_TIMESTAMP()</Filter>"""),
    good=view_doc("""      <Name>by-region</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Projection>
        <Field>/region</Field>
        <Field>COUNT(/orderId) AS /orders</Field>
      </Projection>
      <Grouping>
        <Field>/region</Field>
      </Grouping>
      <Filter>/status = 'complete'</Filter>"""),
)
def nondeterministic_filter(model: ConfigModel) -> Iterator[Issue]:
    for view in model.views:
        yield from nondeterministic_issues(view, ("Filter",), "filter on message fields and constants only")


@rule(
    "VW-011", "view-filename-unused", Severity.INFO,
    "A view FileName is not used by AMPS.",
    description="Views are kept in memory; the FileName element is documented as unused in this version of AMPS.",
    source="seed 001 (SOW/View)",
    bad=view_doc("""      <Name>by-region</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <FileName>./sow/%n.sow</FileName>
      <Projection>
        <Field>/region</Field>
        <Field>COUNT(/orderId) AS /orders</Field>
      </Projection>
      <Grouping>
        <Field>/region</Field>
      </Grouping>"""),
    good=GOOD_VIEW,
)
def filename_unused(model: ConfigModel) -> Iterator[Issue]:
    for view in model.views:
        for el in view.all("FileName"):
            yield Issue(el, f"{view.label()} has a FileName, which AMPS does not use for views",
                        "remove the FileName element", at_text=False)

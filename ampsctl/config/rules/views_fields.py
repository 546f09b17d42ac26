"""SOW/View Projection and Grouping fields (spec/config.md §2.3, seed 001).

Projection and Grouping expressions are read at token level (``expr_tokens``; the filter
parser checks filters only, GEN-013):
identifiers are ``/path``, ``[/odd name]`` or qualified ``[type].[topic]./path``, found outside
string literals; a field constructor is ``expr AS /alias``. VW-007 asks for qualified
references to a topic name that exists with several message types, VW-010 points at
projected fields that are neither aggregated nor grouped (a Join equality makes both of its
sides grouped when one is), VW-013 checks that Grouping names fields of the underlying topics.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, SowEntry
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.expr_tokens import AGGREGATES, blank_strings, call_pattern
from ampsctl.config.rules.views_underlying import GOOD_VIEW, parse_join, split_equality, view_doc, view_joins, view_refs

_QUALIFIER = r"(?:\[[^\]]*\]|[A-Za-z_][\w\-]*)\s*\.\s*"
_FIELD = r"(?:\[/[^\]]*\]|/[\w@][^\s,()*+%=<>!'\"]*)"
_IDENT = re.compile(rf"(?<![\w)\]])(?P<q>(?:{_QUALIFIER}){{0,2}})(?P<f>{_FIELD})")
_AGGREGATE_CALL = call_pattern(AGGREGATES)
_ALIAS = re.compile(r"\s+AS\s+(?=[/\[])", re.IGNORECASE)


def view_fields(view: SowEntry, container: str) -> list[etree._Element]:
    return [f for block in view.all(container) for f in block if f.tag == "Field"]


def split_alias(text: str) -> tuple[str, str | None]:
    """A field constructor ``expr AS /x [HINT ...]`` -> (expr, '/x'); a bare expression -> (text, None)."""
    blanked = blank_strings(text)
    matches = list(_ALIAS.finditer(blanked))
    if not matches:
        return text.strip(), None
    last = matches[-1]
    alias = text[last.end():].strip().split()[0] if text[last.end():].strip() else None
    return text[:last.start()].strip(), alias


def _norm_ident(qualifier: str, field: str, drop_qualifier: bool) -> str:
    field = field.strip()
    if field.startswith("[") and field.endswith("]"):
        field = field[1:-1]
    if drop_qualifier:
        return field
    return re.sub(r"\s+", "", qualifier) + field


def _identifiers(expr: str, drop_qualifier: bool) -> set[str]:
    return {_norm_ident(m.group("q"), m.group("f"), drop_qualifier) for m in _IDENT.finditer(blank_strings(expr))}


# ---------------------------------------------------------------------------------------------
# VW-007, VW-010, VW-013
# ---------------------------------------------------------------------------------------------


@rule(
    "VW-007", "view-ambiguous-topic-reference", Severity.WARNING,
    "A view that reads a topic name defined with several message types must qualify it as [type].[topic].",
    description="Topic identity in AMPS is the pair (name, message type): a json topic `example` and an nvfix "
    "topic `example` are different topics. A view that names such a topic without its type (in UnderlyingTopic "
    "or a Join) leaves the reference ambiguous; write [json].[example]. A view may read topics of another message "
    "type than its own without qualifiers when the names are unambiguous, as the configuration reference's "
    "nvfix view over a fix topic shows.",
    source="seed 001 (SOW/View examples); spec/config.md §2.3",
    bad=view_doc("""      <Name>orders</Name>
      <MessageType>nvfix</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Projection>
        <Field>/region AS /region</Field>
        <Field>COUNT(/orderId) AS /orders</Field>
      </Projection>
      <Grouping><Field>/region</Field></Grouping>"""),
    good=view_doc("""      <Name>orders</Name>
      <MessageType>nvfix</MessageType>
      <UnderlyingTopic>[json].[orders]</UnderlyingTopic>
      <Projection>
        <Field>[json].[orders]./region AS /region</Field>
        <Field>COUNT([json].[orders]./orderId) AS /orders</Field>
      </Projection>
      <Grouping><Field>[json].[orders]./region</Field></Grouping>"""),
)
def ambiguous_topic_references(model: ConfigModel) -> Iterator[Issue]:
    known = model.message_types
    for view in model.views:
        for ref in view_refs(model, view):
            types = sorted({e.message_type for e in model.entries_by_name.get(ref.topic, ()) if e.message_type})
            if ref.mtype is not None or len(types) < 2:
                continue
            node = next(
                (j for j in view_joins(view) if any(side[0] is None and side[1] == ref.topic for side in parse_join(j.text or "", known) or [])),
                view.first("UnderlyingTopic"),
            )
            yield Issue(
                node,
                f"{view.label()} reads '{ref.topic}', which is defined with message types {', '.join(types)}",
                f"say which one: [{types[0]}].[{ref.topic}]",
            )
            break


@rule(
    "VW-010", "view-projection-not-grouped", Severity.INFO,
    "A Projection field is neither aggregated nor in Grouping.",
    description="Unlike ANSI SQL, AMPS accepts a projected field that is not an aggregate and not a grouping "
    "field; the view then shows the value of the last record processed for the group. Fields built only from "
    "grouping identifiers or constants are fine, and so are fields that a Join equality ties to a grouping "
    "field. The rule is opt-in (--select VW-010): the configuration reference's own JOIN example projects "
    "such last-value fields on purpose. Checked at token level (aggregates: " + ", ".join(AGGREGATES) + ").",
    source="spec/config.md §2.3 (DIG)",
    opt_in=True,
    bad=view_doc("""      <Name>by-region</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Projection>
        <Field>/region</Field>
        <Field>/customer</Field>
        <Field>COUNT(/orderId) AS /orders</Field>
      </Projection>
      <Grouping>
        <Field>/region</Field>
      </Grouping>"""),
    good=GOOD_VIEW,
)
def projection_not_grouped(model: ConfigModel) -> Iterator[Issue]:
    views = model.views
    if not views:
        return
    for view in views:
        single = len({(r.mtype, r.topic) for r in view_refs(model, view)}) <= 1 and not view_joins(view)
        grouped = set()
        for field in view_fields(view, "Grouping"):
            grouped |= _identifiers(field.text or "", single)
        grouped = _close_over_joins(view, grouped, single)
        for field in view_fields(view, "Projection"):
            source, _ = split_alias(field.text or "")
            if not source or _AGGREGATE_CALL.search(blank_strings(source)):
                continue
            idents = _identifiers(source, single)
            loose = sorted(idents - grouped)
            if loose:
                yield Issue(field, f"{view.label()} projects {', '.join(loose)} without an aggregate and without "
                            "grouping on it; AMPS keeps the last value processed",
                            "wrap it in an aggregate (e.g. MAX(...)), add it to Grouping, or accept last-value semantics")


def _close_over_joins(view: SowEntry, grouped: set[str], single: bool) -> set[str]:
    """A Join equality ``[A]./x = [B]./y`` makes both sides grouped when one of them is."""
    pairs = []
    for join in view_joins(view):
        halves = split_equality(join.text or "")
        if halves:
            pairs.append((_identifiers(halves[0], single), _identifiers(halves[1], single)))
    changed = True
    while changed:
        changed = False
        for left, right in pairs:
            for side, other in ((left, right), (right, left)):
                if side & grouped and not other <= grouped:
                    grouped |= other
                    changed = True
    return grouped


def _aliases(view: SowEntry) -> dict[str, str]:
    """Projection alias -> the expression it names (the last definition wins)."""
    aliases = {}
    for field in view_fields(view, "Projection"):
        source, alias = split_alias(field.text or "")
        if alias:
            aliases[alias] = source
    return aliases


@rule(
    "VW-013", "view-grouping-identifier", Severity.ERROR,
    "A Grouping field must be an identifier of an underlying topic.",
    description="Grouping fields name fields of the underlying topics, like SQL GROUP BY columns. A field "
    "constructor (expr AS /x), an expression, an alias defined in Projection, or a qualified identifier of a "
    "topic the view does not read is not accepted. Checked at token level.",
    source="spec/config.md §2.3 (DIG)",
    bad=view_doc("""      <Name>by-region</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Projection>
        <Field>/region</Field>
        <Field>COUNT(/orderId) AS /orders</Field>
      </Projection>
      <Grouping>
        <Field>/orders</Field>
      </Grouping>"""),
    good=GOOD_VIEW,
)
def grouping_identifier(model: ConfigModel) -> Iterator[Issue]:
    views = model.views
    if not views:
        return
    for view in views:
        topics = {ref.topic for ref in view_refs(model, view)}
        aliases: dict[str, str] | None = None  # read from Projection when a Grouping field needs them
        for field in view_fields(view, "Grouping"):
            text = (field.text or "").strip()
            if not text:
                continue
            blanked = blank_strings(text)
            if _ALIAS.search(blanked):
                yield Issue(field, f"{view.label()} Grouping field '{text}' is a field constructor",
                            "group by an identifier of the underlying topic, e.g. /region, without AS")
                continue
            match = _IDENT.fullmatch(blanked)
            if match is None:
                yield Issue(field, f"{view.label()} Grouping field '{text}' is not an identifier of an underlying topic",
                            "group by a field of the underlying topic, e.g. /region or [orders]./region")
                continue
            qualifier = [re.sub(r"\s*\.\s*$", "", q).strip("[]").strip()
                         for q in re.findall(_QUALIFIER, match.group("q"))]
            if qualifier:
                topic = qualifier[-1]
                if topics and topic not in topics:
                    yield Issue(field, f"{view.label()} Grouping field '{text}' names topic '{topic}', "
                                "which the view does not read",
                                f"use one of the view's underlying topics: {', '.join(sorted(topics))}")
                continue
            ident = _norm_ident("", match.group("f"), True)
            if aliases is None:
                aliases = _aliases(view)
            source = aliases.get(ident)
            plain = _IDENT.fullmatch(blank_strings(source)) if source is not None else None
            if source is not None and (plain is None or _norm_ident("", plain.group("f"), True) != ident):
                yield Issue(field, f"{view.label()} Grouping field '{text}' is an alias defined in Projection "
                            f"('{source} AS {ident}'), not a field of the underlying topic",
                            "group by the underlying identifiers that the alias is computed from")

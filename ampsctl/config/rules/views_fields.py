"""SOW/View Projection and Grouping fields (spec/config.md §2.3, seed 001).

Expressions are checked at token level until the filter parser lands (``expr_tokens``):
identifiers are ``/path``, ``[/odd name]`` or qualified ``[type].[topic]./path``, found outside
string literals; a field constructor is ``expr AS /alias``. VW-007 asks for qualified
identifiers when the view's message type differs from a topic it reads, VW-010 points at
projected fields that are neither aggregated nor grouped, VW-013 checks that Grouping names
fields of the underlying topics.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, SowEntry
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.expr_tokens import AGGREGATES, blank_strings, call_pattern
from ampsctl.config.rules.views_underlying import GOOD_VIEW, parse_join, ref_types, view_doc, view_joins, view_refs

_QUALIFIER = r"(?:\[[^\]]*\]|[A-Za-z_][\w\-]*)\s*\.\s*"
_FIELD = r"(?:\[/[^\]]*\]|/[\w@][^\s,()*+%=<>!'\"]*)"
_IDENT = re.compile(rf"(?<![\w)\]])(?P<q>(?:{_QUALIFIER}){{0,2}})(?P<f>{_FIELD})")
_FULLY_QUALIFIED = re.compile(rf"\[[^\]]*\]\s*\.\s*\[[^\]]*\]\s*\.\s*{_FIELD}")
_UNQUALIFIED = re.compile(r"\[/|(?<![\w)\]])/(?=[\w@\[])")
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


def _has_unqualified(expr: str) -> bool:
    remaining = _FULLY_QUALIFIED.sub(" ", blank_strings(expr))
    return _UNQUALIFIED.search(remaining) is not None


# ---------------------------------------------------------------------------------------------
# VW-007, VW-010, VW-013
# ---------------------------------------------------------------------------------------------


@rule(
    "VW-007", "view-unqualified-identifiers", Severity.WARNING,
    "When a view's MessageType differs from an underlying topic's, qualify references as [type].[topic].",
    description="A view may produce a different message type than the topics it reads, but then the AMPS "
    "documentation asks for fully qualified references: the UnderlyingTopic as [type].[topic], Join sides and "
    "the identifiers in Projection and Grouping as [type].[topic]./field. Aliases after AS are output fields "
    "and need no qualifier. Checked at token level.",
    source="spec/config.md §2.3 (DIG)",
    bad=view_doc("""      <Name>orders-nvfix</Name>
      <MessageType>nvfix</MessageType>
      <UnderlyingTopic>[json].[orders]</UnderlyingTopic>
      <Projection>
        <Field>/region AS /region</Field>
        <Field>COUNT([json].[orders]./orderId) AS /orders</Field>
      </Projection>
      <Grouping><Field>[json].[orders]./region</Field></Grouping>"""),
    good=view_doc("""      <Name>orders-nvfix</Name>
      <MessageType>nvfix</MessageType>
      <UnderlyingTopic>[json].[orders]</UnderlyingTopic>
      <Projection>
        <Field>[json].[orders]./region AS /region</Field>
        <Field>COUNT([json].[orders]./orderId) AS /orders</Field>
      </Projection>
      <Grouping><Field>[json].[orders]./region</Field></Grouping>"""),
)
def unqualified_identifiers(model: ConfigModel) -> Iterator[Issue]:
    views = model.views
    if not views:
        return
    known = model.message_types
    for view in views:
        vtype = view.message_type
        if not vtype:
            continue
        refs = view_refs(model, view)
        differing = sorted({(t, ref.topic) for ref in refs for t in ref_types(model, view, ref) if t != vtype})
        if not differing:
            continue
        other, topic = differing[0]
        what = f"{view.label()} is {vtype} but reads {other} topic '{topic}'"
        hint = f"write references as [{other}].[{topic}]./field"
        joins = view_joins(view)
        underlying = view.first("UnderlyingTopic")
        if not joins and underlying is not None and refs and refs[0].mtype is None:
            yield Issue(underlying, f"{what}; UnderlyingTopic is not qualified with its message type",
                        f"write <UnderlyingTopic>[{other}].[{topic}]</UnderlyingTopic>")
        for join in joins:
            sides = parse_join(join.text or "", known)
            if sides and any(mtype is None for mtype, _, _ in sides):
                yield Issue(join, f"{what}; this Join is not qualified with message types",
                            "write both sides as [type].[topic].[/field]")
        for container in ("Projection", "Grouping"):
            for field in view_fields(view, container):
                source, _ = split_alias(field.text or "")
                if _has_unqualified(source):
                    yield Issue(field, f"{what}; this {container} field has identifiers without [type].[topic]", hint)


@rule(
    "VW-010", "view-projection-not-grouped", Severity.INFO,
    "A Projection field is neither aggregated nor in Grouping.",
    description="Unlike ANSI SQL, AMPS accepts a projected field that is not an aggregate and not a grouping "
    "field; the view then shows the value of the last record processed for the group. Fields built only from "
    "grouping identifiers or constants are fine. Checked at token level (aggregates: "
    + ", ".join(AGGREGATES) + ").",
    source="spec/config.md §2.3 (DIG)",
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
        aliases = {}
        for field in view_fields(view, "Projection"):
            source, alias = split_alias(field.text or "")
            if alias:
                aliases[alias] = source
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
            source = aliases.get(ident)
            plain = _IDENT.fullmatch(blank_strings(source)) if source is not None else None
            if source is not None and (plain is None or _norm_ident("", plain.group("f"), True) != ident):
                yield Issue(field, f"{view.label()} Grouping field '{text}' is an alias defined in Projection "
                            f"('{source} AS {ident}'), not a field of the underlying topic",
                            "group by the underlying identifiers that the alias is computed from")

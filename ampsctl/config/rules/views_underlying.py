"""SOW/View (synonym ViewDefinition): the underlying topics a view reads (spec/config.md §2.3,
seed 001).

A view names its underlying topics either as UnderlyingTopic text (``orders``, ``[orders]`` or
the type-qualified ``[json].[orders]``) or as Join children
(``[ORDERS]./Tick = [COMPANIES]./Tick``, ``[nvfix].[Orders].[/Id] = [json].[Addr].[/Id]``;
brackets around a topic are optional, and without them the first ``/`` starts the field).
``view_refs`` turns both forms into ``ViewRef`` values once per config; the rules resolve them
against ``model.entries_by_name`` on the (name, message type) pair when the type is given.

This module also holds the documentation example builders of the view modules.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, SowEntry, regex_error, topic_matches
from ampsctl.config.registry import Issue, rule

UNDERLYING_KINDS = frozenset({"Topic", "View", "ConflatedTopic", "Queue", "LocalQueue", "GroupLocalQueue"})
_QUALIFIED_TEXT = re.compile(r"\[([^\]]*)\]\s*\.\s*\[([^\]]*)\]")
_BRACKETED_TEXT = re.compile(r"\[([^\]]*)\]")


@dataclass(frozen=True, slots=True)
class ViewRef:
    """One underlying topic reference of a view."""

    mtype: str | None  # message type when the reference is qualified
    topic: str
    el: etree._Element  # the UnderlyingTopic (text form) or Join element

    def label(self) -> str:
        return f"[{self.mtype}].[{self.topic}]" if self.mtype else f"'{self.topic}'"


# ---------------------------------------------------------------------------------------------
# Parsing helpers
# ---------------------------------------------------------------------------------------------


def _text_ref(text: str) -> tuple[str | None, str]:
    match = _QUALIFIED_TEXT.fullmatch(text)
    if match:
        return match.group(1).strip(), match.group(2).strip()
    match = _BRACKETED_TEXT.fullmatch(text)
    if match:
        return None, match.group(1).strip()
    return None, text


def split_equality(text: str) -> tuple[str, str] | None:
    """Split a Join on its one top-level ``=``; None when it is not a single equality."""
    depth = 0
    quote: str | None = None
    position = -1
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif depth == 0 and ch in "<>!":
            return None
        elif depth == 0 and ch == "=":
            if position >= 0:
                return None
            position = i
    if position < 0:
        return None
    return text[:position], text[position + 1:]


def _parse_side(text: str, known_types: set[str]) -> tuple[str | None, str, str] | None:
    """(message type, topic, field) of one Join side, or None when it has another shape."""
    s = text.strip()
    segments: list[tuple[str, bool]] = []  # (text, bracketed)
    field = None
    i = 0
    while i < len(s):
        if s[i] == "[":
            end = s.find("]", i)
            if end < 0:
                return None
            segment = s[i + 1:end]
            i = end + 1
            if segment.startswith("/") and not s[i:].strip():
                field = segment  # [/field]; a bracketed name followed by more is a topic like [/ett/order]
                break
            segments.append((segment.strip(), True))
        elif s[i] == "/":
            field = s[i:]
            break
        else:
            end = i
            while end < len(s) and s[end] not in ".[/":
                end += 1
            segments.append((s[i:end].strip(), False))
            i = end
        while i < len(s) and s[i].isspace():
            i += 1
        if i < len(s) and s[i] == ".":
            i += 1
            while i < len(s) and s[i].isspace():
                i += 1
        elif i < len(s) and s[i] != "/":
            return None
    if field is None or len(field) < 2 or any(ch.isspace() for ch in field.strip()):
        return None
    if not segments or any(not seg for seg, _ in segments):
        return None
    if any(bracketed for _, bracketed in segments):
        if len(segments) > 2:
            return None
        if len(segments) == 2:
            return segments[0][0], segments[1][0], field
        return None, segments[0][0], field
    names = [seg for seg, _ in segments]
    if len(names) >= 2 and names[0] in known_types:
        return names[0], ".".join(names[1:]), field
    return None, ".".join(names), field


def parse_join(text: str, known_types: set[str]) -> list[tuple[str | None, str, str]] | None:
    halves = split_equality(text)
    if halves is None:
        return None
    sides = [_parse_side(half, known_types) for half in halves]
    if any(side is None for side in sides):
        return None
    return [side for side in sides if side is not None]


def view_joins(view: SowEntry) -> list[etree._Element]:
    underlying = view.first("UnderlyingTopic")
    if underlying is None:
        return []
    return [child for child in underlying if child.tag == "Join"]


def _parse_refs(view: SowEntry, known_types: set[str]) -> list[ViewRef]:
    underlying = view.first("UnderlyingTopic")
    if underlying is None:
        return []
    join_els = view_joins(view)
    if not join_els:
        text = (underlying.text or "").strip()
        if not text:
            return []
        mtype, topic = _text_ref(text)
        return [ViewRef(mtype, topic, underlying)]
    refs = []
    for join in join_els:
        for mtype, topic, _ in parse_join(join.text or "", known_types) or ():
            ref = ViewRef(mtype, topic, join)
            if ref not in refs:
                refs.append(ref)
    return refs


def _all_view_refs(model: ConfigModel) -> dict[SowEntry, list[ViewRef]]:
    known = model.message_types
    return {view: _parse_refs(view, known) for view in model.views}


def view_refs(model: ConfigModel, view: SowEntry) -> list[ViewRef]:
    """The underlying topic references of a view, parsed once per config."""
    return model.shared(_all_view_refs)[view]


def _candidates(model: ConfigModel, view: SowEntry, ref: ViewRef) -> list[SowEntry]:
    return [
        e for e in model.entries_by_name.get(ref.topic, ())
        if e.kind in UNDERLYING_KINDS and e is not view and (ref.mtype is None or e.message_type == ref.mtype)
    ]


def _pattern_owner(model: ConfigModel, ref: ViewRef) -> SowEntry | None:
    """The regex SOW topic whose Pattern matches a reference's topic name, if any."""
    for topic in model.pattern_topics:
        pattern = topic.text("Pattern") or ""
        if (ref.mtype is None or topic.message_type == ref.mtype) and regex_error(pattern) is None:
            if topic_matches(pattern, ref.topic) or pattern == ref.topic:
                return topic
    return None


def _underlying_names(model: ConfigModel) -> list[str]:
    """Every name a view can read, for "did you mean" hints (built on first use)."""
    return sorted({e.name for e in model.sow_entries if e.kind in UNDERLYING_KINDS and e.name})


def ref_types(model: ConfigModel, view: SowEntry, ref: ViewRef) -> set[str]:
    if ref.mtype:
        return {ref.mtype}
    return {e.message_type for e in _candidates(model, view, ref) if e.message_type}


# ---------------------------------------------------------------------------------------------
# Documentation examples, shared by the view modules
# ---------------------------------------------------------------------------------------------


_ORDERS = """    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/orderId</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>"""


def view_doc(body: str, before: str = _ORDERS) -> str:
    return f"""  <SOW>
{before}
    <View>
{body}
    </View>
  </SOW>"""


GOOD_VIEW = view_doc("""      <Name>by-region</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>orders</UnderlyingTopic>
      <Projection>
        <Field>/region</Field>
        <Field>COUNT(/orderId) AS /orders</Field>
      </Projection>
      <Grouping>
        <Field>/region</Field>
      </Grouping>""")


# ---------------------------------------------------------------------------------------------
# VW-004 .. VW-006, VW-012: the underlying topics
# ---------------------------------------------------------------------------------------------


@rule(
    "VW-004", "view-underlying-binary", Severity.ERROR,
    "A view cannot read a topic of message type binary.",
    description="binary messages have no fields AMPS can parse, so they cannot be projected, grouped or joined.",
    source="spec/config.md §2.3 (DIG)",
    bad=view_doc("""      <Name>blob-count</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>[binary].[blobs]</UnderlyingTopic>
      <Projection><Field>COUNT(/id) AS /n</Field></Projection>
      <Grouping><Field>/id</Field></Grouping>""",
        before="""    <Topic><Name>blobs</Name><MessageType>binary</MessageType><FileName>./sow/%n.sow</FileName></Topic>"""),
    good=GOOD_VIEW,
)
def underlying_binary(model: ConfigModel) -> Iterator[Issue]:
    views = model.views
    if not views:
        return
    modules = model.message_type_modules
    for view in views:
        for ref in view_refs(model, view):
            binary = sorted(t for t in ref_types(model, view, ref) if modules.get(t) == "binary")
            if binary:
                yield Issue(ref.el, f"{view.label()} reads {ref.label()}, a {binary[0]} topic",
                            "base the view on topics of a parseable type (json, nvfix, xml, ...)")


@rule(
    "VW-005", "view-underlying-defined", Severity.ERROR,
    "A view's underlying topics must be SOW topics, views, conflated topics or queues defined before it.",
    description="Each underlying topic (the UnderlyingTopic text or both sides of every Join) must be defined in "
    "the SOW section before the view: an error when it is not defined at all, a warning when it is defined later "
    "in the file. A type-qualified reference ([json].[orders]) must match the topic's MessageType too.",
    source="spec/config.md §2.3 (DIG)",
    bad=view_doc("""      <Name>by-region</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>order</UnderlyingTopic>
      <Projection>
        <Field>/region</Field>
        <Field>COUNT(/orderId) AS /orders</Field>
      </Projection>
      <Grouping>
        <Field>/region</Field>
      </Grouping>"""),
    good=GOOD_VIEW,
)
def underlying_defined(model: ConfigModel) -> Iterator[Issue]:
    views = model.views
    if not views:
        return
    for view in views:
        for ref in view_refs(model, view):
            found = _candidates(model, view, ref)
            if not found:
                if _pattern_owner(model, ref) is not None:
                    continue  # VW-006 explains it
                others = sorted({e.message_type or "?" for e in model.entries_by_name.get(ref.topic, ())
                                 if e.kind in UNDERLYING_KINDS and e is not view})
                close = difflib.get_close_matches(ref.topic, model.shared(_underlying_names), n=1, cutoff=0.8)
                if others:
                    hint = f"'{ref.topic}' exists as {', '.join(others)}: fix the qualifier"
                elif close:
                    hint = f"did you mean '{close[0]}'?"
                else:
                    hint = f"define a SOW <Topic> named '{ref.topic}' before the view, or fix the name"
                yield Issue(ref.el, f"{view.label()} reads {ref.label()}, which is not defined in the SOW section", hint)
            elif all(e.order > view.order for e in found):
                yield Issue(ref.el, f"{view.label()} reads {ref.label()}, which is defined after the view",
                            "move the view below the definition of its underlying topic", severity=Severity.WARNING)


@rule(
    "VW-006", "view-underlying-pattern-topic", Severity.ERROR,
    "A view cannot read a regular expression (Pattern) SOW topic.",
    description="Views need a concrete SOW topic; a SOW Topic with a Pattern stores many logical topics in one "
    "file and cannot underlie a view, neither by its Name nor by one of its logical topic names.",
    source="spec/config.md §2.3 (DIG)",
    bad=view_doc("""      <Name>by-region</Name>
      <MessageType>json</MessageType>
      <UnderlyingTopic>all_orders</UnderlyingTopic>
      <Projection><Field>/region</Field><Field>COUNT(/orderId) AS /orders</Field></Projection>
      <Grouping><Field>/region</Field></Grouping>""",
        before="""    <Topic>
      <Name>all_orders</Name>
      <Pattern>^orders_[a-z]+$</Pattern>
      <MessageType>json</MessageType>
      <Key>/orderId</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>"""),
    good=GOOD_VIEW,
)
def underlying_pattern_topic(model: ConfigModel) -> Iterator[Issue]:
    views = model.views
    if not views or not model.pattern_topics:
        return
    for view in views:
        for ref in view_refs(model, view):
            found = _candidates(model, view, ref)
            owner = next((e for e in found if e.kind == "Topic" and e.text("Pattern")), None)
            if owner is None and not found:
                owner = _pattern_owner(model, ref)
            if owner is not None:
                yield Issue(ref.el, f"{view.label()} reads {ref.label()}, which belongs to the regex SOW Topic "
                            f"'{owner.name}' (Pattern '{owner.text('Pattern')}')",
                            "define a plain SOW Topic for the data the view needs")


@rule(
    "VW-012", "view-join-shape", Severity.WARNING,
    "A Join should be one equality between two topic fields.",
    description="A Join relates two topics with one equality: [topic].[/field] = [topic].[/field], or "
    "[type].[topic].[/field] = ... when message types differ (brackets around the topic are optional, and the "
    "first / then starts the field). Values compare as strings; write several Join elements to AND conditions.",
    source="spec/config.md §2.3 (DIG)",
    bad="""  <SOW>
    <Topic><Name>ORDERS</Name><MessageType>nvfix</MessageType><Key>/OrderID</Key><FileName>./sow/%n.sow</FileName></Topic>
    <Topic><Name>COMPANIES</Name><MessageType>nvfix</MessageType><Key>/CompanyId</Key><FileName>./sow/%n.sow</FileName></Topic>
    <View>
      <Name>TOTAL_COMPANY_VOLUME</Name>
      <UnderlyingTopic>
        <Join>[ORDERS]./Tick = [COMPANIES]./Tick AND [ORDERS]./Venue = [COMPANIES]./Venue</Join>
      </UnderlyingTopic>
      <MessageType>nvfix</MessageType>
      <Projection><Field>[ORDERS]./Tick</Field><Field>SUM([ORDERS]./Shares) AS /TotalVolume</Field></Projection>
      <Grouping><Field>[ORDERS]./Tick</Field></Grouping>
    </View>
  </SOW>""",
    good="""  <SOW>
    <Topic><Name>ORDERS</Name><MessageType>nvfix</MessageType><Key>/OrderID</Key><FileName>./sow/%n.sow</FileName></Topic>
    <Topic><Name>COMPANIES</Name><MessageType>nvfix</MessageType><Key>/CompanyId</Key><FileName>./sow/%n.sow</FileName></Topic>
    <View>
      <Name>TOTAL_COMPANY_VOLUME</Name>
      <UnderlyingTopic>
        <Join>[ORDERS]./Tick = [COMPANIES]./Tick</Join>
        <Join>[ORDERS]./Venue = [COMPANIES]./Venue</Join>
      </UnderlyingTopic>
      <MessageType>nvfix</MessageType>
      <Projection><Field>[ORDERS]./Tick</Field><Field>SUM([ORDERS]./Shares) AS /TotalVolume</Field></Projection>
      <Grouping><Field>[ORDERS]./Tick</Field></Grouping>
    </View>
  </SOW>""",
)
def join_shape(model: ConfigModel) -> Iterator[Issue]:
    views = model.views
    if not views:
        return
    known = model.message_types
    for view in views:
        for join in view_joins(view):
            text = (join.text or "").strip()
            if parse_join(text, known) is None:
                yield Issue(join, f"{view.label()} Join '{text}' is not of the form [topic].[/field] = [topic].[/field]",
                            "write one equality per Join element; several Join elements are combined with AND")

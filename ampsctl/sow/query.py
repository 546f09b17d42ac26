"""SOW queries: filter, SowKeys, order_by, top_n and a select list, over any record source.

Theory of operation. A query is planned once (``plan``) and then run over candidates that a
source produces: the in-memory topic (``topic.SowTopic``) or a SOW file (``sowfile.SowFile``).

* The filter is compiled with ``filter.compiler.compile_filter``, the one semantics, and is run
  on every candidate. Indexes only choose the candidates (``indexing.py``): a hash index is
  used when the filter is a conjunction with ``/f = literal`` or ``/f IN (literals)`` for every
  field of the index (the index with the most fields wins); explicit SowKeys narrow the same way.
  A source may narrow further (the SOW file pre-filters memo-indexed fields in SQL) as long as
  it never drops a record the filter accepts.
* ``now``: records due for expiration at ``now`` are left out when the topic processes
  expiration (they would be gone had the sweep run).
* order_by is AMPS's ``/field [ASC|DESC] [TEXT]`` list (spec/messages.md §10). The default,
  mixed-type order puts numbers (numeric text included) in numeric order before other text in
  code-point order; ``TEXT`` orders by the text form. NULLs come last in both directions
  (the spec's [ASSUME]); ties keep the source order. An array sorts by its first element.
* top_n keeps the first N after ordering (a query without order_by stops after N matches).
* select reduces each result to the listed fields with the codec (``Payloads.select``).
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from ampsctl.errors import InputError, UsageError
from ampsctl.filter import ast
from ampsctl.filter.errors import FilterError
from ampsctl.filter.values import negate, parse_number, scalar, to_text
from ampsctl.messages.paths import split_path
from ampsctl.sow.indexing import Indexer, literal_tokens
from ampsctl.sow.payloads import Payloads
from ampsctl.sow.record import SowRecord

_ORDER_ITEM = re.compile(r"\s*(?P<field>\[[^\]]*\]|[^\s,]+)(?P<words>(?:\s+[A-Za-z]+)*)\s*")


@dataclass(frozen=True, slots=True)
class OrderKey:
    field: ast.Field
    descending: bool = False
    text: bool = False


@dataclass(frozen=True, slots=True)
class Query:
    """What to select. ``as_of`` (µs) asks a History topic for its state at that time."""

    filter: str | None = None
    keys: tuple[str, ...] | None = None
    order_by: str | None = None
    top_n: int | None = None
    select: tuple[str, ...] | None = None
    as_of: int | None = None
    now: int | None = None
    topic: str | None = None  # only concrete topics this regex finds (a Pattern container has several)


@dataclass(frozen=True, slots=True)
class Plan:
    query: Query
    expr: ast.Expr | None
    predicate: Callable[[Any], bool] | None
    lookup: tuple[int, tuple[bytes, ...]] | None  # hash index number and the tokens to look up
    order: tuple[OrderKey, ...]

    @property
    def strategy(self) -> str:
        if self.query.as_of is not None:
            return "history"
        if self.query.keys is not None:
            return "sow keys"
        return "hash index" if self.lookup is not None else "scan"


@dataclass(frozen=True, slots=True)
class Row:
    """One result: the stored record and its (possibly select-reduced) document (None when the
    query ran with ``documents=False`` and did not need it)."""

    record: SowRecord
    doc: Any


def plan(query: Query, indexer: Indexer) -> Plan:
    """Parse and compile what the query needs; InputError/UsageError on a bad filter or option."""
    from ampsctl.filter.compiler import compile_filter
    from ampsctl.filter.parser import parse, with_position

    if query.top_n is not None and query.top_n < 0:
        raise UsageError(f"top_n must be 0 or more, not {query.top_n}", hint="--top-n 10")
    if query.select is not None:
        for path in query.select:
            split_path(path)  # InputError naming the bad path
    expr = parse(query.filter) if query.filter is not None and query.filter.strip() else None
    try:
        predicate = compile_filter(expr) if expr is not None else None
    except FilterError as error:  # the compiler's errors come without a column
        raise with_position(error, query.filter or "") from None
    lookup = _hash_lookup(expr, indexer) if expr is not None and query.as_of is None else None
    return Plan(query, expr, predicate, lookup, parse_order_by(query.order_by) if query.order_by else ())


def naming_record(error: FilterError, key: str, topic: str | None = None) -> FilterError:
    """``error``, raised evaluating the filter on one record, naming that record: its SOW key,
    and its concrete topic when the SOW topic is a Pattern (the one failure ends the query)."""
    plain = key.isprintable() and key.strip() == key and " " not in key and key != ""
    where = f"on the record with SOW key {key if plain else repr(key)}" + (f" of topic {topic!r}" if topic is not None else "")
    return FilterError(f"{error.message} ({where})", expression=error.expression, position=error.position,
                       hint=error.hint, code=error.code)


def execute(plan: Plan, payloads: Payloads, candidates: Iterable[tuple[SowRecord, Any]], *,
            expiration_enabled: bool, documents: bool = True, pattern: bool = False) -> list[Row]:
    """Run a plan over ``(record, doc or None)`` candidates; the rows in result order.

    ``documents=False``: a caller that sends the stored bytes (the broker without a select
    list) gets rows whose ``doc`` is None unless the query had to parse it anyway (filter,
    order_by, select), instead of every result's payload parsed for nothing. An evaluation
    error names the record (``naming_record``; ``pattern``: with its topic)."""
    query = plan.query
    limit = query.top_n
    if limit == 0:
        return []
    keys = frozenset(query.keys) if query.keys is not None else None
    now = query.now if expiration_enabled else None
    predicate = plan.predicate
    parse = payloads.parse
    rows: list[Row] = []
    need_doc = predicate is not None or plan.order or query.select is not None
    for record, doc in candidates:
        if keys is not None and record.key not in keys:
            continue
        if now is not None and record.expired(now):
            continue
        if need_doc and doc is None:
            doc = parse(record.payload)
        if predicate is not None:
            try:
                selected = predicate(payloads.record(doc))
            except FilterError as error:
                raise naming_record(error, record.key, record.topic if pattern else None) from None
            if not selected:
                continue
        rows.append(Row(record, doc))
        if limit is not None and not plan.order and len(rows) >= limit:
            break
    if plan.order:
        rows = _ordered(rows, plan.order, payloads)
        if limit is not None:
            rows = rows[:limit]
    if query.select is not None:
        rows = [Row(row.record, payloads.select(row.doc, query.select)) for row in rows]
    elif not need_doc and documents:
        rows = [Row(row.record, parse(row.record.payload)) for row in rows]  # results carry their document
    return rows


def parse_order_by(text: str) -> tuple[OrderKey, ...]:
    """``"/x DESC, /y TEXT"`` -> order keys; InputError naming the bad item."""
    from ampsctl.filter.parser import parse

    keys = []
    for item in text.split(","):
        found = _ORDER_ITEM.fullmatch(item)
        if not item.strip() or found is None:
            raise InputError(f"invalid order-by item {item.strip()!r}", code="ORDER_BY",
                             hint='write a comma list of /field [ASC|DESC] [TEXT], e.g. "/x DESC, /y"')
        try:
            field = parse(found["field"])
        except FilterError:  # its location would point into a filter: name the order-by item instead
            field = None
        if not isinstance(field, ast.Field):
            raise InputError(f"order-by item {item.strip()!r} does not start with a field", code="ORDER_BY",
                             hint='write a comma list of /field [ASC|DESC] [TEXT] (a field starts with a slash), e.g. "/x DESC, /y"')
        words = [word.upper() for word in found["words"].split()]
        unknown = [word for word in words if word not in ("ASC", "DESC", "TEXT")]
        if unknown or ("ASC" in words and "DESC" in words) or len(words) != len(set(words)):
            raise InputError(f"invalid order-by item {item.strip()!r}", code="ORDER_BY",
                             hint="after the field only ASC or DESC and TEXT may follow, each once")
        keys.append(OrderKey(field, "DESC" in words, "TEXT" in words))
    return tuple(keys)


def _ordered(rows: list[Row], order: Sequence[OrderKey], payloads: Payloads) -> list[Row]:
    records = [payloads.record(row.doc) for row in rows]
    positions = list(range(len(rows)))
    for key in reversed(order):  # stable sorts, last key first
        values = [_sort_value(record.get(key.field), key.text) for record in records]
        positions.sort(key=lambda i: values[i][1], reverse=key.descending)
        positions.sort(key=lambda i: values[i][0])  # NULLs last whatever the direction
    return [rows[i] for i in positions]


def _sort_value(value: Any, text: bool) -> tuple[int, tuple[Any, ...]]:
    """(0 = present / 1 = NULL, comparable): numbers < NaN < other text, or by text form."""
    value = scalar(value)
    if value is None:
        return 1, ()
    if text:
        shown = to_text(value)
        return (1, ()) if shown is None else (0, (shown,))
    if isinstance(value, bool):
        value = 1 if value else 0
    if isinstance(value, str):
        number = parse_number(value)
        if number is None:
            return 0, (2, value)
        value = number
    if isinstance(value, int | float):
        return (0, (1, 0)) if isinstance(value, float) and math.isnan(value) else (0, (0, value))
    shown = to_text(value)
    return (1, ()) if shown is None else (0, (2, shown))


# ---------------------------------------------------------------- hash index lookups


def field_key(field: ast.Field) -> tuple[str, ...] | None:
    """The plain path of a filter field, or None when an index cannot stand for it."""
    if field.qualifier or any(step.index is not None for step in field.steps):
        return None
    names = tuple(step.name for step in field.steps)
    if field.bracketed and any(name.startswith("@") for name in names):
        return None  # [/@x] is a field literally called "@x", not an XML attribute
    return names


def constant(expr: ast.Expr) -> tuple[bool, Any]:
    """(True, value) for a literal or a negated numeric literal; (False, None) otherwise."""
    if isinstance(expr, ast.Literal):
        return True, expr.value
    if isinstance(expr, ast.Negate) and isinstance(expr.operand, ast.Literal):
        if isinstance(expr.operand.value, int | float) and not isinstance(expr.operand.value, bool):
            return True, negate(expr.operand.value)
    return False, None


def _equalities(expr: ast.Expr) -> dict[tuple[str, ...], list[Any]]:
    """Per field path, the literals a conjunction requires it to equal (one of)."""
    found: dict[tuple[str, ...], list[Any]] = {}
    for part in expr.operands if isinstance(expr, ast.And) else (expr,):
        if isinstance(part, ast.Comparison) and part.op == "=":
            for side, other in ((part.left, part.right), (part.right, part.left)):
                known, value = constant(other)
                if isinstance(side, ast.Field) and known and (path := field_key(side)) is not None:
                    found.setdefault(path, [value])
        elif isinstance(part, ast.In) and not part.negated and isinstance(part.value, ast.Field):
            options = [constant(option) for option in part.options]
            path = field_key(part.value)
            if path is not None and all(known for known, _ in options):
                found.setdefault(path, [value for _, value in options])
    return found


def _hash_lookup(expr: ast.Expr, indexer: Indexer) -> tuple[int, tuple[bytes, ...]] | None:
    equal = _equalities(expr)
    best: tuple[int, tuple[bytes, ...]] | None = None
    best_width = 0
    for number, paths in enumerate(indexer.hash_paths):
        steps = [tuple(split_path(path)) for path in paths]
        if len(paths) <= best_width or not all(step in equal for step in steps):
            continue
        tokens = literal_tokens([equal[step] for step in steps])
        if tokens is not None:
            best, best_width = (number, tuple(tokens)), len(paths)
    return best


def topic_test(pattern: str | None) -> Callable[[str], bool] | None:
    """A test for concrete topic names from ``Query.topic`` (a regex, searched as AMPS does)."""
    if pattern is None:
        return None
    from ampsctl.config.model import compiled_regex, regex_problem
    from ampsctl.filter.regexes import search_compiled, shown_pattern

    found = regex_problem(pattern)  # also refuses what would take gigabytes to compile or search
    if found is not None:
        what, hint = found
        raise InputError(f"invalid topic regex {shown_pattern(pattern)}: {what}", code="TOPIC",
                         hint=hint or "give a PCRE-style regex")
    compiled = compiled_regex(pattern)
    return lambda topic: search_compiled(compiled, topic)  # a search past its timeout: FilterError, exit 3


def memory_candidates(plan: Plan, topics: Iterable[Any]) -> Iterator[tuple[SowRecord, Any]]:
    """Candidates from in-memory topics (``SowTopic``), narrowed by SowKeys or a hash index, in
    position order across the topics (topic.py "order"), which is the SOW file's row order."""
    query = plan.query
    wanted = topic_test(query.topic)
    chosen = [topic for topic in topics if wanted is None or wanted(topic.topic)]
    if query.as_of is not None:
        ranked = []
        for topic in chosen:
            if topic.history is None:
                raise InputError(f"topic '{topic.topic}' keeps no history", code="SOW_HISTORY",
                                 hint="as-of queries need <History> in the SOW topic's configuration")
            ranked += [(order, topic.topic, key, saved) for order, key, saved in topic.history.ranked_as_of(query.as_of)]
        ranked.sort(key=itemgetter(0))  # across the topics, as the SOW file orders them (history.as_of_order)
        for _, name, key, saved in ranked:
            yield SowRecord(name, key, saved.payload, saved.sequence, saved.timestamp, None, None), None
        return
    parsed = plan.predicate is not None
    if len(chosen) == 1:
        (topic,) = chosen
        for key in _ordered_keys(plan, topic):
            yield topic.get(key), topic.doc(key) if parsed else None
        return
    merged = heapq.merge(*([(topic.position(key), key, topic) for key in _ordered_keys(plan, topic)] for topic in chosen),
                         key=itemgetter(0))  # positions: unique within one SOW topic's concrete topics
    for _, key, topic in merged:
        yield topic.get(key), topic.doc(key) if parsed else None


def _ordered_keys(plan: Plan, topic: Any) -> list[str]:
    """The keys of ``topic``'s candidates in position order (a list: the topic may change meanwhile)."""
    if plan.query.keys is not None:
        return topic.in_order(plan.query.keys)
    if plan.lookup is not None:
        return topic.in_order(topic.lookup(*plan.lookup))
    return [record.key for record in topic.records()]  # records() is in position order

"""subscribe, delta_subscribe, sow, sow_and_subscribe, sow_and_delta_subscribe (§5.4-5.8).

Replies, in order (§5.6, §7.1, §13 #11-12): ``processed``; for queries ``group_begin``, the
``sow`` batches, ``group_end``; then ``completed`` (right after ``processed`` for a plain
subscription, [REC]) and ``stats``. A sow_and_subscribe registers its subscription in the same
call that takes the snapshot (BrokerCore invariant 1), so live messages follow ``group_end``
with nothing lost or repeated; with ``oof`` the records returned start in focus (§10). A
``replace`` sends only the records the client does not have yet and OOF ``match`` for those of
the old focus the new subscription no longer matches (``_refocus``, ``_had``).

Options this slice gives meaning to: ``oof``, ``no_empties``, ``send_keys`` (always on for delta
subscriptions, as since AMPS 4.0), ``no_sowkey``, ``select``, ``timestamp``, ``replace``,
``top_n``, ``skip_n`` (the query part only), ``conflation``/``conflation_key`` (conflation.py),
``bookmark_not_found``, and the accepted no-ops ``live``, ``bookmark``, ``fully_durable``,
``rate``, ``rate_max_gap``, ``max_backlog``. ``pause``/``resume`` are refused with
``invalid options`` rather than silently ignored.

Bookmarks (§9): "now" (``0|1|``, and ``recent``, which a server treats as now, §9.2 [REC]) is a
plain subscription; ``0``, ``h|seq|``, a timestamp or a list replay the journal first
(replay.py): the subscribe handler registers the subscription and returns ``StartReplay``, and
its ``processed`` ack waits until the server has found the start. ``oof`` is ignored on a
bookmark subscription; a bookmark with ``conflation`` is refused (``invalid options``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ampsctl.broker.core import conflation, replay
from ampsctl.broker.core.actions import Action, Send
from ampsctl.broker.core.queries import QueryResult, is_sow_topic, prepare, result_frames, run, sow_topics
from ampsctl.broker.core.refusal import Refused
from ampsctl.broker.core.select import SelectList
from ampsctl.broker.core.session import Session
from ampsctl.broker.core.subscriptions import Predicate, Subscription, compile_filter_text
from ampsctl.errors import AmpsctlError, InputError
from ampsctl.filter.regexes import has_metachars
from ampsctl.journal.bookmarks import Position, parse_position
from ampsctl.messages.json_codec import JSON
from ampsctl.protocol.acks import AckType, Status, failure_ack_type, stats_ack
from ampsctl.protocol.cmdoptions import CommandOptions
from ampsctl.protocol.commands import DeltaSubscribe, Sow, SowAndDeltaSubscribe, SowAndSubscribe, Subscribe
from ampsctl.protocol.errors import Reason
from ampsctl.protocol.messages import GroupBegin, GroupEnd, Oof, OofReason
from ampsctl.sow.query import Row
from ampsctl.sow.topic import SowTopic

if TYPE_CHECKING:
    from ampsctl.broker.core.broker import BrokerCore

_NOW_BOOKMARKS = frozenset({"0|1|", "recent"})


def subscribe(core: BrokerCore, session: Session, cmd: Subscribe | DeltaSubscribe, now: int) -> list[Action]:
    sub_id = cmd.sub_id or _assign(core, session)
    _check_new(core, session, sub_id, cmd.options)
    position = _check_bookmark(core, cmd.topic, cmd.bookmark, cmd.options) if cmd.bookmark is not None else None
    predicate = _predicate(cmd.filter)
    replaced = core.subs.get(session.conn, sub_id)
    out: list[Action] = _held(session, replaced, now)
    options = cmd.options
    if cmd.bookmark is not None and options.oof:
        options = dataclasses.replace(options, oof=False)  # bookmark subscriptions never get OOF (§8.2)
    sub = Subscription.build(conn=session.conn, sub_id=sub_id, topic=cmd.topic, filter=cmd.filter,
                             predicate=predicate, delta=isinstance(cmd, DeltaSubscribe),
                             options=options, order=core.subs.next_order())
    conflation.attach(core.conflation, sub)
    if position is None:
        left = _refocus(core, replaced, sub)
        core.subs.add(sub)
        out += _acks(session, cmd, sub_id, None, AckType.PROCESSED)
        if left:
            out.append(Send(session.conn, left))
        out += _acks(session, cmd, sub_id, None, AckType.COMPLETED)
        if cmd.wants(AckType.STATS):  # delta_subscribe only (§7.2): no query ran, so nothing matched
            out.append(Send(session.conn, stats_ack(cmd.cid, matches=0, topic_matches=0, topic=cmd.topic,
                                                    sub_id=sub_id).encode()))
        return out
    ticket = replay.ReplayTicket(session.conn, sub_id, sub, position, upto=core.last_sequence)
    carrier = failure_ack_type(cmd.acks)
    failure = (cmd.ack(carrier, status=Status.FAILURE, reason=Reason.INVALID_BOOKMARK, sub_id=sub_id).encode()
               if carrier is not None else b"")
    state = replay.ReplayState(ticket, processed=_ack_bytes(cmd, sub_id, AckType.PROCESSED),
                               completed=_ack_bytes(cmd, sub_id, AckType.COMPLETED), failure=failure,
                               not_found=options.bookmark_not_found, bookmark=cmd.bookmark or "")
    start = replay.begin(sub, state)
    sub.announced = state.not_found != "fail"  # may still be refused: announced by replay.resolved
    core.subs.add(sub)
    return [*out, start]  # type: ignore[list-item]  # StartReplay: an action the server knows (replay.py)


def _ack_bytes(cmd: Subscribe | DeltaSubscribe, sub_id: str, ack_type: AckType) -> bytes:
    return cmd.ack(ack_type, sub_id=sub_id).encode() if cmd.wants(ack_type) else b""


def sow(core: BrokerCore, session: Session, cmd: Sow, now: int) -> list[Action]:
    topics = sow_topics(core.store, cmd.topic, core.settings.message_type)
    if topics is None:
        raise Refused(Reason.INVALID_TOPIC, f"topic {cmd.topic!r} has no SOW: a sow query needs a SOW topic")
    as_of = _as_of(core, cmd.topic, topics, cmd.bookmark)
    if as_of == 0:
        topics = []  # EPOCH: the state before anything was written (empty), whatever the Window keeps
    chosen = prepare(cmd.filter, cmd.sow_keys, cmd.orderby, topics, as_of=as_of)
    result = run(chosen, topics, now=now, top_n=cmd.options.top_n, skip_n=cmd.options.skip_n,
                 documents=bool(cmd.options.select))  # result_frames applies the select list to row.doc
    return _query_replies(session, cmd, result, cmd.query_id, None)


def sow_and_subscribe(core: BrokerCore, session: Session, cmd: SowAndSubscribe | SowAndDeltaSubscribe,
                      now: int) -> list[Action]:
    message_type = core.settings.message_type
    topics = sow_topics(core.store, cmd.topic, message_type) or []  # no SOW: empty result, then live
    sub_id = cmd.sub_id or _assign(core, session)
    _check_new(core, session, sub_id, cmd.options)
    _check_historical(core, cmd.topic, topics, cmd.bookmark)
    chosen = prepare(cmd.filter, cmd.sow_keys, cmd.orderby, topics)
    predicate = _predicate(cmd.filter)
    result = run(chosen, topics, now=now, top_n=cmd.options.top_n, skip_n=cmd.options.skip_n,
                 documents=bool(cmd.options.select))  # result_frames applies the select list to row.doc
    sub = Subscription.build(conn=session.conn, sub_id=sub_id, topic=cmd.topic, filter=cmd.filter,
                             predicate=predicate, delta=isinstance(cmd, SowAndDeltaSubscribe),
                             options=cmd.options, order=core.subs.next_order())
    conflation.attach(core.conflation, sub)
    if sub.focus is not None and is_sow_topic(core.store, cmd.topic, message_type):
        sub.focus.update(row.record.key for row in result.rows)
    replaced = core.subs.get(session.conn, sub_id)
    held = _held(session, replaced, now)  # first: the client has these before the query runs again
    left = _refocus(core, replaced, sub)
    if replaced is not None:  # §5.7: only the records the client does not have already
        result.rows = [row for row in result.rows if not _had(replaced, row)]
    core.subs.add(sub)
    return held + _query_replies(session, cmd, result, cmd.query_id, sub_id, left)


def _query_replies(session: Session, cmd: Sow | SowAndSubscribe | SowAndDeltaSubscribe, result: QueryResult,
                   query_id: str | None, sub_id: str | None, left: bytes = b"") -> list[Action]:
    conn = session.conn
    out = _acks(session, cmd, sub_id, query_id, AckType.PROCESSED)
    select = SelectList(cmd.options.select) if cmd.options.select else None
    frames = [GroupBegin(query_id=query_id, sub_id=sub_id).encode()]
    frames += result_frames(result.rows, batch_size=cmd.batch_size, query_id=query_id, sub_id=sub_id,
                            select=select, no_sowkey=cmd.options.no_sowkey)
    frames.append(GroupEnd(query_id=query_id, sub_id=sub_id).encode())
    frames.append(left)  # a replace's OOF notices (_refocus): after the results, as live messages come
    out.append(Send(conn, b"".join(frames), True))  # a reply: it may exceed the outbound limit
    out += _acks(session, cmd, sub_id, query_id, AckType.COMPLETED)
    if cmd.wants(AckType.STATS):
        stats = stats_ack(cmd.cid, matches=result.matches, topic_matches=result.topic_matches,
                          records_returned=len(result.rows), topic=cmd.topic, sub_id=sub_id, query_id=query_id)
        out.append(Send(conn, stats.encode()))
    return out


def _held(session: Session, replaced: Subscription | None, now: int) -> list[Action]:
    """The updates a replaced conflated subscription holds, sent before the replace's replies."""
    data = conflation.flush(replaced, now) if replaced is not None else b""
    return [Send(session.conn, data)] if data else []


def _refocus(core: BrokerCore, old: Subscription | None, sub: Subscription) -> bytes:
    """A ``replace`` (§10): the records the replaced subscription had in focus stay in the new one's
    focus while it matches them; the others are out of focus now (``oof`` ``match``, their state),
    in store order per topic. Nothing when either subscription does not track focus."""
    if old is None or not old.focus or sub.focus is None:
        return b""
    frames = []
    for topic in sow_topics(core.store, old.topic, core.settings.message_type) or []:
        for key in topic.in_order(old.focus):
            if sub.topic_matches(topic.topic) and sub.accepts(topic.doc(key)):
                sub.focus.add(key)
                continue
            record = topic.get(key)
            frames.append(Oof(topic=topic.topic, reason=OofReason.MATCH, sow_key=key, sub_ids=(sub.sub_id,),
                              data=record.payload if record is not None else b"").encode())
    return b"".join(frames)


def _had(old: Subscription, row: Row) -> bool:
    """Whether the client of a replaced subscription has ``row``'s record already (§5.7): the keys
    it has in focus when it tracks them, else every record its filter matches now (a record it
    matches was sent by the query or by the live updates since; a replaying one has not all yet)."""
    record = row.record
    if old.focus is not None:
        return record.key in old.focus
    if old.replay is not None or not old.topic_matches(record.topic):
        return False
    return old.predicate is None or old.accepts(_parse(record.payload))


def _parse(payload: bytes) -> Any:
    try:
        return JSON.parse(payload)
    except AmpsctlError:
        return None


def _acks(session: Session, cmd: Subscribe | DeltaSubscribe | Sow | SowAndSubscribe | SowAndDeltaSubscribe,
          sub_id: str | None, query_id: str | None, *types: AckType) -> list[Action]:
    ids = {"sub_id": sub_id} if sub_id is not None else {}
    if query_id is not None:
        ids["query_id"] = query_id
    return [Send(session.conn, cmd.ack(ack_type, **ids).encode()) for ack_type in types if cmd.wants(ack_type)]


def _assign(core: BrokerCore, session: Session) -> str:
    """A sub_id for a command that names none (seed 002), never one the connection uses already."""
    while True:
        sub_id = session.assign_sub_id()
        if core.subs.get(session.conn, sub_id) is None:
            return sub_id


def _check_new(core: BrokerCore, session: Session, sub_id: str, options: CommandOptions) -> None:
    if options.pause or options.resume:
        raise Refused(Reason.INVALID_OPTIONS, "pause/resume are not supported by ampsctl's broker yet")
    if options.conflation_key is not None and options.conflation is None:
        raise Refused(Reason.INVALID_OPTIONS, "conflation_key needs a conflation interval (conflation=100ms)")
    if options.conflation is not None and options.conflation.nanos < conflation.MIN_INTERVAL * 1000:
        raise Refused(Reason.INVALID_OPTIONS, f"conflation={options.conflation.text}: the interval must be at least "
                                              f"{conflation.MIN_INTERVAL // 1000} ms")
    if core.subs.get(session.conn, sub_id) is not None and not options.replace:
        raise Refused(Reason.SUBSCRIPTION_ALREADY_EXISTS, f"sub_id {sub_id!r} is already subscribed on this "
                                                          "connection (use the replace option to change it)")


def _check_bookmark(core: BrokerCore, topic: str, bookmark: str, options: CommandOptions) -> Position | None:
    """Where a bookmark subscription starts; None: now (no replay)."""
    if not core.settings.journal_enabled or (not has_metachars(topic) and not core.settings.records(topic)):
        raise Refused(Reason.INVALID_TOPIC, f"bookmark subscription to {topic!r}, which the transaction log "
                                            "does not record")
    if options.conflation is not None:
        raise Refused(Reason.INVALID_OPTIONS, "conflation cannot be combined with a bookmark (a replay delivers "
                                              "every message of the journal)")
    text = bookmark.strip()
    if text in _NOW_BOOKMARKS:
        return None
    try:
        position = parse_position(text)
    except InputError as exc:
        raise Refused(Reason.INVALID_BOOKMARK, f"bookmark {bookmark!r}: {exc.message}") from None
    return None if position.now else position


def _has_history(core: BrokerCore, topic: str, topics: list[SowTopic]) -> bool:
    group = core.store.route(topic, core.settings.message_type) if not has_metachars(topic) else None
    return any(found.spec.history for found in topics) or (group is not None and group.spec.history)


def _check_historical(core: BrokerCore, topic: str, topics: list[SowTopic], bookmark: str | None) -> None:
    """A sow_and_subscribe's ``bm`` on a History topic asks for its past state and a bookmark
    subscription from there (§5.7), which is not served yet: refused. "For SOW topics where
    historical query is not enabled, AMPS ignores this parameter" (§5.6, §5.7 [DOC])."""
    if bookmark is not None and _has_history(core, topic, topics):
        raise Refused(Reason.INVALID_OPTIONS, f"sow_and_subscribe as of a bookmark (bm {bookmark!r}) of a topic "
                                              "with History is not supported yet; query with sow, then subscribe")


def _as_of(core: BrokerCore, topic: str, topics: list[SowTopic], bookmark: str | None) -> int | None:
    """When a ``sow``'s ``bm`` asks for a History topic's past state (§9 [DOC]): the time in µs; None
    for the current state (no ``bm``, "now", or a topic without History, where AMPS ignores it)."""
    if bookmark is None or not _has_history(core, topic, topics) or bookmark.strip() in _NOW_BOOKMARKS:
        return None
    try:
        position = parse_position(bookmark)
    except InputError as exc:
        raise Refused(Reason.INVALID_BOOKMARK, f"bookmark {bookmark!r}: {exc.message}") from None
    if position.now:
        return None
    if position.timestamp is not None:
        return position.timestamp
    if position.sequence == 0:
        return 0  # EPOCH: the state before anything was written
    raise Refused(Reason.INVALID_OPTIONS, f"historical SOW query by bookmark ({bookmark!r}) is not supported; "
                                          "give the time as a timestamp (YYYYMMDDThhmmss[.ffffff]Z)")


def _predicate(filter_text: str | None) -> Predicate | None:
    try:
        return compile_filter_text(filter_text)
    except InputError as exc:
        raise Refused(Reason.BAD_FILTER, f"filter {filter_text!r}: {exc.message}") from None

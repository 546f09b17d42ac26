"""publish, delta_publish and sow_delete (§5.2, §5.3, §5.9): journal, SOW, acks, fan-out.

Order of what one publish produces (§7.1): ``Append`` of its journal record, the ``processed``
ack, the deliveries and OOF notices it causes, then the ``persisted`` ack (held by the server
until the record is on disk). A delta publish is merged by the SOW (``SowTopic.delta_publish``)
and delivered "as if it had been published in full" (§5.3); on a topic without a SOW the
literal message goes out.

Duplicates (§5.2 [INF]): a publish whose ``s`` is not above the highest ``s`` seen for its
client name is dropped; its acks report ``success`` with reason ``duplicate``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ampsctl.broker.core.actions import Action, Append, Log, LogLevel, Send
from ampsctl.broker.core.fanout import Update, UpdateKind, fan_out, fan_out_message
from ampsctl.broker.core.queries import prepare, run, sow_topics
from ampsctl.broker.core.refusal import INVALID_MESSAGE, Refused
from ampsctl.broker.core.session import Session
from ampsctl.broker.core.writes import Written
from ampsctl.errors import AmpsctlError
from ampsctl.filter.regexes import has_metachars
from ampsctl.journal.record import Command, sow_delete_payload
from ampsctl.protocol.acks import Ack, AckType, Status, stats_ack
from ampsctl.protocol.commands import DeltaPublish, Publish, SowDelete, SowDeleteForm, encode_publish_ack
from ampsctl.protocol.errors import Reason
from ampsctl.sow.record import ChangeKind
from ampsctl.sow.topic import SowTopic

if TYPE_CHECKING:
    from ampsctl.broker.core.broker import BrokerCore

_PROCESSED, _PERSISTED = AckType.PROCESSED, AckType.PERSISTED


def publish(core: BrokerCore, session: Session, cmd: Publish | DeltaPublish, now: int) -> list[Action]:
    """The handler of both commands (handlers.TABLE)."""
    kind = Command.DELTA_PUBLISH if isinstance(cmd, DeltaPublish) else Command.PUBLISH
    return publish_message(core, session, kind, cmd.cid, cmd.acks, cmd.topic, cmd.data, cmd.seq, cmd.expiration,
                           cmd.correlation_id, cmd.sow_key, now)


def publish_message(core: BrokerCore, session: Session, kind: Command, cid: str | None, acks: frozenset[AckType],
                    topic: str, data: bytes, seq: int | None, expiration: int | None, correlation_id: str | None,
                    sow_key: str | None, now: int) -> list[Action]:
    """One publish from its fields: the handler's work, and the whole of the core's publish lane
    (``BrokerCore.receive``), which skips building the command object."""
    conn = session.conn
    client_name = session.client_name
    if core.publishers.is_duplicate(client_name, seq):
        out: list[Action] = []
        if _PROCESSED in acks:
            ack = Ack(_PROCESSED, Status.SUCCESS, cid, Reason.DUPLICATE.value, topic=topic, seq=seq)
            out.append(Send(conn, ack.encode()))
        if _PERSISTED in acks:
            ack = Ack(_PERSISTED, Status.SUCCESS, cid, Reason.DUPLICATE.value, topic=topic, seq=seq)
            out.append(core.durable(conn, ack.encode()))
        return out
    written = core.writes.write(kind, topic, data, now, sow_key, expiration, correlation_id, client_name, seq)
    out = []
    record = written.record
    if record is not None:
        out.append(Append(record))
    core.publishers.published(client_name, seq, record.sequence if record is not None else 0)
    if _PROCESSED in acks:
        out.append(Send(conn, encode_publish_ack(_PROCESSED, cid, topic, seq)))
    # Every change of a publish is to its topic: with no subscription there, no Update (nor the
    # bookmark text) is built at all -- the common case of a publisher feeding a journal.
    subs = core.subs.matching(topic)
    if subs:
        bookmark = record.bookmark if record is not None else None
        if written.group is None:
            out += fan_out_message(subs, topic, data, correlation_id, bookmark, now)
        else:
            for update in updates(written, topic, data, correlation_id=correlation_id, bookmark=bookmark):
                out += fan_out(update, subs, now)
    if _PERSISTED in acks:
        out.append(core.durable(conn, encode_publish_ack(_PERSISTED, cid, topic, seq)))
    return out


def updates(written: Written, topic: str, data: bytes, *, correlation_id: str | None,
            bookmark: str | None) -> list[Update]:
    """The fan-out of one write: one update per SOW change, or the message itself (no SOW)."""
    group = written.group
    if group is None:
        # positional (new, old, key, key_fields, correlation_id, bookmark): one per delivered publish
        return [Update(UpdateKind.PUBLISH, topic, data, None, None, (), correlation_id, bookmark)]
    out = []
    for change in written.changes:
        old = change.old.payload if change.old is not None else None
        if change.new is None:
            kind = UpdateKind.DELETE if change.kind is ChangeKind.DELETE else UpdateKind.EXPIRE
            out.append(Update(kind, change.topic, None, old=old, key=change.key))
            continue
        update = Update(UpdateKind.PUBLISH, change.topic, change.new.payload, old=old, key=change.key,
                        key_fields=group.spec.key_fields, correlation_id=correlation_id, bookmark=bookmark)
        stored = group.topics.get(change.topic)
        if stored is not None and stored.get(change.key) is change.new:
            update.new_doc = stored.doc(change.key)  # the store parsed it already
        out.append(update)
    return out


def sow_delete(core: BrokerCore, session: Session, cmd: SowDelete, now: int) -> list[Action]:
    """§5.9: by filter, keys or data; OOF ``deleted`` to subscribers that had the records."""
    message_type = core.settings.message_type
    topics = sow_topics(core.store, cmd.topic, message_type)
    if topics is None:
        raise Refused(Reason.INVALID_TOPIC, f"topic {cmd.topic!r} has no SOW: there is nothing to delete")
    form = cmd.form
    if form is SowDeleteForm.BOOKMARKS:
        raise Refused(Reason.INVALID_TOPIC, "sow_delete by bookmark acknowledges queue messages; "
                                            "ampsctl's broker has no queues")
    if form is SowDeleteForm.FILTER:
        chosen = prepare(cmd.filter, (), (), topics)  # Refused ``bad filter`` before anything is written
        if len(topics) > 1:  # one write per topic: a filter failing on a later one is refused first
            for topic in topics:
                run(chosen, [topic], now=now, documents=False)  # Refused ``bad filter`` (a LIKE past its timeout)
        payload = sow_delete_payload(filter=cmd.filter)
    elif form is SowDeleteForm.KEYS:
        payload = sow_delete_payload(keys=list(cmd.sow_keys))
    else:
        try:
            payload = sow_delete_payload(data=cmd.data.decode("utf-8"))
        except UnicodeDecodeError:
            raise Refused(INVALID_MESSAGE, "the sow_delete message is not UTF-8 text") from None
        if len(topics) > 1:
            _check_keys(topics, cmd.data)
    topic_matches = sum(len(topic) for topic in topics)
    # A literal SOW topic nothing was published to yet still gets its (empty) delete journaled.
    names = [topic.topic for topic in topics] or ([] if has_metachars(cmd.topic) else [cmd.topic])
    out: list[Action] = []
    deleted = 0
    deliveries: list[Action] = []
    for name in names:
        try:
            written = core.writes.write(Command.SOW_DELETE, name, payload, now=now, client_name=session.client_name)
        except Refused as refused:
            if not deleted and not any(type(action) is Append for action in out) and not deliveries:
                raise  # nothing applied yet: the command is refused whole
            # A later topic failed although the checks passed (a LIKE timeout is a matter of time):
            # what the topics before it applied is numbered and stays, so it is journaled.
            out.append(Log(LogLevel.WARNING, f"{session.label}: sow_delete of {cmd.topic!r}: topic {name!r} "
                                             f"skipped ({refused.reason}): {refused.message}", session.conn))
            continue
        if written.record is not None:
            out.append(Append(written.record))
        deleted += sum(1 for change in written.changes if change.kind is ChangeKind.DELETE)
        for update in updates(written, name, b"", correlation_id=None, bookmark=None):
            deliveries += core.deliver(update, now)
    if cmd.wants(AckType.PROCESSED):
        out.append(Send(session.conn, cmd.ack(AckType.PROCESSED).encode()))
    out += deliveries
    # persisted waits for the journal; completed and stats come after it (ACK_ORDER), so they wait too
    later = [cmd.ack(AckType.PERSISTED).encode()] if cmd.wants(AckType.PERSISTED) else []
    if cmd.wants(AckType.COMPLETED):
        later.append(cmd.ack(AckType.COMPLETED).encode())
    if cmd.wants(AckType.STATS):
        later.append(stats_ack(cmd.cid, matches=deleted, topic_matches=topic_matches, records_deleted=deleted,
                               topic=cmd.topic).encode())
    if later:
        data = b"".join(later)
        out.append(core.durable(session.conn, data) if cmd.wants(AckType.PERSISTED) else Send(session.conn, data))
    return out


def _check_keys(topics: list[SowTopic], data: bytes) -> None:
    """Refused unless ``data`` has a SOW key in every topic a delete by data addresses.

    One write per topic: a message without the key fields of the second topic would be refused
    after the first topic's delete was applied and numbered, a change the refusal then drops
    (BrokerCore invariant 2: a refused command changes nothing). A literal topic needs no
    check: its one write is refused before it changes anything."""
    for topic in topics:
        try:
            topic.payloads.key(topic.payloads.parse(data), key_fields=topic.spec.key_fields, domain=topic.domain,
                               supplied=None)
        except AmpsctlError as exc:
            reason = Reason.INVALID_SOW_KEY if "SOWKEY" in exc.code else INVALID_MESSAGE
            raise Refused(reason, f"topic {topic.topic!r}: {exc.message}") from None

"""Writes: publish, delta_publish, sow_delete and expiry -> journal records and SOW changes.

Theory of operation. Every write that touches the journal or a SOW topic becomes one
``JournalRecord``, numbered here, and goes through ``SowStore.apply`` (the one SOW engine).
The core then emits ``Append(record)`` and the server writes it with ``JournalWriter``.

* A topic the TransactionLog records gets the next journal sequence; any other topic gets
  sequence 0 ("not from a journal", which the store always applies and which never moves a
  group's checkpoint sequence).
* Recorded topics without a SOW still go through ``apply`` (which ignores them) so that
  ``store.last_sequence`` follows the journal and a checkpoint names the right sequence.
* Expiry: ``SowTopic.sweep`` removes what is due; each removal on a recorded topic is then
  journaled as an EXPIRE record (applied too: the record is gone already, so it only advances
  the sequences) so that journal readers see why the record left.

Invariants:
1. ``last_sequence`` is the sequence of the last record handed out; the numbers are
   ``last_sequence + 1, + 2, ...`` with no gap and no reuse, in the order the records are
   returned, which is the order the core emits their ``Append`` actions.
2. A write the store refuses consumes no sequence and leaves the store as it was: ``apply``
   moves ``store.last_sequence`` even when it raises, so it is put back here. (This is the
   one adapter the SOW API needs; it is reported in docs/broker.md.)
3. A record with a sequence is always returned for journaling once applied: the store
   skips sequences it has seen, so an applied but unjournaled sequence would later swallow
   the next record that reuses it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ampsctl.broker.core.refusal import INVALID_MESSAGE, Refused
from ampsctl.broker.core.settings import CoreSettings
from ampsctl.errors import AmpsctlError
from ampsctl.journal.record import Command, JournalRecord
from ampsctl.protocol.fastinit import fast_init
from ampsctl.protocol.errors import Reason
from ampsctl.sow.record import Change
from ampsctl.sow.store import SowStore, TopicGroup


_ROUTES_MAX = 100_000
_new_record = tuple.__new__


@fast_init  # one per publish
@dataclass(frozen=True, slots=True)
class Written:
    """The outcome of one write: the record to journal (None: not journaled) and the changes."""

    record: JournalRecord | None
    changes: list[Change]
    group: TopicGroup | None  # the SOW group of the topic (None: not a SOW topic)


@dataclass(frozen=True, slots=True)
class Expired:
    change: Change
    record: JournalRecord | None  # the EXPIRE record to journal
    group: TopicGroup


class Writes:
    """Numbers journal records and applies them to the store (see the module docstring)."""

    def __init__(self, store: SowStore, settings: CoreSettings, last_sequence: int) -> None:
        self.store = store
        self.settings = settings
        self.message_type = settings.message_type
        self.last_sequence = last_sequence
        self._routes: dict[str, tuple[TopicGroup | None, bool]] = {}

    def write(self, command: Command, topic: str, payload: bytes, now: int, sow_key: str | None = None,
              expiration: int | None = None, correlation_id: str | None = None, client_name: str | None = None,
              publisher_sequence: int | None = None) -> Written:
        """Apply one write; Refused when the SOW cannot store it. (Positional parameters: the
        publish lane calls this once per message.)"""
        store = self.store
        route = self._routes.get(topic)
        if route is None:
            route = self._route(topic)
        group, recorded = route
        if group is None:
            if not recorded:
                return Written(None, [], None)
            # What ``store.apply`` does with a topic it does not store, without the call:
            # the store's last sequence follows the journal (see the module docstring).
            sequence = self.last_sequence + 1
            if sequence > store.last_sequence:
                store.last_sequence = sequence
            self.last_sequence = sequence
            # JournalRecord(...) without the namedtuple's Python-level __new__: the same tuple
            return Written(_new_record(JournalRecord, (sequence, now, command, topic, self.message_type, payload,
                                                       sow_key, expiration, correlation_id, client_name,
                                                       publisher_sequence)), [], None)
        sequence = self.last_sequence + 1 if recorded else 0
        record = JournalRecord(sequence, now, command, topic, self.message_type, payload, sow_key, expiration,
                               correlation_id, client_name, publisher_sequence)
        changes = self._apply(record)
        if not recorded:
            return Written(None, changes, group)
        self.last_sequence = sequence
        if sow_key is None and changes and command in (Command.PUBLISH, Command.DELTA_PUBLISH):
            record = record._replace(sow_key=changes[-1].key)  # the journal keeps the computed key
        return Written(record, changes, group)

    def _route(self, topic: str) -> tuple[TopicGroup | None, bool]:
        """(SOW group, recorded) of a topic, cached: both are fixed for the broker's life."""
        if len(self._routes) >= _ROUTES_MAX:  # topics are client-chosen strings: bounded
            self._routes.clear()
        route = self._routes[topic] = (self.store.route(topic, self.message_type), self.settings.records(topic))
        return route

    def sweep(self, now: int) -> list[Expired]:
        """Expire every record due at ``now``; the EXPIRE records to journal, in order."""
        expired = []
        for group in self.store.groups:
            for topic in list(group.topics.values()):
                expired += self.expired(topic.sweep(now), group, now)
        return expired

    def expired(self, changes: list[Change], group: TopicGroup | None, now: int) -> list[Expired]:
        """Journal records for expirations the store made already (a sweep, or recovery's)."""
        out = []
        for change in changes:
            owner = group if group is not None else self.store.route(change.topic, self.message_type)
            if owner is None:
                continue  # a topic of another message type (recovered, never served)
            record = None
            if owner.spec.message_type == self.message_type and self.settings.records(change.topic):
                self.last_sequence += 1
                record = JournalRecord(self.last_sequence, now, Command.EXPIRE, change.topic, self.message_type,
                                       b"", change.key)
                self._apply(record)  # the record is gone already: this only advances the sequences
            out.append(Expired(change, record, owner))
        return out

    def _apply(self, record: JournalRecord) -> list[Change]:
        before = self.store.last_sequence
        try:
            return self.store.apply(record)
        except AmpsctlError as exc:
            self.store.last_sequence = before  # invariant 2
            reason = (Reason.INVALID_SOW_KEY if "SOWKEY" in exc.code
                      else Reason.BAD_FILTER if exc.code.startswith("FILTER") else INVALID_MESSAGE)
            raise Refused(reason, f"topic {record.topic!r}: {_plain(exc.message)}") from None


def _plain(message: str) -> str:
    """The store's message without its "journal record N (topic 'x'): " prefix (not yet journaled)."""
    marker = "): "
    return message.split(marker, 1)[1] if message.startswith("journal record ") and marker in message else message

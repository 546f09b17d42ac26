"""The SOW of a whole instance: many topics, Pattern topics, and ``apply(JournalRecord)``.

Theory of operation. Each ``TopicSpec`` of the config becomes a ``TopicGroup``: the concrete
topics it stores (one for a plain topic, one per matching topic name for a Pattern topic) and
the bookkeeping of its SOW file. A published (topic, message type) goes to the first spec, in
config order, that matches it (spec/config.md §2: a topic declared before a Pattern topic that
matches it wins); topics no spec matches are not SOW topics and are ignored.

``apply`` replays one journal record: publish, delta_publish, sow_delete (by filter, keys or
data, the payload conventions of ``journal.record``) and expire.

Invariants:
* A group's state is complete through ``group.sequence``: every journal record up to it that
  routes to the group has been applied, and a record with a sequence at or below it is
  skipped (a SOW file loaded at sequence N is not replayed twice). Records are applied in
  sequence order, so after ``apply`` of sequence S every group is complete through S; the
  store tracks S in ``last_sequence``, and ``group_sequence`` gives what to write in a file.
* Sequence 0 (a record built in memory, not from a journal) is always applied.
* No clock: expiry happens in ``sweep(now)`` and when a write finds its record already due.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from ampsctl.errors import AmpsctlError, InputError
from ampsctl.sow.errors import ReplayError
from ampsctl.sow.indexing import Indexer
from ampsctl.sow.payloads import Payloads
from ampsctl.sow.record import Change
from ampsctl.sow.spec import TopicSpec
from ampsctl.sow.topic import SowTopic


class TopicGroup:
    """The concrete topics of one spec, which share one SOW file."""

    def __init__(self, spec: TopicSpec) -> None:
        self.spec = spec
        self.payloads = Payloads(spec.message_type)
        self.indexer = Indexer(spec.key_fields, spec.hash_indexes, spec.indexes) if not self.payloads.opaque else Indexer((), (), ())
        self.topics: dict[str, SowTopic] = {}
        self.positions = itertools.count()  # of first stores, across the concrete topics (topic.py "order")
        self.sequence = 0  # complete through this journal sequence (see the module docstring)
        self.timestamp: int | None = None  # of the last record applied to the group
        self.needs_rewrite = True  # the next checkpoint writes a whole new file (none loaded yet)

    def topic(self, name: str) -> SowTopic:
        found = self.topics.get(name)
        if found is None:
            found = self.topics[name] = SowTopic(self.spec, name, payloads=self.payloads, indexer=self.indexer,
                                                 positions=self.positions)
        return found

    def __len__(self) -> int:
        return sum(len(topic) for topic in self.topics.values())

    @property
    def dirty(self) -> bool:
        return any(topic.dirty for topic in self.topics.values())


class SowStore:
    """Every SOW topic of a config, fed by journal records."""

    def __init__(self, specs: Sequence[TopicSpec]) -> None:
        self.groups = [TopicGroup(spec) for spec in specs]
        self.last_sequence = 0
        self._routes: dict[tuple[str, str], TopicGroup | None] = {}

    def route(self, topic: str, message_type: str) -> TopicGroup | None:
        """The group that stores (topic, message type), or None for a topic without a SOW."""
        route = (topic, message_type)
        if route not in self._routes:
            self._routes[route] = next((g for g in self.groups if g.spec.matches(topic, message_type)), None)
        return self._routes[route]

    def topic(self, topic: str, message_type: str) -> SowTopic | None:
        group = self.route(topic, message_type)
        return group.topics.get(topic) if group is not None else None

    def topics(self) -> Iterator[SowTopic]:
        for group in self.groups:
            yield from group.topics.values()

    def group_sequence(self, group: TopicGroup) -> int:
        """The journal sequence a checkpoint of ``group`` records as applied."""
        return max(group.sequence, self.last_sequence)

    def apply(self, record: Any) -> list[Change]:
        """Apply one ``journal.JournalRecord``; ReplayError for a record that cannot be applied."""
        sequence = record.sequence
        group = self.route(record.topic, record.message_type)
        if group is None or (sequence and sequence <= group.sequence):
            self.last_sequence = max(self.last_sequence, sequence)
            return []
        try:
            changes = self._dispatch(group, record)
        except ReplayError:
            raise
        except AmpsctlError as exc:
            raise ReplayError(sequence, record.topic, exc.message, hint=exc.hint, code=exc.code) from None
        finally:
            self.last_sequence = max(self.last_sequence, sequence)
        group.sequence = max(group.sequence, sequence)
        group.timestamp = record.timestamp
        return changes

    def sweep(self, now: int) -> list[Change]:
        """Expire what is due at ``now`` in every topic (start-up processing, or the broker's timer)."""
        return [change for topic in self.topics() for change in topic.sweep(now)]

    def _dispatch(self, group: TopicGroup, record: Any) -> list[Change]:
        from ampsctl.journal.record import Command

        topic = group.topic(record.topic)
        at = {"timestamp": record.timestamp, "sequence": record.sequence}
        command = record.command
        if command == Command.PUBLISH:
            return topic.publish(record.payload, sow_key=record.sow_key, expiration=record.expiration, **at)
        if command == Command.DELTA_PUBLISH:
            return topic.delta_publish(record.payload, sow_key=record.sow_key, expiration=record.expiration, **at)
        if command == Command.EXPIRE:
            return topic.expire(record.sow_key, **at) if record.sow_key else []
        if command == Command.SOW_DELETE:
            return self._delete(group, topic, record, at)
        raise InputError(f"unknown journal command {command!r}", code="SOW_REPLAY")

    def _delete(self, group: TopicGroup, topic: SowTopic, record: Any, at: dict[str, int]) -> list[Change]:
        from ampsctl.sow.query import Query, execute, memory_candidates, plan

        what = parse_delete_payload(record.payload)
        if "keys" in what:
            return topic.delete_keys(what["keys"], **at)
        if "data" in what:
            return topic.delete_data(what["data"].encode("utf-8", "surrogateescape"), sow_key=record.sow_key, **at)
        chosen = plan(Query(filter=what["filter"]), group.indexer)
        rows = execute(chosen, group.payloads, memory_candidates(chosen, [topic]), expiration_enabled=False)
        return topic.delete_keys([row.record.key for row in rows], **at)


def parse_delete_payload(payload: bytes) -> dict[str, Any]:
    """The one of ``{"filter": EXPR}``, ``{"keys": [...]}``, ``{"data": TEXT}`` a sow_delete carries."""
    hint = 'a sow_delete payload is {"filter": "EXPR"}, {"keys": ["k1", ...]} or {"data": "<message>"}'
    try:
        what = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise InputError("the sow_delete payload is not JSON", code="SOW_DELETE", hint=hint) from None
    if not isinstance(what, dict) or len(what) != 1:
        raise InputError("the sow_delete payload must name exactly one of filter, keys, data", code="SOW_DELETE", hint=hint)
    (name, value), = what.items()
    valid = (
        (name == "filter" and isinstance(value, str))
        or (name == "data" and isinstance(value, str))
        or (name == "keys" and isinstance(value, list) and all(isinstance(key, str) for key in value))
    )
    if not valid:
        raise InputError(f"the sow_delete payload has an invalid {name!r}", code="SOW_DELETE", hint=hint)
    return what

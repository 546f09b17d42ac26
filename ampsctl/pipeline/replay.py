"""Replaying one SOW key's records: the reduce side of Spark compaction.

Theory of operation. ``replay_key`` gets, in sequence order, every journal record that touches
one (SOW topic group, concrete topic, SOW key) -- the records ``keying.Keyer`` routed to it --
merged with the deletes by filter of that topic. It replays them into a fresh one-topic
``SowStore`` with ``SowStore.apply``, the local engine's own code: publish replaces, a delta
publish merges through the message codec, sow_delete removes, a write finds an already due
record expired first, ``sweep(now)`` expires what is due at the end, and a History topic saves
the key's states and prunes them to its window at ``now`` (per key: the window is a time). Because a SOW key's
state depends only on the records that touch it (and on the filter deletes, evaluated
against that key's record at their place in the sequence), the union of all keys' results is
the state the local engine builds in one pass.

A delete by filter is evaluated with ``sow.query`` (``plan``/``execute`` over the key's one
record, as ``SowStore`` does over the whole topic), with the plan compiled once per filter.
Records the SOW refuses are returned as ReplayErrors, not raised: the driver decides
between failing (at the lowest sequence, as the local engine would) and ``--keep-going``.
Plain Python, no pyspark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ampsctl.errors import AmpsctlError
from ampsctl.journal.record import JournalRecord
from ampsctl.sow.errors import ReplayError
from ampsctl.sow.history import Saved
from ampsctl.sow.query import Plan, Query, execute, memory_candidates, plan
from ampsctl.sow.record import SowRecord
from ampsctl.sow.spec import TopicSpec
from ampsctl.sow.store import SowStore, TopicGroup


@dataclass(slots=True)
class KeyResult:
    record: SowRecord | None  # what the key holds at the end (None: deleted, expired or never stored)
    expired: int = 0  # records ``sweep(now)`` expired (0 or 1)
    errors: list[ReplayError] = field(default_factory=list)
    history: list[Saved] = field(default_factory=list)  # the key's saved states (History topics), in order
    first: int | None = None  # the sequence that first stored ``record`` (an update keeps it): its place in the file


@dataclass(frozen=True, slots=True)
class FilterDelete:
    """A sow_delete by filter, applied to every key of its concrete topic at ``sequence``."""

    sequence: int
    timestamp: int
    topic: str
    filter: str


def replay_key(spec: TopicSpec, key: str, records: Iterable[JournalRecord | FilterDelete], now: int | None,
               starts: Mapping[int, int] | None = None) -> KeyResult:
    """The state of one SOW key after ``records`` (in sequence order) and expiry at ``now``.

    ``starts``: for a record that stands for a run of publishes left out before it, the sequence
    of the run's first (``spark_compact._superseded_dropped``), where the record was first stored."""
    store = SowStore([spec])
    group = store.groups[0]
    errors: list[ReplayError] = []
    position = first = None
    for record in records:
        try:
            if isinstance(record, FilterDelete):
                _filter_delete(group, key, record)
            else:
                store.apply(record)
        except ReplayError as exc:
            errors.append(exc)
        stored_at = next((topic.position(key) for topic in group.topics.values() if key in topic), None)
        if stored_at != position:  # stored anew (first, or again after a delete or an expiry)
            position = stored_at
            first = None if stored_at is None else (starts or {}).get(record.sequence, record.sequence)
    expired = len(store.sweep(now)) if now is not None else 0  # also prunes History to its window
    stored = next((topic.get(key) for topic in group.topics.values() if topic.get(key) is not None), None)
    # A deleted key keeps its History (its states end with a deletion), so it is returned
    # whether or not the key still holds a record.
    history = [saved for topic in group.topics.values() if topic.history is not None for saved in topic.history.states(key)]
    return KeyResult(stored, expired, errors, history, first if stored is not None else None)


def _filter_delete(group: TopicGroup, key: str, delete: FilterDelete) -> None:
    topic = group.topics.get(delete.topic)
    if topic is None or key not in topic:
        return  # nothing stored under this key yet: the delete cannot touch it
    chosen = _plan(group.spec, delete.filter)
    try:
        rows = execute(chosen, group.payloads, memory_candidates(chosen, [topic]), expiration_enabled=False)
    except AmpsctlError as exc:
        raise ReplayError(delete.sequence, delete.topic, exc.message, hint=exc.hint, code=exc.code) from None
    topic.delete_keys([row.record.key for row in rows], timestamp=delete.timestamp, sequence=delete.sequence)


@lru_cache(maxsize=256)
def _plan(spec: TopicSpec, text: str) -> Plan:
    # Every key of a topic evaluates the same few filters: compile each once per worker. The
    # indexer only depends on the spec, so a plan made with a fresh group fits every group.
    return plan(Query(filter=text), TopicGroup(spec).indexer)


"""Which SOW records a journal record touches: the shuffle key of Spark compaction.

Theory of operation. Compaction is a fold over the journal in sequence order, but every
command except a delete by filter touches exactly the SOW keys it names or implies, and keys
do not interact. So the Spark engine routes each record to its (SOW topic group, concrete
topic, SOW key) targets, shuffles by target, and replays each key's records on its own
(``replay.py``). ``Keyer.targets`` decides the targets with the SOW engine's own pieces, never
a copy of them:

* routing: ``SowStore.route`` (the first spec, in config order, that matches topic and type);
* publish / delta_publish: ``Payloads.key`` over the parsed message (Key fields, else the
  publisher's SowKey), the KeyDomain from ``TopicSpec.domain``;
* sow_delete by keys: one target per distinct key; by data: the key the message would update;
  by filter: no target, the record is a ``FILTER`` delete that the engine broadcasts to every
  key of its topic (the filter is compiled here once, so a bad filter fails here, once);
* expire: the journaled key (none: the record does nothing, as in ``SowStore``).

A record the SOW cannot apply gives a ReplayError, exactly the one ``SowStore.apply`` raises
for it, so both engines report the same sequence and message. Plain Python, no pyspark.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ampsctl.errors import AmpsctlError
from ampsctl.journal.record import Command, JournalRecord
from ampsctl.sow.errors import ReplayError
from ampsctl.sow.query import Query, plan
from ampsctl.sow.spec import TopicSpec
from ampsctl.sow.store import SowStore, parse_delete_payload  # the one parser of sow_delete payloads


class Kind(enum.Enum):
    IGNORED = "ignored"  # no SOW topic stores this (topic, message type)
    TARGETS = "targets"  # touches the SOW keys in ``keys`` (possibly none)
    FILTER = "filter"  # a delete by filter: applies to every key of the topic at its sequence
    ERROR = "error"  # the SOW cannot apply it: ``error``


@dataclass(frozen=True, slots=True)
class Targets:
    kind: Kind
    group: int = -1  # index of the spec (SOW file) in config order
    keys: tuple[str, ...] = ()
    filter: str | None = None
    error: ReplayError | None = None


IGNORED = Targets(Kind.IGNORED)


class Keyer:
    """Targets of journal records for one config's specs (one per Spark task; caches routes)."""

    def __init__(self, specs: Sequence[TopicSpec]) -> None:
        self.store = SowStore(specs)
        self._positions = {id(group): position for position, group in enumerate(self.store.groups)}

    def targets(self, record: JournalRecord) -> Targets:
        group = self.store.route(record.topic, record.message_type)
        if group is None:
            return IGNORED
        position = self._positions[id(group)]
        try:
            return self._targets(position, group, record)
        except ReplayError as exc:
            return Targets(Kind.ERROR, position, error=exc)
        except AmpsctlError as exc:  # the same wrapping as SowStore.apply
            error = ReplayError(record.sequence, record.topic, exc.message, hint=exc.hint, code=exc.code)
            return Targets(Kind.ERROR, position, error=error)

    @staticmethod
    def _targets(position: int, group: Any, record: JournalRecord) -> Targets:
        spec, payloads = group.spec, group.payloads
        command = record.command
        if command in (Command.PUBLISH, Command.DELTA_PUBLISH):
            doc = payloads.parse(record.payload)
            key = payloads.key(doc, key_fields=spec.key_fields, domain=spec.domain(record.topic), supplied=record.sow_key)
            return Targets(Kind.TARGETS, position, (key,))
        if command == Command.EXPIRE:
            return Targets(Kind.TARGETS, position, (record.sow_key,) if record.sow_key else ())
        if command == Command.SOW_DELETE:
            what = parse_delete_payload(record.payload)
            if "keys" in what:
                return Targets(Kind.TARGETS, position, tuple(dict.fromkeys(what["keys"])))
            if "data" in what:
                doc = payloads.parse(what["data"].encode("utf-8", "surrogateescape"))
                key = payloads.key(doc, key_fields=spec.key_fields, domain=spec.domain(record.topic), supplied=record.sow_key)
                return Targets(Kind.TARGETS, position, (key,))
            plan(Query(filter=what["filter"]), group.indexer)  # a filter that does not compile fails here, once
            return Targets(Kind.FILTER, position, filter=what["filter"])
        raise ReplayError(record.sequence, record.topic, f"unknown journal command {command!r}", code="SOW_REPLAY")

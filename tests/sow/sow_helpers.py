"""Shared helpers for the SOW tests: specs, journal records, readable views of a store."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson

from ampsctl.journal.record import Command, JournalRecord
from ampsctl.sow.spec import TopicSpec
from ampsctl.sow.topic import SowTopic

SECOND = 1_000_000
T0 = 1_767_225_600 * SECOND  # 2026-01-01T00:00:00Z


def spec(name: str = "orders", message_type: str = "json", *, keys: tuple[str, ...] = ("/id",), **changes: Any) -> TopicSpec:
    """A persistent SOW topic with sensible defaults; override any TopicSpec field by keyword."""
    base = TopicSpec(
        name=name, message_type=message_type, key_fields=keys, key_domain=None, expiration=None,
        hash_indexes=(), indexes=(), history_window=None, history_granularity=None, pattern=False,
        persistent=True, recovery_point="epoch", file_name="sow/%n.sow",
    )
    return replace(base, **changes)


def record(sequence: int, command: Command, payload: bytes | dict[str, Any], *, topic: str = "orders",
           timestamp: int | None = None, message_type: str = "json", **fields: Any) -> JournalRecord:
    if isinstance(payload, dict):
        payload = orjson.dumps(payload)
    return JournalRecord(sequence, T0 + sequence if timestamp is None else timestamp, command, topic, message_type,
                         payload, **fields)


def docs(topic: SowTopic) -> dict[str, Any]:
    """key -> parsed JSON document of every record."""
    return {r.key: orjson.loads(r.payload) for r in topic.records()}


def by_id(topic: SowTopic, field: str = "id") -> dict[Any, Any]:
    """The JSON documents of a topic by their ``field``."""
    return {doc[field]: doc for doc in docs(topic).values()}

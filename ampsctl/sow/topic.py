"""The in-memory SOW of one concrete topic: publish, delta publish, delete, expire.

Theory of operation. The topic is a dict from SOW key to ``SowRecord`` (the last value per key,
seed 003) plus, per hash index, a dict from token to keys (``indexing.py``). Documents are
parsed once and cached next to the records. Every operation returns the ``Change`` list it
made, which the broker turns into out-of-focus messages and delta subscriptions.

* publish: computes the key (Key fields, else the publisher's SowKey), replaces the whole
  record, and restarts its lifetime: ``expires_at`` from the message's expiration, else the
  topic default (``record.expires_at``).
* delta publish: merges the delta into the stored document with the codec's ``merge`` (the
  only merge, DESIGN.md; ``Payloads.merged``: JSON numbers keep their published text); no
  stored record means the delta is stored as it is (V6). A delta is
  an update: its own expiration, else the topic default, restarts the lifetime (A-E1).
* sow_delete by keys, by filter (compiled with ``filter.compiler``; an index narrows it, see
  ``query.py``), by data (the record the message would update).
* expiry: when the topic processes expiration (``Expiration`` not ``disabled``), ``sweep(now)``
  removes every record due at ``now``; a write that finds its record already due expires it
  first (so replay gives the same result whether or not the broker journaled the EXPIRE
  before a crash); ``expire(key)`` replays a journaled EXPIRE.
* order: every stored key has a position, taken from its group's counter when the key is first
  stored (an update keeps it; a key stored again after a delete gets a new one). Unordered
  results come in position order, which is the order of the SOW file's row ids: a checkpoint
  inserts new rows in position order (a record removed and stored again since the last one
  becomes a new row: ``restored``), and loading a file gives positions in row-id order.
Invariants: ``_records``, ``_docs``, ``_order`` and the hash indexes hold the same keys;
``_records`` iterates in position order; a record's index entries are those of its current
document; ``dirty`` holds every key changed since the last checkpoint (records or history), so
a checkpoint writes only those; nothing reads a clock.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from ampsctl.errors import InputError
from ampsctl.sow.history import History, Saved
from ampsctl.sow.indexing import ANY, Indexer
from ampsctl.sow.payloads import Payloads
from ampsctl.sow.record import Change, ChangeKind, SowRecord, expires_at
from ampsctl.sow.spec import TopicSpec


class SowTopic:
    """The SOW of one concrete topic (a Pattern topic has one per matching topic name)."""

    def __init__(self, spec: TopicSpec, topic: str | None = None, *, payloads: Payloads | None = None,
                 indexer: Indexer | None = None, positions: Iterator[int] | None = None) -> None:
        self.spec = spec
        self.topic = topic if topic is not None else spec.name
        self.payloads = payloads or Payloads(spec.message_type)
        if indexer is None:  # an opaque type has no fields to index
            indexer = Indexer(spec.key_fields, spec.hash_indexes, spec.indexes) if not self.payloads.opaque else Indexer((), (), ())
        self.indexer = indexer
        self.domain = spec.domain(self.topic)
        self.history = History(spec.history_window or 0, spec.history_granularity or 0) if spec.history else None
        self.dirty: set[str] = set()
        self.restored: set[str] = set()  # dirty keys removed and stored again: a new position, a new file row
        self._records: dict[str, SowRecord] = {}
        self._docs: dict[str, Any] = {}
        self._merged: set[str] = set()  # keys whose cached document is a merge's: it keeps number text
        self._tokens: dict[str, tuple[bytes | None, ...]] = {}
        self._hash: list[dict[bytes, dict[str, None]]] = [{} for _ in self.indexer.hash_fields]  # ordered key sets
        self._positions = positions if positions is not None else itertools.count()  # shared by a group's topics
        self._order: dict[str, int] = {}  # key -> position (see the module docstring)

    # ------------------------------------------------------------------ reading

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, key: str) -> bool:
        return key in self._records

    def get(self, key: str) -> SowRecord | None:
        return self._records.get(key)

    def records(self) -> Iterator[SowRecord]:
        return iter(list(self._records.values()))

    def hash_tokens(self, key: str) -> tuple[bytes | None, ...] | None:
        """The hash-index tokens ``self.indexer`` computed for a stored record when it was stored
        (None when the topic has no hash index or no such record): a checkpoint reuses them."""
        return self._tokens.get(key) if self._hash else None

    def doc(self, key: str) -> Any:
        """The parsed document of a stored record (parsed on first use after a load)."""
        doc = self._docs.get(key)
        if doc is None:
            doc = self._docs[key] = self.payloads.parse(self._records[key].payload)
        return doc

    def position(self, key: str) -> int:
        """Where a stored record comes in unordered results (KeyError for a key not stored)."""
        return self._order[key]

    def in_order(self, keys: Iterable[str]) -> list[str]:
        """The stored keys among ``keys``, once each, in position order."""
        order = self._order
        return sorted({key for key in keys if key in order}, key=order.__getitem__)

    def lookup(self, index: int, tokens: Iterable[bytes]) -> list[str]:
        """Keys whose hash-index ``index`` token is one of ``tokens`` (array values always included)."""
        table = self._hash[index]
        found: dict[str, None] = dict(table.get(ANY, {}))
        for token in tokens:
            found.update(table.get(token, {}))
        return list(found)

    # ------------------------------------------------------------------ writing

    def publish(self, payload: bytes, *, timestamp: int, sequence: int = 0, sow_key: str | None = None,
                expiration: int | None = None) -> list[Change]:
        doc = self.payloads.parse(payload)
        key = self._key(doc, sow_key)
        expiry = self._expiry(timestamp, expiration)
        changes = self._expire_due(key, timestamp)
        return changes + [self._store(key, bytes(payload), doc, timestamp, sequence, expiration, expiry)]

    def delta_publish(self, payload: bytes, *, timestamp: int, sequence: int = 0, sow_key: str | None = None,
                      expiration: int | None = None) -> list[Change]:
        delta = self.payloads.parse(payload)
        key = self._key(delta, sow_key)
        expiry = self._expiry(timestamp, expiration)
        changes = self._expire_due(key, timestamp)
        stored = self._records.get(key)
        if stored is None:
            return changes + [self._store(key, bytes(payload), delta, timestamp, sequence, expiration, expiry)]
        message, merged = self.payloads.merged(stored.payload, self.doc(key), payload, delta,
                                               base_keeps_text=key in self._merged)
        change = self._store(key, message, merged, timestamp, sequence, expiration, expiry)
        self._merged.add(key)
        return changes + [change]

    def delete_keys(self, keys: Iterable[str], *, timestamp: int, sequence: int = 0) -> list[Change]:
        return [self._remove(key, ChangeKind.DELETE, timestamp, sequence) for key in dict.fromkeys(keys) if key in self._records]

    def delete_data(self, payload: bytes, *, timestamp: int, sequence: int = 0, sow_key: str | None = None) -> list[Change]:
        """Delete the record that ``payload`` would update if it were published."""
        key = self._key(self.payloads.parse(payload), sow_key)
        return self.delete_keys([key], timestamp=timestamp, sequence=sequence)

    def expire(self, key: str, *, timestamp: int, sequence: int = 0) -> list[Change]:
        """Replay a journaled EXPIRE of ``key`` (nothing when it is already gone)."""
        if key not in self._records:
            return []
        return [self._remove(key, ChangeKind.EXPIRE, timestamp, sequence)]

    def sweep(self, now: int) -> list[Change]:
        """Expire every record due at ``now`` (only when the topic processes expiration); prune history."""
        changes = []
        if self.spec.expiration_enabled:
            due = [record for record in self._records.values() if record.expired(now)]
            changes = [self._remove(record.key, ChangeKind.EXPIRE, record.expires_at or now, 0) for record in due]
        if self.history is not None:
            self.dirty.update(self.history.prune(now))
        return changes

    def key_of(self, payload: bytes) -> str:
        """The key a stored message has under today's key scheme (from its Key fields)."""
        return self._key(self.payloads.parse(payload), None)

    def load(self, record: SowRecord) -> None:
        """Put a record read from a SOW file back (no change, not dirty)."""
        self._index(record.key, record, None)

    def load_history(self, key: str, saved: Saved) -> None:
        if self.history is not None:
            self.history.load(key, saved)

    # ------------------------------------------------------------------ internals

    def _key(self, doc: Any, supplied: str | None) -> str:
        return self.payloads.key(doc, key_fields=self.spec.key_fields, domain=self.domain, supplied=supplied)

    def _expire_due(self, key: str, timestamp: int) -> list[Change]:
        record = self._records.get(key)
        if record is not None and self.spec.expiration_enabled and record.expired(timestamp):
            return [self._remove(key, ChangeKind.EXPIRE, record.expires_at or timestamp, 0)]
        return []

    def _expiry(self, timestamp: int, expiration: int | None) -> int | None:
        """When a write expires; InputError (before anything changes) for a time the SOW cannot keep."""
        if expiration is not None and expiration < 0:
            raise InputError(f"expiration {expiration} is negative", code="SOW_EXPIRATION",
                             hint="an expiration is a number of seconds, 0 meaning never")
        return expires_at(timestamp, expiration, self.spec.expiration)

    def _store(self, key: str, payload: bytes, doc: Any, timestamp: int, sequence: int,
               expiration: int | None, expiry: int | None) -> Change:
        old = self._records.get(key)
        new = SowRecord(self.topic, key, payload, sequence, timestamp, expiration, expiry)
        self._index(key, new, doc)
        self.dirty.add(key)
        if self.history is not None:
            self.history.save(key, timestamp, sequence, payload)
        return Change(ChangeKind.UPDATE if old else ChangeKind.INSERT, self.topic, key, old, new)

    def _index(self, key: str, record: SowRecord, doc: Any) -> None:
        self._merged.discard(key)  # a new document (delta_publish marks its merge again)
        if key in self._records:
            self._unindex(key)
        else:
            self._order[key] = next(self._positions)
            if key in self.dirty:  # removed since the last checkpoint, which may have written it
                self.restored.add(key)
        self._records[key] = record
        if doc is not None:
            self._docs[key] = doc
        if self._hash:
            tokens = self.indexer.hash_tokens(self.payloads.record(self.doc(key)))
            self._tokens[key] = tokens
            for table, token in zip(self._hash, tokens, strict=True):
                if token is not None:
                    table.setdefault(token, {})[key] = None

    def _unindex(self, key: str) -> None:
        for table, token in zip(self._hash, self._tokens.pop(key, ()), strict=False):
            if token is not None:
                keys = table[token]
                del keys[key]
                if not keys:
                    del table[token]

    def _remove(self, key: str, kind: ChangeKind, timestamp: int, sequence: int) -> Change:
        self._unindex(key)
        old = self._records.pop(key)
        del self._order[key]
        self._docs.pop(key, None)
        self._merged.discard(key)
        self.dirty.add(key)
        if self.history is not None:
            self.history.save(key, timestamp, sequence, None)
        return Change(kind, self.topic, key, old, None)

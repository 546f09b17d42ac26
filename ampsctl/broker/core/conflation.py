"""Conflated subscriptions: at most one update per key per interval, the latest state wins (§8.2).

Theory of operation. A subscription with ``conflation=<interval>`` gets a ``Conflator``. Fan-out
does not render its updates; it ``offer``s them: the first update for a key opens a slot that is
due ``interval`` later, and later updates for that key replace the slot's latest state while
keeping the state from before the first one. ``ConflationQueue`` (one per core) keeps the due
times in a heap; the server asks ``next_deadline()`` after every batch of actions, sets a timer
for it, and calls ``release(subs, now)``, which renders each due slot as one update from "the
state before the first update" to "the latest state". So:

* a full subscription gets the latest message of the key once per interval;
* a delta subscription gets the merge of the deltas the span replaces (seed 004, "Conflated
  Subscriptions and Delta Subscribe"): every field that changed during the span, with its latest
  value, even one that changed back to the value it had before the span. Each update's delta
  comes from ``JSON_TEXT.diff`` (the one delta implementation; number text kept) and they are
  merged as delta publishes are (last value wins) as they arrive. A span with an insert or a delete in it
  (an update without both states) gets the diff from the state before the span to the latest;
* filters, ``select``, ``oof`` and ``no_empties`` are applied when the slot is released, to the
  latest state (a key that left the filter gets its OOF then, a delete its ``deleted``).

The key (``conflation_key``) is the values of the listed fields in the latest state (absent
fields count as null); without it the SOW key; on a topic without a SOW, the topic itself
(the latest message of the topic per interval).

Invariants:
* a (subscription, key) has at most one pending slot and at most one heap entry;
* released slots come out in due-time order; a slot is released no earlier than its due time;
* a slot of a subscription that is gone (unsubscribed, disconnected) is dropped at its due time
  without a frame, so the heap never outlives its entries by more than one interval; a replaced
  subscription's slots are released at the replace (``flush``), first in the replace's reply.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from ampsctl.broker.core.actions import Send
from ampsctl.broker.core.fanout import Update, UpdateKind, render
from ampsctl.broker.core.subscriptions import Subscription, SubscriptionIndex
from ampsctl.errors import AmpsctlError
from ampsctl.messages.json_codec import JSON_TEXT
from ampsctl.messages.keys import key_material, key_values

MIN_INTERVAL = 1_000  # µs: below this a timer cannot keep the promise


@dataclass(slots=True)
class _Slot:
    first: Update  # the first update of the span: its ``old`` is the state delivered before
    latest: Update
    merged: Any = None  # delta subscriptions: the merge of the span's deltas so far (None: no change yet)
    exact: bool = True  # False once an update lacks a state (insert, delete, not JSON): no merge then

    def add_delta(self, sub: Subscription, update: Update) -> None:
        """Merge ``update``'s delta, as ``sub`` sees it (its select list), into ``merged``."""
        old, new = update.texts()  # number text kept, as in fan-out's deltas
        if old is None or new is None:
            self.exact, self.merged = False, None
            return
        if sub.select is not None:
            old, new = sub.select.apply(old), sub.select.apply(new)
        step = JSON_TEXT.diff(old, new, update.key_fields, no_empties=True, send_keys=True)
        if step is not None:  # None: nothing changed in this update
            self.merged = step if self.merged is None else JSON_TEXT.merge(self.merged, step)


class ConflationQueue:
    """The due times of every conflated subscription's pending slots, in one heap."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Subscription, Hashable]] = []
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, due: int, sub: Subscription, key: Hashable) -> None:
        heapq.heappush(self._heap, (due, next(self._order), sub, key))

    def next_deadline(self) -> int | None:
        """When ``release`` next has something to do (µs), or None."""
        return self._heap[0][0] if self._heap else None

    def release(self, subs: SubscriptionIndex, now: int) -> list[Send]:
        """The frames of every slot due at ``now``, in due order."""
        out: list[Send] = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, _, sub, key = heapq.heappop(heap)
            conflator = sub.conflation
            slot = conflator.pending.pop(key, None) if conflator is not None else None
            if slot is None or subs.get(sub.conn, sub.sub_id) is not sub:
                continue  # the subscription went away
            data = render(_span(slot), [sub], now)
            if data:
                out.append(Send(sub.conn, data))
        return out


@dataclass(slots=True)
class Conflator:
    """The conflation state of one subscription."""

    queue: ConflationQueue
    interval: int  # µs
    key_fields: tuple[str, ...] | None
    pending: dict[Hashable, _Slot] = field(default_factory=dict)

    def offer(self, sub: Subscription, update: Update, now: int) -> None:
        key = self._key(update)
        slot = self.pending.get(key)
        if slot is None:
            self.pending[key] = _Slot(update, update)
            self.queue.push(now + self.interval, sub, key)
            return
        if update.key != slot.first.key:  # a conflation_key slot spanning two records: no one record's deltas
            slot.exact, slot.merged = False, None
        elif sub.delta and slot.exact and update.key is not None:  # deltas exist only for SOW records
            if slot.first is slot.latest:
                slot.add_delta(sub, slot.first)  # a span of one needs no merge: done when a second comes
            if slot.exact:
                slot.add_delta(sub, update)
        slot.latest = update

    def _key(self, update: Update) -> Hashable:
        if self.key_fields is None:
            return update.key if update.key is not None else (update.topic,)
        doc: Any = update.parsed_new() if update.new is not None else update.parsed_old()
        if doc is None:
            return (update.topic, None)
        try:
            return (update.topic, key_material("", key_values(doc, self.key_fields, allow_missing=True)))
        except AmpsctlError:
            return (update.topic, None)  # an array or object where the key should be: one shared slot


def attach(queue: ConflationQueue, sub: Subscription) -> None:
    """Give ``sub`` its Conflator when its options ask for conflation."""
    interval = sub.options.conflation
    if interval is not None:
        sub.conflation = Conflator(queue, max(interval.nanos // 1000, MIN_INTERVAL), sub.options.conflation_key)


def flush(sub: Subscription, now: int) -> bytes:
    """The updates ``sub`` holds, rendered now, for a subscription being replaced: a replace is
    atomic, and what matched the old subscription must not be lost with it. The slots' heap
    entries stay and are dropped at their due time (their slots are gone)."""
    conflator = sub.conflation
    if conflator is None or not conflator.pending:
        return b""
    slots, conflator.pending = conflator.pending, {}
    return b"".join(render(_span(slot), [sub], now) for slot in slots.values())


def _span(slot: _Slot) -> Update:
    """One update standing for every update of the slot: from the state before the first to the latest."""
    first, latest = slot.first, slot.latest
    if first is latest or latest.new is None:
        return latest  # one update, or the key was deleted/expired last: its OOF carries the last state
    merged = Update(UpdateKind.PUBLISH, latest.topic, latest.new, old=first.old, key=latest.key,
                    key_fields=latest.key_fields, correlation_id=latest.correlation_id, bookmark=latest.bookmark)
    merged.new_doc = latest.new_doc
    merged.old_doc = first.old_doc
    if slot.exact and slot.merged is not None:
        merged.span_delta = slot.merged
    return merged

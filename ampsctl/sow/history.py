"""Historical SOW: the saved states of each record, for as-of queries (seed 001 History).

Theory of operation. For each key the topic keeps a list of ``Saved`` states in the order they
were written: a payload, or ``None`` for "not in the SOW from here on" (a sow_delete; deletes
do not remove earlier states, spec/messages.md §9). A query as of time T returns, per key,
the last state saved at or before T, if it is not a deletion.

* Granularity G > 0: a state goes into the period ``timestamp // G``; a later state of the
  same key in the same period replaces the saved one, so each period keeps the state current
  at its end (spec [ASSUME] A-H1). A query at T inside a period, before that period's last
  update, therefore sees the previous period's state: history is only as fine as G. G = 0
  keeps every update.
* Order: as-of results come by each record's first kept state (``as_of_order``).
* Window W: ``prune(now)`` drops, per key, every state older than ``now - W`` except the newest
  of those, which is still the state in effect at the window's start (a record written once
  long ago is still in the SOW). A key whose newest old state is a deletion is dropped. The
  pruning point only moves forward (``horizon``); a query before it is refused (InputError)
  rather than answered wrongly.
Invariants: states of a key are in write order; ``horizon`` never decreases; nothing reads a
clock (``prune`` takes ``now``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from operator import itemgetter

from ampsctl.errors import InputError
from ampsctl.sow.record import MICROS


@dataclass(frozen=True, slots=True)
class Saved:
    """One saved state of a record: None ``payload`` means deleted at ``timestamp``."""

    timestamp: int
    sequence: int
    payload: bytes | None


def as_of_order(key: str, first: Saved) -> tuple[int, int, str]:
    """Where a record comes in as-of results: by its first kept state (sequence, then timestamp,
    then key), which the SOW file keeps as well, so memory and file answer in the same order."""
    return first.sequence, first.timestamp, key


class History:
    """Saved states per key for one concrete topic."""

    __slots__ = ("window", "granularity", "horizon", "_states")

    def __init__(self, window_seconds: int, granularity_seconds: int, *, horizon: int | None = None) -> None:
        self.window = window_seconds * MICROS
        self.granularity = granularity_seconds * MICROS
        self.horizon = horizon  # µs: as-of queries before this were pruned away
        self._states: dict[str, list[Saved]] = {}

    def __len__(self) -> int:
        return sum(len(states) for states in self._states.values())

    def save(self, key: str, timestamp: int, sequence: int, payload: bytes | None) -> None:
        states = self._states.setdefault(key, [])
        if states and self.granularity and states[-1].timestamp // self.granularity == timestamp // self.granularity:
            states[-1] = Saved(timestamp, sequence, payload)  # same period: the later state stands for it
        else:
            states.append(Saved(timestamp, sequence, payload))

    def load(self, key: str, saved: Saved) -> None:
        """Restore one state from a SOW file (already in write order)."""
        self._states.setdefault(key, []).append(saved)

    def states(self, key: str) -> list[Saved]:
        return list(self._states.get(key, ()))

    def keys(self) -> list[str]:
        return list(self._states)

    def as_of(self, moment: int) -> Iterator[tuple[str, Saved]]:
        """(key, state) of every record present at ``moment``; InputError before the horizon."""
        for _, key, found in self.ranked_as_of(moment):
            yield key, found

    def ranked_as_of(self, moment: int) -> list[tuple[tuple[int, int, str], str, Saved]]:
        """``as_of`` with each record's ``as_of_order``, sorted by it (to merge several topics)."""
        if self.horizon is not None and moment < self.horizon:
            raise InputError(
                "the as-of time is before the start of the kept history",
                code="SOW_HISTORY",
                hint="History/Window limits how far back a SOW can be queried; pick a later time",
            )
        present = []
        for key, states in self._states.items():
            found = None
            for saved in states:
                if saved.timestamp <= moment:
                    found = saved
            if found is not None and found.payload is not None:
                present.append((as_of_order(key, states[0]), key, found))
        present.sort(key=itemgetter(0))
        return present

    def prune(self, now: int) -> list[str]:
        """Drop states older than the window (see the module docstring); the keys whose states changed."""
        if not self.window:
            return []
        cutoff = now - self.window
        if self.horizon is not None and cutoff <= self.horizon:
            return []
        self.horizon = cutoff
        changed = []
        for key in list(self._states):
            states = self._states[key]
            old = [position for position, saved in enumerate(states) if saved.timestamp <= cutoff]
            if not old:
                continue
            newest_old = old[-1]
            keep = [saved for position, saved in enumerate(states) if position >= newest_old or saved.timestamp > cutoff]
            if keep[0].payload is None and keep[0].timestamp <= cutoff:
                keep = keep[1:]
            if len(keep) != len(states):
                changed.append(key)
                if keep:
                    self._states[key] = keep
                else:
                    del self._states[key]
        return changed

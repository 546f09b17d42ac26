"""When each record of a journal replay is due: pure arithmetic on timestamps, no clock.

``journal replay`` sends record i at ``start + due_i`` seconds (``replay.py`` owns the clock and
the sleeping). Three paces:

* ``speed``: the journal's own gaps divided by ``speed`` (2 = twice as fast, ``inf`` = no waits).
  A gap longer than ``max_gap`` seconds after scaling is cut to ``max_gap``: a journal that
  spans a night or a weekend replays its activity, not its idle hours. A gap that goes
  backwards (timestamps are the publishers' and need not increase) counts as no gap.
* ``rate``: record i is due at ``i / rate``, whatever the timestamps say.
* neither: every record is due at once (as fast as the broker acknowledges).

Invariant: due times never decrease, and the first record is due at 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ampsctl.errors import UsageError


@dataclass(frozen=True, slots=True)
class Pace:
    speed: float | None = None  # scale of the recorded gaps
    rate: float | None = None  # fixed records per second
    max_gap: float = 1.0  # seconds: the longest wait between two records at ``speed``

    def __post_init__(self) -> None:
        if self.speed is not None and self.rate is not None:
            raise UsageError("give --speed or --rate, not both",
                             hint="--speed scales the journal's own pacing; --rate sends N records per second")
        if self.speed is not None and not self.speed > 0:
            raise UsageError(f"--speed {self.speed:g} must be above 0", hint="2 replays twice as fast; inf without waiting")
        if self.rate is not None and not (self.rate > 0 and math.isfinite(self.rate)):
            raise UsageError(f"--rate {self.rate:g} must be a positive number of records per second")
        if not self.max_gap >= 0:
            raise UsageError(f"--max-gap {self.max_gap:g} must be 0 or more seconds")


def next_due(pace: Pace, index: int, timestamp: int, previous_timestamp: int | None, previous_due: float) -> float:
    """Seconds after the start at which record ``index`` (0-based, timestamp in µs) is due."""
    if pace.rate is not None:
        return index / pace.rate
    if pace.speed is None or previous_timestamp is None:
        return previous_due
    gap = max(timestamp - previous_timestamp, 0) / 1e6 / pace.speed
    return previous_due + min(gap, pace.max_gap)


def due_times(timestamps: Iterable[int], pace: Pace) -> Iterator[float]:
    """``next_due`` over a sequence of timestamps."""
    previous_timestamp: int | None = None
    due = 0.0
    for index, timestamp in enumerate(timestamps):
        due = next_due(pace, index, timestamp, previous_timestamp, due)
        previous_timestamp = timestamp
        yield due

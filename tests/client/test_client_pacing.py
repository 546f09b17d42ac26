"""``ampsctl.client.pacing``: when each replayed record is due (pure, no clock)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ampsctl.client.pacing import Pace, due_times, next_due
from ampsctl.errors import UsageError

S = 1_000_000  # µs per second


def test_speed_scales_the_recorded_gaps() -> None:
    stamps = [0, 1 * S // 10, 3 * S // 10, 6 * S // 10]
    assert list(due_times(stamps, Pace(speed=1.0))) == pytest.approx([0, 0.1, 0.3, 0.6])
    assert list(due_times(stamps, Pace(speed=2.0))) == pytest.approx([0, 0.05, 0.15, 0.3])
    assert list(due_times(stamps, Pace(speed=0.5))) == pytest.approx([0, 0.2, 0.6, 1.2])


def test_long_gaps_are_cut_to_max_gap_after_scaling() -> None:
    stamps = [0, 3600 * S, 3600 * S + S // 2, 7 * 24 * 3600 * S]
    assert list(due_times(stamps, Pace(speed=1.0, max_gap=1.0))) == pytest.approx([0, 1.0, 1.5, 2.5])
    # the cap applies to the scaled gap: at speed 4, a 2 s gap is 0.5 s and is not cut
    assert list(due_times([0, 2 * S], Pace(speed=4.0, max_gap=1.0))) == pytest.approx([0, 0.5])
    assert list(due_times(stamps, Pace(speed=1.0, max_gap=0.0))) == [0, 0, 0, 0]


def test_backwards_timestamps_count_as_no_gap() -> None:
    assert list(due_times([5 * S, 4 * S, 4 * S + S // 10], Pace(speed=1.0))) == pytest.approx([0, 0, 0.1])


def test_rate_ignores_timestamps() -> None:
    assert list(due_times([0, 3600 * S, 1, 2], Pace(rate=4.0))) == [0, 0.25, 0.5, 0.75]


def test_no_pace_and_infinite_speed_send_at_once() -> None:
    stamps = [0, S, 10 * S]
    assert list(due_times(stamps, Pace())) == [0, 0, 0]
    assert list(due_times(stamps, Pace(speed=math.inf))) == [0, 0, 0]


def test_next_due_is_the_step_of_due_times() -> None:
    assert next_due(Pace(speed=2.0), 5, 3 * S, 2 * S, 10.0) == pytest.approx(10.5)
    assert next_due(Pace(speed=2.0), 0, 3 * S, None, 0.0) == 0.0
    assert next_due(Pace(rate=10.0), 5, 0, None, 99.0) == 0.5


@pytest.mark.parametrize(("pace", "message"), [
    (dict(speed=2.0, rate=5.0), "--speed or --rate, not both"),
    (dict(speed=0.0), "--speed 0 must be above 0"),
    (dict(speed=-1.0), "must be above 0"),
    (dict(speed=math.nan), "must be above 0"),
    (dict(rate=0.0), "--rate 0 must be a positive"),
    (dict(rate=math.inf), "--rate inf must be a positive"),
    (dict(speed=1.0, max_gap=-1.0), "--max-gap -1"),
])
def test_bad_paces_are_usage_errors(pace: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("-", r"\-").replace("+", r"\+")):
        Pace(**pace)


stamps = st.lists(st.integers(min_value=0, max_value=10**15), min_size=1, max_size=50)
speeds = st.floats(min_value=0.01, max_value=1e6) | st.just(math.inf)


@given(stamps, speeds, st.floats(min_value=0, max_value=100))
def test_due_times_start_at_0_never_decrease_and_respect_the_cap(times: list[int], speed: float, max_gap: float) -> None:
    due = list(due_times(times, Pace(speed=speed, max_gap=max_gap)))
    assert len(due) == len(times) and due[0] == 0
    steps = [b - a for a, b in zip(due, due[1:])]
    assert all(0 <= step <= max_gap + 1e-9 for step in steps)
    for step, (a, b) in zip(steps, zip(times, times[1:])):
        assert step == pytest.approx(min(max(b - a, 0) / S / speed, max_gap))


@given(stamps, st.floats(min_value=0.001, max_value=1e7))
def test_rate_due_times_are_evenly_spaced(times: list[int], rate: float) -> None:
    assert list(due_times(times, Pace(rate=rate))) == [i / rate for i in range(len(times))]

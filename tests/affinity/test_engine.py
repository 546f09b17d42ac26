"""Engine edge cases that scenario files cannot express: errors, and what it reports."""

from __future__ import annotations

import pytest

from ampsctl.affinity.engine import FaucetEngine
from ampsctl.affinity.model import AffinitySettings, Disconnect, Subscribe, Unsubscribe
from ampsctl.errors import InputError


def test_an_invalid_subscription_topic_is_a_config_error() -> None:
    with pytest.raises(InputError, match="SubscriptionTopic '/t/\\(' is not a valid PCRE") as caught:
        FaucetEngine(AffinitySettings("ctl", "/t/("))
    assert caught.value.code == "AFFINITY_CONFIG" and caught.value.hint


def test_a_connection_keeps_its_client_name() -> None:
    engine = FaucetEngine(AffinitySettings("ctl", "/t/"))
    engine.handle(Subscribe("c1", "pub-a", "ctl", "1"))
    with pytest.raises(InputError, match="belongs to client 'pub-a', not 'pub-b'"):
        engine.handle(Subscribe("c1", "pub-b", "/t/A", "2"))
    engine.handle(Disconnect("c1"))
    assert engine.handle(Subscribe("c1", "pub-b", "ctl", "1")) == []  # a new connection may reuse the id


def test_not_an_event() -> None:
    with pytest.raises(TypeError):
        FaucetEngine(AffinitySettings("ctl", "/t/")).handle("subscribe")  # type: ignore[arg-type]


def test_summary_state() -> None:
    engine = FaucetEngine(AffinitySettings("ctl", "^/t/"))
    for event in (
        Subscribe("p1", "pub-a", "ctl", "1"),
        Subscribe("s1", "sub", "/t/A", "1"),
        Subscribe("s1", "sub", "/t/B", "2"),
        Subscribe("p2", "pub-b", "ctl", "1"),
        Unsubscribe("p1", "1"),
        Unsubscribe("p1", "1"),
    ):
        engine.handle(event)
    assert engine.assignments() == {"/t/A": "p2", "/t/B": "p2"}
    assert [(p.client, p.load, p.coverage) for p in engine.publishers()] == [("pub-b", 2, (None,))]
    assert engine.reassignments == 2
    assert engine.warnings == ["unsubscribe of unknown subscription '1' on connection 'p1': ignored"]


def test_a_huge_invalid_coverage_pattern_is_cut_in_the_warning() -> None:
    # The warning held the whole pattern once more before the cut one (4,000 characters and more).
    from ampsctl.affinity.engine import FaucetEngine
    from ampsctl.affinity.model import AffinitySettings, Announcements, Subscribe

    pattern = "(" * 2000 + "a" + ")" * 2000
    engine = FaucetEngine(AffinitySettings("ctl", "^/s/", Announcements.DEFAULT, "udo_coverage"))
    engine.handle(Subscribe("c1", "p", "ctl", "1", {"udo_coverage": pattern}))
    (warning,) = engine.warnings
    assert len(warning) < 700 and "(4001 characters)" in warning and warning.endswith("ignored, as AMPS does")

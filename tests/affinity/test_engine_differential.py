"""The fast engine against the reference engine (the engine before the speed work).

Random scripts, in both announcement modes, with and without coverage, must give the same
affinity events, warnings, errors and state after every event. The topic-state bound is
also exercised with a tiny limit, so forgetting topics changes nothing either.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_engine import ReferenceEngine

from ampsctl.affinity import engine as engine_module
from ampsctl.affinity.engine import FaucetEngine
from ampsctl.affinity.model import AffinitySettings, Announcements, Disconnect, Subscribe, SubscriptionEvent, Unsubscribe
from ampsctl.errors import InputError

CONTROL = "ctl"
CONNECTIONS = ("p1", "p2", "p3", "s1", "s2", "s3")
TOPICS = (CONTROL, CONTROL, "/t/A", "/t/B", "/t/C", "/t/AB", "/t/A", "/u/A", "/t/.*", "x/t/B")
COVERAGES = (None, "/t/A", "/t/[AB]", "/t/.*", "B$", "(", "^/t/C")


def _subscribe(connection: str, renamed: bool, sub_id: str, topic: str, coverage: str | None) -> Subscribe:
    options = {} if coverage is None else {"udo_coverage": coverage}
    client = f"other-{connection}" if renamed else f"client-{connection}"
    return Subscribe(connection, client, topic, sub_id, options)


EVENTS = st.one_of(
    st.builds(
        _subscribe,
        st.sampled_from(CONNECTIONS),
        st.sampled_from([False] * 30 + [True]),  # now and then a second client name on a connection
        st.sampled_from("1234"),
        st.sampled_from(TOPICS),
        st.sampled_from(COVERAGES),
    ),
    st.builds(Unsubscribe, st.sampled_from(CONNECTIONS), st.sampled_from("1234")),
    st.builds(Disconnect, st.sampled_from(CONNECTIONS)),
)


def _state(engine: FaucetEngine | ReferenceEngine) -> tuple:
    interest = {topic: sorted(subscribers) for topic, subscribers in engine.interest().items()}
    return list(engine.assignments().items()), engine.publishers(), engine.reassignments, list(interest.items())


def _step(engine: FaucetEngine | ReferenceEngine, event: SubscriptionEvent) -> tuple:
    try:
        produced: object = engine.handle(event)
    except InputError as exc:
        produced = ("error", exc.message)
    warnings = list(engine.warnings)
    engine.warnings.clear()
    return produced, warnings


@settings(max_examples=400, deadline=None)
@given(
    script=st.lists(EVENTS, min_size=20, max_size=120),
    mode=st.sampled_from(Announcements),
    coverage_option=st.sampled_from([None, "udo_coverage"]),
    pattern=st.sampled_from(["^/t/", "/t/", "A$"]),
    small_limit=st.booleans(),
)
def test_same_events_and_state_as_the_reference(
    script: list[SubscriptionEvent], mode: Announcements, coverage_option: str | None, pattern: str, small_limit: bool
) -> None:
    config = AffinitySettings(CONTROL, pattern, mode, coverage_option)
    with pytest.MonkeyPatch.context() as patch:
        if small_limit:
            patch.setattr(engine_module, "_TOPIC_LIMIT", 2)
        fast = FaucetEngine(config)
    reference = ReferenceEngine(config)
    for number, event in enumerate(script, 1):
        assert _step(fast, event) == _step(reference, event), f"event {number}: {event}"
        assert _state(fast) == _state(reference), f"after event {number}: {event}"


def test_churn_on_one_topic_then_publisher_loss_all_mode() -> None:
    """Many subscriptions come and go on a topic that keeps interest (all mode compacts its
    list of subscribers), then its publisher goes: the per-subscriber events must match."""
    script: list[SubscriptionEvent] = [Subscribe("p1", "a", CONTROL, "1"), Subscribe("p2", "b", CONTROL, "1"), Subscribe("s0", "k", "/t/A", "0")]
    for n in range(60):
        connection = f"s{1 + n % 5}"
        script.append(Subscribe(connection, f"c-{connection}", "/t/A", str(n)))
        if n % 3:
            script.append(Unsubscribe(connection, str(n)))
    script += [Disconnect("p1"), Unsubscribe("s0", "0"), Disconnect("p2"), Subscribe("p3", "c", CONTROL, "1")]
    config = AffinitySettings(CONTROL, "^/t/", Announcements.ALL)
    fast, reference = FaucetEngine(config), ReferenceEngine(config)
    for event in script:
        assert _step(fast, event) == _step(reference, event), event
        assert _state(fast) == _state(reference), event

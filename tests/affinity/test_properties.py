"""Hypothesis invariants of the faucet engine (issue 5), checked after every event.

* An interested topic is assigned to at most one live, eligible publisher that covers it, and
  no eligible publisher covers an interested topic that is left unassigned.
* Assignments never move while their publisher stays and the topic keeps interest.
* Every new assignment goes to a least-loaded covering publisher, ties to the earliest
  activation: the test walks each event's output with its own load counts.
* The same input always gives the same output, and the announcement mode changes only what
  is emitted, never who gets a topic.
* Who is eligible and which topics are interesting agree with a plain model of the live
  subscriptions.

A subscribe that reuses a live sub_id is an unsubscribe and a subscribe in one event; the
stickiness and least-loaded walks skip those (the scenario files pin them down exactly).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from ampsctl.affinity.engine import FaucetEngine
from ampsctl.affinity.model import (
    AffinityAction,
    AffinitySettings,
    Announcements,
    Disconnect,
    PublisherState,
    Subscribe,
    SubscriptionEvent,
    Unsubscribe,
)
from ampsctl.filter.errors import FilterError
from ampsctl.filter.regexes import compile_pattern, has_metachars, search

CONTROL = "ctl"
PATTERN = "^/t/"
CONNECTIONS = ("p1", "p2", "p3", "s1", "s2")
TOPICS = (CONTROL, CONTROL, "/t/A", "/t/B", "/t/C", "/t/AB", "/u/A", "/t/.*")
COVERAGES = (None, "/t/A", "/t/[AB]", "/t/.*", "B$", "(")


def _subscribe(connection: str, sub_id: str, topic: str, coverage: str | None) -> Subscribe:
    options = {} if coverage is None else {"udo_coverage": coverage}
    return Subscribe(connection, f"client-{connection}", topic, sub_id, options)


EVENTS = st.one_of(
    st.builds(_subscribe, st.sampled_from(CONNECTIONS), st.sampled_from("123"), st.sampled_from(TOPICS), st.sampled_from(COVERAGES)),
    st.builds(Unsubscribe, st.sampled_from(CONNECTIONS), st.sampled_from("123")),
    st.builds(Disconnect, st.sampled_from(CONNECTIONS)),
)
SCRIPTS = st.lists(EVENTS, max_size=60)
COVERAGE_OPTION = st.sampled_from([None, "udo_coverage"])


@dataclass
class Snapshot:
    assignments: dict[str, str | None]
    publishers: dict[str, PublisherState]

    @classmethod
    def of(cls, engine: FaucetEngine) -> Snapshot:
        return cls(engine.assignments(), {p.connection: p for p in engine.publishers()})


def covers(publisher: PublisherState, topic: str) -> bool:
    return any(pattern is None or search(pattern, topic) for pattern in publisher.coverage)


def valid_pcre(pattern: str) -> bool:
    try:
        compile_pattern(pattern)
    except FilterError:
        return False
    return True


class Model:
    """Live subscriptions, tracked without the engine: who should be eligible, what is interesting."""

    def __init__(self, coverage_option: str | None) -> None:
        self.coverage_option = coverage_option
        self.subs: dict[tuple[str, str], Subscribe] = {}

    def is_replace(self, event: SubscriptionEvent) -> bool:
        return isinstance(event, Subscribe) and (event.connection, event.sub_id) in self.subs

    def apply(self, event: SubscriptionEvent) -> None:
        if isinstance(event, Subscribe):
            self.subs[(event.connection, event.sub_id)] = event
        elif isinstance(event, Unsubscribe):
            self.subs.pop((event.connection, event.sub_id), None)
        else:
            self.subs = {key: sub for key, sub in self.subs.items() if key[0] != event.connection}

    def eligible(self) -> set[str]:
        return {sub.connection for sub in self.subs.values() if sub.topic == CONTROL and self._counts(sub)}

    def _counts(self, sub: Subscribe) -> bool:
        if self.coverage_option is None:
            return True
        value = sub.options.get(self.coverage_option)
        return value is not None and valid_pcre(value)

    def interest(self) -> dict[str, set[tuple[str, str]]]:
        topics: dict[str, set[tuple[str, str]]] = {}
        for sub in self.subs.values():
            if sub.topic != CONTROL and not has_metachars(sub.topic) and search(PATTERN, sub.topic):
                topics.setdefault(sub.topic, set()).add((sub.client, sub.connection))
        return topics


def check_state(after: Snapshot, model: Model, engine: FaucetEngine) -> None:
    publishers = after.publishers
    assert set(publishers) == model.eligible()
    assert {topic: set(subs) for topic, subs in engine.interest().items()} == model.interest()
    assert set(after.assignments) == set(model.interest())
    activations = [p.activation for p in publishers.values()]
    assert activations == sorted(activations) and len(set(activations)) == len(activations)
    held = [topic for p in publishers.values() for topic in p.topics]
    assert len(held) == len(set(held)), "a topic is held by two publishers"
    for topic, owner in after.assignments.items():
        if owner is None:
            assert not any(covers(p, topic) for p in publishers.values()), f"{topic} waits although a publisher covers it"
        else:
            assert topic in publishers[owner].topics
    assert sorted(held) == sorted(t for t, owner in after.assignments.items() if owner is not None)


def check_sticky(before: Snapshot, after: Snapshot) -> None:
    for topic, owner in before.assignments.items():
        if owner is None or topic not in after.assignments or owner not in after.publishers:
            continue
        if before.publishers[owner].activation == after.publishers[owner].activation:
            assert after.assignments[topic] == owner, f"{topic} moved off {owner}, which stayed"


def check_least_loaded(before: Snapshot, after: Snapshot, output: list) -> None:
    """Walk a default-mode output with our own load counts; each choice must be least loaded."""
    candidates = after.publishers
    loads = {
        c: before.publishers[c].load if c in before.publishers and before.publishers[c].activation == p.activation else 0
        for c, p in candidates.items()
    }
    for event in output:
        covering = [c for c, p in candidates.items() if covers(p, event.topic)]
        if event.action is AffinityAction.ASSIGN:
            assert event.connection in covering
            best = min(covering, key=lambda c: (loads[c], candidates[c].activation))
            assert event.connection == best, f"{event.topic} went to {event.connection}, least loaded was {best}"
            loads[event.connection] += 1
        elif event.action is AffinityAction.UNASSIGN:
            if event.connection in loads:
                loads[event.connection] -= 1
        else:
            assert not covering, f"no_handlers for {event.topic} although {covering} cover it"
    assert loads == {c: p.load for c, p in candidates.items()}


@settings(max_examples=300, deadline=None)
@given(script=SCRIPTS, coverage_option=COVERAGE_OPTION)
def test_invariants_hold_after_every_event(script: list[SubscriptionEvent], coverage_option: str | None) -> None:
    engine = FaucetEngine(AffinitySettings(CONTROL, PATTERN, Announcements.DEFAULT, coverage_option))
    shadow = FaucetEngine(AffinitySettings(CONTROL, PATTERN, Announcements.ALL, coverage_option))
    model = Model(coverage_option)
    before = Snapshot.of(engine)
    for event in script:
        replace = model.is_replace(event)
        model.apply(event)
        output = engine.handle(event)
        shadow.handle(event)
        after = Snapshot.of(engine)
        check_state(after, model, engine)
        assert Snapshot.of(shadow) == after, "the announcement mode changed an assignment"
        if not replace:
            check_sticky(before, after)
            check_least_loaded(before, after, output)
        before = after


@settings(max_examples=100, deadline=None)
@given(script=SCRIPTS, coverage_option=COVERAGE_OPTION, mode=st.sampled_from(Announcements))
def test_same_input_same_output(script: list[SubscriptionEvent], coverage_option: str | None, mode: Announcements) -> None:
    def run() -> list:
        engine = FaucetEngine(AffinitySettings(CONTROL, PATTERN, mode, coverage_option))
        return [(engine.handle(event), list(engine.warnings)) for event in script]

    assert run() == run()


@settings(max_examples=200, deadline=None)
@given(script=SCRIPTS, coverage_option=COVERAGE_OPTION)
def test_all_mode_names_a_subscriber_on_every_event_and_default_never(script: list[SubscriptionEvent], coverage_option: str | None) -> None:
    for mode in Announcements:
        engine = FaucetEngine(AffinitySettings(CONTROL, PATTERN, mode, coverage_option))
        for event in script:
            for out in engine.handle(event):
                named = out.subscriber_client is not None
                assert named == (out.subscriber_connection is not None)
                assert named == (mode is Announcements.ALL)
                assert (out.client is None) == (out.action is AffinityAction.NO_HANDLERS)

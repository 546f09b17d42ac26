"""The in-memory SOW topic: the semantics of seeds 001/003 and spec/messages.md §3, §5, §6, §9.

Vector names (K1, E2, V4, H3 ...) are those of spec/messages.md.
"""

from __future__ import annotations

import orjson
import pytest

from ampsctl.errors import InputError
from ampsctl.journal.record import Command
from ampsctl.messages.keys import generate_key
from ampsctl.sow.record import ChangeKind
from ampsctl.sow.store import SowStore
from ampsctl.sow.topic import SowTopic
from sow_helpers import SECOND, T0, by_id, docs, record, spec


def publish(topic: SowTopic, doc: dict | bytes, at: int = T0, **fields):
    payload = doc if isinstance(doc, bytes) else orjson.dumps(doc)
    return topic.publish(payload, timestamp=at, **fields)


# ---------------------------------------------------------------- keys (seed 003, spec §3.4)


def test_k1_publish_with_the_same_key_replaces_the_whole_record() -> None:
    topic = SowTopic(spec())
    first = publish(topic, {"orderId": 7, "id": 7, "p": 1, "extra": True})
    second = publish(topic, {"id": 7, "p": 2})
    assert [c.kind for c in first + second] == [ChangeKind.INSERT, ChangeKind.UPDATE]
    assert second[0].old is not None and second[0].old.payload == first[0].new.payload  # type: ignore[union-attr]
    assert list(docs(topic).values()) == [{"id": 7, "p": 2}]  # replaced whole, not merged


def test_generated_key_is_the_documented_scheme_over_the_topic_name() -> None:
    topic = SowTopic(spec(keys=("/a", "/b")))
    publish(topic, {"a": "x", "b": 2})
    assert next(topic.records()).key == generate_key("orders", ("x", 2))


def test_k2_k3_key_domain_unifies_keys_across_topics() -> None:
    plain_a, plain_b = SowTopic(spec("A")), SowTopic(spec("B"))
    domain_a, domain_b = SowTopic(spec("A", key_domain="X")), SowTopic(spec("B", key_domain="X"))
    for topic in (plain_a, plain_b, domain_a, domain_b):
        publish(topic, {"id": 1})
    key = lambda topic: next(topic.records()).key  # noqa: E731
    assert key(plain_a) != key(plain_b)
    assert key(domain_a) == key(domain_b)


def test_k6_k7_text_form_keys() -> None:
    topic = SowTopic(spec())
    publish(topic, {"id": 1, "v": "int"})
    publish(topic, {"id": "1", "v": "text"})  # K6: same record
    publish(topic, {"id": 1.0, "v": "float"})  # K7: another record
    assert sorted(doc["v"] for doc in docs(topic).values()) == ["float", "text"]


def test_missing_key_field_is_refused() -> None:
    topic = SowTopic(spec())
    with pytest.raises(InputError, match="key field /id is missing"):
        publish(topic, {"other": 1})
    assert len(topic) == 0


def test_k8_k9_publisher_supplied_keys() -> None:
    topic = SowTopic(spec(keys=()))
    publish(topic, {"a": 1}, sow_key="QUJDMTIz")
    publish(topic, {"a": 2}, sow_key="QUJDMTIz")
    assert [(r.key, orjson.loads(r.payload)) for r in topic.records()] == [("QUJDMTIz", {"a": 2})]
    with pytest.raises(InputError, match="not a Base64 character"):
        publish(topic, {"a": 3}, sow_key="abc$%")
    with pytest.raises(InputError, match="no Key fields and the message carries no SowKey"):
        publish(topic, {"a": 4})


def test_k10_fix_composite_key() -> None:
    topic = SowTopic(spec("trades", "fix", keys=("/55", "/109")))
    publish(topic, b"55=IBM\x01109=US\x0144=1\x01")
    publish(topic, b"55=IBM\x01109=US\x0144=2\x01")
    publish(topic, b"55=IBM\x01109=EU\x0144=3\x01")
    assert len(topic) == 2
    assert {r.payload for r in topic.records()} == {b"55=IBM\x01109=US\x0144=2\x01", b"55=IBM\x01109=EU\x0144=3\x01"}


def test_binary_topics_store_opaque_payloads_by_supplied_key() -> None:
    topic = SowTopic(spec("blobs", "binary", keys=()))
    publish(topic, b"\x00\xff raw", sow_key="AAAA")
    topic.delta_publish(b"delta", timestamp=T0, sow_key="AAAA")  # R5: the literal delta replaces
    assert [r.payload for r in topic.records()] == [b"delta"]
    with pytest.raises(InputError, match="cannot generate keys"):
        SowTopic(spec("blobs", "binary")).publish(b"x", timestamp=T0)


# ---------------------------------------------------------------- delta publish (spec §6)


def test_v4_two_deltas_merge_into_the_stored_record() -> None:
    topic = SowTopic(spec())
    publish(topic, {"id": 735, "customer": "Patrick", "item": 90123, "qty": 1000, "state": "new"})
    topic.delta_publish(b'{"id":735,"inventory":"available"}', timestamp=T0 + 1)
    changes = topic.delta_publish(b'{"id":735,"credit":"approved"}', timestamp=T0 + 2)
    assert changes[0].kind is ChangeKind.UPDATE
    assert by_id(topic)[735] == {"id": 735, "customer": "Patrick", "item": 90123, "qty": 1000, "state": "new",
                                 "inventory": "available", "credit": "approved"}


def test_v6_delta_without_a_stored_record_is_stored_as_it_is() -> None:
    topic = SowTopic(spec())
    assert topic.delta_publish(b'{"id":1,"a":2}', timestamp=T0)[0].kind is ChangeKind.INSERT
    assert by_id(topic) == {1: {"id": 1, "a": 2}}


def test_v1_v7_arrays_replaced_objects_merged() -> None:
    topic = SowTopic(spec())
    publish(topic, {"id": 1, "c": {"x": 1, "y": 2}, "packages": [{"box": "chocolates"}, {"bowl": "noodles"}]})
    topic.delta_publish(b'{"id":1,"c":{"x":9},"packages":[{"basket":"eggs"}]}', timestamp=T0)
    assert by_id(topic)[1] == {"id": 1, "c": {"x": 9, "y": 2}, "packages": [{"basket": "eggs"}]}


def test_v5_fix_delta_merge() -> None:
    topic = SowTopic(spec("fixes", "fix", keys=("/5",)))
    publish(topic, b"1=FOO\x015=TEST1\x01")
    topic.delta_publish(b"5=TEST1\x012=BAR", timestamp=T0)
    assert [r.payload for r in topic.records()] == [b"1=FOO\x015=TEST1\x012=BAR\x01"]


def test_xml_delta_merge_and_attribute_key() -> None:
    topic = SowTopic(spec("alerts", "xml", keys=("/alert/@id",)))
    publish(topic, b'<alert id="1"><type>disk</type><level>2</level></alert>')
    topic.delta_publish(b'<alert id="1"><level>5</level></alert>', timestamp=T0)
    (stored,) = topic.records()
    assert b"<type>disk</type>" in stored.payload and b"<level>5</level>" in stored.payload


# ---------------------------------------------------------------- deletes (seed 003)


def test_sow_delete_by_filter_keys_and_data() -> None:
    store = SowStore([spec(hash_indexes=(("/region",),))])
    for i in range(6):
        store.apply(record(i + 1, Command.PUBLISH, {"id": i, "region": "EMEA" if i % 2 else "APAC", "qty": i * 10}))
    topic = store.topic("orders", "json")
    assert topic is not None
    deleted = store.apply(record(7, Command.SOW_DELETE, {"filter": "/region = 'EMEA' AND /qty > 20"}))
    assert {orjson.loads(c.old.payload)["id"] for c in deleted} == {3, 5}  # type: ignore[union-attr]
    assert all(c.kind is ChangeKind.DELETE for c in deleted)
    key_of_0 = generate_key("orders", (0,))
    store.apply(record(8, Command.SOW_DELETE, {"keys": [key_of_0, "no-such-key"]}))
    store.apply(record(9, Command.SOW_DELETE, {"data": '{"id": 1, "anything": "else"}'}))
    assert sorted(by_id(topic)) == [2, 4]
    store.apply(record(10, Command.SOW_DELETE, {"filter": "1=1"}))
    assert len(topic) == 0


def test_bad_sow_delete_payload_names_the_record() -> None:
    store = SowStore([spec()])
    with pytest.raises(InputError, match="journal record 3 .*exactly one of filter, keys, data"):
        store.apply(record(3, Command.SOW_DELETE, {"filter": "1=1", "keys": []}))
    with pytest.raises(InputError, match="journal record 4 .*not JSON"):
        store.apply(record(4, Command.SOW_DELETE, b"nope"))


# ---------------------------------------------------------------- expiration (seed 003, spec §5)


def test_e1_topic_default_lifetime() -> None:
    topic = SowTopic(spec(expiration=30))
    (change,) = publish(topic, {"id": 1})
    assert change.new is not None and change.new.expires_at == T0 + 30 * SECOND
    assert topic.sweep(T0 + 29 * SECOND) == []
    assert [c.kind for c in topic.sweep(T0 + 30 * SECOND)] == [ChangeKind.EXPIRE]
    assert len(topic) == 0


def test_e2_an_update_restarts_the_lifetime() -> None:
    topic = SowTopic(spec(expiration=30))
    publish(topic, {"id": 1}, expiration=45)
    publish(topic, {"id": 1}, at=T0 + 15 * SECOND, expiration=45)
    assert next(topic.records()).expires_at == T0 + 60 * SECOND
    assert topic.sweep(T0 + 59 * SECOND) == [] and len(topic.sweep(T0 + 60 * SECOND)) == 1


def test_delta_publish_restarts_the_lifetime_from_its_own_header_or_the_default() -> None:
    topic = SowTopic(spec(expiration=30))
    publish(topic, {"id": 1}, expiration=100)
    topic.delta_publish(b'{"id":1,"a":1}', timestamp=T0 + 10 * SECOND)  # A-E1: the topic default, not the old 100 s
    assert next(topic.records()).expires_at == T0 + 40 * SECOND


def test_e3_e4_zero_and_enabled_never_expire() -> None:
    default = SowTopic(spec(expiration=30))
    publish(default, {"id": 1}, expiration=0)  # E3
    enabled = SowTopic(spec(expiration=0))
    publish(enabled, {"id": 1})  # E4: enabled, no header
    publish(enabled, {"id": 2}, expiration=5)
    assert default.sweep(T0 + 10**4 * SECOND) == []
    assert [orjson.loads(c.old.payload)["id"] for c in enabled.sweep(T0 + 10**4 * SECOND)] == [2]  # type: ignore[union-attr]


def test_e5_disabled_topic_keeps_the_header_but_never_expires() -> None:
    topic = SowTopic(spec(expiration=None))
    publish(topic, {"id": 1}, expiration=5)
    (stored,) = topic.records()
    assert stored.expiration == 5 and stored.expires_at == T0 + 5 * SECOND  # saved, not processed
    assert topic.sweep(T0 + 10**4 * SECOND) == []
    publish(topic, {"id": 1, "v": 2}, at=T0 + 100 * SECOND)
    assert len(topic) == 1


def test_a_write_to_a_due_record_expires_it_first() -> None:
    topic = SowTopic(spec(expiration=0))
    publish(topic, {"id": 1, "keep": "old"}, expiration=1)
    changes = topic.delta_publish(b'{"id":1,"new":true}', timestamp=T0 + 2 * SECOND)
    assert [c.kind for c in changes] == [ChangeKind.EXPIRE, ChangeKind.INSERT]
    assert by_id(topic)[1] == {"id": 1, "new": True}  # not merged into the expired record


def test_journaled_expire_removes_the_record() -> None:
    store = SowStore([spec(expiration=0)])
    store.apply(record(1, Command.PUBLISH, {"id": 1}, expiration=5))
    key = generate_key("orders", (1,))
    assert [c.kind for c in store.apply(record(2, Command.EXPIRE, b"", sow_key=key))] == [ChangeKind.EXPIRE]
    assert store.apply(record(3, Command.EXPIRE, b"", sow_key=key)) == []


def test_negative_expiration_is_refused() -> None:
    with pytest.raises(InputError, match="negative"):
        publish(SowTopic(spec()), {"id": 1}, expiration=-1)


@pytest.mark.parametrize("delta", [False, True])
def test_expiration_past_the_last_storable_time_is_refused_before_anything_changes(delta) -> None:
    topic = SowTopic(spec(expiration=0))
    publish(topic, {"id": 1, "v": "old"}, expiration=1)  # due at the next write
    write = topic.delta_publish if delta else topic.publish
    with pytest.raises(InputError, match="ends after the last time a SOW can store") as caught:
        write(b'{"id":1,"v":"new"}', timestamp=T0 + 2 * SECOND, expiration=10**13)
    assert caught.value.code == "SOW_EXPIRATION"
    assert by_id(topic)[1] == {"id": 1, "v": "old"}  # the due record was not expired by the refused write
    longest = ((1 << 63) - 1 - T0) // 1_000_000
    assert publish(topic, {"id": 2}, expiration=longest)[0].new.expires_at <= (1 << 63) - 1


# ---------------------------------------------------------------- history (seed 001, spec §9)


def history_topic(granularity: int = 0, window: int = 3600) -> SowTopic:
    return SowTopic(spec("catalog", keys=("/sku",), history_window=window, history_granularity=granularity))


def as_of(topic: SowTopic, moment: int) -> dict[str, dict]:
    assert topic.history is not None
    return {key: orjson.loads(saved.payload) for key, saved in topic.history.as_of(moment)}  # type: ignore[arg-type]


def test_h1_h2_as_of_returns_the_state_then() -> None:
    topic = history_topic()
    publish(topic, {"sku": 1, "p": 1}, at=T0)
    publish(topic, {"sku": 1, "p": 2}, at=T0 + 300 * SECOND)
    assert [d["p"] for d in as_of(topic, T0 + 180 * SECOND).values()] == [1]
    assert [d["p"] for d in as_of(topic, T0 + 360 * SECOND).values()] == [2]
    assert as_of(topic, T0 - 1) == {}


def test_h3_h4_delete_keeps_earlier_states() -> None:
    topic = history_topic()
    publish(topic, {"sku": 1}, at=T0)
    topic.delete_keys([generate_key("catalog", (1,))], timestamp=T0 + 600 * SECOND)
    assert len(as_of(topic, T0 + 300 * SECOND)) == 1
    assert as_of(topic, T0 + 700 * SECOND) == {} and len(topic) == 0


def test_granularity_keeps_the_last_state_of_each_period() -> None:
    topic = history_topic(granularity=60)
    for second, price in ((0, 1), (10, 2), (50, 3), (70, 4)):
        publish(topic, {"sku": 1, "p": price}, at=T0 + second * SECOND)
    assert topic.history is not None
    assert [orjson.loads(s.payload)["p"] for s in topic.history.states(generate_key("catalog", (1,)))] == [3, 4]  # type: ignore[arg-type]
    assert [d["p"] for d in as_of(topic, T0 + 55 * SECOND).values()] == [3]
    assert as_of(topic, T0 + 20 * SECOND) == {}  # inside the first period, before its last update: coarser than G


def test_h5_window_prunes_and_refuses_older_queries() -> None:
    topic = history_topic(window=3600)
    publish(topic, {"sku": 1, "p": 1}, at=T0)
    publish(topic, {"sku": 1, "p": 2}, at=T0 + 1800 * SECOND)
    publish(topic, {"sku": 2, "p": 9}, at=T0)
    topic.delete_keys([generate_key("catalog", (2,))], timestamp=T0 + 60 * SECOND)
    topic.sweep(T0 + 7200 * SECOND)  # cutoff T0 + 3600 s
    assert [d["p"] for d in as_of(topic, T0 + 3600 * SECOND).values()] == [2]  # the state in effect at the window start
    assert topic.history is not None and topic.history.states(generate_key("catalog", (2,))) == []  # deleted long ago: gone
    with pytest.raises(InputError, match="before the start of the kept history"):
        as_of(topic, T0 + 3000 * SECOND)


# ---------------------------------------------------------------- Pattern topics and routing


def test_pattern_topic_keeps_one_sow_per_concrete_topic() -> None:
    prices = spec("prices", keys=("/sym",), pattern=True, regex=r"^prices\.")
    exact = spec("prices.special", keys=("/sym",))
    store = SowStore([exact, prices])  # declared before the pattern: it wins (spec/config.md §2)
    store.apply(record(1, Command.PUBLISH, {"sym": "IBM", "px": 1}, topic="prices.us"))
    store.apply(record(2, Command.PUBLISH, {"sym": "IBM", "px": 2}, topic="prices.eu"))
    store.apply(record(3, Command.PUBLISH, {"sym": "IBM", "px": 3}, topic="prices.special"))
    store.apply(record(4, Command.PUBLISH, {"sym": "IBM"}, topic="other"))  # no SOW: ignored
    store.apply(record(5, Command.PUBLISH, {"sym": "IBM"}, topic="prices.us", message_type="xml"))  # other type: ignored
    group = store.route("prices.us", "json")
    assert group is not None and group.spec is prices and sorted(group.topics) == ["prices.eu", "prices.us"]
    us, eu = group.topics["prices.us"], group.topics["prices.eu"]
    assert next(us.records()).key == generate_key("prices.us", ("IBM",)) != next(eu.records()).key  # domain: the concrete topic
    assert store.route("prices.special", "json").spec is exact  # type: ignore[union-attr]
    assert store.route("other", "json") is None and store.last_sequence == 5


def test_records_at_or_below_the_group_sequence_are_skipped() -> None:
    store = SowStore([spec()])
    store.apply(record(1, Command.PUBLISH, {"id": 1, "v": 1}))
    store.groups[0].sequence = 5  # as if loaded from a file written at sequence 5
    assert store.apply(record(5, Command.PUBLISH, {"id": 1, "v": 2})) == []
    assert len(store.apply(record(6, Command.PUBLISH, {"id": 1, "v": 3}))) == 1
    assert by_id(store.groups[0].topics["orders"])[1]["v"] == 3


def test_hash_index_lookup_follows_updates_and_deletes() -> None:
    topic = SowTopic(spec(hash_indexes=(("/region",),)))
    publish(topic, {"id": 1, "region": "EMEA"})
    publish(topic, {"id": 2, "region": "EMEA"})
    publish(topic, {"id": 1, "region": "APAC"})
    publish(topic, {"id": 3, "region": ["EMEA", "APAC"]})  # arrays: always candidates
    topic.delete_keys([generate_key("orders", (2,))], timestamp=T0)
    keys = topic.lookup(1, [b"sEMEA"])
    assert sorted(orjson.loads(topic.get(k).payload)["id"] for k in keys) == [3]  # type: ignore[union-attr]

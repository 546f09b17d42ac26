"""Unordered results come in first-store order, in memory and from the SOW file alike (topic.py "order").

A top-n without order_by keeps the first n records, so the broker (memory) and `sow query` (the
file) must agree on the order, not only on the set: through hash-index lookups, SowKeys,
as-of queries, incremental checkpoints and the concrete topics of a Pattern topic.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ampsctl.journal.record import Command, sow_delete_payload
from ampsctl.messages.keys import generate_key
from ampsctl.sow.checkpoint import checkpoint, load_group, write_group
from ampsctl.sow.filequery import query_file
from ampsctl.sow.query import Query, execute, memory_candidates, plan
from ampsctl.sow.sowfile import SowFile
from ampsctl.sow.store import SowStore, TopicGroup
from sow_helpers import SECOND, T0, record, spec


class Feed:
    """A store fed with numbered publishes, queried in memory and from its checkpointed file."""

    def __init__(self, tmp_path: Path, topic_spec) -> None:
        self.store = SowStore([topic_spec])
        self.group = self.store.groups[0]
        self.path = tmp_path / "orders.sow"
        self.sequence = 0

    def publish(self, doc: dict, topic: str = "orders", **fields) -> None:
        self.sequence += 1
        self.store.apply(record(self.sequence, Command.PUBLISH, doc, topic=topic, **fields))

    def delete(self, number: int) -> None:
        self.sequence += 1
        self.store.apply(record(self.sequence, Command.SOW_DELETE, sow_delete_payload(keys=[generate_key("orders", (number,))])))

    def checkpoint(self, *, whole: bool = False) -> None:
        (write_group if whole else checkpoint)(self.path, self.group, sequence=self.sequence, sync=False)

    def memory(self, query: Query, group: TopicGroup | None = None) -> list[tuple[str, int]]:
        group = group or self.group
        chosen = plan(query, group.indexer)
        rows = execute(chosen, group.payloads, memory_candidates(chosen, group.topics.values()), expiration_enabled=False)
        return [(row.record.topic, orjson.loads(row.record.payload)["id"]) for row in rows]

    def file(self, query: Query) -> list[tuple[str, int]]:
        with SowFile.open(self.path) as sow:
            return [(row.record.topic, orjson.loads(row.record.payload)["id"]) for row in query_file(sow, query).rows]

    def agree(self, query: Query) -> list[tuple[str, int]]:
        memory = self.memory(query)
        assert self.file(query) == memory
        reloaded = TopicGroup(self.group.spec)
        load_group(self.path, reloaded)  # a restarted broker answers in the same order too
        assert self.memory(query, reloaded) == memory
        return memory


def ids(found: list[tuple[str, int]]) -> list[int]:
    return [number for _, number in found]


def test_a_hash_index_lookup_keeps_first_store_order(tmp_path: Path) -> None:
    feed = Feed(tmp_path, spec(hash_indexes=(("/a",),)))
    for doc in ({"id": 1, "a": "x"}, {"id": 2, "a": "y"}, {"id": 3, "a": "x"}, {"id": 2, "a": "x"}, {"id": 1, "a": "x", "v": 2}):
        feed.publish(doc)  # 1 is updated in place; 2 moves into the 'x' bucket but keeps its place
    feed.checkpoint()
    assert ids(feed.agree(Query(filter="/a = 'x'"))) == [1, 2, 3]
    assert ids(feed.agree(Query(filter="/a IN ('y', 'x')", top_n=1))) == [1]
    assert ids(feed.agree(Query(filter="/a = 'x'", order_by="/a", top_n=2))) == [1, 2]  # ties keep the source order


def test_sow_keys_come_in_first_store_order_whatever_order_they_are_asked_in(tmp_path: Path) -> None:
    feed = Feed(tmp_path, spec())
    for number in range(1, 6):
        feed.publish({"id": number})
    feed.checkpoint()
    keys = tuple(generate_key("orders", (number,)) for number in (5, 3, 1, 3))
    assert ids(feed.agree(Query(keys=keys))) == [1, 3, 5]
    assert ids(feed.agree(Query(keys=keys, top_n=1))) == [1]


def test_incremental_checkpoints_insert_new_rows_in_first_store_order(tmp_path: Path) -> None:
    feed = Feed(tmp_path, spec())
    feed.publish({"id": 0})
    feed.checkpoint(whole=True)
    for number in range(1, 200):  # a set of dirty keys iterates in hash order, not this one
        feed.publish({"id": number})
    feed.publish({"id": 0, "v": 1})  # an update keeps its place
    feed.checkpoint()
    assert ids(feed.agree(Query(filter="/id >= 0"))) == list(range(200))
    assert ids(feed.agree(Query(top_n=3))) == [0, 1, 2]


def three_checkpointed(tmp_path: Path) -> Feed:
    feed = Feed(tmp_path, spec())
    for number in (1, 2, 3):
        feed.publish({"id": number})
    feed.checkpoint()
    return feed


def test_a_record_stored_again_after_a_delete_goes_last(tmp_path: Path) -> None:
    feed = three_checkpointed(tmp_path)
    feed.delete(1)
    feed.publish({"id": 1})
    feed.checkpoint()
    assert ids(feed.agree(Query())) == [2, 3, 1]


@pytest.mark.parametrize("whole", [True, False])
def test_the_concrete_topics_of_a_pattern_topic_interleave_in_first_store_order(tmp_path: Path, whole: bool) -> None:
    feed = Feed(tmp_path, spec("orders\\..*", pattern=True))
    feed.publish({"id": 1}, topic="orders.b")
    feed.publish({"id": 2}, topic="orders.a")
    feed.checkpoint(whole=True)
    feed.publish({"id": 3}, topic="orders.b")
    feed.publish({"id": 4}, topic="orders.a")
    feed.publish({"id": 5}, topic="orders.b")
    feed.publish({"id": 1, "v": 2}, topic="orders.b")
    feed.checkpoint(whole=whole)
    expected = [("orders.b", 1), ("orders.a", 2), ("orders.b", 3), ("orders.a", 4), ("orders.b", 5)]
    assert feed.agree(Query()) == expected
    assert feed.agree(Query(filter="/id > 2", top_n=2)) == expected[2:4]


def test_as_of_results_come_by_first_kept_state_in_memory_and_file(tmp_path: Path) -> None:
    feed = Feed(tmp_path, spec(history_window=3600, history_granularity=0))
    for number in (5, 2, 9, 1):  # SOW keys (hashes) sort differently from this order
        feed.publish({"id": number}, timestamp=T0 + number)
    feed.publish({"id": 2, "v": 1}, timestamp=T0 + 20)
    feed.checkpoint()
    moment = T0 + 30 * SECOND
    assert ids(feed.agree(Query(as_of=moment))) == [5, 2, 9, 1]
    assert ids(feed.agree(Query(as_of=moment, top_n=1))) == [5]


def test_the_broker_answers_a_pattern_topic_in_the_files_order(tmp_path: Path) -> None:
    from ampsctl.broker.core.queries import run

    feed = Feed(tmp_path, spec("orders\\..*", pattern=True))
    for number, topic in ((1, "orders.b"), (2, "orders.a"), (3, "orders.b")):
        feed.publish({"id": number}, topic=topic)
    feed.checkpoint()
    chosen = plan(Query(), feed.group.indexer)
    result = run(chosen, list(feed.group.topics.values()), now=T0 + 100 * SECOND, top_n=2)
    assert [orjson.loads(row.record.payload)["id"] for row in result.rows] == [1, 2] == ids(feed.file(Query(top_n=2)))


def test_as_of_results_of_several_concrete_topics_merge_in_the_files_order(tmp_path: Path) -> None:
    feed = Feed(tmp_path, spec("orders\\..*", pattern=True, history_window=3600, history_granularity=0))
    for number, topic in ((1, "orders.b"), (2, "orders.a"), (3, "orders.b")):
        feed.publish({"id": number}, topic=topic, timestamp=T0 + number)
    feed.checkpoint()
    assert ids(feed.agree(Query(as_of=T0 + 10 * SECOND))) == [1, 2, 3]


def test_a_failed_checkpoint_keeps_a_record_stored_again_meanwhile_in_its_new_place(tmp_path: Path) -> None:
    from ampsctl.sow.checkpoint import take_snapshot

    feed = three_checkpointed(tmp_path)
    feed.delete(1)
    snapshot = take_snapshot(feed.group, sequence=feed.sequence, rewrite=False)  # holds 1 as gone
    feed.publish({"id": 1})  # stored again while the snapshot is being written
    snapshot.restore()  # the write failed (or was handed back at shutdown)
    feed.checkpoint()
    assert ids(feed.agree(Query())) == [2, 3, 1]

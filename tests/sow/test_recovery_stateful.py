"""The stateful model test of issue 6: journal + SOW files + recovery against a plain dict model.

A broker is played by the test: every operation is appended to a real journal and applied to
a live ``SowStore``; ``checkpoint`` writes the persistent topic's SOW file (only after a commit,
so a file never covers unacknowledged records); ``sweep`` expires due records and journals the
expirations, as the broker does; ``crash_and_reopen`` kills the writer without a commit, cuts
the last segment at an arbitrary byte after the last synced point (what an OS may lose),
maybe flips a byte of or truncates the SOW file while the broker is down, then restarts:
the writer recovers the journal (cutting a torn tail), ``recovery.recover`` the SOW, and the
start-up expirations are journaled. (One rule rather than four, so that no step is drawn
only to be thrown away by a precondition.)

The model is an independent statement of the semantics: per topic, ``id -> (document,
expires_at)`` after each journal record, with a recursive dict merge for delta publish.

Checked after every step (and inside ``crash_and_reopen`` while the broker is down):
* ``recover()`` from the files on disk (SOW file + journal, at the current time) equals the model
  after the records the journal holds, with due records left out (orders processes expiration);
* the live store equals the model after every appended record;
* the generated SOW keys are those of ``messages.keys``.
Checked on every append and reopen: sequences run 1, 2, 3 ... with no gap; after a crash the
journal holds a prefix of what was appended, at least every acknowledged record (a torn tail
is truncated, never skipped), and appends continue right after it.

Nothing is fsynced (FsyncPolicy.NEVER, ``sync=False``): the crash is simulated by cutting files,
so the durable point is where the last commit ended, whatever the disk does.

Profiles (tests/sow/sow_profiles.py): ``sow-default`` for ``make test``, ``dev`` (1,000
examples) with ``HYPOTHESIS_PROFILE=dev``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from sow_profiles import SOW_PROFILE

from ampsctl.journal.codec import HEADER_SIZE
from ampsctl.journal.reader import JournalReader
from ampsctl.journal.record import Command, JournalRecord, sow_delete_payload
from ampsctl.journal.writer import FsyncPolicy, JournalWriter
from ampsctl.messages.keys import generate_key
from ampsctl.sow.checkpoint import checkpoint
from ampsctl.sow.recovery import recover, sow_path
from ampsctl.sow.spec import TopicSpec
from ampsctl.sow.store import SowStore

SECOND = 1_000_000
SEGMENT_BYTES = 900
ORDERS = TopicSpec("orders", "json", ("/id",), None, 0, (("/g",),), ("/n",), None, None, False, True, "epoch", "sow/%n.sow")
TICKS = TopicSpec("ticks", "json", ("/id",), None, None, (), (), None, None, False, False, "epoch", None)
SPECS = [ORDERS, TICKS]
TOPICS = ("orders", "ticks")
EXPIRING = {"orders": True, "ticks": False}  # Expiration enabled / disabled

State = dict[str, dict[int, tuple[dict[str, Any], int | None]]]  # topic -> id -> (document, expires_at)

ids = st.integers(0, 3)
topics = st.sampled_from(TOPICS)
expirations = st.none() | st.integers(0, 3)
nested = st.fixed_dictionaries({}, optional={"x": st.integers(0, 3), "y": st.sampled_from(["p", "q"])})
documents = st.fixed_dictionaries({"n": st.integers(0, 9), "g": st.sampled_from(["a", "b"])}, optional={"d": nested})
deltas = st.fixed_dictionaries({}, optional={"n": st.integers(0, 9), "g": st.sampled_from(["a", "b"]), "d": nested})


# ---------------------------------------------------------------- the model


def merge(base: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for name, value in delta.items():
        out[name] = merge(out[name], value) if isinstance(value, dict) and isinstance(out.get(name), dict) else value
    return out


def lifetime(timestamp: int, expiration: int | None) -> int | None:
    return timestamp + expiration * SECOND if expiration else None  # topic defaults: none


def due(state: State, now: int) -> dict[str, set[int]]:
    return {topic: {i for i, (_, at) in records.items() if EXPIRING[topic] and at is not None and at <= now}
            for topic, records in state.items()}


def model_apply(state: State, record: JournalRecord) -> State:
    topic = record.topic
    records = dict(state[topic])
    now = record.timestamp
    if record.command in (Command.PUBLISH, Command.DELTA_PUBLISH):
        doc = orjson.loads(record.payload)
        old = records.get(doc["id"])
        if old is not None and EXPIRING[topic] and old[1] is not None and old[1] <= now:
            old = None  # due: expired before the write
        if record.command is Command.DELTA_PUBLISH and old is not None:
            doc = merge(old[0], doc)
        records[doc["id"]] = (doc, lifetime(now, record.expiration))
    elif record.command is Command.SOW_DELETE:
        what = orjson.loads(record.payload)
        if "keys" in what:
            for i in [i for i in records if key_of(topic, i) in what["keys"]]:
                del records[i]
        elif "data" in what:
            records.pop(orjson.loads(what["data"])["id"], None)
        else:
            limit = int(what["filter"].split(">")[1])
            for i in [i for i, (doc, _) in records.items() if doc.get("n") is not None and doc["n"] > limit]:
                del records[i]
    elif record.command is Command.EXPIRE:
        for i in [i for i in records if key_of(topic, i) == record.sow_key]:
            del records[i]
    return {**state, topic: records}


def view(state: State, now: int) -> State:
    gone = due(state, now)
    return {topic: {i: entry for i, entry in records.items() if i not in gone[topic]} for topic, records in state.items()}


def key_of(topic: str, i: int) -> str:
    return generate_key(topic, (i,))


def observed(store: SowStore, now: int) -> State:
    found: State = {topic: {} for topic in TOPICS}
    for topic in store.topics():
        for record in topic.records():
            if topic.spec.expiration_enabled and record.expired(now):
                continue
            doc = orjson.loads(record.payload)
            assert record.key == key_of(topic.topic, doc["id"])
            found[topic.topic][doc["id"]] = (doc, record.expires_at)
    return found


# ---------------------------------------------------------------- the machine


class SowRecovery(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="sow-recovery-"))
        self.journal = self.base / "journal"
        self.writer: JournalWriter | None = JournalWriter.open(self.journal, segment_bytes=SEGMENT_BYTES, fsync=FsyncPolicy.NEVER)
        self.live: SowStore | None = SowStore(SPECS)
        self.appended: list[JournalRecord] = []
        self.states: list[State] = [{topic: {} for topic in TOPICS}]
        self.acknowledged = 0
        self.durable = (self.writer.path, HEADER_SIZE)
        self.now = 100 * SECOND

    def teardown(self) -> None:
        if self.writer is not None:
            self.writer.close()
        shutil.rmtree(self.base, ignore_errors=True)

    def _append(self, command: Command, topic: str, payload: bytes, *, sow_key: str | None = None,
                expiration: int | None = None) -> None:
        assert self.writer is not None and self.live is not None
        record = self.writer.append(self.now, command, topic, "json", payload, sow_key=sow_key, expiration=expiration)
        assert record.sequence == len(self.appended) + 1  # strictly increasing, no gap, never reused while acknowledged
        self.appended.append(record)
        self.states.append(model_apply(self.states[-1], record))
        self.live.apply(record)

    # ------------------------------------------------ broker operations

    @rule(topic=topics, i=ids, doc=documents, expiration=expirations)
    def publish(self, topic: str, i: int, doc: dict[str, Any], expiration: int | None) -> None:
        self._append(Command.PUBLISH, topic, orjson.dumps({"id": i, **doc}), expiration=expiration)

    @rule(topic=topics, i=ids, delta=deltas, expiration=expirations)
    def delta_publish(self, topic: str, i: int, delta: dict[str, Any], expiration: int | None) -> None:
        self._append(Command.DELTA_PUBLISH, topic, orjson.dumps({"id": i, **delta}), expiration=expiration)

    @rule(topic=topics, chosen=st.lists(ids, max_size=3))
    def delete_keys(self, topic: str, chosen: list[int]) -> None:
        self._append(Command.SOW_DELETE, topic, sow_delete_payload(keys=[key_of(topic, i) for i in chosen] + ["999"]))

    @rule(topic=topics, limit=st.integers(-1, 9))
    def delete_filter(self, topic: str, limit: int) -> None:
        self._append(Command.SOW_DELETE, topic, sow_delete_payload(filter=f"/n > {limit}"))

    @rule(topic=topics, i=ids)
    def delete_data(self, topic: str, i: int) -> None:
        self._append(Command.SOW_DELETE, topic, sow_delete_payload(data=orjson.dumps({"id": i, "n": 0}).decode()))

    @rule(seconds=st.integers(0, 4))
    def advance(self, seconds: int) -> None:
        self.now += seconds * SECOND

    @rule()
    def sweep(self) -> None:
        assert self.live is not None
        expected = due(self.states[-1], self.now)
        changes = self.live.sweep(self.now)
        assert {(c.topic, orjson.loads(c.old.payload)["id"]) for c in changes if c.old} == {
            (topic, i) for topic, found in expected.items() for i in found}
        for change in changes:  # the broker journals every expiration
            self._append(Command.EXPIRE, change.topic, b"", sow_key=change.key)

    @rule()
    def commit(self) -> None:
        assert self.writer is not None
        self.writer.commit()
        self.acknowledged = len(self.appended)
        self.durable = (self.writer.path, self.writer.path.stat().st_size)

    @rule()
    def checkpoint(self) -> None:
        self.commit()  # a SOW file only ever covers acknowledged records
        assert self.live is not None
        group = self.live.groups[0]
        checkpoint(sow_path(ORDERS, self.base), group, sequence=self.live.group_sequence(group), sync=False)

    # ------------------------------------------------ failures

    @rule(fraction=st.floats(0, 1), damage=st.sampled_from(["none", "flip", "truncate"]),
          where=st.floats(0, 1), bit=st.integers(0, 7))
    def crash_and_reopen(self, fraction: float, damage: str, where: float, bit: int) -> None:
        """Crash, maybe damage the SOW file while down, check recovery while down, then restart."""
        self._crash(fraction)
        if damage != "none":
            self._damage(damage == "flip", where, bit)
        self.recovered_equals_model()  # recovery from what the crash left, before the writer repairs anything
        self._reopen()

    def _crash(self, fraction: float) -> None:
        assert self.writer is not None
        last = self.writer.path
        self.writer._release()  # no commit, no index: like kill -9
        self.writer = self.live = None
        size = last.stat().st_size
        path, synced = self.durable
        floor = synced if path == last else HEADER_SIZE  # a later segment was synced with its header
        with open(last, "r+b") as stream:
            stream.truncate(floor + int((size - floor) * fraction))

    def _damage(self, flip: bool, where: float, bit: int) -> None:
        """Damage the SOW file while the broker is down: recovery must rebuild it from the journal.

        A flip lands past the SQLite header (a file that is no longer recognisably a SOW file is
        refused, not replaced: test_sowfile.py), half the time inside a stored message, where
        only the row CRC can notice it; a truncation may cut anywhere.
        """
        path = sow_path(ORDERS, self.base)
        if path is None or not path.exists():
            return
        data = path.read_bytes()
        if not flip or len(data) <= 100:
            path.write_bytes(data[: int(len(data) * where)])
            return
        messages = [found for found in range(len(data)) if data.startswith(b'{"id":', found)]
        if messages and bit % 2:
            offset = messages[int(where * len(messages)) % len(messages)] + 2 + bit  # inside the message text
        else:
            offset = 100 + int((len(data) - 101) * where)
        damaged = bytearray(data)
        damaged[offset] ^= 1 << bit
        path.write_bytes(bytes(damaged))

    def _reopen(self) -> None:
        self.writer = JournalWriter.open(self.journal, segment_bytes=SEGMENT_BYTES, fsync=FsyncPolicy.NEVER)
        held = list(JournalReader(self.journal).scan())
        assert len(held) >= self.acknowledged  # nothing acknowledged is lost
        assert held == self.appended[: len(held)]  # a prefix: the torn tail was cut, nothing skipped or invented
        assert self.writer.last_sequence == len(held)
        del self.appended[len(held):]
        del self.states[len(held) + 1:]
        self.durable = (self.writer.path, self.writer.path.stat().st_size)
        result = recover(SPECS, journal=self.journal, now=self.now, base_dir=self.base)
        self.live = result.store
        assert {(c.topic, orjson.loads(c.old.payload)["id"]) for c in result.expired if c.old} == {
            (topic, i) for topic, found in due(self.states[-1], self.now).items() for i in found}
        for change in result.expired:  # start-up expirations are journaled too
            self._append(Command.EXPIRE, change.topic, b"", sow_key=change.key)

    # ------------------------------------------------ invariants

    @invariant()
    def recovered_equals_model(self) -> None:
        held = JournalReader(self.journal).last_sequence
        assert held >= self.acknowledged
        result = recover(SPECS, journal=self.journal, now=self.now, base_dir=self.base)
        assert observed(result.store, self.now) == view(self.states[held], self.now)

    @invariant()
    def live_equals_model(self) -> None:
        if self.live is not None:
            assert observed(self.live, self.now) == view(self.states[-1], self.now)


SowRecovery.TestCase.settings = SOW_PROFILE
TestSowRecovery = SowRecovery.TestCase


def test_profile_is_selected_by_environment() -> None:
    expected = 1000 if os.environ.get("HYPOTHESIS_PROFILE") == "dev" else 300
    assert SOW_PROFILE.max_examples == expected

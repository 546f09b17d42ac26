"""conflation=<interval> and conflation_key over real sockets: the latest state per key per interval (§8.2)."""

from __future__ import annotations

import time
from pathlib import Path

import orjson

from e2e_helpers import connect, json_body, w


def test_conflated_subscriber_gets_the_latest_state_at_most_once_per_interval(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pub, sub, plain_client = await connect(uri, "pub"), await connect(uri, "sub"), await connect(uri, "plain")
        conflated = await w(sub.subscribe("orders", options="conflation=100ms"))
        plain = await w(plain_client.subscribe("orders"))
        started = time.monotonic()
        for v in range(20):
            await pub.publish("orders", orjson.dumps({"id": 1, "v": v}))
        await pub.publish("orders", b'{"id":2,"v":0}')
        await w(pub.flush())
        elapsed = time.monotonic() - started
        assert [json_body(await w(plain.next()))["v"] for _ in range(21)] == [*range(20), 0]  # not delayed

        arrivals: list[tuple[float, dict]] = []
        while not any(body == {"id": 1, "v": 19} for _, body in arrivals) or len({b["id"] for _, b in arrivals}) < 2:
            message = await w(conflated.next())
            arrivals.append((time.monotonic(), json_body(message)))
        ones = [(t, b["v"]) for t, b in arrivals if b["id"] == 1]
        assert [v for _, v in ones] == sorted(v for _, v in ones)  # the latest wins, in order
        assert len(ones) <= 2 + int(elapsed / 0.1)  # at most one per interval (the spans the publishing took)
        assert all(b - a >= 0.09 for (a, _), (b, _) in zip(ones, ones[1:]))
        await w(pub.publish("orders", b'{"id":3,"v":0}', ack="processed"))
        assert json_body(await w(conflated.next())) == {"id": 3, "v": 0}  # nothing else was pending

    broker_run(scenario)


def test_conflated_delta_subscription_merges_the_deltas_and_conflation_key_groups(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pub, sub = await connect(uri, "pub"), await connect(uri, "sub")
        await w(pub.publish("orders", b'{"id":1,"a":1,"b":1,"c":1}', ack="processed"))
        deltas = await w(sub.subscribe("orders", delta=True, options="conflation=500ms"))
        by_desk = await w(sub.subscribe("trades", options="conflation=50ms,conflation_key=[/desk]"))
        await pub.publish("orders", b'{"id":1,"a":2}', delta=True)
        await pub.publish("orders", b'{"id":1,"b":3}', delta=True)
        for n, desk in enumerate(("x", "y", "x", "x")):
            await pub.publish("trades", orjson.dumps({"desk": desk, "n": n}))
        await w(pub.flush())
        assert json_body(await w(deltas.next())) == {"id": 1, "a": 2, "b": 3}
        seen: dict[str, list[int]] = {"x": [], "y": []}
        while seen["x"][-1:] != [3] or seen["y"][-1:] != [1]:
            body = json_body(await w(by_desk.next()))
            seen[body["desk"]].append(body["n"])
        assert seen["y"] == [1] and seen["x"] == sorted(set(seen["x"]))  # per desk: the latest, never repeated

    broker_run(scenario)


def test_conflated_delta_carries_every_field_that_changed_in_the_interval_even_back_to_its_value(broker_run) -> None:
    """Seed 004, "Conflated Subscriptions and Delta Subscribe": the delivered delta is the merge of
    the interval's deltas, so a field that changed and changed back is in it, with its last value.
    The interval is an hour: a replace releases what the subscription holds, no clock involved."""
    async def scenario(uri: str, _: Path) -> None:
        pub, sub = await connect(uri, "pub"), await connect(uri, "sub")
        await w(pub.publish("orders", b'{"id":99,"status":"open","notes":"none","xref":82}', ack="processed"))
        deltas = await w(sub.subscribe("orders", delta=True, options="conflation=1h", sub_id="d"))
        for update in (b'{"id":99,"status":"questioned","notes":"none","xref":82}',
                       b'{"id":99,"status":"questioned","notes":"jcarlo hold","xref":82}',
                       b'{"id":99,"status":"cleared","notes":"none","xref":82}',
                       b'{"id":99,"status":"open","notes":"none","xref":82}'):
            await pub.publish("orders", update)
        await w(pub.flush("processed"))
        await w(sub.subscribe("orders", delta=True, options="conflation=1h,replace", sub_id="d"))
        assert json_body(await w(deltas.next())) == {"id": 99, "status": "open", "notes": "none"}

    broker_run(scenario)

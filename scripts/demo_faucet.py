"""`make demo`, faucet part: two publishers and three subscribers on a running broker.

The broker runs samples/amps.xml, whose amps-action-on-manifold-affinity action announces on
`symbol_faucet_control` which publisher should produce each `/symbols/` topic subscribers are
interested in. Each publisher subscribes to the control topic with a filter on its own name
(so it sees only its own assignments) and, like a real faucet publisher, publishes a price to
every topic it is assigned. Usage: python scripts/demo_faucet.py URI
"""

from __future__ import annotations

import asyncio
import sys

import orjson

from ampsctl.client import Client, ClientSubscription

STEP = 5.0  # seconds any one wait may take


async def drain(name: str, control: ClientSubscription, client: Client, quiet: float = 0.3) -> None:
    """Print the control messages a publisher has received so far, and act on each assign."""
    while True:
        try:
            message = await asyncio.wait_for(control.next(), quiet)
        except TimeoutError:
            return
        event = orjson.loads(message.data)
        print(f"  {name} <- {event['event']:<11} {event['topic']}")
        if event["event"] == "assign":
            await client.publish(event["topic"], orjson.dumps({"symbol": event["topic"].rsplit("/", 1)[1],
                                                               "price": 100.0, "by": name}))


async def step(title: str, publishers: dict[str, tuple[Client, ClientSubscription]]) -> None:
    print(title)
    for name, (client, control) in publishers.items():
        await drain(name, control, client)


async def main(uri: str) -> None:
    publishers: dict[str, tuple[Client, ClientSubscription]] = {}
    for name in ("publisher-A", "publisher-B"):
        client = await asyncio.wait_for(Client.connect(uri, name=name), STEP)
        control = await asyncio.wait_for(
            client.subscribe("symbol_faucet_control", filter=f"/publisher = '{name}'"), STEP)
        publishers[name] = (client, control)
    print("publisher-A and publisher-B subscribed to symbol_faucet_control (they are now eligible)")

    subscribers = {name: await asyncio.wait_for(Client.connect(uri, name=name), STEP)
                   for name in ("subscriber-1", "subscriber-2", "subscriber-3")}
    interest = {"subscriber-1": ["/symbols/AAPL", "/symbols/MSFT"], "subscriber-2": ["/symbols/IBM"],
                "subscriber-3": ["/symbols/AAPL", "/symbols/ORCL"]}
    feeds = {}
    for name, topics in interest.items():
        for topic in topics:
            feeds[(name, topic)] = await asyncio.wait_for(subscribers[name].subscribe(topic), STEP)
    await step("three subscribers show interest in 4 topics (the least loaded publisher gets each new one):",
               publishers)
    for (name, topic), feed in feeds.items():
        price = orjson.loads((await asyncio.wait_for(feed.next(), STEP)).data)
        print(f"  {name} got {topic} price {price['price']} from {price['by']}")

    await subscribers["subscriber-2"].close()
    await step("subscriber-2 disconnects (nobody else wants /symbols/IBM):", publishers)

    client, _ = publishers.pop("publisher-A")
    await client.close()
    await step("publisher-A disconnects (its topics that still have interest move to publisher-B):",
               publishers)

    for client in [*subscribers.values(), *(c for c, _ in publishers.values())]:
        await client.close()


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(sys.argv[1]), 60))

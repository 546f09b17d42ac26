"""The compact notation of tests/affinity/scenarios/*.toml, so a scenario reads like a script.

Events, one per line (``#`` starts a comment)::

    + CONNECTION/CLIENT SUB_ID TOPIC [OPTIONS]    subscribe (OPTIONS: an AMPS options string)
    - CONNECTION SUB_ID                           unsubscribe
    x CONNECTION                                  disconnect

Affinity events, one per line::

    LINE ACTION TOPIC [pub=CLIENT@CONNECTION] [sub=CLIENT@CONNECTION]
"""

from __future__ import annotations

from ampsctl.affinity.model import AffinityEvent, Disconnect, Subscribe, SubscriptionEvent, Unsubscribe
from ampsctl.options import parse_options


def parse_script(text: str) -> list[SubscriptionEvent]:
    events: list[SubscriptionEvent] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].split()
        if not line:
            continue
        match line:
            case ["+", who, sub_id, topic, *options]:
                connection, client = who.split("/", 1)
                events.append(Subscribe(connection, client, topic, sub_id, parse_options(" ".join(options))))
            case ["-", connection, sub_id]:
                events.append(Unsubscribe(connection, sub_id))
            case ["x", connection]:
                events.append(Disconnect(connection))
            case _:
                raise ValueError(f"bad scenario line: {raw!r}")
    return events


def show(line: int, event: AffinityEvent) -> str:
    parts = [str(line), event.action.value, event.topic]
    if event.client is not None:
        parts.append(f"pub={event.client}@{event.connection}")
    if event.subscriber_client is not None:
        parts.append(f"sub={event.subscriber_client}@{event.subscriber_connection}")
    return " ".join(parts)


def expected_lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]

"""The values the faucet engine takes and returns: settings, subscription events, affinity events.

The variable names are exactly those of seed 000 (amps-action-on-manifold-affinity), because
Do actions substitute them into payloads as ``{{AMPS_TOPIC}}`` and so on.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple


class Announcements(enum.Enum):
    """How many events the module emits (seed 000, ``Announcements``)."""

    DEFAULT = "default"  # the minimum to start and stop publishing
    ALL = "all"  # every transition, once per interested subscriber


class AffinityAction(enum.Enum):
    ASSIGN = "assign"
    UNASSIGN = "unassign"
    NO_HANDLERS = "no_handlers"


class Cause(enum.Enum):
    """Why an event was emitted; not part of the seed's variables, used for summaries."""

    SUBSCRIBE = "subscribe"
    UNSUBSCRIBE = "unsubscribe"
    PUBLISHER_LOST = "publisher_lost"
    PUBLISHER_JOINED = "publisher_joined"


@dataclass(frozen=True, slots=True)
class AffinitySettings:
    """The On step's options. ``subscription_topic`` must already be a valid PCRE."""

    control_topic: str
    subscription_topic: str
    announcements: Announcements = Announcements.DEFAULT
    coverage_option: str | None = None


# Subscription events are named tuples, not frozen dataclasses: an event file holds millions
# and a frozen dataclass pays object.__setattr__ per field. The event kinds have different
# lengths, so no two kinds ever compare equal.


class Subscribe(NamedTuple):
    """A subscribe command seen by the instance; ``options`` is the parsed ``opts`` header."""

    connection: str
    client: str
    topic: str
    sub_id: str
    options: Mapping[str, str | None] = MappingProxyType({})


class Unsubscribe(NamedTuple):
    connection: str
    sub_id: str


class Disconnect(NamedTuple):
    connection: str


SubscriptionEvent = Subscribe | Unsubscribe | Disconnect


class AffinityEvent(NamedTuple):
    """One run of the action. The publisher fields are None for ``no_handlers``; the subscriber
    fields are set only with ``Announcements=all``, and always together.

    A named tuple rather than a frozen dataclass: the engine makes one per emitted event, and
    a million of them should not cost a second of ``object.__setattr__``.
    """

    action: AffinityAction
    topic: str
    client: str | None = None
    connection: str | None = None
    subscriber_client: str | None = None
    subscriber_connection: str | None = None
    cause: Cause = Cause.SUBSCRIBE

    def variables(self) -> dict[str, str]:
        """The AMPS context variables this event sets; omitted ones are absent."""
        action, topic, client, connection, subscriber_client, subscriber_connection, _cause = self
        # _value_, the member's plain attribute: .value and hashing a member run Python code.
        out = {"AMPS_AFFINITY_ACTION": action._value_, "AMPS_TOPIC": topic}
        if client is not None and connection is not None:
            out["AMPS_CLIENT_NAME"] = client
            out["AMPS_CONNECTION_NAME"] = connection
        if subscriber_client is not None and subscriber_connection is not None:
            out["AMPS_SUBSCRIBER_CLIENT_NAME"] = subscriber_client
            out["AMPS_SUBSCRIBER_CONNECTION_NAME"] = subscriber_connection
        return out


VARIABLES = (
    "AMPS_AFFINITY_ACTION",
    "AMPS_TOPIC",
    "AMPS_CLIENT_NAME",
    "AMPS_CONNECTION_NAME",
    "AMPS_SUBSCRIBER_CLIENT_NAME",
    "AMPS_SUBSCRIBER_CONNECTION_NAME",
)


@dataclass(frozen=True, slots=True)
class PublisherState:
    """An eligible publisher as the engine sees it (for summaries and tests)."""

    connection: str
    client: str
    activation: int
    topics: tuple[str, ...]
    coverage: tuple[str | None, ...]  # the PCREs of its counting control subscriptions; None covers all

    @property
    def load(self) -> int:
        return len(self.topics)

"""What the broker core needs to know from the configuration, as a plain immutable value.

``CoreSettings`` is built by ``ampsctl.broker.settings`` from a config (or directly by tests);
the core never reads the config, files or the environment itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

import regex

from ampsctl.filter.regexes import has_metachars

if TYPE_CHECKING:
    from ampsctl.actions.plan import ActionPlan

SERVER_VERSION = "5.3.4.0:ampsctl"  # §4.3: the broker answers with its own version string


@dataclass(frozen=True, slots=True)
class RecordedTopics:
    """Which (topic, message type) pairs the transaction log records (TransactionLog/Topic).

    ``enabled`` is False when the config has no TransactionLog at all: nothing is journaled and
    ``persisted`` acks are sent as soon as a command is processed (§5.2 [REC]).
    """

    enabled: bool = False
    literal: frozenset[tuple[str, str | None]] = frozenset()  # (name, message type or None = any)
    patterns: tuple[tuple[str, str | None], ...] = ()  # (regex, message type or None)

    @classmethod
    def from_entries(cls, entries: list[tuple[str, str | None]]) -> RecordedTopics:
        literal = frozenset((name, mtype) for name, mtype in entries if not has_metachars(name))
        patterns = tuple((name, mtype) for name, mtype in entries if has_metachars(name))
        return cls(True, literal, patterns)

    def covers(self, topic: str, message_type: str) -> bool:
        if not self.enabled:
            return False
        if (topic, message_type) in self.literal or (topic, None) in self.literal:
            return True
        for pattern, mtype in self.patterns:
            if mtype in (None, message_type):
                try:
                    if regex.search(pattern, topic, timeout=0.5) is not None:
                        return True
                except (regex.error, TimeoutError):
                    continue  # the linter reports a bad txlog regex; it records nothing
        return False


NOTHING_RECORDED = RecordedTopics()


@dataclass(frozen=True, slots=True)
class CoreSettings:
    """Broker behaviour that the config (or the command line) decides."""

    message_type: str = "json"  # the one message type the local broker serves (§1.2 [REC])
    require_logon: bool = True  # §4.1 [REC]
    # user -> password; None = accept any credentials (§4.1 [REC] default)
    users: Mapping[str, str] | None = None
    recorded: RecordedTopics = NOTHING_RECORDED
    user_options: frozenset[str] = frozenset()  # option names besides udo_* (CoverageSubsetOption)
    server_version: str = SERVER_VERSION
    # A client that asked for heartbeats and sent nothing for this many intervals is dropped (§4.4).
    heartbeat_grace: int = 2
    actions: ActionPlan | None = None  # the config's actions the broker runs (action_runner.py)
    _recorded_cache: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.users is not None and not isinstance(self.users, MappingProxyType):
            object.__setattr__(self, "users", MappingProxyType(dict(self.users)))

    @property
    def journal_enabled(self) -> bool:
        return self.recorded.enabled

    def records(self, topic: str) -> bool:
        """Whether a publish to ``topic`` (of the broker's message type) goes to the journal."""
        found = self._recorded_cache.get(topic)
        if found is None:
            if len(self._recorded_cache) > 100_000:  # bounded: topics are client-chosen strings
                self._recorded_cache.clear()
            found = self._recorded_cache[topic] = self.recorded.covers(topic, self.message_type)
        return found

"""Catalogue of the built-in AMPS action modules (spec/config.md §5.2-§5.4, seed 000).

Data only: for each `amps-action-*` module, the options it requires, the options with a
closed value set, the options that hold intervals or percentages, and the ``{{VARIABLES}}``
it adds to the action context. The Actions rules (rules/action_*.py) read these tables; the
XSD leaves `Options` lax, so this is where module-specific option checks get their facts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

ON, DO, IF = "On", "Do", "If"
ROLE_PREFIX = {ON: "amps-action-on-", DO: "amps-action-do-", IF: "amps-action-if-"}
ACTION_PREFIX = "amps-action-"

# Variables every action context starts with, plus AMPS_BYTE_XX (two upper-case hex digits).
DEFAULT_VARIABLES = frozenset({"AMPS_INSTANCE_NAME", "AMPS_DATETIME", "AMPS_UNIX_TIMESTAMP"})
BYTE_VARIABLE = re.compile(r"AMPS_BYTE_[0-9A-F]{2}")

_EMPTY: Mapping = MappingProxyType({})


@dataclass(frozen=True)
class ActionModule:
    """What one built-in action module accepts and what it adds to the context."""

    name: str
    required: tuple[str, ...] = ()
    # option -> allowed values (the whole value must be one of them)
    enums: Mapping[str, frozenset[str]] = field(default_factory=lambda: _EMPTY)
    # option -> allowed tokens of a comma-delimited list
    token_enums: Mapping[str, frozenset[str]] = field(default_factory=lambda: _EMPTY)
    intervals: tuple[str, ...] = ()
    percents: tuple[str, ...] = ()
    # variables the module always adds
    variables: frozenset[str] = frozenset()
    # variable -> (option, value): added only when the option has that value
    conditional: Mapping[str, tuple[str, str]] = field(default_factory=lambda: _EMPTY)
    # options whose value is the name of a variable the module adds
    names_variable: tuple[str, ...] = ()
    # options holding `VARIABLE=expression` assignments; each VARIABLE is added
    assigns: tuple[str, ...] = ()
    # adds variables that cannot be known from the config (admin query parameters, the
    # context of whoever raised a custom event)
    open_context: bool = False
    deprecated: bool = False

    @cached_property
    def role(self) -> str:
        for role, prefix in ROLE_PREFIX.items():
            if self.name.startswith(prefix):
                return role
        raise ValueError(self.name)  # pragma: no cover - catalogue entries are well formed


def _vars(*names: str) -> frozenset[str]:
    return frozenset(names)


def _enum(**options: tuple[str, ...]) -> Mapping[str, frozenset[str]]:
    return MappingProxyType({name: frozenset(values) for name, values in options.items()})


CLIENT_VARS = _vars("AMPS_CLIENT_NAME", "AMPS_CONNECTION_NAME")
INCOMING_REPLICATION_VARS = _vars(
    "AMPS_REPLICATION_PEER_NAME",
    "AMPS_REPLICATION_CLIENT_NAME",
    "AMPS_REPLICATION_REMOTE_ADDRESS",
    "AMPS_REPLICATION_GROUP_NAME",
)
OUTGOING_REPLICATION_VARS = INCOMING_REPLICATION_VARS | {"AMPS_REPLICATION_TRANSPORT_NAME"}
CONDITION_TIMEOUT_VARS = _vars(
    "AMPS_TOPIC", "AMPS_DATA", "AMPS_DATA_LENGTH", "AMPS_BOOKMARK", "AMPS_TIMESTAMP", "AMPS_CLIENT_NAME", "AMPS_SOW_KEY"
)
OOF_VARS = _vars("AMPS_TOPIC", "AMPS_DATA", "AMPS_DATA_LENGTH", "AMPS_PREVIOUS_DATA", "AMPS_PREVIOUS_DATA_LENGTH")
MANIFOLD_SUBSCRIBER_VARS = _vars("AMPS_SUBSCRIBER_CLIENT_NAME", "AMPS_SUBSCRIBER_CONNECTION_NAME")

EXPIRE_REASONS = ("time_limit", "forced_expire", "max_cancels", "max_deliveries")

_MODULES: tuple[ActionModule, ...] = (
    # ---- On: when an action runs (spec §5.2) ----
    ActionModule("amps-action-on-schedule", required=("Every",)),
    ActionModule("amps-action-on-startup"),
    ActionModule("amps-action-on-shutdown"),
    ActionModule("amps-action-on-signal", required=("Signal",)),
    ActionModule("amps-action-on-admin", required=("Path",), open_context=True),
    ActionModule("amps-action-on-minidump", variables=_vars("AMPS_MINIDUMP_PATH")),
    ActionModule("amps-action-on-connect-client", variables=CLIENT_VARS),
    ActionModule("amps-action-on-disconnect-client", variables=CLIENT_VARS | {"AMPS_AUTHENTICATION_ID"}),
    ActionModule("amps-action-on-logon-client", variables=CLIENT_VARS | {"AMPS_AUTHENTICATION_ID"}),
    ActionModule("amps-action-on-offline-start", variables=CLIENT_VARS),
    ActionModule("amps-action-on-offline-stop", variables=CLIENT_VARS),
    ActionModule(
        "amps-action-on-subscribe",
        required=("Topic", "MessageType"),
        variables=_vars("AMPS_TOPIC", "AMPS_CLIENT_NAME", "AMPS_OPTIONS", "AMPS_FILTER"),
    ),
    ActionModule(
        "amps-action-on-unsubscribe",
        required=("Topic", "MessageType"),
        variables=_vars("AMPS_TOPIC", "AMPS_CLIENT_NAME", "AMPS_OPTIONS", "AMPS_FILTER"),
    ),
    ActionModule("amps-action-on-connect-incoming-replication", variables=INCOMING_REPLICATION_VARS),
    ActionModule("amps-action-on-disconnect-incoming-replication", variables=INCOMING_REPLICATION_VARS),
    ActionModule("amps-action-on-connect-replication", variables=OUTGOING_REPLICATION_VARS),
    ActionModule("amps-action-on-disconnect-replication", variables=OUTGOING_REPLICATION_VARS),
    ActionModule("amps-action-on-replication-resync-complete", variables=OUTGOING_REPLICATION_VARS),
    ActionModule("amps-action-on-upgrade-replication", variables=OUTGOING_REPLICATION_VARS),
    ActionModule("amps-action-on-downgrade-replication", variables=OUTGOING_REPLICATION_VARS),
    ActionModule(
        "amps-action-on-publish-message",
        required=("Topic", "MessageType"),
        enums=_enum(MessageSource=("all", "local", "replicated")),
        variables=_vars(
            "AMPS_TOPIC", "AMPS_DATA", "AMPS_DATA_LENGTH", "AMPS_BOOKMARK", "AMPS_TIMESTAMP", "AMPS_CLIENT_NAME"
        ),
    ),
    ActionModule(
        "amps-action-on-deliver-message",
        required=("Topic", "MessageType"),
        variables=_vars(
            "AMPS_TOPIC", "AMPS_DATA", "AMPS_DATA_LENGTH", "AMPS_BOOKMARK", "AMPS_CLIENT_NAME", "AMPS_CORRELATION_ID"
        ),
    ),
    ActionModule(
        "amps-action-on-message-affinity",
        required=("MessageType", "ControlTopic", "DataTopic"),
        variables=_vars("AMPS_DATA", "AMPS_CLIENT_NAME", "AMPS_AFFINITY_ACTION", "AMPS_AFFINITY_REASON"),
    ),
    # seed 000: the subscriber variables exist only with Announcements=all.
    ActionModule(
        "amps-action-on-manifold-affinity",
        required=("MessageType", "ControlTopic", "SubscriptionTopic"),
        enums=_enum(Announcements=("default", "all")),
        variables=_vars("AMPS_CLIENT_NAME", "AMPS_CONNECTION_NAME", "AMPS_AFFINITY_ACTION", "AMPS_TOPIC"),
        conditional=MappingProxyType({name: ("Announcements", "all") for name in sorted(MANIFOLD_SUBSCRIBER_VARS)}),
    ),
    ActionModule(
        "amps-action-on-sow-expire-message",
        required=("Topic", "MessageType"),
        token_enums=_enum(Reason=EXPIRE_REASONS),
        variables=_vars("AMPS_TOPIC", "AMPS_DATA", "AMPS_DATA_LENGTH", "AMPS_REASON", "AMPS_CORRELATION_ID"),
    ),
    ActionModule(
        "amps-action-on-sow-delete-message",
        required=("Topic", "MessageType"),
        variables=_vars("AMPS_TOPIC", "AMPS_DATA", "AMPS_DATA_LENGTH", "AMPS_CORRELATION_ID"),
    ),
    ActionModule(
        "amps-action-on-oof-message",
        required=("Topic", "MessageType"),
        enums=_enum(Type=("match", "delete", "expire", "all")),
        variables=OOF_VARS,
    ),
    ActionModule(
        "amps-action-on-message-condition-timeout",
        required=("Topic", "MessageType"),
        intervals=("Duration",),
        variables=CONDITION_TIMEOUT_VARS,
    ),
    # The alert module combines the condition-timeout and OOF events; its variables are
    # documented only as "as above", so both sets are accepted, plus EventVariable.
    ActionModule(
        "amps-action-on-alert",
        required=("Topic", "MessageType", "OOFEvent", "TimeoutEvent", "EventVariable"),
        intervals=("Duration",),
        variables=CONDITION_TIMEOUT_VARS | OOF_VARS,
        names_variable=("EventVariable",),
    ),
    # Runs with the context of the step that raised the event.
    ActionModule("amps-action-on-execute-event", required=("Event",), open_context=True),
    # ---- Do: what an action does (spec §5.3) ----
    ActionModule("amps-action-do-publish-message", required=("Topic", "MessageType", "Data")),
    ActionModule("amps-action-do-delete-sow", required=("Topic", "MessageType", "Filter")),
    ActionModule(
        "amps-action-do-query-sow",
        required=("Topic", "MessageType", "Filter", "CaptureData"),
        names_variable=("CaptureData",),
    ),
    ActionModule("amps-action-do-compact-sow"),  # Topic + MessageType: both or neither (ACT-018)
    ActionModule("amps-action-do-extract-values", required=("MessageType", "Value"), assigns=("Value",)),
    ActionModule("amps-action-do-translate-data", required=("Data", "Value"), names_variable=("Value",)),
    ActionModule("amps-action-do-increment-counter", required=("Key", "Value"), names_variable=("Value",)),
    ActionModule("amps-action-do-execute-event"),  # exactly one of Event / EventVariable (ACT-023)
    ActionModule("amps-action-do-execute-system"),
    ActionModule("amps-action-do-archive-journal", required=("Age",), intervals=("Age",)),
    ActionModule("amps-action-do-compress-journal", required=("Age",), intervals=("Age",)),
    ActionModule("amps-action-do-remove-journal", required=("Age",), intervals=("Age",)),
    ActionModule("amps-action-do-compress-files", required=("Age", "Pattern"), intervals=("Age",)),
    ActionModule("amps-action-do-remove-files", required=("Age", "Pattern"), intervals=("Age",)),
    ActionModule("amps-action-do-truncate-statistics", required=("Age",), intervals=("Age",)),
    ActionModule("amps-action-do-vacuum-statistics", deprecated=True),
    ActionModule("amps-action-do-rotate-logs", intervals=("Age",)),
    ActionModule("amps-action-do-enable-transport"),
    ActionModule("amps-action-do-disable-transport"),
    ActionModule("amps-action-do-enable-authentication"),
    ActionModule("amps-action-do-disable-authentication"),
    ActionModule("amps-action-do-reset-authentication"),
    ActionModule("amps-action-do-enable-entitlement"),
    ActionModule("amps-action-do-disable-entitlement"),
    ActionModule("amps-action-do-reset-entitlement"),
    ActionModule("amps-action-do-downgrade-replication", required=("Age",), intervals=("Age", "GracePeriod")),
    ActionModule("amps-action-do-upgrade-replication", required=("Age",), intervals=("Age", "GracePeriod")),
    ActionModule("amps-action-do-enable-proxied-transfer", required=("Topic", "MessageType")),
    ActionModule("amps-action-do-disable-proxied-transfer", required=("Topic", "MessageType")),
    ActionModule("amps-action-do-minidump"),
    ActionModule("amps-action-do-shutdown"),
    ActionModule("amps-action-do-nothing"),
    ActionModule("amps-action-do-echo-message"),
    # ---- If: conditions between Do steps ----
    ActionModule("amps-action-if-condition", required=("Condition",)),
    ActionModule("amps-action-if-file-system-usage", required=("Path", "GreaterThan"), percents=("GreaterThan",)),
)

MODULES: Mapping[str, ActionModule] = MappingProxyType({m.name: m for m in _MODULES})
NAMES_BY_ROLE: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {role: tuple(m.name for m in _MODULES if m.role == role) for role in ROLE_PREFIX}
)

# Topic semantics used by the cross-reference rules.
PUBLISH = "amps-action-do-publish-message"
MANIFOLD = "amps-action-on-manifold-affinity"
MESSAGE_AFFINITY = "amps-action-on-message-affinity"
OOF = "amps-action-on-oof-message"
IF_CONDITION = "amps-action-if-condition"
EXECUTE_EVENT = "amps-action-do-execute-event"
COMPACT_SOW = "amps-action-do-compact-sow"
QUERY_SOW = "amps-action-do-query-sow"
DOWNGRADE = "amps-action-do-downgrade-replication"
UPGRADE = "amps-action-do-upgrade-replication"
# On modules whose trigger a publish can fire (publish loops, ACT-015).
PUBLISH_TRIGGERS = frozenset({"amps-action-on-publish-message", "amps-action-on-deliver-message"})
# On modules that subscribe internally and so should not watch a queue (ACT-016).
QUEUE_DISCOURAGED = frozenset(
    {"amps-action-on-publish-message", OOF, "amps-action-on-alert", "amps-action-on-message-condition-timeout"}
)
# On modules whose Topic must be a literal SOW topic, view or conflated topic; the value
# says whether a queue is accepted too (ACT-017).
SOW_TOPIC_REQUIRED: Mapping[str, bool] = MappingProxyType(
    {
        "amps-action-on-sow-expire-message": True,
        "amps-action-on-sow-delete-message": True,
        "amps-action-on-alert": False,
        "amps-action-on-message-condition-timeout": False,
    }
)
# Required options whose content another rule checks, empty value included (ACT-022).
CONTENT_CHECKED = frozenset({("amps-action-if-condition", "Condition")})
# Options that name a topic (for message-type cross checks, ACT-020).
TOPIC_OPTIONS = ("Topic", "DataTopic")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

"""Which config elements hold which kind of value: the ``VALUE_TYPES`` table of the UNIT rules.

Paths use the canonical element names (spec/config.md §1.2, §2.1, §2.3, §2.4, §4.x and
TransactionLog); ``SYNONYMS_UNDER`` says which documented synonyms the walk in
``units_rules`` resolves under each path. This module holds data only and registers no rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ampsctl.config.model import ENTRY_SYNONYMS, SOW_SYNONYMS, TOP_SYNONYMS, TXLOG_SYNONYMS


class Kind(Enum):
    INTERVAL = "interval"
    INTERVAL_LIST = "interval list"
    BYTES = "byte size"
    COUNT = "count"
    FLAG = "flag"
    PERCENT = "percentage"
    OCTAL = "octal mask"
    PATH_OR_DISABLED = "path or disabled"


@dataclass(frozen=True, slots=True)
class ValueType:
    kind: Kind
    words: tuple[str, ...] = ()  # special values accepted besides the grammar
    flag: tuple[str, str] | None = None  # documented (on, off) spelling of a flag
    min_nanos: int | None = None  # documented minimum of an interval (UNIT-006)
    owner: str | None = None  # rule that reports an invalid value instead of UNIT-001


INTERVAL = ValueType(Kind.INTERVAL)
INTERVAL_LIST = ValueType(Kind.INTERVAL_LIST)
BYTES = ValueType(Kind.BYTES)
COUNT = ValueType(Kind.COUNT)
PERCENT = ValueType(Kind.PERCENT)
OCTAL = ValueType(Kind.OCTAL)
ENABLED = ValueType(Kind.FLAG, flag=("enabled", "disabled"))
TRUE = ValueType(Kind.FLAG, flag=("true", "false"))
TRUE_CAPS = ValueType(Kind.FLAG, flag=("True", "False"))

_AUTH_BLOCKS = (
    "Authentication",
    "Entitlement",
    "Transports/Transport/Authentication",
    "Transports/Transport/Entitlement",
    "Admin/Authentication",
    "Admin/Entitlement",
    "Replication/Destination/Transport/Authenticator",
    "Modules/Module",
)
# Options of the shipped authentication/entitlement/authenticator modules (spec §4.8).
_AUTH_OPTIONS = {
    "AllowSpoofing": TRUE,
    "RequireLogon": TRUE,
    "RequireUsername": TRUE,
    "AllowUnverifiedPeer": TRUE,
    "RetryCount": COUNT,
    "MaxLength": COUNT,
}

VALUE_TYPES: dict[str, ValueType] = {
    # §1.2 AMPSConfig
    "ConfigIncludeCommentDefault": TRUE,
    "ConfigCycleDetectionThreshold": BYTES,
    "ConfigValidation": ENABLED,
    "MessageMemoryLimit": BYTES,
    "MessageDiskLimit": BYTES,
    "ClientMessageAgeLimit": INTERVAL,
    "ClientMaxCapacity": PERCENT,
    "MiniDumpDirectory": ValueType(Kind.PATH_OR_DISABLED, words=("disabled",)),
    "MiniDumpFileMask": OCTAL,
    "SOWStatsInterval": INTERVAL,
    "SOWStatisticsInterval": INTERVAL,
    "RegexTopicSupport": TRUE,
    # §2.1 SOW/Topic
    "SOW/Topic/Expiration": ValueType(Kind.INTERVAL, words=("enabled", "disabled"), owner="SOWT-011"),
    "SOW/Topic/SlabSize": BYTES,
    "SOW/Topic/InitialSlabCount": COUNT,
    "SOW/Topic/RecordSize": BYTES,
    "SOW/Topic/InitialSize": COUNT,
    "SOW/Topic/IncrementSize": COUNT,
    "SOW/Topic/ExpectedKeyCountHint": COUNT,
    "SOW/Topic/History/Window": ValueType(Kind.INTERVAL, owner="SOWT-021"),
    "SOW/Topic/History/Granularity": ValueType(Kind.INTERVAL, owner="SOWT-021"),
    "SOW/Topic/KeyGenerator/Options/Validation": TRUE,
    # §2.3 SOW/View: JoinNullEquivalency is VW-008's enum; nothing else is typed.
    # §2.4 SOW/ConflatedTopic
    "SOW/ConflatedTopic/Interval": INTERVAL,
    # §4.1 Protocols and Transports
    "Protocols/Protocol/TrustedAdmin": ENABLED,
    "Transports/Transport/InitialState": ENABLED,
    "Transports/Transport/MessageMemoryLimit": BYTES,
    "Transports/Transport/MessageDiskLimit": BYTES,
    "Transports/Transport/ClientMessageAgeLimit": INTERVAL,
    "Transports/Transport/ClientMaxCapacity": PERCENT,
    "Transports/Transport/VerifyClient": TRUE_CAPS,
    "Transports/Transport/FileMask": OCTAL,
    "Transports/Transport/PerMessageDeflate": ENABLED,
    "Transports/Transport/TransportFilter/Options/Override": TRUE_CAPS,
    # §4.2 MessageTypes (separators: MT-007)
    "MessageTypes/MessageType/EarlyTerminationOptimization": TRUE,
    # §4.3 TransactionLog (limits: TXL-004)
    "TransactionLog/PreallocatedJournalFiles": COUNT,
    "TransactionLog/JournalSize": BYTES,
    "TransactionLog/FlushInterval": INTERVAL,
    "TransactionLog/O_DIRECT": ENABLED,
    "TransactionLog/InactiveClientAckExpiration": INTERVAL,
    "TransactionLog/CompressedJournalCacheMemoryLimit": BYTES,
    # §4.4 Logging
    "Logging/Target/RotationThreshold": BYTES,
    # §4.5 Modules and UserDefinedFunctions
    "Modules/Module/Options/Override": TRUE_CAPS,
    "Modules/Module/Options/Validation": TRUE,
    "UserDefinedFunctions/Function/ParameterCount": COUNT,
    # §4.6 Admin (limit: ADM-001)
    "Admin/Interval": INTERVAL,
    "Admin/Galvanometer": ENABLED,
    # §4.7 Replication
    "Replication/Destination/AckConflationInterval": INTERVAL,
    "Replication/Destination/Transport/ReconnectTimeout": INTERVAL_LIST,
    "Replication/Destination/Transport/VerifyClient": TRUE_CAPS,
    # §4.8 module options
    **{f"{block}/Options/{option}": kind for block in _AUTH_BLOCKS for option, kind in _AUTH_OPTIONS.items()},
    # §4.9 Tuning
    "Tuning/NUMA/Enabled": ENABLED,
    "Tuning/Replication/MinSyncDestinations": COUNT,
    "Tuning/Queue/QueueDeliveryFlushInterval": ValueType(Kind.INTERVAL, min_nanos=1_000),
    "Tuning/Admin/Statistics/Indexing/Enabled": ENABLED,
}

# Synonyms resolved under each path (spec §1.3).
SYNONYMS_UNDER = {
    "": TOP_SYNONYMS,
    "SOW": SOW_SYNONYMS,
    "SOW/Topic": ENTRY_SYNONYMS,
    "SOW/View": ENTRY_SYNONYMS,
    "SOW/ConflatedTopic": ENTRY_SYNONYMS,
    "TransactionLog": TXLOG_SYNONYMS,
}

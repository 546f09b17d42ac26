"""Message types: payload codecs, typed field access, SOW keys and delta merge (spec/messages.md).

``record_from_bytes`` turns a payload into a record the filter language can address with
``get(field)``: records only read ``field.steps`` (duck typing), so this package never
imports ``ampsctl.filter``, which sits above it.
"""

from __future__ import annotations

from typing import Any


def record_from_bytes(message_type: str, raw: bytes) -> Any:
    """A filterable record for a payload of ``message_type`` (fix, nvfix or xml)."""
    kind = message_type.strip().lower()
    if kind in ("fix", "nvfix"):
        from ampsctl.messages.fix import FixRecord

        return FixRecord.from_bytes(raw, numeric_tags=kind == "fix")
    if kind == "xml":
        from ampsctl.messages.xml import XmlRecord

        return XmlRecord.from_bytes(raw)
    from ampsctl.errors import UsageError

    raise UsageError(f"no record reader for message type '{message_type}'", hint="supported here: fix, nvfix, xml")

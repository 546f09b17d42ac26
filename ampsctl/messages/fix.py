"""FIX and NVFIX payloads as filterable records (spec/messages.md §2.3–2.4).

A payload is a flat run of ``name=value`` fields, each ended by the field separator (SOH by
default; a missing separator after the last field is tolerated, as current AMPS does). FIX
names are numeric tags, NVFIX names are free text. The identifier is one step (``/55``,
``/Symbol``); a repeated name becomes an array in order of appearance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ampsctl.errors import InputError
from ampsctl.messages.scalars import infer

SOH = "\x01"


@dataclass(frozen=True, slots=True)
class FixRecord:
    fields: dict[str, Any]

    @classmethod
    def from_bytes(cls, raw: bytes, *, separator: str = SOH, numeric_tags: bool = True) -> FixRecord:
        text = raw.decode("utf-8", errors="surrogateescape")
        fields: dict[str, Any] = {}
        offset = 0
        for part in text.split(separator):
            if part:
                name, equals, value = part.partition("=")
                if not equals or not name or (numeric_tags and not name.isdigit()):
                    what = "tag" if numeric_tags else "name"
                    raise InputError(
                        f"malformed FIX field {part[:40]!r} at byte {offset}: expected {what}=value",
                        code="FIX",
                        hint="fields are tag=value, each ended by the SOH (0x01) separator",
                    )
                typed = infer(value)
                if name in fields:
                    previous = fields[name]
                    fields[name] = [*previous, typed] if isinstance(previous, list) else [previous, typed]
                else:
                    fields[name] = typed
            offset += len(part.encode("utf-8", errors="surrogateescape")) + 1
        return cls(fields)

    def get(self, field: Any) -> Any:
        steps = field.steps
        if len(steps) != 1 or field.qualifier:
            return None  # FIX is flat: one step, no nesting
        value = self.fields.get(steps[0].name)
        index = steps[0].index
        if index is None:
            return value
        if isinstance(value, list):
            return value[index] if index < len(value) else None
        return value if index == 0 else None

"""FIX and NVFIX payloads: filterable records and the codec (spec/messages.md §2.3–2.4, §6, §7).

A payload is a flat run of ``name=value`` fields, each ended by the field separator (SOH by
default; a missing separator after the last field is tolerated, as current AMPS does). FIX
names are numeric tags, NVFIX names are free text. The identifier is one step (``/55``,
``/Symbol``); a repeated name becomes an array in order of appearance.

Theory of operation of the codec. A document is a ``FixDocument``: the ordered
``(name, value text)`` pairs, immutable, so merge and diff results can never alias a mutable
part of their inputs. Values stay text in the document (typing happens only in ``record``),
so serialize(parse(x)) reproduces every value byte for byte and always ends with the separator.

* merge (delta publish, §6.3, V5): tag by tag. Every name present in the delta replaces all of
  the base's fields of that name (a repeated name is an array, replaced whole, R2): in place
  when the counts match; else where the first one was, and arrays that interleave in the delta
  (a FIX repeating group that grew or shrank) are written together as the delta has them
  (``_blocks``); names the base lacks are appended in the delta's order; an empty value is a
  present NULL and replaces. Base field order is kept.
* diff (delta subscribe, §7.5): the fields of ``new`` in their order, keeping a key field
  (when ``send_keys``) and every selected field whose values (all of them, for a repeated
  name) differ in text from ``old``. Text equality, not inferred-type equality: ``1`` and
  ``1.0`` are different bytes on the wire and different SOW keys (K7).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ampsctl.errors import InputError
from ampsctl.messages.paths import join_path, split_path
from ampsctl.messages.scalars import infer

SOH = "\x01"
_Pairs = tuple[tuple[str, str], ...]


def is_tag(name: str) -> bool:
    """A FIX tag: a positive integer in ASCII digits without a leading zero (str.isdigit takes
    "²" and other scripts' digits; "055" would be another field than "55")."""
    return name.isascii() and name.isdigit() and name[0] != "0"


def _split(raw: bytes, separator: str, numeric_tags: bool, code: str) -> _Pairs:
    """The (name, value text) pairs of a payload; InputError naming the byte offset of a bad field."""
    # surrogateescape: non-UTF-8 bytes survive a round trip instead of failing or being mangled.
    text = raw.decode("utf-8", errors="surrogateescape")
    pairs: list[tuple[str, str]] = []
    offset = 0
    for part in text.split(separator):
        if part:
            name, equals, value = part.partition("=")
            if not equals or not name or (numeric_tags and not is_tag(name)):
                what = "tag" if numeric_tags else "name"
                raise InputError(
                    f"malformed {code} field {part[:40]!r} at byte {offset}: expected {what}=value",
                    code=code,
                    hint=f"fields are {what}=value, each ended by the SOH (0x01) separator"
                    + ("; a tag is a positive number in ASCII digits, no leading zero (55, not 055)" if numeric_tags else ""),
                )
            pairs.append((name, value))
        offset += len(part.encode("utf-8", errors="surrogateescape")) + 1
    if len(pairs) == 1 and separator not in text:
        _refuse_other_separator(pairs[0], separator, numeric_tags, code)
    return tuple(pairs)


# A field start after a '|' (how logs show SOH): tag= for FIX, a name like an identifier for
# NVFIX. '^' is left alone: "x^2=4" is a plausible value.
_SHOWN_SOH = {True: re.compile(r"(\|)[1-9][0-9]*="), False: re.compile(r"(\|)[A-Za-z_][A-Za-z0-9_.-]*=")}


def _refuse_other_separator(field: tuple[str, str], separator: str, numeric_tags: bool, code: str) -> None:
    """A message without one separator that reads as several fields split by '|' was
    taken as one field whose value held all the others: refused, with the fix, instead."""
    found = _SHOWN_SOH[numeric_tags].search(field[1])
    if found:
        shown = "SOH (0x01)" if separator == SOH else repr(separator)
        raise InputError(
            f"{code} message has no {shown} field separator but seems to separate its fields with "
            f"{found.group(1)!r}: {field[0]}={field[1][: found.end()]}...",
            code=code,
            hint=f"{code} fields end with the SOH byte (0x01); convert the file, for example: tr '{found.group(1)}' '\\001'",
        )


def _typed_fields(pairs: _Pairs) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, value in pairs:
        typed = infer(value)
        if name in fields:
            previous = fields[name]
            fields[name] = [*previous, typed] if isinstance(previous, list) else [previous, typed]
        else:
            fields[name] = typed
    return fields


@dataclass(frozen=True, slots=True)
class FixRecord:
    fields: dict[str, Any]

    @classmethod
    def from_bytes(cls, raw: bytes, *, separator: str = SOH, numeric_tags: bool = True) -> FixRecord:
        return cls(_typed_fields(_split(raw, separator, numeric_tags, "FIX")))

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


@dataclass(frozen=True, slots=True)
class FixDocument:
    """A FIX/NVFIX message as ordered (name, value text) pairs; empty text is NULL."""

    fields: _Pairs = ()

    def values(self, name: str) -> tuple[str, ...]:
        """Every value of ``name`` in order (several for a repeated tag)."""
        return tuple(value for field, value in self.fields if field == name)


def _blocks(delta: _Pairs, new: dict[str, tuple[str, ...]], old: dict[str, tuple[str, ...]]) -> dict[str, list[tuple[str, str]]]:
    """The delta fields that a merge writes together, by name: a repeating group stays a group.

    A name repeated in the delta or the base whose count changes is an array replaced whole
    (R2); its fields span the delta from its first to its last occurrence, and such arrays
    whose spans overlap are one block: the entries of a FIX repeating group that grew or
    shrank (269 type, 270 price, 269, 270 ...). A block is written as the delta has it, where
    the base's first field of one of its names was (at the end if there is none), and the
    base's fields of its names go. Each name at its own first field wrote all the 269s and then
    all the 270s. A name whose count does not change is replaced value by value, in place, so a
    diff that sends only the changed 270s of a group still merges into it."""
    spans: dict[str, list[int]] = {}
    for index, (name, _) in enumerate(delta):
        count = len(new[name])
        if count != len(old.get(name, ())) and (count > 1 or len(old.get(name, ())) > 1):
            spans.setdefault(name, [index, index])[1] = index
    block_of: dict[str, list[tuple[str, str]]] = {}
    block: list[tuple[str, str]] = []
    end = -1
    for first, last in sorted(spans.values()):
        if first > end:
            block = []  # no overlap with the spans before: a new block
        for name, value in delta[max(first, end + 1) : last + 1]:
            if name in spans:
                block.append((name, value))
                block_of[name] = block
        end = max(end, last)
    return block_of


def _groups(pairs: _Pairs) -> dict[str, tuple[str, ...]]:
    """Values per name, names in order of first appearance."""
    groups: dict[str, list[str]] = {}
    for name, value in pairs:
        groups.setdefault(name, []).append(value)
    return {name: tuple(values) for name, values in groups.items()}


@dataclass(frozen=True, slots=True)
class FixCodec:
    """The Codec for ``fix`` (numeric tags) and ``nvfix`` (free names); see ampsctl.messages.codec."""

    name: str = "fix"
    separator: str = SOH

    @property
    def _code(self) -> str:
        return self.name.upper()

    @property
    def _numeric(self) -> bool:
        return self.name == "fix"

    def parse(self, raw: bytes) -> FixDocument:
        return FixDocument(_split(bytes(raw), self.separator, self._numeric, self._code))

    def serialize(self, doc: FixDocument) -> bytes:
        out: list[str] = []
        for name, value in doc.fields:
            # A separator or '=' in the wrong place would re-parse as different fields.
            if not name or "=" in name or self.separator in name or self.separator in value:
                raise InputError(
                    f"cannot write {self._code} field {name!r}: names must be non-empty without '=' "
                    "and neither names nor values may contain the field separator",
                    code=self._code,
                )
            if self._numeric and not is_tag(name):
                raise InputError(f"cannot write FIX field {name!r}: FIX tags are positive numbers (ASCII digits, "
                                 "no leading zero)", code=self._code)
            out.append(f"{name}={value}{self.separator}")
        return "".join(out).encode("utf-8", errors="surrogateescape")

    def record(self, doc: FixDocument) -> FixRecord:
        return FixRecord(_typed_fields(doc.fields))

    def merge(self, base: FixDocument | None, delta: FixDocument) -> FixDocument:
        """Delta publish, tag by tag; ``base`` None is an insert (V6). See ``_blocks`` for
        repeated tags whose count changes."""
        if base is None:
            return delta
        replacing = _groups(delta.fields)
        sizes = _groups(base.fields)
        block_of = _blocks(delta.fields, replacing, sizes)
        out: list[tuple[str, str]] = []
        placed: set[str | int] = set()  # names and blocks (by id) already written
        seen: dict[str, int] = {}
        for name, value in base.fields:
            block = block_of.get(name)
            if block is not None:
                if id(block) not in placed:
                    out.extend(block)
                    placed.add(id(block))
            elif name in replacing:  # as many in the base as in the delta: value by value, in place
                index = seen.get(name, 0)
                out.append((name, replacing[name][index]))
                seen[name] = index + 1
                placed.add(name)
            else:
                out.append((name, value))
        for name, value in delta.fields:  # what the base lacks, in the delta's order
            block = block_of.get(name)
            if block is not None:
                if id(block) not in placed:
                    out.extend(block)
                    placed.add(id(block))
            elif name not in placed:
                out.append((name, value))
                placed.add(name)
        return FixDocument(tuple(out))

    def diff(
        self,
        old: FixDocument | None,
        new: FixDocument,
        keys: Sequence[str],
        *,
        no_empties: bool = False,
        send_keys: bool = True,
        select: Sequence[str] | None = None,
    ) -> FixDocument | None:
        key_names = {self._flat_name(key) for key in keys}
        selected = None if select is None else {self._flat_name(path) for path in select}
        before = _groups(old.fields) if old is not None else {}
        after = _groups(new.fields)
        keep: set[str] = set()
        changed = False
        for name, values in after.items():
            if name in key_names:
                if send_keys:
                    keep.add(name)
            elif (selected is None or name in selected) and before.get(name) != values:
                keep.add(name)
                changed = True
        if no_empties and not changed:
            return None
        return FixDocument(tuple(pair for pair in new.fields if pair[0] in keep))

    def _flat_name(self, path: str) -> str:
        steps = split_path(path)
        if len(steps) != 1:
            raise InputError(
                f"{self._code} messages are flat: {join_path(steps)} has {len(steps)} steps",
                code=self._code,
                hint="FIX and NVFIX fields are addressed by one step, like /55 or /Symbol",
            )
        return steps[0]


FIX = FixCodec("fix")
NVFIX = FixCodec("nvfix")

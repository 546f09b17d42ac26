"""The contract every message-type codec implements (json, xml, fix, nvfix).

A codec turns payload bytes into a *document* (its own in-memory model: dicts for JSON, an
element tree for XML, ordered pairs for FIX), back into bytes, into a record the filter
language can address, and implements the two delta operations of spec/messages.md:

* ``merge(base, delta)`` -- delta publish (§6): present fields replace, absent fields are
  unchanged, nested objects merge by identifier, anonymous elements (arrays) are replaced whole,
  a present null/empty value replaces and never deletes. Conflating deltas (§7.4) is the same
  operation: ``merge(delta1, delta2)``.
* ``diff(old, new, keys, ...)`` -- delta subscribe (§7): the key fields plus every field of
  ``new`` whose value differs from ``old``; ``None`` when nothing is to be sent.

Invariants every implementation keeps (the shared Hypothesis properties test them):
* merge and diff are pure: their inputs are never modified. A result may share unchanged parts
  with its inputs (JSON does, to fold long delta streams without deep copies), so documents are
  values: nobody edits one in place without copying it first.
* ``merge(doc, empty_delta) == doc`` and ``merge(merge(doc, d), d) == merge(doc, d)``.
* ``merge(old, diff(old, new, keys)) == new`` whenever ``new`` has every field of ``old``.
* ``parse(serialize(doc)) == doc``.
* Garbage input raises InputError with ``code`` set to the type name in upper case ("JSON",
  "XML", "FIX", "NVFIX"), never another exception.

``keys`` and ``select`` are AMPS paths as text ("/id", "/customer/name", "/55"); split them
with ``ampsctl.messages.paths.split_path``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Codec(Protocol):
    """One message type's parse/serialize/record/merge/diff; see the module docstring."""

    name: str

    def parse(self, raw: bytes) -> Any:
        """A document from payload bytes; InputError(code=<TYPE>) with a clear message on garbage."""
        ...

    def serialize(self, doc: Any) -> bytes:
        """Payload bytes for a document (the canonical form, not necessarily the original bytes)."""
        ...

    def record(self, doc: Any) -> Any:
        """An object with ``get(field)`` for the filter language (duck-typed on field.steps)."""
        ...

    def merge(self, base: Any, delta: Any) -> Any:
        """``base`` with ``delta`` applied by delta-publish rules; inputs unchanged."""
        ...

    def diff(
        self,
        old: Any,
        new: Any,
        keys: Sequence[str],
        *,
        no_empties: bool = False,
        send_keys: bool = True,
        select: Sequence[str] | None = None,
    ) -> Any | None:
        """The delta a delta subscriber receives for ``old`` -> ``new``, or None if nothing is sent.

        ``no_empties``: return None when no non-key field changed (else the key fields alone go
        out). ``send_keys``: include the key fields. ``select``: only these fields are sent, and
        only changes to them count for ``no_empties``. ``old`` may be None (an insert), in which
        case every field of ``new`` counts as changed.
        """
        ...

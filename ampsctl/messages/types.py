"""The message-type registry: ``codec(name)`` and ``detect(path, raw)`` (spec/messages.md §1–2).

Codecs are imported only when asked for, so callers (the CLI above all) pay for lxml only when
an XML message is actually read. Each type names the module that implements it; the registry
takes the codec object from that module by its ``name`` attribute (a module-level instance, or
a ``*Codec`` class that builds one), which lets one class serve both ``fix`` and ``nvfix``.
A type whose module has no codec yet is reported as "not available", not as a crash.

Detection: the file extension wins (.json, .jsonl, .xml, .fix, .nvfix); otherwise the first
non-blank bytes decide: ``{``/``[`` JSON, ``<`` XML, ``digits=`` FIX, ``name=`` NVFIX.
"""

from __future__ import annotations

import importlib
import re
from functools import lru_cache
from typing import Any

from ampsctl.errors import InputError, UsageError
from ampsctl.messages.codec import Codec

# Types this package knows about, each with the module that implements its codec.
MODULES: dict[str, str] = {
    "json": "ampsctl.messages.json_codec",
    "xml": "ampsctl.messages.xml",
    "fix": "ampsctl.messages.fix",
    "nvfix": "ampsctl.messages.fix",
}
NAMES: tuple[str, ...] = tuple(MODULES)
# Loaded by AMPS but not parseable here (or at all, for binary): a clear message beats "unknown".
_UNSUPPORTED = ("bflat", "msgpack", "bson", "binary", "protobuf")
_EXTENSIONS = {".json": "json", ".jsonl": "json", ".ndjson": "json", ".xml": "xml", ".fix": "fix", ".nvfix": "nvfix"}
_FIX_FIELD = re.compile(rb"[0-9]+=")
_NVFIX_FIELD = re.compile(rb"[^=\x01\r\n]+=")


def normalize(name: str) -> str:
    """The registry spelling of a message-type name; UsageError for unknown or unsupported types."""
    kind = name.strip().lower()
    if kind in MODULES:
        return kind
    if kind in _UNSUPPORTED:
        raise UsageError(
            f"message type '{name}' is not supported by ampsctl",
            hint=f"supported types: {', '.join(NAMES)}",
        )
    raise UsageError(f"unknown message type '{name}'", hint=f"supported types: {', '.join(NAMES)}")


@lru_cache(maxsize=None)  # codecs are stateless and immutable; one per type is enough
def codec(name: str) -> Codec:
    """The codec for message type ``name`` (json, xml, fix, nvfix)."""
    kind = normalize(name)
    found = _load(kind)
    if found is None:
        raise UsageError(
            f"message type '{kind}' is not available yet: {MODULES[kind]} has no {kind} codec",
            hint=f"available now: {', '.join(available()) or 'none'}",
        )
    return found


def available() -> tuple[str, ...]:
    """The types whose codec can be loaded now (imports every codec module)."""
    return tuple(kind for kind in NAMES if _load(kind) is not None)


def _load(kind: str) -> Codec | None:
    return _find_codec(importlib.import_module(MODULES[kind]), kind)


def _find_codec(module: Any, kind: str) -> Codec | None:
    attributes = [getattr(module, attr) for attr in sorted(vars(module)) if not attr.startswith("_")]
    for value in attributes:  # a ready instance, e.g. json_codec.JSON
        if not isinstance(value, type) and _is_codec(value, kind):
            return value
    for value in attributes:  # a class: FixCodec("nvfix"), FixCodec(name="nvfix") or XmlCodec()
        if isinstance(value, type) and value.__name__.endswith("Codec") and value.__module__ == module.__name__:
            for args, kwargs in (((), {}), ((kind,), {}), ((), {"name": kind})):
                try:
                    built = value(*args, **kwargs)
                except (TypeError, ValueError, UsageError):
                    continue
                if _is_codec(built, kind):
                    return built
    return None


def _is_codec(value: Any, kind: str) -> bool:
    return getattr(value, "name", None) == kind and isinstance(value, Codec)


def detect(path: str | None, raw: bytes) -> str:
    """The message type of a payload: by file extension, else by content; InputError if unclear."""
    if path and path != "-":
        dot = path.rfind(".")
        slash = max(path.rfind("/"), path.rfind("\\"))
        if dot > slash + 1:
            extension = path[dot:].lower()
            if extension in _EXTENSIONS:
                return _EXTENSIONS[extension]
    head = raw.lstrip(b" \t\r\n\xef\xbb\xbf")[:256]  # a UTF-8 BOM or blank lines are not content
    if head[:1] in (b"{", b"["):
        return "json"
    if head[:1] == b"<":
        return "xml"
    if _FIX_FIELD.match(head):
        return "fix"
    if _NVFIX_FIELD.match(head):
        return "nvfix"
    where = f"'{path}'" if path and path != "-" else "standard input"
    raise InputError(
        f"cannot tell the message type of {where}" + (" (it is empty)" if not head else ""),
        code="TYPE",
        hint="name the file .json, .xml, .fix or .nvfix, or pass --type json|xml|fix|nvfix",
    )

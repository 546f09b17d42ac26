"""Typing by inference for text formats (spec/messages.md §2): XML, FIX and NVFIX values.

``24`` is an integer, ``24.0`` a float, anything else a string, and an empty value is NULL.
Integers keep AMPS's 64-bit range (signed, or unsigned above LONG_MAX); wider digit strings
stay text rather than silently becoming floats.
"""

from __future__ import annotations

import re

_INTEGER = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?")
_LOW, _HIGH = -(2**63), 2**64 - 1


def infer(text: str) -> None | int | float | str:
    """The typed value of a text field."""
    if not text:
        return None
    if _INTEGER.fullmatch(text):
        number = int(text)
        return number if _LOW <= number <= _HIGH else text
    if _FLOAT.fullmatch(text):
        return float(text)
    return text

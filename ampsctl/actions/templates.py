"""``{{VARIABLE}}`` substitution in Do-step options (seed 000's Data payloads).

AMPS substitutes context variables textually: the value goes in as is, with no JSON or XML
escaping, and a variable the context lacks becomes an empty string (issue 5). Spaces inside
the braces are allowed; anything that is not ``{{NAME}}`` stays as written.

``{{AMPS_BYTE_XX}}`` (XX two upper-case hex digits) inserts that byte, for bytes XML cannot
carry (FIX's SOH is ``{{AMPS_BYTE_01}}``). Templates are text, so a byte above 7F goes in as
the character U+00XX (two bytes once the payload is UTF-8 encoded).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_BYTE = re.compile(r"AMPS_BYTE_([0-9A-F]{2})")


def render(template: str, variables: Mapping[str, str]) -> str:
    """``template`` with every ``{{NAME}}`` replaced by ``variables[NAME]`` or ``""``."""
    return _VARIABLE.sub(lambda m: _value(m.group(1), variables), template)


def _value(name: str, variables: Mapping[str, str]) -> str:
    found = variables.get(name)
    if found is not None:
        return found
    byte = _BYTE.fullmatch(name)
    return chr(int(byte.group(1), 16)) if byte else ""


"""``{{VARIABLE}}`` substitution in Do-step options (seed 000's Data payloads).

AMPS substitutes context variables textually: the value goes in as is, with no JSON or XML
escaping, and a variable the context lacks becomes an empty string (issue 5). Spaces inside
the braces are allowed; anything that is not ``{{NAME}}`` stays as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def render(template: str, variables: Mapping[str, str]) -> str:
    """``template`` with every ``{{NAME}}`` replaced by ``variables[NAME]`` or ``""``."""
    return _VARIABLE.sub(lambda m: variables.get(m.group(1), ""), template)


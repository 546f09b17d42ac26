"""What the linter reports: one ``Finding`` per problem, with a severity and a location."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from ampsctl.errors import Location


class Severity(IntEnum):
    """Ordered so that ``--fail-on`` is a comparison."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity '{text}' (use error, warning or info)") from None


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: Severity
    message: str
    location: Location
    hint: str | None = None
    fatal: bool = False  # the file could not be read or parsed at all (exit code 3)

    def sort_key(self) -> tuple[str, int, int, str]:
        loc = self.location
        return (loc.path, loc.line, loc.col, self.code)

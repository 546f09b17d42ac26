"""The lint rule registry: every rule has a stable code, a name, a severity and docs.

A rule is a generator function decorated with ``@rule(...)``. It receives the
``ConfigModel`` and yields ``Issue`` values; the engine turns them into located
``Finding``s with the rule's code and severity. Rules that the loader or the schema stage
report (GEN-001, GEN-007, XSD-001...) are registered with ``check=None`` so that they are
documented and selectable like any other.

Each rule documents a ``bad`` and a ``good`` example. An example that does not start with
``<AMPSConfig`` is wrapped in ``<AMPSConfig><Name>demo</Name>...</AMPSConfig>``; a test runs
every rule on its own examples, so the docs cannot drift from the code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.errors import Location


@dataclass(frozen=True, slots=True)
class Issue:
    """A rule's report before it is located: which node, what is wrong, how to fix it."""

    node: etree._Element
    message: str
    hint: str | None = None
    at_text: bool = True  # point at the element's value rather than its start tag
    severity: Severity | None = None  # overrides the rule's severity for this one report
    where: Location | None = None  # a place inside the value (a filter's error column); overrides at_text


Check = Callable[["object"], Iterable[Issue]]


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    name: str
    severity: Severity
    summary: str
    bad: str
    good: str
    description: str = ""
    source: str = ""
    check: Check | None = None
    opt_in: bool = False  # runs only when its exact code is passed to --select

    @property
    def prefix(self) -> str:
        return self.code.split("-")[0]


_RULES: dict[str, Rule] = {}
_SORTED: list[Rule] = []  # all_rules() result, rebuilt when a rule is added


def rule(
    code: str,
    name: str,
    severity: Severity,
    summary: str,
    *,
    bad: str,
    good: str,
    description: str = "",
    source: str = "",
    opt_in: bool = False,
) -> Callable[[Check], Check]:
    """Register a check function as a rule."""

    def register(check: Check) -> Check:
        _add(Rule(code, name, severity, summary, bad.strip(), good.strip(), description.strip(), source, check, opt_in))
        return check

    return register


def declare(code: str, name: str, severity: Severity, summary: str, *, bad: str, good: str, description: str = "", source: str = "") -> None:
    """Register a rule that the loader or the schema stage reports (it has no check)."""
    _add(Rule(code, name, severity, summary, bad.strip(), good.strip(), description.strip(), source, None))


def _add(new: Rule) -> None:
    if new.code in _RULES:
        raise RuntimeError(f"rule code {new.code} registered twice")
    _RULES[new.code] = new
    _SORTED.clear()


def all_rules() -> list[Rule]:
    """Every rule, sorted by code. Importing the rule modules fills the registry."""
    import ampsctl.config.rules  # noqa: F401  (registers on import)

    if not _SORTED:
        _SORTED.extend(sorted(_RULES.values(), key=lambda r: _code_key(r.code)))
    return list(_SORTED)


def get_rule(code: str) -> Rule | None:
    all_rules()
    return _RULES.get(code.strip().upper())


def _code_key(code: str) -> tuple[str, int]:
    prefix, _, number = code.partition("-")
    return (prefix, int(number) if number.isdigit() else 0)


def wrap_example(example: str) -> str:
    """Make a rule's doc example a whole config."""
    text = example.strip()
    if text.startswith("<AMPSConfig") or text.startswith("<?xml"):
        return text + "\n"
    return f"<AMPSConfig>\n  <Name>demo</Name>\n{text}\n</AMPSConfig>\n"

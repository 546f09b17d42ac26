"""Inline suppression: ``<!-- ampsctl: disable=CODE[,CODE...] reason -->``.

Scope: the element that follows the comment (with everything inside it); a comment that is
the last thing in its parent covers the parent; a comment before the root element covers
the whole file. Includes: a comment before an ``<Include>`` covers all that it includes, and
a comment at the end of an included file covers that file's content, never the element
after the ``<Include>`` in the including file. A reason is required: a directive without one is reported (SUP-001) and
ignored, so suppressions stay explained. A code may be a prefix (``SOWT`` = all SOWT-*).
"""

from __future__ import annotations

import re
from collections.abc import Set
from dataclasses import dataclass

from lxml import etree

from ampsctl.config.findings import Finding, Severity
from ampsctl.config.loader import LoadedConfig

_DIRECTIVE = re.compile(r"\s*ampsctl:\s*disable\s*=\s*([A-Za-z0-9_,-]*)(.*)", re.S)


@dataclass(frozen=True, slots=True)
class Suppression:
    codes: tuple[str, ...]
    targets: tuple[etree._Element, ...] | None  # None: the whole file
    reason: str

    def covers(self, code: str) -> bool:
        return any(code == c or code.startswith(c + "-") for c in self.codes)


def find_suppressions(config: LoadedConfig, known_codes: Set[str]) -> tuple[list[Suppression], list[Finding]]:
    if not config.mentions("ampsctl:"):
        return [], []  # every directive says so: no need to walk the tree for comments
    root = config.root
    comments = [c for c in root.itersiblings(etree.Comment, preceding=True)] + list(root.iter(etree.Comment))
    found: list[Suppression] = []
    problems: list[Finding] = []
    for comment in comments:
        match = _DIRECTIVE.match(comment.text or "")
        if not match:
            continue
        # "GEN-" is the prefix GEN, as in --select
        codes = tuple(c.strip().upper().rstrip("-") for c in match.group(1).split(",") if c.strip().rstrip("-"))
        reason = match.group(2).strip()
        where = config.locate(comment)
        if not codes or not reason:
            problems.append(
                Finding(
                    "SUP-001",
                    Severity.ERROR,
                    "suppression needs a code and a reason" if codes else "suppression names no rule code",
                    where,
                    "write <!-- ampsctl: disable=CODE why this is fine -->",
                )
            )
            continue
        for code in codes:
            if not any(k == code or k.startswith(code + "-") for k in known_codes):
                problems.append(Finding("SUP-002", Severity.WARNING, f"suppression names unknown rule code '{code}'", where, "see `ampsctl config rules` for the codes"))
        found.append(Suppression(codes, _targets(comment, config), reason))
    return found, problems


def _targets(comment: etree._Element, config: LoadedConfig) -> tuple[etree._Element, ...] | None:
    if comment.getparent() is None:
        return None  # outside the root element: whole file
    written_in = config.file_of(comment)
    following = next(comment.itersiblings(tag=etree.Element), None)
    if following is not None:
        if config.file_of(following) is written_in:
            return (following,)
        # an <Include> written right after the comment: all that it includes
        outer = [g for g in config.inclusions(following) if comment not in g.nodes]
        if outer and outer[-1].written_in is written_in:
            return _elements(outer[-1].nodes)
    own = config.inclusions(comment)
    if own:
        return _elements(own[0].nodes)  # the end of an included file: that file's content
    return (comment.getparent(),)


def _elements(nodes: tuple[etree._Element, ...]) -> tuple[etree._Element, ...]:
    return tuple(n for n in nodes if isinstance(n.tag, str))


def is_suppressed(code: str, node: etree._Element | None, suppressions: list[Suppression]) -> bool:
    for sup in suppressions:
        if not sup.covers(code):
            continue
        if sup.targets is None:
            return True
        if node is not None and any(node is t or any(a is t for a in node.iterancestors()) for t in sup.targets):
            return True
    return False

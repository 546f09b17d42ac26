"""What the SOW section says about a topic name, for the Actions topic rules (ACT-015..ACT-020, XS-003).

``sow_index(model)`` is built once per model (through ``model.shared``): the literal entry
names with their kinds and message types, the regex names and Pattern topics, and for each
view or conflated topic the topics it is computed from (transitively), so a publish to
`orders` is known to feed a view over `orders` too. Topic values written in actions are only
looked up when they are literal: no template and no regex syntax beyond dots.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ampsctl.config.model import ConfigModel, has_regex_chars, topic_matches

_REGEX_NOT_DOT = re.compile(r"[\^$*+?()\[\]{}|\\]")  # regex metacharacters except '.'


@dataclass(frozen=True)
class SowIndex:
    """The SOW entries by name, for topic lookups from actions."""

    kinds: dict[str, set[str]]  # literal name -> entry kinds (Topic, Queue, View, ...)
    message_types: dict[str, set[str]]  # literal name -> message types of its entries
    patterns: list[tuple[str, str]]  # (regex, kind) for Pattern topics and regex names
    derived: dict[str, set[str]]  # view / conflated topic -> topics it is computed from

    def kinds_of(self, topic: str) -> set[str]:
        found = set(self.kinds.get(topic, ()))
        for pattern, kind in self.patterns:
            if topic_matches(pattern, topic):
                found.add(kind)
        return found

    def regex_hits_sow(self, pattern: str) -> bool:
        """Could a regex topic name a SOW entry? (Undecidable against Pattern topics: yes.)"""
        return bool(self.patterns) or any(topic_matches(pattern, name) for name in self.kinds)


_QUALIFIED = re.compile(r"\[([^\]]*)\]\.\[([^\]]*)\]")
_FIELD_START = re.compile(r"\.\s*\[?/")


def _topic_ref(text: str) -> str:
    """The topic of `orders`, `[orders]` or `[json].[orders]` (message-type qualified)."""
    text = text.strip()
    qualified = _QUALIFIED.fullmatch(text)
    if qualified:
        return qualified.group(2).strip()
    if text.startswith("[") and text.endswith("]") and text.count("[") == 1:
        return text[1:-1].strip()
    return text


def _join_topics(text: str) -> set[str]:
    """Topics on both sides of a view Join: `[json].[orders].[/id] = [items]./order_id`."""
    names = set()
    for side in text.split("="):
        field_at = _FIELD_START.search(side)
        topic = _topic_ref(side[: field_at.start()] if field_at else side)
        if topic:
            names.add(topic)
    return names


def _build(model: ConfigModel) -> SowIndex:
    kinds: dict[str, set[str]] = {}
    mtypes: dict[str, set[str]] = {}
    patterns: list[tuple[str, str]] = []
    direct: dict[str, set[str]] = {}
    for entry in model.sow_entries:
        name = entry.name
        if name:
            kinds.setdefault(name, set()).add(entry.kind)
            if entry.message_type:
                mtypes.setdefault(name, set()).add(entry.message_type)
            if looks_like_regex(name):
                patterns.append((name, entry.kind))
        pattern = entry.text("Pattern")
        if pattern:
            patterns.append((pattern, entry.kind))
        if name and entry.kind in ("View", "ConflatedTopic"):
            sources = direct.setdefault(name, set())
            for underlying in entry.all("UnderlyingTopic"):
                joins = [j for j in underlying if j.tag == "Join"]
                if joins:
                    for join in joins:
                        sources |= _join_topics(join.text or "")
                elif (underlying.text or "").strip():
                    sources.add(_topic_ref(underlying.text or ""))
    derived: dict[str, set[str]] = {}
    for name in direct:  # transitive: a view over a view over `orders` is fed by `orders`
        seen: set[str] = set()
        todo = list(direct[name])
        while todo:
            source = todo.pop()
            if source not in seen:
                seen.add(source)
                todo.extend(direct.get(source, ()))
        derived[name] = seen
    return SowIndex(kinds, mtypes, patterns, derived)


def sow_index(model: ConfigModel) -> SowIndex:
    """The model's SOW index, built on first use and shared by every rule that asks."""
    return model.shared(_build)


def looks_like_regex(text: str) -> bool:
    """Regex metacharacters other than '.', which is common in literal topic names (`desk.rates`)."""
    return _REGEX_NOT_DOT.search(text) is not None


def literal_topic(text: str | None) -> str | None:
    """A topic value usable for lookups: non-empty, no template, no regex syntax beyond dots."""
    if not text or "{{" in text or looks_like_regex(text):
        return None
    return text


def message_types_compatible(a: str | None, b: str | None) -> bool:
    """Can two MessageType values select the same topic? Yes unless both are literal and differ."""
    return not a or not b or a == b or has_regex_chars(a) or has_regex_chars(b)

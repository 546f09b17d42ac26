"""What the SOW section says about a topic name, for the Actions topic rules (ACT-015..ACT-020, XS-003).

The lookups go through ``model.entries_by_name`` (the literal entry names with their kinds and
message types); the regex names and Pattern topics (``sow_patterns``), and for each view or
conflated topic the topics it is computed from, transitively (``derived_topics``), are worked
out on first use and shared through ``model.shared``: a publish to `orders` is known to feed a
view over `orders` too. Topic values written in actions are only looked up when they are
literal: no template and no regex syntax beyond dots.
"""

from __future__ import annotations

import re

from ampsctl.config.model import ConfigModel, has_regex_chars, topic_matches

_REGEX_NOT_DOT = re.compile(r"[\^$*+?()\[\]{}|\\]")  # regex metacharacters except '.'


def kinds_of(model: ConfigModel, topic: str) -> set[str]:
    """The kinds of SOW entries (Topic, Queue, View, ...) that a literal topic names or matches."""
    found = {entry.kind for entry in model.entries_by_name.get(topic, ())}
    for pattern, kind in sow_patterns(model):
        if topic_matches(pattern, topic):
            found.add(kind)
    return found


def message_types_of(model: ConfigModel, topic: str) -> set[str]:
    """The message types the SOW entries named ``topic`` are defined with."""
    return {entry.message_type for entry in model.entries_by_name.get(topic, ()) if entry.message_type}


def regex_hits_sow(model: ConfigModel, pattern: str) -> bool:
    """Could a regex topic name a SOW entry? (Undecidable against Pattern topics: yes.)"""
    return bool(sow_patterns(model)) or any(topic_matches(pattern, name) for name in model.entries_by_name)


def sow_patterns(model: ConfigModel) -> list[tuple[str, str]]:
    """(regex, kind) for the Pattern of every SOW entry and every entry name that is a regex."""
    return model.shared(_patterns)


def _patterns(model: ConfigModel) -> list[tuple[str, str]]:
    found = [(pattern, entry.kind) for entry in model.entries_with("Pattern") if (pattern := entry.text("Pattern"))]
    names = model.entries_by_name
    if looks_like_regex("\n".join(names)):  # one search first: names are rarely regexes
        found += [(name, entry.kind) for name, entries in names.items() if looks_like_regex(name) for entry in entries]
    return found


def derived_topics(model: ConfigModel) -> dict[str, set[str]]:
    """View / conflated topic name -> the topics it is computed from, transitively, in file order."""
    return model.shared(_derived)


def _derived(model: ConfigModel) -> dict[str, set[str]]:
    direct: dict[str, set[str]] = {}
    for entry in sorted(model.views + model.conflated_topics, key=lambda e: e.order):
        name = entry.name
        if not name:
            continue
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
    return derived


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

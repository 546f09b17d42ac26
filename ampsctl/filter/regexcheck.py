"""Checks a regular expression must pass before the ``regex`` package compiles or runs it.

Two valid patterns exhaust memory in the package rather than failing cleanly:

* **Counted repeats are unrolled when compiling**: ``X{m}`` holds m copies of X and nested
  counts multiply, at roughly 270 bytes a copy, so ``(?:(?:a{1000}){1000}){1000}`` asks for
  hundreds of gigabytes. A pattern is refused when it would unroll to more than
  ``MAX_UNROLLED`` copies: PCRE's largest repeat count (PCRE refuses such patterns too).
* **Left recursion** (a group that calls itself, through ``(?R)``, ``(?1)``, ``(?&name)``...,
  before matching a character, as in ``(?:(?R)|a)``) recurses without end when searching:
  about 1 GB a second until the timeout, or a MemoryError. It can never match, and PCRE 8
  refuses it when compiling ("recursive call could loop indefinitely"), so it is refused here.

Syntax PCRE refuses or reads otherwise (fuzzy constraints, ``(?r)``, ``\\m``...) is refused
first, by ``regexdialect`` from what the parser read where.

Both are measured on the tree of the package's own parser (``regex._regex_core``), so verbose
mode, comments and inline flags read exactly as the package reads them. If that parser refuses
the pattern, ``problem`` says nothing and compiling reports the package's own error.
"""

from __future__ import annotations

from typing import Any

try:
    from regex import _regex_core as _core

    from ampsctl.filter import regexdialect
except ImportError:  # pragma: no cover - a regex without it: patterns go unchecked
    _core = None

MAX_UNROLLED = 65_535
_CHILDREN = ("subpattern", "items", "branches", "yes_item", "no_item")
_SIZE_HINT = "use smaller counts, especially in nested repeats such as (?:a{1000}){1000}; {0,n}, * and + cost nothing"
_LOOP_HINT = "make the group match a character before it calls itself again, e.g. a(?R)? or \\((?:[^()]|(?R))*\\)"


def problem(pattern: str, flags: int) -> tuple[str, int | None, str] | None:
    """(what is wrong, offset in the pattern or None, hint) for a pattern that must not be
    compiled, or None. RecursionError passes through (groups nested too deeply)."""
    parsed = _parse(pattern, flags)
    if parsed is None:
        return None
    tree, reading = parsed
    found = regexdialect.foreign(pattern, reading, flags, tree)
    if found is not None:
        return found
    try:
        tree.fix_groups(pattern, False, False)  # resolves calls to group numbers; bad references
    except _core.error:  # are the package's to report, when compiling
        return None
    if _unrolled(tree) > MAX_UNROLLED:
        return f"is too large: its counted repeats unroll to more than {MAX_UNROLLED} copies", None, _SIZE_HINT
    call = _left_recursion(tree)
    if call is not None:
        position = getattr(call, "position", None)  # just after "(?" or "(?P": point at the "("
        start = pattern.rfind("(", 0, position) if isinstance(position, int) else -1
        return ("calls a group that calls itself again before matching a character, which recurses forever",
                start if start >= 0 else None, _LOOP_HINT)
    return None


def _parse(pattern: str, flags: int) -> tuple[Any, Any] | None:
    if _core is None:
        return None
    for _ in range(8):  # a global inline flag such as (?x) makes the package parse again
        source = regexdialect.Reading(pattern)
        try:
            info = _core.Info(flags, source.char_type, {})
        except ValueError:  # flags at odds with ours, e.g. (?V1): compiling reports it
            return None
        info.guess_encoding = _core.UNICODE
        source.ignore_space = bool(info.flags & _core.VERBOSE)
        try:
            return _core._parse_pattern(source, info), source
        except _core._UnscopedFlagSet:
            flags = info.global_flags
        except _core.error:
            return None
    return None


def _children(node: Any) -> list[Any]:
    found: list[Any] = []
    for name in _CHILDREN:
        child = getattr(node, name, None)
        if isinstance(child, (list, tuple)):
            found.extend(child)
        elif child is not None:
            found.append(child)
    return found


def _unrolled(node: Any) -> int:
    """Copies of items once repeats are unrolled (capped just above MAX_UNROLLED); a run of
    plain characters is one item, as the package packs it into one string."""
    if isinstance(node, _core.GreedyRepeat):  # lazy and possessive repeats derive from it
        return min(MAX_UNROLLED + 1, max(node.min_count, 1) * _unrolled(node.subpattern))
    if isinstance(node, _core.SetBase):  # a character class is one item, whatever its members
        return 1
    total, after_character = 0, False
    for item in _children(node):
        character = isinstance(item, _core.Character)
        if not (character and after_character):
            total += _unrolled(item)
        after_character = character
    return min(MAX_UNROLLED + 1, max(total, 1))


# --- left recursion --------------------------------------------------------------------------


def _left_recursion(tree: Any) -> Any | None:
    """A group call through which some group reaches itself without consuming, or None."""
    groups = {0: tree}
    calls: list[Any] = []
    _collect(tree, groups, calls)
    if not calls:
        return None
    nullable: dict[int, bool] = {}

    def target(call: Any) -> int | None:
        return call.group if call.group in groups else None

    def empty(node: Any, busy: frozenset[int]) -> bool:
        """Whether ``node`` can match without consuming a character."""
        if isinstance(node, _core.GreedyRepeat):
            return node.min_count == 0 or empty(node.subpattern, busy)
        if isinstance(node, _core.Branch):
            return any(empty(branch, busy) for branch in node.branches)
        if isinstance(node, (_core.Conditional, _core.LookAroundConditional)):
            return empty(node.yes_item, busy) or empty(node.no_item, busy)
        if isinstance(node, _core.LookAround):
            return True
        if isinstance(node, _core.CallGroup):
            group = target(node)
            if group is None or group in busy:
                return False
            if group not in nullable:
                nullable[group] = empty(groups[group], busy | {group})
            return nullable[group]
        if isinstance(node, (_core.Character, _core.SetBase, _core.Any, _core.Property, _core.String, _core.Grapheme)):
            return bool(getattr(node, "zerowidth", False))
        children = _children(node)
        return all(empty(child, busy) for child in children) if children else True

    def first_calls(node: Any) -> list[Any]:
        """The group calls ``node`` can make before consuming a character."""
        if isinstance(node, _core.CallGroup):
            return [node]
        if isinstance(node, _core.GreedyRepeat) and node.max_count == 0:
            return []  # X{0} never runs X
        if isinstance(node, _core.Sequence):
            found: list[Any] = []
            for item in node.items:
                found += first_calls(item)
                if not empty(item, frozenset()):
                    break
            return found
        return [call for child in _children(node) for call in first_calls(child)]

    edges = {group: [(call, target(call)) for call in first_calls(node)] for group, node in groups.items()}
    for start in groups:  # a depth-first search from each group for a way back to it
        stack, seen = [start], {start}
        while stack:
            for call, group in edges[stack.pop()]:
                if group == start:
                    return call
                if group is not None and group not in seen:
                    seen.add(group)
                    stack.append(group)
    return None


def _collect(node: Any, groups: dict[int, Any], calls: list[Any]) -> None:
    if isinstance(node, _core.Group):
        groups[node.group] = node.subpattern
    elif isinstance(node, _core.CallGroup):
        calls.append(node)
    for child in _children(node):
        _collect(child, groups, calls)

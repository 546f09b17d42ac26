"""AMPS field paths as the codecs take them for SOW keys, diffs and select lists ("/id", "/a/b", "/55").

These are the plain paths of `<Key>` elements and select lists, not the filter language's field
syntax: no subscripts, no ``[/bracketed name]``, no view qualifier. That is why this tiny module
exists below ``ampsctl.filter`` instead of reusing its parser (messages/ must not import filter/).
A step is any text between slashes, taken literally, so ``@attr`` (XML attributes) and numeric FIX
tags need no special handling here; each codec decides what a step means for its documents.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

from ampsctl.errors import InputError


@lru_cache(maxsize=4096)  # a handful of key and index paths, split for every record keyed or indexed
def split_path(text: str) -> tuple[str, ...]:
    """The steps of ``text``: ``"/customer/name"`` -> ``("customer", "name")``.

    Surrounding whitespace is ignored (paths often come from comma-separated option values);
    a missing leading slash or an empty step is an InputError rather than a guess, because a
    wrong key path silently keys every record on NULL.
    """
    path = text.strip()
    if not path.startswith("/") or path == "/":
        raise InputError(
            f"invalid field path {text!r}: a path starts with '/' and names at least one field",
            code="PATH",
            hint="write key and select paths like /id, /customer/name or /55",
        )
    steps = tuple(path[1:].split("/"))
    if any(not step for step in steps):
        raise InputError(
            f"invalid field path {text!r}: empty step (two slashes in a row or a trailing slash)",
            code="PATH",
            hint="write key and select paths like /id, /customer/name or /55",
        )
    return steps


def split_paths(texts: Iterable[str]) -> tuple[tuple[str, ...], ...]:
    """Every path of ``texts`` split, in order; duplicates are kept (composite key order matters)."""
    return tuple(split_path(text) for text in texts)


def join_path(steps: Sequence[str]) -> str:
    """The inverse of split_path, for error messages: ``("a", "b")`` -> ``"/a/b"``."""
    return "/" + "/".join(steps)


def selection(path: tuple[str, ...], select: tuple[tuple[str, ...], ...] | None) -> tuple[bool, bool]:
    """For a delta's select list: (the whole value at ``path`` is selected, something below it is).

    No select list selects everything; the JSON and XML diffs share this one rule.
    """
    if select is None:
        return True, True
    whole = any(path[: len(s)] == s for s in select)
    return whole, whole or any(len(s) > len(path) and s[: len(path)] == path for s in select)

"""Baselines: accept today's findings so that CI fails only on new ones.

A finding is identified by (path, code, message), not by line, so edits elsewhere in the
file do not invalidate the baseline; repeated identical findings are counted.

Paths are stored relative to the baseline file's directory (format 2), so the same config
matches however it is named on the command line (``amps.xml``, ``./amps.xml``, an absolute
path, or from another working directory). In memory every key holds the absolute path.
Format 1 stored paths as given, relative to the working directory: they are read that way.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from ampsctl.config.findings import Finding
from ampsctl.errors import InputError, Location, UsageError

VERSION = 2
READABLE = (1, 2)


def _key(finding: Finding) -> tuple[str, str, str]:
    return (os.path.abspath(finding.location.path), finding.code, finding.message)


def _stored(path: str, directory: str) -> str:
    """``path`` as a baseline in ``directory`` records it: relative, with / separators."""
    try:
        return Path(os.path.relpath(path, directory)).as_posix()
    except ValueError:  # another drive (Windows): no relative form
        return path


def write_baseline(findings: Iterable[Finding], path: str) -> int:
    counts = Counter(_key(f) for f in findings if not f.fatal)
    directory = os.path.dirname(os.path.abspath(path))
    entries = [
        {"path": _stored(p, directory), "code": c, "message": m, "count": n} for (p, c, m), n in sorted(counts.items())
    ]
    try:
        Path(path).write_text(json.dumps({"version": VERSION, "tool": "ampsctl", "findings": entries}, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write the baseline file '{path}': {exc.strerror}", hint="pass a writable file path to --baseline") from None
    return sum(counts.values())


def load_baseline(path: str) -> Counter[tuple[str, str, str]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"baseline file not found: '{path}'", code="BASELINE", hint="create it with --write-baseline", location=Location(path)) from None
    except OSError as exc:  # a directory, no permission...
        raise InputError(f"cannot read the baseline file '{path}': {exc.strerror}", code="BASELINE", hint="pass the JSON file written by --write-baseline", location=Location(path)) from None
    except UnicodeDecodeError:
        raise _invalid(path, "it is not UTF-8 text") from None
    if not text.strip():
        raise _invalid(path, "the file is empty")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise _invalid(path, f"it is not JSON ({exc})") from None
    except RecursionError:
        raise _invalid(path, "it is not JSON (nested too deeply)") from None
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise _invalid(path, 'expected a JSON object with a "findings" list')
    version = data.get("version", 1)
    if isinstance(version, bool) or version not in READABLE:
        raise _invalid(path, f"format version {version!r} is not one this ampsctl reads ({', '.join(map(str, READABLE))})")
    # Format 2 paths are relative to the baseline's directory, format 1 paths to the working directory.
    base = os.path.dirname(os.path.abspath(path)) if version == 2 else os.getcwd()
    counts: Counter[tuple[str, str, str]] = Counter()
    for number, entry in enumerate(data["findings"], 1):
        stored, code, message = _entry(path, number, entry)
        counts[(os.path.normpath(os.path.join(base, stored)), code, message)] += _count(path, number, entry)
    return counts


def _entry(path: str, number: int, entry: object) -> tuple[str, str, str]:
    if not isinstance(entry, dict):
        raise _invalid(path, f"finding {number} is not a JSON object")
    fields = []
    for name in ("path", "code", "message"):
        value = entry.get(name)
        if not isinstance(value, str):
            problem = "has no" if value is None else "has a non-string"
            raise _invalid(path, f'finding {number} {problem} "{name}"')
        fields.append(value)
    return (fields[0], fields[1], fields[2])


def _count(path: str, number: int, entry: dict[str, object]) -> int:
    count = entry.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise _invalid(path, f'finding {number} has a "count" that is not a whole number of at least 1')
    return count


def _invalid(path: str, problem: str) -> InputError:
    return InputError(f"baseline file is not valid: {problem}", code="BASELINE", hint="regenerate it with --write-baseline", location=Location(path))


def apply_baseline(findings: list[Finding], baseline: Counter[tuple[str, str, str]]) -> tuple[list[Finding], int]:
    """Drop findings that the baseline accepts; return the rest and how many were dropped."""
    remaining = Counter(baseline)
    kept = []
    for finding in findings:
        key = _key(finding)
        if remaining[key] > 0 and not finding.fatal:
            remaining[key] -= 1
        else:
            kept.append(finding)
    return kept, len(findings) - len(kept)

"""Baselines: accept today's findings so that CI fails only on new ones.

A finding is identified by (path, code, message), not by line, so edits elsewhere in the
file do not invalidate the baseline; repeated identical findings are counted.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from ampsctl.config.findings import Finding
from ampsctl.errors import InputError, Location, UsageError

VERSION = 1


def _key(finding: Finding) -> tuple[str, str, str]:
    return (finding.location.path, finding.code, finding.message)


def write_baseline(findings: Iterable[Finding], path: str) -> int:
    counts = Counter(_key(f) for f in findings if not f.fatal)
    entries = [
        {"path": p, "code": c, "message": m, "count": n} for (p, c, m), n in sorted(counts.items())
    ]
    try:
        Path(path).write_text(json.dumps({"version": VERSION, "tool": "ampsctl", "findings": entries}, indent=2) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write the baseline file '{path}': {exc.strerror}", hint="pass a writable file path to --baseline") from None
    return sum(counts.values())


def load_baseline(path: str) -> Counter[tuple[str, str, str]]:
    try:
        data = json.loads(Path(path).read_text())
        return Counter({(e["path"], e["code"], e["message"]): int(e.get("count", 1)) for e in data["findings"]})
    except FileNotFoundError:
        raise InputError(f"baseline file not found: '{path}'", code="BASELINE", hint="create it with --write-baseline", location=Location(path)) from None
    except OSError as exc:  # a directory, no permission...
        raise InputError(f"cannot read the baseline file '{path}': {exc.strerror}", code="BASELINE", hint="pass the JSON file written by --write-baseline", location=Location(path)) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"baseline file is not valid: {exc}", code="BASELINE", hint="regenerate it with --write-baseline", location=Location(path)) from None


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

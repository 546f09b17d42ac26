"""Machine-readable lint reports: JSON, SARIF 2.1.0, GitHub annotations, JUnit XML.

Each renderer is a pure function from a ``LintReport`` to text.
"""

from __future__ import annotations

import orjson

from ampsctl import __version__
from ampsctl.config.lint import LintReport


def render_json(report: LintReport) -> str:
    data = {
        "tool": "ampsctl",
        "version": __version__,
        "files": [
            {
                "path": r.path,
                "suppressed": r.suppressed,
                "findings": [
                    {
                        "code": f.code,
                        "severity": f.severity.label,
                        "message": f.message,
                        "path": f.location.path,
                        "line": f.location.line,
                        "column": f.location.col,
                        "hint": f.hint,
                        "fatal": f.fatal,
                    }
                    for f in r.findings
                ],
            }
            for r in report.files
        ],
        "baselined": report.baselined,
    }
    return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"

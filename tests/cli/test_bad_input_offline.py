"""Bad option values of the offline and client commands: a usage error (exit 2), never a crash or a hang."""

from __future__ import annotations

from pathlib import Path

import pytest
from clitools import run_ampsctl

URI = "tcp://127.0.0.1:1/amps/json"  # nothing listens: a value that passed the checks would fail to connect (exit 4)


@pytest.mark.parametrize(
    "args",
    [
        ("client", "publish", URI, "-t", "x", "--data", "{}", "--connect-timeout", "nan"),
        ("client", "ping", URI, "--connect-timeout", "NaN"),
        ("client", "subscribe", URI, "-t", "x", "--timeout", "nan"),
        ("journal", "replay", "j", "--to", URI, "--connect-timeout", "nan"),
    ],
)
def test_nan_seconds_are_a_usage_error(tmp_path: Path, args: tuple[str, ...]) -> None:
    # nan passed click's range check (no comparison with nan is true): "no answer within nan s".
    result = run_ampsctl(*args, cwd=tmp_path, timeout=30)
    assert result.code == 2, result.output
    assert "nan is not a number of seconds" in result.stderr and "Traceback" not in result.stderr


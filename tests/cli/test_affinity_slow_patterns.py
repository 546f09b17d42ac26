"""A SubscriptionTopic or coverage PCRE search that runs past the regex timeout counts as no
match (docs/affinity.md, "Slow patterns"). It used to do so silently: the topic was simply not
interest, or not covered, which reads as a wrong assignment. Now a warning names the pattern,
the topic and the event line; processing continues and the exit code stays 0.
"""

from __future__ import annotations

from pathlib import Path

import orjson
from clitools import run_ampsctl

SLOW = "^(a|aa)+$"  # exponential backtracking on a long run of a's that does not end the text
TOPIC = "a" * 40 + "!"


def _write(path: Path, *events: dict[str, str]) -> str:
    path.write_bytes(b"".join(orjson.dumps(event) + b"\n" for event in events))
    return path.name


def test_a_slow_subscription_topic_search_is_a_warning_with_the_line(tmp_path: Path) -> None:
    events = _write(tmp_path / "events.jsonl",
                    {"event": "subscribe", "connection": "p", "client": "pub", "topic": "ctl", "sub_id": "c"},
                    {"event": "subscribe", "connection": "s", "client": "sub", "topic": TOPIC, "sub_id": "1"},
                    {"event": "subscribe", "connection": "s", "client": "sub", "topic": "aa", "sub_id": "2"})
    result = run_ampsctl("affinity", "simulate", "--control-topic", "ctl", "--subscription-topic", SLOW,
                         "--events", events, "--format", "jsonl", "--no-summary", cwd=tmp_path)
    assert result.code == 0
    assert [orjson.loads(line)["AMPS_TOPIC"] for line in result.stdout.splitlines()] == ["aa"]
    assert result.stderr == (f"ampsctl: warning: events.jsonl:2: SubscriptionTopic '{SLOW}' ran past the 1 s regex "
                             f"timeout on topic '{TOPIC}': counted as no match, so subscriptions to it are not interest\n")


def test_a_slow_coverage_search_is_a_warning_with_the_line(tmp_path: Path) -> None:
    events = _write(tmp_path / "events.jsonl",
                    {"event": "subscribe", "connection": "p", "client": "pub", "topic": "ctl", "sub_id": "c",
                     "options": f"udo_coverage={SLOW}"},
                    {"event": "subscribe", "connection": "s", "client": "sub", "topic": TOPIC, "sub_id": "1"})
    result = run_ampsctl("affinity", "simulate", "--control-topic", "ctl", "--subscription-topic", "a",
                         "--coverage-option", "udo_coverage", "--events", events, "--format", "jsonl",
                         "--no-summary", cwd=tmp_path)
    assert result.code == 0
    assert [orjson.loads(line)["AMPS_AFFINITY_ACTION"] for line in result.stdout.splitlines()] == ["no_handlers"]
    assert result.stderr == (f"ampsctl: warning: events.jsonl:2: coverage PCRE '{SLOW}' ran past the 1 s regex "
                             f"timeout on topic '{TOPIC}': counted as not covering it\n")

"""``ampsctl journal ...`` and ``ampsctl sow ...`` on odd but plausible input, through the real
entry point (``clitools.run_ampsctl``): each case is a mistake an AMPS user can make, and the
answer must be a clear error with a defined exit code, never a silent guess."""

from __future__ import annotations

from pathlib import Path

from clitools import run_ampsctl

DEMO = b'{"topic":"orders","data":{"id":1,"qty":5}}\n{"topic":"orders","data":{"id":2,"qty":7}}\n'
CONFIG = b"""<AMPSConfig><Name>t</Name><SOW>
<Topic><Name>orders</Name><MessageType>json</MessageType><FileName>sow/%n.sow</FileName><Key>/id</Key></Topic>
</SOW></AMPSConfig>
"""


def _journal_and_sow(base: Path) -> tuple[Path, Path]:
    (base / "in.jsonl").write_bytes(DEMO)
    (base / "amps.xml").write_bytes(CONFIG)
    assert run_ampsctl("journal", "import", "in.jsonl", "--out", "j", cwd=base).code == 0
    assert run_ampsctl("journal", "compact", "j", "--config", "amps.xml", "--out", "out", cwd=base).code == 0
    return base / "j", base / "out" / "orders.json.sow"


# ------------------------------------------------------------------ journal import


def test_import_refuses_a_field_given_twice(tmp_path: Path) -> None:
    # orjson keeps the last of two equal names: the record went to topic 'b' without a word
    (tmp_path / "in.jsonl").write_bytes(b'{"topic":"orders","data":{"id":1}}\n'
                                        b'{"topic":"a","data":{"id":2},"topic":"b"}\n')
    done = run_ampsctl("journal", "import", "in.jsonl", "--out", "j", cwd=tmp_path)
    assert done.code == 3, done.output
    assert "in.jsonl:2: field 'topic' is given twice" in done.stderr
    assert "Traceback" not in done.output and not (tmp_path / "j").exists()


def test_import_refuses_a_field_given_twice_under_an_escaped_name(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_bytes(b'{"topic":"a","data":{"id":2},"sow_key":"x","sow\\u005fkey":"y"}\n')
    done = run_ampsctl("journal", "import", "in.jsonl", "--out", "j", cwd=tmp_path)
    assert done.code == 3, done.output
    assert "in.jsonl:1: field 'sow_key' is given twice" in done.stderr


def test_import_reads_a_deeply_nested_line_that_repeats_a_field_name(tmp_path: Path) -> None:
    # a name repeated inside the message sends the line to the standard library's read, which
    # recursed past its limit on nesting orjson accepts (1010 levels): internal error, exit 5
    depth = 1010
    line = b'{"topic":"a","data":{"topic":' + b"[" * depth + b"]" * depth + b"}}\n"
    (tmp_path / "in.jsonl").write_bytes(line)
    done = run_ampsctl("journal", "import", "in.jsonl", "--out", "j", cwd=tmp_path)
    assert done.code == 0, done.output
    assert "internal error" not in done.output


def test_import_accepts_field_names_repeated_inside_the_message(tmp_path: Path) -> None:
    # a name of the record's own fields may appear in the message (and escaped quotes in a payload)
    (tmp_path / "in.jsonl").write_bytes(b'{"topic":"a","data":{"topic":"t","data":{"topic":1}},"client_name":"c"}\n'
                                        b'{"topic":"a","payload":"{\\"topic\\":\\"x\\",\\"id\\":3}"}\n')
    done = run_ampsctl("journal", "import", "in.jsonl", "--out", "j", cwd=tmp_path)
    assert done.code == 0, done.output
    dumped = run_ampsctl("journal", "dump", "j", "--format", "jsonl", cwd=tmp_path)
    assert '"topic":"a"' in dumped.stdout and '\\"topic\\":\\"x\\"' in dumped.stdout


# ------------------------------------------------------------------ the wrong kind of file


def test_a_sow_file_given_to_journal_commands_is_named_as_one(tmp_path: Path) -> None:
    _, sow = _journal_and_sow(tmp_path)
    for command in ("dump", "verify"):
        done = run_ampsctl("journal", command, sow, cwd=tmp_path)
        assert done.code == 3, done.output
        assert "looks like text" not in done.stderr  # it said so of an SQLite file
        assert "SQLite database" in done.stderr and "ampsctl sow" in done.stderr


def test_a_journal_segment_given_to_sow_commands_is_named_as_one(tmp_path: Path) -> None:
    journal, _ = _journal_and_sow(tmp_path)
    for command in ("query", "dump", "stats"):
        done = run_ampsctl("sow", command, journal / "00000001.journal", cwd=tmp_path)
        assert done.code == 3, done.output
        assert "journal segment" in done.stderr and "ampsctl journal dump" in done.stderr
        done = run_ampsctl("sow", command, journal / "00000001.index", cwd=tmp_path)
        assert done.code == 3 and "journal index" in done.stderr, done.output


# ------------------------------------------------------------------ configs compaction cannot honour


def test_compact_refuses_an_index_without_a_field(tmp_path: Path) -> None:
    # <Index><Key>/qty</Key></Index> (HashIndex's form) and <HashIndex/> were dropped without a
    # word: the files had no such index, while `ampsctl validate` calls both errors
    (tmp_path / "in.jsonl").write_bytes(DEMO)
    assert run_ampsctl("journal", "import", "in.jsonl", "--out", "j", cwd=tmp_path).code == 0
    for index, says in (("<Index><Key>/qty</Key></Index>", "<Index>/qty</Index>"), ("<Index/>", "<Index>/qty</Index>"),
                        ("<HashIndex/>", "<HashIndex><Key>/qty</Key></HashIndex>"),
                        ("<HashIndex><Key> </Key></HashIndex>", "<HashIndex><Key>/qty</Key></HashIndex>")):
        (tmp_path / "amps.xml").write_bytes(CONFIG.replace(b"<Key>/id</Key>", b"<Key>/id</Key>" + index.encode()))
        done = run_ampsctl("journal", "compact", "j", "--config", "amps.xml", "--out", "out", cwd=tmp_path)
        assert done.code == 3, (index, done.output)
        assert "amps.xml:" in done.stderr and says in done.stderr, (index, done.stderr)
        assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ journal dump ranges


def test_dump_refuses_a_range_that_ends_before_it_starts(tmp_path: Path) -> None:
    # a reversed range printed nothing and exited 0, as if the journal held no such records
    journal, _ = _journal_and_sow(tmp_path)
    first, second = (f"{14695981039346656037}|{sequence}|" for sequence in (1, 2))
    for start, end in ((second, first), ("2026-01-01T00:00:01Z", "20260101T000000Z"), ("0|1|", first)):
        done = run_ampsctl("journal", "dump", journal, "--from", start, "--to", end, cwd=tmp_path)
        assert done.code == 2, (start, end, done.output)
        assert "--to" in done.stderr and "before --from" in done.stderr and done.stdout == ""
    # an empty range that is not reversed stays a valid question with an empty answer
    for start, end in ((first, first), ("0|1|", "0|1|"), ("2026-01-01T00:00:01Z", "2026-01-01T00:00:01Z")):
        done = run_ampsctl("journal", "dump", journal, "--from", start, "--to", end, cwd=tmp_path)
        assert done.code == 0 and done.stdout == "", (start, end, done.output)
    done = run_ampsctl("journal", "dump", journal, "--from", first, "--to", second, "--format", "jsonl", cwd=tmp_path)
    assert done.code == 0 and done.stdout.count("\n") == 1, done.output


def test_replay_refuses_a_range_that_ends_before_it_starts(tmp_path: Path) -> None:
    journal, _ = _journal_and_sow(tmp_path)
    done = run_ampsctl("journal", "replay", journal, "--to", "tcp://127.0.0.1:9/amps/json", "--connect-timeout", "1",
                       "--from", "2026-01-01T00:00:01Z", "--until", "2026-01-01T00:00:00Z", cwd=tmp_path)
    assert done.code == 2 and "--until" in done.stderr and "before --from" in done.stderr, done.output


def test_sow_topics_take_records_of_their_message_type_in_any_case(tmp_path: Path) -> None:
    # import checked "JSON" as a json message and wrote it as given, but compaction (whose config
    # MessageType is read in lower case) compared it exactly and left the record out of the SOW
    (tmp_path / "in.jsonl").write_bytes(b'{"topic":"orders","message_type":"JSON","data":{"id":1}}\n'
                                        b'{"topic":"orders","message_type":" Json ","payload":"{\\"id\\":2}"}\n')
    (tmp_path / "amps.xml").write_bytes(CONFIG)
    assert run_ampsctl("journal", "import", "in.jsonl", "--out", "j", cwd=tmp_path).code == 0
    dumped = run_ampsctl("journal", "dump", "j", "--format", "jsonl", cwd=tmp_path)
    assert '"message_type":"JSON"' in dumped.stdout, dumped.output  # the journal keeps what was written
    assert run_ampsctl("journal", "compact", "j", "--config", "amps.xml", "--out", "out", cwd=tmp_path).code == 0
    done = run_ampsctl("sow", "query", "out/orders.json.sow", "--format", "jsonl", cwd=tmp_path)
    assert done.stdout.count("\n") == 2, done.output


def test_compact_says_when_the_journal_does_not_start_at_sequence_one(tmp_path: Path) -> None:
    # a journal whose first segments were removed (archived) compacted without a word into SOW
    # files that miss every record published before its first remaining sequence
    many = b"".join(b'{"topic":"orders","data":{"id":%d,"pad":"%s"}}\n' % (i, b"x" * 200) for i in range(20))
    (tmp_path / "in.jsonl").write_bytes(many)
    (tmp_path / "amps.xml").write_bytes(CONFIG)
    assert run_ampsctl("journal", "import", "in.jsonl", "--out", "j", "--segment-size", "1KB", cwd=tmp_path).code == 0
    done = run_ampsctl("journal", "compact", "j", "--config", "amps.xml", "--out", "whole", cwd=tmp_path)
    assert done.code == 0 and "note:" not in done.stderr, done.output
    (tmp_path / "j" / "00000001.journal").unlink()
    (tmp_path / "j" / "00000001.index").unlink()
    done = run_ampsctl("journal", "compact", "j", "--config", "amps.xml", "--out", "part", cwd=tmp_path)
    assert done.code == 0, done.output
    assert "note: the journal starts at sequence 4" in done.stderr and "not in the SOW files" in done.stderr, done.stderr


def test_the_hint_for_damage_does_not_advise_cutting_a_segment_before_the_last(tmp_path: Path) -> None:
    # the hint said to cut the damaged segment at the offset: done to segment 2 of 4, that destroys
    # its intact records after the damage and leaves a gap the reader refuses all the same
    many = b"".join(b'{"topic":"orders","data":{"id":%d,"pad":"%s"}}\n' % (i, b"x" * 200) for i in range(20))
    (tmp_path / "in.jsonl").write_bytes(many)
    assert run_ampsctl("journal", "import", "in.jsonl", "--out", "j", "--segment-size", "1KB", cwd=tmp_path).code == 0
    segment = tmp_path / "j" / "00000002.journal"
    data = bytearray(segment.read_bytes())
    data[100] ^= 0x01
    segment.write_bytes(bytes(data))
    done = run_ampsctl("journal", "dump", "j", cwd=tmp_path)
    assert done.code == 3 and "00000002.journal" in done.stderr, done.output
    hint = done.stderr.split("hint:", 1)[1]
    assert "only the journal's last segment may be cut" in hint.lower() and "gap" in hint, hint


def test_import_names_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    # orjson says "str is not valid UTF-8: surrogates not allowed ... char 0" of any bad byte
    (tmp_path / "latin1.jsonl").write_bytes(b'{"topic":"a","data":{}}\n{"topic":"a","data":{"n":"caf\xe9"}}\n')
    (tmp_path / "utf16.jsonl").write_bytes('{"topic":"a","data":{}}\n'.encode("utf-16"))
    for name, where in (("latin1.jsonl", "latin1.jsonl:2: the line is not valid UTF-8: byte 0xe9 at byte offset 29"),
                        ("utf16.jsonl", "utf16.jsonl:1: the line is not valid UTF-8: byte 0xff at byte offset 0")):
        done = run_ampsctl("journal", "import", name, "--out", "j", cwd=tmp_path)
        assert done.code == 3 and where in done.stderr, done.output
        assert "surrogates" not in done.stderr and "UTF-16" in done.stderr


def test_keep_going_reports_skipped_records_escaped_for_the_terminal(tmp_path: Path) -> None:
    # the "skipped:" line wrote the record's topic raw: an ESC sequence in a topic name reached
    # the terminal, where every error escapes it (cli/output.terminal_text)
    (tmp_path / "in.jsonl").write_bytes(b'{"topic":"p.a","data":{"id":1},"sow_key":"k"}\n'
                                        b'{"topic":"p.\\u001b[2J","data":{"id":2}}\n')  # no SowKey: refused
    (tmp_path / "amps.xml").write_bytes(b"""<AMPSConfig><Name>t</Name><SOW><Topic><Name>p</Name><Pattern>^p[.]</Pattern>
<MessageType>json</MessageType><FileName>sow/%n.sow</FileName></Topic></SOW></AMPSConfig>""")
    assert run_ampsctl("journal", "import", "in.jsonl", "--out", "j", cwd=tmp_path).code == 0
    done = run_ampsctl("journal", "compact", "j", "--config", "amps.xml", "--out", "out", "--keep-going", cwd=tmp_path)
    assert done.code == 1 and "ampsctl: skipped: journal record 2" in done.stderr, done.output
    assert "\x1b" not in done.stderr, done.stderr


def test_dump_notes_escape_what_the_journal_holds(tmp_path: Path) -> None:
    # the --filter note named a record's message type raw: an ESC sequence reached the terminal
    (tmp_path / "in.jsonl").write_bytes(b'{"topic":"a","message_type":"\\u001b[2Jx","payload":"y"}\n')
    assert run_ampsctl("journal", "import", "in.jsonl", "--out", "j", cwd=tmp_path).code == 0
    done = run_ampsctl("journal", "dump", "j", "--filter", "/a = 1", cwd=tmp_path)
    assert done.code == 0 and "could not be tested by --filter" in done.stderr, done.output
    assert "\x1b" not in done.stderr and "\\x1b[2Jx" in done.stderr, done.stderr


def test_compact_summary_escapes_paths_for_the_terminal(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_bytes(DEMO)
    (tmp_path / "amps.xml").write_bytes(CONFIG)
    assert run_ampsctl("journal", "import", "in.jsonl", "--out", "\x1b[2Jj", cwd=tmp_path).code == 0
    done = run_ampsctl("journal", "compact", "\x1b[2Jj", "--config", "amps.xml", "--out", "\x1b[2Jo", cwd=tmp_path)
    assert done.code == 0 and "\x1b" not in done.output and "\\x1b[2Jo/orders.json.sow" in done.stdout, done.output


def test_two_files_for_one_segment_number_are_named_together(tmp_path: Path) -> None:
    # 00000002.journal and a copy 000000002.journal (both names read as segment 2): the original
    # was reported as overlapping "the segment before", with a hint to restore it
    many = b"".join(b'{"topic":"orders","data":{"id":%d,"pad":"%s"}}\n' % (i, b"x" * 200) for i in range(20))
    (tmp_path / "in.jsonl").write_bytes(many)
    assert run_ampsctl("journal", "import", "in.jsonl", "--out", "j", "--segment-size", "1KB", cwd=tmp_path).code == 0
    (tmp_path / "j" / "000000002.journal").write_bytes((tmp_path / "j" / "00000002.journal").read_bytes())
    for command in ("dump", "verify"):
        done = run_ampsctl("journal", command, "j", cwd=tmp_path)
        assert done.code == 3, done.output
        assert "segment 2" in done.stderr and "000000002.journal" in done.stderr and "00000002.journal" in done.stderr
        assert "overlaps" not in done.stderr

"""Conformance of FIX/NVFIX delta handling through ``ampsctl delta`` (spec/messages.md §2.3-2.4, §6, §7).

Runs the real command in this process (``ampsctl.cli.app.main``) on files in a temporary
directory; SOH is written ``|`` in the cases for readability.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from delta_cli import run_delta


def run(tmp_path: Path, files: dict[str, str], *args: str) -> tuple[int, str, str]:
    """(exit code, stdout with SOH shown as |, stderr) of ``ampsctl delta ARGS``."""
    code, out, err = run_delta(tmp_path, {name: text.replace("|", "\x01").encode("utf-8") for name, text in files.items()}, *args)
    return code, out.replace("\x01", "|"), err


# An empty value is a present NULL (spec §2.3), also in a key field: it keys the record on
# NULL like JSON's {"id": null}; it is not a missing field.
@pytest.mark.parametrize("kind", ["fix", "nvfix"])
def test_an_empty_key_value_is_null_not_missing_in_a_stream_merge(tmp_path: Path, kind: str) -> None:
    name = "55" if kind == "fix" else "Sym"
    stream = f"{name}=|35=D|\n{name}=|35=|38=1|\n"
    code, out, err = run(tmp_path, {f"s.{kind}": stream}, "merge", "--stream", "--key", f"/{name}", f"s.{kind}")
    assert (code, err) == (0, "")
    assert out == f"{name}=|35=|38=1|\n"


def test_an_empty_key_value_is_null_not_missing_in_a_diff(tmp_path: Path) -> None:
    files = {"old.fix": "55=|35=D|38=1|", "new.fix": "55=|35=|38=1|"}
    code, out, err = run(tmp_path, files, "diff", "old.fix", "new.fix", "--key", "/55")
    assert (code, err) == (0, "")
    assert out == "55=|35=|\n"


def test_an_empty_key_value_is_null_in_conflate(tmp_path: Path) -> None:
    stream = "55=|35=D|\n55=|35=|\n55=|35=F|\n"
    code, out, err = run(tmp_path, {"s.fix": stream}, "conflate", "--key", "/55", "s.fix")
    assert (code, err) == (0, "")
    assert out == "55=|35=F|\n"


def test_a_missing_key_field_is_still_an_error(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, {"s.fix": "35=D|\n"}, "merge", "--stream", "--key", "/55", "s.fix")
    assert code == 3 and out == ""
    assert "s.fix:1: key field /55 is missing" in err


def test_a_malformed_nvfix_field_is_explained_with_names_not_tags(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, {"a.nvfix": "Sym=X|bad|"}, "merge", "a.nvfix", "a.nvfix")
    assert (code, out) == (3, "")
    assert "malformed NVFIX field 'bad' at byte 6: expected name=value" in err
    assert "hint: fields are name=value, each ended by the SOH (0x01) separator" in err


def test_fields_separated_by_a_pipe_instead_of_soh_are_refused_with_the_fix(tmp_path: Path) -> None:
    # Written as logs show FIX, "55=IBM|44=1|" was read as one field 55 whose value held the
    # others: merge and diff printed nonsense and the key was "IBM|44=2|38=5|". The files are
    # written here, not by run(), which would turn the '|' into SOH.
    files = {"a.fix": b"55=IBM|44=1|", "b.fix": b"55=IBM|44=2|38=5|", "s.nvfix": b"Sym=IBM|Px=1|\n", "x.fix": b"58=x^2=4"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    code, out, err = run(tmp_path, {}, "diff", "a.fix", "b.fix", "--key", "/55")
    assert (code, out) == (3, "")
    assert "a.fix: FIX message has no SOH (0x01) field separator but seems to separate its fields with '|': 55=IBM|44=..." in err
    assert "tr '|' '\\001'" in err
    code, out, err = run(tmp_path, {}, "merge", "--stream", "--key", "/Sym", "s.nvfix")
    assert (code, out) == (3, "") and "s.nvfix:1: NVFIX message has no SOH" in err and "with '|'" in err
    assert run(tmp_path, {}, "merge", "x.fix", "x.fix") == (0, "58=x^2=4|\n", "")  # '^' is data


def test_a_pipe_inside_a_value_of_a_message_with_separators_is_data(tmp_path: Path) -> None:
    (tmp_path / "a.fix").write_bytes(b"55=IBM\x0158=a|44=b|c\x01")
    (tmp_path / "one.fix").write_bytes(b"58=x|y")  # one field, and no field after the '|'
    code, out, err = run(tmp_path, {}, "merge", "a.fix", "a.fix")
    assert (code, out, err) == (0, "55=IBM|58=a|44=b|c|\n", "")
    code, out, err = run(tmp_path, {}, "merge", "one.fix", "one.fix")
    assert (code, out, err) == (0, "58=x|y|\n", "")


def test_a_nested_key_path_on_fix_says_fix_is_flat(tmp_path: Path) -> None:
    # It said "key field /a/b is missing from the message", which sends one looking for it.
    code, out, err = run(tmp_path, {"a.fix": "55=X|", "s.fix": "55=X|\n"}, "diff", "a.fix", "a.fix", "--key", "/55/x")
    assert (code, out) == (3, "")
    assert "a.fix: key field /55/x has 2 steps, but FIX and NVFIX messages are flat" in err and "like /55" in err
    code, out, err = run(tmp_path, {}, "merge", "--stream", "--key", "/55/x", "s.fix")
    assert code == 3 and "s.fix:1: key field /55/x has 2 steps" in err


def test_a_repeating_group_whose_size_changes_keeps_its_entries_together(tmp_path: Path) -> None:
    # Market data: 268 entries of (269 type, 270 price). A delta with three entries for a record
    # with two put all of its 269s first and all of its 270s after them (each tag's array went
    # where its first old field was), so no entry held its own type and price any more.
    files = {"old.fix": "35=W|55=IBM|268=2|269=0|270=1.5|269=1|270=1.6|10=1|",
             "delta.fix": "55=IBM|268=3|269=0|270=1.7|269=1|270=1.8|269=2|270=1.9|"}
    code, out, err = run(tmp_path, files, "merge", "old.fix", "delta.fix")
    assert (code, out, err) == (0, "35=W|55=IBM|268=3|269=0|270=1.7|269=1|270=1.8|269=2|270=1.9|10=1|\n", "")
    # the subscriber of a full republish with one entry fewer gets the same record
    files = {"new.fix": "35=W|55=IBM|268=1|269=2|270=2.5|10=1|"}
    code, delta, err = run(tmp_path, files, "diff", "old.fix", "new.fix", "--key", "/55")
    assert (code, delta, err) == (0, "55=IBM|268=1|269=2|270=2.5|\n", "")
    code, out, err = run(tmp_path, {"delta.fix": delta.rstrip("\n")}, "merge", "old.fix", "delta.fix")
    assert (code, out, err) == (0, "35=W|55=IBM|268=1|269=2|270=2.5|10=1|\n", "")

"""JSON numbers keep their text through delta merge, diff and conflate (docs/messages.md, "Number text").

orjson wrote every number in its own form: merging into {"a":1E5} printed 100000.0, 1.50 came
out as 1.5, -0 as 0, and numbers with more digits than a double lost them.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from delta_cli import run_delta as run

from ampsctl.messages.json_codec import JSON, JSON_EXACT, JSON_TEXT
from ampsctl.messages.stream import key_function

_STORED = (
    b'{"id":1,"a":1E5,"big":12345678901234567890123,"p":0.1000000000000000055511151231257827,'
    b'"z":-0,"s":[1.50,0.000001,2.5e-7,-0.0],"n":{"q":1.0e1,"r":3}}'
)


def test_merge_writes_untouched_numbers_and_the_deltas_numbers_as_they_were_written(tmp_path: Path) -> None:
    files = {"base.json": _STORED, "delta.json": b'{"id":1,"b":2.50,"c":-0,"n":{"r":7E0}}'}
    code, out, err = run(tmp_path, files, "merge", "base.json", "delta.json")
    expected = _STORED[:-2] + b',"r":7E0},"b":2.50,"c":-0}'
    expected = expected.replace(b'"r":3,', b"")
    assert (code, err) == (0, "")
    assert out == expected.decode() + "\n"


def test_merge_stream_and_conflate_keep_number_text(tmp_path: Path) -> None:
    lines = b'{"id":1,"a":1.50,"b":1E2}\n{"id":1,"a":2.50}\n{"id":1,"b":1e3}\n'
    code, out, err = run(tmp_path, {"s.jsonl": lines}, "merge", "--stream", "--key", "/id", "s.jsonl")
    assert (code, out, err) == (0, '{"id":1,"a":2.50,"b":1e3}\n', "")
    full = b'{"id":1,"a":1.50,"b":1E2}\n{"id":1,"a":2.50,"b":1E2}\n{"id":1,"a":2.50,"b":-0.000001}\n'
    code, out, err = run(tmp_path, {"f.jsonl": full}, "conflate", "--key", "/id", "f.jsonl")
    assert (code, out, err) == (0, '{"id":1,"a":2.50,"b":-0.000001}\n', "")


def test_diff_prints_changed_numbers_as_written_and_compares_values(tmp_path: Path) -> None:
    old = b'{"id":1,"a":100000.0,"b":1.5,"c":12345678901234567890123,"d":0.0,"e":1}'
    new = b'{"id":1,"a":1E5,"b":1.50,"c":12345678901234567890124,"d":-0.00,"e":1.0E0}'
    code, out, err = run(tmp_path, {"old.json": old, "new.json": new}, "diff", "old.json", "new.json", "--key", "/id")
    # a and b hold the same floats (no change); c differs beyond a double's digits; d changes
    # sign; e changes type (integer to float), as 1 and 1.0 always did.
    assert (code, out, err) == (0, '{"id":1,"c":12345678901234567890124,"d":-0.00,"e":1.0E0}\n', "")


def test_the_brokers_text_codec_keeps_text_without_changing_values_or_keys() -> None:
    stored = JSON_TEXT.parse(_STORED)
    assert stored == orjson.loads(_STORED)  # the values orjson reads, a long integer as its float
    merged = JSON_TEXT.merge(stored, JSON_TEXT.parse(b'{"id":1,"a":2.50}'))
    assert JSON_TEXT.serialize(merged) == _STORED.replace(b'"a":1E5', b'"a":2.50')
    key_of, plain_key_of = key_function(JSON_TEXT, ["/big"]), key_function(JSON, ["/big"])
    assert key_of(stored) == plain_key_of(JSON.parse(_STORED))  # SOW keys as before
    assert JSON.serialize(stored) == _STORED  # the plain codec writes such documents too
    assert pickle.loads(pickle.dumps(stored)) == stored
    assert JSON_TEXT.serialize(pickle.loads(pickle.dumps(stored))) == _STORED


_NUMBERS = st.from_regex(r"\A-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,24})?([eE][+-]?[0-9]{1,2})?\Z", fullmatch=True)
_FEW_NUMBERS = st.sampled_from(["1.0", "0.5", "12", "-7", "3.25", "1000000.5", "0.00001", "123456789012345.6",
                                "9223372036854775807", "18446744073709551615", "-9223372036854775808"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_NUMBERS, _FEW_NUMBERS), min_size=1, max_size=6), st.booleans())
def test_every_number_text_survives_parse_and_serialize(numbers: list[str], spaced: bool) -> None:
    sep = ", " if spaced else ","
    fields = sep.join(f'"f{i}":{text}' for i, text in enumerate(numbers))
    raw = ("{" + fields + sep.strip() + '"arr":[' + sep.join(numbers) + "]}").encode()
    for codec in (JSON_TEXT, JSON_EXACT):  # every number here fits a double (at most 1e124)
        written = codec.serialize(codec.parse(raw))
        assert written == raw.replace(b" ", b"")
        assert json.loads(written) == json.loads(raw)


def test_other_subclasses_are_still_written_as_orjson_writes_them() -> None:
    # Writing IntText needs orjson's OPT_PASSTHROUGH_SUBCLASS, which hands every str, int,
    # dict and list subclass to the default function; those must not become errors.
    import enum

    class Text(str):
        pass

    class Level(enum.IntEnum):
        HIGH = 3

    class Mapping(dict):  # type: ignore[type-arg]
        pass

    doc = {"a": Text("x"), "b": Level.HIGH, "c": Mapping(x=1), "d": True, "e": [Text("y")]}
    assert JSON.serialize(doc) == JSON_EXACT.serialize(doc) == b'{"a":"x","b":3,"c":{"x":1},"d":true,"e":["y"]}'

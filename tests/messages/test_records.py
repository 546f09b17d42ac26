"""FIX, NVFIX and XML payloads as records the filter language reads (spec/messages.md §2)."""

from __future__ import annotations

import pytest

from ampsctl.errors import InputError, UsageError
from ampsctl.filter.evaluate import matches
from ampsctl.filter.parser import parse
from ampsctl.messages import record_from_bytes
from ampsctl.messages.scalars import infer

FIX = b"35=D\x0155=MSFT\x0138=1000\x0144=90.25\x0158=\x01"
NVFIX = b"Symbol=MSFT\x01Qty=1000\x01Side=Buy\x01Leg=1\x01Leg=2"
XML = b'<Order update="full"><ClientID>12345</ClientID><Symbol>IBM</Symbol><Leg>1</Leg><Leg>2.5</Leg><Empty/><Party id="7"><Name>x</Name></Party></Order>'


@pytest.mark.parametrize(
    ("text", "value"),
    [("", None), ("24", 24), ("-3", -3), ("24.0", 24.0), ("1e3", 1000.0), ("007", 7), ("Grilled cheese", "Grilled cheese"),
     ("1.2.3", "1.2.3"), (str(2**64), str(2**64)), (str(2**64 - 1), 2**64 - 1)],
)
def test_typing_by_inference(text: str, value: object) -> None:
    assert infer(text) == value and type(infer(text)) is type(value)


@pytest.mark.parametrize(
    ("message_type", "raw", "expr", "expected"),
    [
        ("fix", FIX, "/55 = 'MSFT'", True),
        ("fix", FIX, "/38 * /44 >= 90250", True),
        ("fix", FIX, "/58 IS NULL", True),  # empty value is NULL
        ("fix", FIX, "/99 IS NULL", True),
        ("fix", b"55=MSFT", "/55 = 'MSFT'", True),  # no trailing SOH
        ("nvfix", NVFIX, "/Symbol = 'MSFT' AND /Qty > 999", True),
        ("nvfix", NVFIX, "/Leg = 2", True),  # repeated name is an array
        ("nvfix", NVFIX, "/Leg[1] = 2 AND /Leg[0] = 1 AND /Leg[2] IS NULL", True),
        ("xml", XML, "/Order/Symbol = 'IBM'", True),
        ("xml", XML, "/Order/@update = 'full'", True),
        ("xml", XML, "/Order/ClientID > 12000", True),
        ("xml", XML, "/Order/Leg = 2.5 AND /Order/Leg[0] = 1", True),
        ("xml", XML, "/Order/Empty IS NULL", True),
        ("xml", XML, "/Order/Party/@id = 7 AND /Order/Party/Name = 'x'", True),
        ("xml", XML, "/Order/Party IS NOT NULL", True),
        ("xml", XML, "/Symbol = 'IBM'", False),  # the root element is the first step
    ],
)
def test_filters_over_records(message_type: str, raw: bytes, expr: str, expected: bool) -> None:
    assert matches(parse(expr), record_from_bytes(message_type, raw)) is expected


def test_fix_rejects_a_field_without_equals() -> None:
    with pytest.raises(InputError, match="expected tag=value"):
        record_from_bytes("fix", b"35=D\x01garbage\x01")


def test_fix_tags_are_numeric_but_nvfix_names_are_free() -> None:
    with pytest.raises(InputError):
        record_from_bytes("fix", b"Symbol=MSFT\x01")
    assert record_from_bytes("nvfix", b"Symbol=MSFT\x01").fields == {"Symbol": "MSFT"}


def test_xml_is_parsed_without_entities_or_network(tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    xxe = f'<!DOCTYPE a [<!ENTITY x SYSTEM "file://{secret}">]><a><b>&x;</b></a>'.encode()
    with pytest.raises(InputError, match="declares entities") as refused:  # never expanded, never dropped
        record_from_bytes("xml", xxe)
    assert "TOP-SECRET" not in str(refused.value)


def test_malformed_xml_is_an_input_error() -> None:
    with pytest.raises(InputError, match="malformed XML"):
        record_from_bytes("xml", b"<a><b></a>")


def test_unknown_message_type() -> None:
    with pytest.raises(UsageError):
        record_from_bytes("protobuf", b"")

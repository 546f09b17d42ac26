"""TopicSpec from a config: every SOW/Topic option the store uses, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ampsctl.config.loader import load_config
from ampsctl.config.model import ConfigModel
from ampsctl.errors import InputError
from ampsctl.sow.spec import TopicSpec, topic_specs

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

CONFIG = """<AMPSConfig>
  <Name>t</Name>
  <SOW>
    <Topic>
      <Name>orders</Name><MessageType>JSON</MessageType><FileName>./sow/%n.sow</FileName>
      <Key>/invoice</Key><Key>/customerId</Key><KeyDomain>shared</KeyDomain>
      <Expiration>500ms</Expiration>
      <HashIndex><Key>/region</Key><Key>/type</Key></HashIndex><HashIndex><Key>/id</Key></HashIndex>
      <Index>/qty</Index>
    </Topic>
    <TopicDefinition>
      <Topic>catalog</Topic><MessageType>json</MessageType><Duration>transient</Duration>
      <RecoveryPoint>now</RecoveryPoint><Key>/sku</Key>
      <History><Window>7d</Window><Granularity>15m</Granularity></History>
    </TopicDefinition>
    <Topic>
      <Name>prices</Name><Pattern>^prices\\.</Pattern><MessageType>nvfix</MessageType>
      <FileName>sow/%n.sow</FileName><Key>/Symbol</Key><Expiration>enabled</Expiration>
    </Topic>
    <View><Name>v</Name><MessageType>json</MessageType><UnderlyingTopic>orders</UnderlyingTopic></View>
  </SOW>
</AMPSConfig>
"""


def specs_of(tmp_path: Path, text: str) -> list[TopicSpec]:
    path = tmp_path / "config.xml"
    path.write_text(text)
    return topic_specs(ConfigModel(load_config(str(path), {})))


def test_every_option(tmp_path: Path) -> None:
    orders, catalog, prices = specs_of(tmp_path, CONFIG)
    assert orders == TopicSpec(
        name="orders", message_type="json", key_fields=("/invoice", "/customerId"), key_domain="shared",
        expiration=1, hash_indexes=(("/region", "/type"), ("/id",)), indexes=("/qty",), history_window=None,
        history_granularity=None, pattern=False, persistent=True, recovery_point="epoch", file_name="./sow/%n.sow",
    )
    assert orders.file_path() == "./sow/orders.json.sow" and orders.domain("orders") == "shared"
    assert (catalog.persistent, catalog.recovery_point, catalog.history_window, catalog.history_granularity) == (False, "now", 7 * 86400, 900)
    assert catalog.file_path() is None and catalog.expiration is None
    assert prices.pattern and prices.regex == r"^prices\." and prices.expiration == 0 and prices.domain("prices.us") == "prices.us"
    assert prices.matches("prices.us", "nvfix") and not prices.matches("prices.us", "json") and not prices.matches("oldprices", "nvfix")
    assert not orders.matches("orders2", "json") and orders.matches("orders", "json")


def test_json_round_trip(tmp_path: Path) -> None:
    for one in specs_of(tmp_path, CONFIG):
        assert TopicSpec.from_json(one.to_json()) == one


def test_seed_sample_config() -> None:
    specs = topic_specs(ConfigModel(load_config(str(SAMPLES / "sow-keys-expiration.xml"), {})))
    by_name = {(s.name, s.message_type): s for s in specs}
    assert by_name[("ORDERS", "fix")].expiration == 30 and by_name[("ORDERS", "fix")].key_fields == ("/55", "/109")
    assert by_name[("EXPIRING_ORDERS", "fix")].expiration == 0
    assert by_name[("ORDERS", "json")].hash_indexes == (("/region",),)


@pytest.mark.parametrize(("fragment", "message"), [
    ("<Topic><Name>x</Name><MessageType>json</MessageType><FileName>f</FileName><Expiration>soon</Expiration></Topic>", "Expiration"),
    ("<Topic><Name>x</Name><MessageType>json</MessageType></Topic>", "persistent but has no FileName"),
    ("<Topic><Name>x</Name><FileName>f</FileName></Topic>", "no MessageType"),
    ("<Topic><MessageType>json</MessageType></Topic>", "has no Name"),
    ("<Topic><Name>x</Name><MessageType>json</MessageType><Durability>forever</Durability></Topic>", "Durability"),
    ("<Topic><Name>x</Name><MessageType>json</MessageType><FileName>f</FileName><RecoveryPoint>later</RecoveryPoint></Topic>", "RecoveryPoint"),
    ("<Topic><Name>x</Name><MessageType>json</MessageType><FileName>f</FileName><History><Window>1d</Window></History></Topic>", "both Window"),
    # A Pattern the store would compile on every publish: regex.error (an internal error), or
    # gigabytes for counted repeats PCRE refuses (SOWT-031 says the same in validate).
    ("<Topic><Name>x</Name><Pattern>^x/(.*</Pattern><MessageType>json</MessageType><FileName>f</FileName></Topic>",
     "Pattern '\\^x/\\(\\.\\*' is not a valid regular expression"),
    ("<Topic><Name>x</Name><Pattern>(?:(?:a{1000}){1000}){1000}</Pattern><MessageType>json</MessageType><FileName>f</FileName></Topic>",
     "is not a valid regular expression: is too large"),
])
def test_unusable_values_are_named(tmp_path: Path, fragment: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        specs_of(tmp_path, f"<AMPSConfig><Name>t</Name><SOW>{fragment}</SOW></AMPSConfig>")
    assert caught.value.location is not None and caught.value.location.line > 0

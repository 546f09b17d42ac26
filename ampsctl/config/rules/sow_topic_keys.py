"""SOW/Topic keys and indexes: Key, KeyDomain, KeyGenerator, HashIndex, ExpectedKeyCountHint.

AMPS computes a record's SOW key from the Key fields, or a KeyGenerator module computes it,
or publishers supply it (spec/config.md §2.1, seeds 001 and 003). The rules here check that
these choices are consistent, that AMPS can read Key fields from the message type at all
(SOWT-016), and the shape of hash indexes and the key-table size hint.
"""

from __future__ import annotations

from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.common import candidates, count_in, count_of, type_module


@rule(
    "SOWT-013", "sow-topic-key-domain-without-key", Severity.ERROR,
    "KeyDomain is only valid when the topic has Key fields and no KeyGenerator.",
    description="KeyDomain replaces the topic name as the seed of the SOW keys AMPS computes from the Key "
    "fields. When a key generator module makes the keys, or publishers supply them, the configuration "
    "reference says the option is not valid.",
    source="seed 001 (SOW/Topic KeyDomain)",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <KeyDomain>customers</KeyDomain>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <Key>/customerId</Key>
      <KeyDomain>customers</KeyDomain>
    </Topic>
  </SOW>""",
)
def key_domain_without_key(model: ConfigModel) -> Iterator[Issue]:
    for topic in model.topics_with("KeyDomain"):
        element = topic.first("KeyDomain")
        if element is None:
            continue
        if topic.has("KeyGenerator"):
            yield Issue(
                element,
                f"{topic.label()} uses a KeyGenerator, so KeyDomain is not valid",
                "remove <KeyDomain>; the key generator module decides the keys",
                at_text=False,
            )
        elif not topic.has("Key"):
            yield Issue(
                element,
                f"{topic.label()} has KeyDomain but no Key (publishers supply the SOW keys), so KeyDomain is not valid",
                "add the <Key> fields AMPS should build keys from, or remove <KeyDomain>",
                at_text=False,
            )


@rule(
    "SOWT-014", "sow-topic-key-generator-module", Severity.ERROR,
    "A KeyGenerator needs a Module (loaded in Modules).",
    description="`KeyGenerator/Module` is required: it names the module that computes the SOW keys, which "
    "must be loaded in the `Modules` section (for example the shipped "
    "`libamps_id_chaining_key_generator.so`). SOWT-014 reports a KeyGenerator without a Module; an empty "
    "name or a module that is not loaded is reported by MOD-003, which checks every `<Module>` reference, "
    "so the mistake is reported once.",
    source="seed 001 (SOW/Topic KeyGenerator), seed 003",
    bad="""  <Modules>
    <Module><Name>key-generator</Name><Library>libmy_key_generator.so</Library></Module>
  </Modules>
  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <KeyGenerator><Options><Key>/id</Key></Options></KeyGenerator>
    </Topic>
  </SOW>""",
    good="""  <Modules>
    <Module><Name>key-generator</Name><Library>libmy_key_generator.so</Library></Module>
  </Modules>
  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <KeyGenerator><Module>key-generator</Module><Options><Key>/id</Key></Options></KeyGenerator>
    </Topic>
  </SOW>""",
)
def key_generator_module(model: ConfigModel) -> Iterator[Issue]:
    for topic in model.topics_with("KeyGenerator"):
        for generator in topic.all("KeyGenerator"):
            if generator.find("Module") is None:
                yield Issue(
                    generator,
                    f"{topic.label()} has a KeyGenerator without a Module",
                    "add <Module>name-of-a-module-in-Modules</Module> inside <KeyGenerator>",
                    at_text=False,
                )


@rule(
    "SOWT-015", "sow-topic-key-and-generator", Severity.WARNING,
    "A topic has both Key fields and a KeyGenerator.",
    description="The documentation describes Key as what AMPS uses when no KeyGenerator is configured; what "
    "happens when both are present is not documented. Keep the one that should make the keys.",
    source="seed 001 (SOW/Topic KeyGenerator)",
    bad="""  <Modules>
    <Module><Name>key-generator</Name><Library>libmy_key_generator.so</Library></Module>
  </Modules>
  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <Key>/id</Key>
      <KeyGenerator><Module>key-generator</Module></KeyGenerator>
    </Topic>
  </SOW>""",
    good="""  <Modules>
    <Module><Name>key-generator</Name><Library>libmy_key_generator.so</Library></Module>
  </Modules>
  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <KeyGenerator><Module>key-generator</Module></KeyGenerator>
    </Topic>
  </SOW>""",
)
def key_and_generator(model: ConfigModel) -> Iterator[Issue]:
    for topic in model.topics_with("KeyGenerator"):
        if topic.has("Key"):
            yield Issue(
                topic.first("KeyGenerator"),
                f"{topic.label()} has both <Key> fields and a <KeyGenerator>; which one makes the keys is not documented",
                "remove the <Key> elements (the generator makes the keys) or remove <KeyGenerator>",
                at_text=False,
            )


@rule(
    "SOWT-016", "sow-topic-binary-key", Severity.ERROR,
    "A binary SOW topic cannot have Key fields.",
    description="AMPS does not parse `binary` messages, so it cannot read Key fields from them: a binary SOW "
    "topic only works when publishers supply the SOW key. A declared message type whose Module is "
    "`binary` counts as binary too.",
    source="seed 001 (SOW/Topic MessageType), seed 003",
    bad="""  <SOW>
    <Topic>
      <Name>blobs</Name>
      <MessageType>binary</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <Key>/id</Key>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>blobs</Name>
      <MessageType>binary</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
)
def binary_key(model: ConfigModel) -> Iterator[Issue]:
    binary = [topic for mtype, topics in model.topics_by_type.items() if type_module(model, mtype) == "binary" for topic in topics]
    for topic in binary:
        if topic.has("Key"):
            yield Issue(
                topic.first("Key"),
                f"{topic.label()} stores binary messages, which AMPS cannot read Key fields from",
                "remove the <Key> elements and have publishers send the SOW key, or use a parsed message type",
                at_text=False,
            )


def _nearest_power_of_two(value: int) -> int:
    if value <= 1:
        return 1
    upper = 1 << (value - 1).bit_length()
    lower = upper >> 1
    return lower if value - lower < upper - value else upper


@rule(
    "SOWT-020", "sow-topic-key-count-hint-power-of-two", Severity.INFO,
    "ExpectedKeyCountHint should be a power of two.",
    description="The hint pre-sizes the key table; the configuration reference asks for the power of two "
    "closest to the expected number of keys (e.g. 536870912 = 2^29 for 500 million records). AMPS 5.3.5 "
    "rounds other values up.",
    source="seed 001 (SOW/Topic ExpectedKeyCountHint)",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <ExpectedKeyCountHint>500000000</ExpectedKeyCountHint>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <ExpectedKeyCountHint>536870912</ExpectedKeyCountHint>
    </Topic>
  </SOW>""",
)
def key_count_hint_power_of_two(model: ConfigModel) -> Iterator[Issue]:
    def may_report(text: str) -> bool:
        count = count_in(text)
        return count is not None and not (count.value > 0 and count.value & (count.value - 1) == 0)

    for topic, element in candidates(model, "ExpectedKeyCountHint", may_report):
        count = count_of(element)
        if count is None or (count.value > 0 and count.value & (count.value - 1) == 0):
            continue
        nearest = _nearest_power_of_two(count.value)
        yield Issue(
            element,
            f"{topic.label()} has ExpectedKeyCountHint {count.value}, which is not a power of two",
            f"use {nearest} (2^{nearest.bit_length() - 1}), the closest power of two",
        )


@rule(
    "SOWT-026", "sow-topic-hash-index-empty", Severity.ERROR,
    "Each HashIndex must contain at least one Key.",
    description="A HashIndex lists the fields (one `Key` each) whose exact values AMPS indexes for fast "
    "queries; an index without fields indexes nothing.",
    source="seed 001 (SOW/Topic HashIndex)",
    bad="""  <SOW>
    <Topic>
      <Name>customers</Name>
      <MessageType>json</MessageType>
      <Key>/customerId</Key>
      <FileName>./sow/%n.sow</FileName>
      <HashIndex/>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>customers</Name>
      <MessageType>json</MessageType>
      <Key>/customerId</Key>
      <FileName>./sow/%n.sow</FileName>
      <HashIndex><Key>/customerName</Key></HashIndex>
    </Topic>
  </SOW>""",
)
def hash_index_empty(model: ConfigModel) -> Iterator[Issue]:
    for topic in model.topics_with("HashIndex"):
        for index in topic.all("HashIndex"):
            if next(index.iterchildren("Key"), None) is None:
                yield Issue(
                    index,
                    f"{topic.label()} has a <HashIndex> without any <Key>",
                    "add <Key>/field</Key> for each field of the index, or remove the <HashIndex>",
                    at_text=False,
                )

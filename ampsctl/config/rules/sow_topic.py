"""Rules for SOW/Topic (synonym TopicDefinition): spec/config.md §2.1, seeds 001 and 003."""

from __future__ import annotations

from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel
from ampsctl.config.registry import Issue, rule


def _persistent(durability: str | None) -> bool:
    return (durability or "persistent") != "transient"


@rule(
    "SOWT-004", "sow-topic-filename-required", Severity.ERROR,
    "A persistent SOW topic needs a FileName.",
    description="Durability defaults to `persistent`, and a persistent topic stores its State of the World "
    "in FileName (`%n` expands to the topic name and message type). Only a `transient` topic may omit it.",
    source="seed 001 (SOW/Topic)",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
)
def filename_required(model: ConfigModel) -> Iterator[Issue]:
    for topic in model.topics:
        if not topic.text("FileName") and _persistent(topic.text("Durability")):
            yield Issue(
                topic.el,
                f"{topic.label()} is persistent but has no FileName",
                "add <FileName>./sow/%n.sow</FileName>, or set <Durability>transient</Durability>",
                at_text=False,
            )

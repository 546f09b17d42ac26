"""Rules for MessageTypes/MessageType: spec/config.md §4.2."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import DEFAULT_MESSAGE_TYPES, ConfigModel, Section
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.catalog import COMPOSITE_MESSAGE_TYPE_MODULES
from ampsctl.config.rules.sections import nested_sections, repeated_names

VERSION_COMPLIANCE = ("2", "4", "5")
SEPARATORS = ("FieldSeparator", "HeaderSeparator", "MessageSeparator")
# struct Field: `/name = [byte order][count]format`; x, s, S and p need a count.
_STRUCT_FIELD = re.compile(r"(/\S+?)\s*=\s*([@=<>])?([0-9]+)?([xcbB?hHiIlLqQnNfdsSp])")
_NEEDS_COUNT = frozenset("xsSp")


def _message_types(model: ConfigModel) -> list[Section]:
    return nested_sections(model, "MessageTypes", "MessageType")


def _label(mtype: Section) -> str:
    return f"MessageType '{mtype.text('Name') or '?'}'"


@rule(
    "MT-001", "message-type-name", Severity.ERROR,
    "A MessageTypes/MessageType needs a Name, and a Module unless it redefines a default type.",
    description="The Name is how transports, SOW topics, the transaction log and replication refer to the "
    "type. A new type also needs the Module that parses it (json, fix, protobuf, composite-local, ...); "
    "only a redefinition of a default type (to change its settings) may omit Module.",
    source="spec/config.md §4.2",
    bad="""  <MessageTypes>
    <MessageType>
      <Module>composite-local</Module>
      <MessageType>json</MessageType>
    </MessageType>
  </MessageTypes>""",
    good="""  <MessageTypes>
    <MessageType>
      <Name>order-pair</Name>
      <Module>composite-local</Module>
      <MessageType>json</MessageType>
    </MessageType>
  </MessageTypes>""",
)
def name_required(model: ConfigModel) -> Iterator[Issue]:
    for mtype in _message_types(model):
        name = mtype.text("Name")
        if not name:
            yield Issue(mtype.el, "A MessageTypes/MessageType has no Name",
                        "add <Name>, the name other sections use for this type", at_text=False)
        elif not mtype.text("Module") and name not in DEFAULT_MESSAGE_TYPES:
            yield Issue(mtype.el, f"{_label(mtype)} is a new message type without a Module",
                        "add the <Module> that implements it (e.g. json, protobuf, composite-local)", at_text=False)


@rule(
    "MT-002", "message-type-composite-parts", Severity.ERROR,
    "A composite message type must list known message types as its parts.",
    description="A `composite-global` or `composite-local` type is made of the message types listed in its "
    "child MessageType elements, in order. It needs at least one, and each must be a default or declared "
    "type other than the composite itself.",
    source="spec/config.md §4.2",
    bad="""  <MessageTypes>
    <MessageType>
      <Name>order-pair</Name>
      <Module>composite-local</Module>
      <MessageType>json</MessageType>
      <MessageType>jsn</MessageType>
    </MessageType>
  </MessageTypes>""",
    good="""  <MessageTypes>
    <MessageType>
      <Name>order-pair</Name>
      <Module>composite-local</Module>
      <MessageType>json</MessageType>
      <MessageType>json</MessageType>
    </MessageType>
  </MessageTypes>""",
)
def composite_parts(model: ConfigModel) -> Iterator[Issue]:
    for mtype in _message_types(model):
        if mtype.text("Module") not in COMPOSITE_MESSAGE_TYPE_MODULES:
            continue
        parts = mtype.all("MessageType")
        if not parts:
            yield Issue(mtype.el, f"Composite {_label(mtype)} lists no MessageType parts",
                        "add one <MessageType> child per part, in order", at_text=False)
        for part in parts:
            name = (part.text or "").strip()
            if name == mtype.text("Name"):
                yield Issue(part, f"Composite {_label(mtype)} lists itself as a part",
                            "list the message types the composite is made of")
            elif name not in model.message_types:
                yield Issue(part, f"Composite {_label(mtype)} has an unknown part '{name}'",
                            "use a default message type or one declared in MessageTypes")


@rule(
    "MT-003", "message-type-protobuf-settings", Severity.ERROR,
    "A protobuf message type needs Type, ProtoPath and ProtoFile.",
    description="AMPS compiles the `.proto` definitions at start-up: ProtoPath gives the directories "
    "(`alias;/dir` or `;/dir`), ProtoFile the file to load and Type the package-qualified message name.",
    source="spec/config.md §4.2",
    bad="""  <MessageTypes>
    <MessageType>
      <Name>orders-pb</Name>
      <Module>protobuf</Module>
      <ProtoFile>orders.proto</ProtoFile>
    </MessageType>
  </MessageTypes>""",
    good="""  <MessageTypes>
    <MessageType>
      <Name>orders-pb</Name>
      <Module>protobuf</Module>
      <ProtoPath>;/etc/amps/proto</ProtoPath>
      <ProtoFile>orders.proto</ProtoFile>
      <Type>trading.Order</Type>
    </MessageType>
  </MessageTypes>""",
)
def protobuf_settings(model: ConfigModel) -> Iterator[Issue]:
    for mtype in _message_types(model):
        if mtype.text("Module") != "protobuf":
            continue
        missing = [child for child in ("Type", "ProtoPath", "ProtoFile") if not mtype.text(child)]
        if missing:
            yield Issue(mtype.el, f"Protobuf {_label(mtype)} has no {', no '.join(missing)}",
                        "set <ProtoPath>;/dir</ProtoPath>, <ProtoFile>file.proto</ProtoFile> and "
                        "<Type>package.Message</Type>", at_text=False)


@rule(
    "MT-004", "message-type-struct-fields", Severity.ERROR,
    "A struct message type needs Field definitions of the form `/name = [order][count]format`.",
    description="Each Field maps an identifier to a binary layout: an optional byte order (`@ = < >`), an "
    "optional count and one format character (`x c b B ? h H i I l L q Q n N f d s S p`). The formats "
    "`x`, `s`, `S` and `p` need a count, e.g. `/symbol = 8s`.",
    source="spec/config.md §4.2",
    bad="""  <MessageTypes>
    <MessageType>
      <Name>tick</Name>
      <Module>struct</Module>
      <Field>/symbol = s</Field>
      <Field>/price = d</Field>
    </MessageType>
  </MessageTypes>""",
    good="""  <MessageTypes>
    <MessageType>
      <Name>tick</Name>
      <Module>struct</Module>
      <Field>/symbol = 8s</Field>
      <Field>/price = &lt;d</Field>
    </MessageType>
  </MessageTypes>""",
)
def struct_fields(model: ConfigModel) -> Iterator[Issue]:
    for mtype in _message_types(model):
        if mtype.text("Module") != "struct":
            continue
        fields = mtype.all("Field")
        if not fields:
            yield Issue(mtype.el, f"Struct {_label(mtype)} has no Field definitions",
                        "add <Field>/name = format</Field> for each field, e.g. /price = d", at_text=False)
        for field in fields:
            text = (field.text or "").strip()
            match = _STRUCT_FIELD.fullmatch(text)
            if match is None:
                yield Issue(field, f"Struct {_label(mtype)} Field '{text}' is not '/name = [order][count]format'",
                            "write e.g. /price = d or /symbol = 8s")
            elif match.group(4) in _NEEDS_COUNT and not match.group(3):
                yield Issue(field, f"Struct {_label(mtype)} Field '{text}' uses format '{match.group(4)}' "
                            "without a count", f"give the size, e.g. {match.group(1)} = 8{match.group(4)}")


@rule(
    "MT-005", "message-type-version-compliance", Severity.ERROR,
    "AMPSVersionCompliance must be 2, 4 or 5.",
    description="AMPSVersionCompliance selects the FIX tag numbering AMPS uses for its own messages of this "
    "type (such as /AMPS/SOWStats); the default is 4.",
    source="spec/config.md §4.2",
    bad="""  <MessageTypes>
    <MessageType>
      <Name>fix</Name>
      <AMPSVersionCompliance>3</AMPSVersionCompliance>
    </MessageType>
  </MessageTypes>""",
    good="""  <MessageTypes>
    <MessageType>
      <Name>fix</Name>
      <AMPSVersionCompliance>5</AMPSVersionCompliance>
    </MessageType>
  </MessageTypes>""",
)
def version_compliance(model: ConfigModel) -> Iterator[Issue]:
    for mtype in _message_types(model):
        value = mtype.text("AMPSVersionCompliance")
        if value is not None and value not in VERSION_COMPLIANCE:
            yield Issue(mtype.first("AMPSVersionCompliance"),
                        f"{_label(mtype)} has AMPSVersionCompliance '{value}'", "use 2, 4 (default) or 5")


@rule(
    "MT-006", "message-type-duplicate-name", Severity.WARNING,
    "Two MessageTypes/MessageType entries share a Name.",
    description="Message types are referenced by Name; a second definition makes it unclear which settings "
    "apply.",
    source="spec/config.md §4.2",
    bad="""  <MessageTypes>
    <MessageType><Name>orders-pb</Name><Module>protobuf</Module><ProtoPath>;/p</ProtoPath><ProtoFile>a.proto</ProtoFile><Type>x.A</Type></MessageType>
    <MessageType><Name>orders-pb</Name><Module>protobuf</Module><ProtoPath>;/p</ProtoPath><ProtoFile>b.proto</ProtoFile><Type>x.B</Type></MessageType>
  </MessageTypes>""",
    good="""  <MessageTypes>
    <MessageType><Name>orders-a</Name><Module>protobuf</Module><ProtoPath>;/p</ProtoPath><ProtoFile>a.proto</ProtoFile><Type>x.A</Type></MessageType>
    <MessageType><Name>orders-b</Name><Module>protobuf</Module><ProtoPath>;/p</ProtoPath><ProtoFile>b.proto</ProtoFile><Type>x.B</Type></MessageType>
  </MessageTypes>""",
)
def duplicate_name(model: ConfigModel) -> Iterator[Issue]:
    for mtype, name in repeated_names(_message_types(model)):
        yield Issue(mtype.first("Name"), f"MessageType '{name}' is defined more than once",
                    "merge the definitions or rename one")


@rule(
    "MT-007", "message-type-separator", Severity.ERROR,
    "FieldSeparator, HeaderSeparator and MessageSeparator are ASCII codes 0-255.",
    description="For fix and nvfix types the separators are given as the decimal code of one byte, e.g. "
    "`1` for SOH or `124` for `|`, not as the character itself.",
    source="spec/config.md §4.2",
    bad="""  <MessageTypes>
    <MessageType>
      <Name>nvfix</Name>
      <FieldSeparator>|</FieldSeparator>
    </MessageType>
  </MessageTypes>""",
    good="""  <MessageTypes>
    <MessageType>
      <Name>nvfix</Name>
      <FieldSeparator>124</FieldSeparator>
    </MessageType>
  </MessageTypes>""",
)
def separator_code(model: ConfigModel) -> Iterator[Issue]:
    for mtype in _message_types(model):
        for child in SEPARATORS:
            for el in mtype.all(child):
                value = (el.text or "").strip()
                if not (value.isascii() and value.isdigit() and int(value) <= 255):
                    hint = f"write the decimal code, e.g. {ord(value)}" if len(value) == 1 and ord(value) < 256 \
                        else "write a decimal byte code from 0 to 255, e.g. 1 for SOH"
                    yield Issue(el, f"{_label(mtype)} {child} '{value}' is not an ASCII code 0-255", hint)

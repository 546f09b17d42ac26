"""Rules reported while loading and schema-checking a file, before any semantic rule runs."""

from ampsctl.config.findings import Severity
from ampsctl.config.registry import declare

declare(
    "GEN-001", "well-formed-config", Severity.ERROR,
    "The file must be readable, well-formed XML with the root element <AMPSConfig>.",
    description="A file that cannot be read or parsed at all (missing, a directory, empty, not UTF-8, "
    "malformed XML, entity declarations, wrong root) stops the check of that file and makes "
    "`ampsctl validate` exit with code 3.",
    bad="<AMPSConfig><Name>demo</Name><SOW></AMPSConfig>",
    good="<AMPSConfig><Name>demo</Name><SOW/></AMPSConfig>",
    source="spec/config.md §1.4",
)
declare(
    "GEN-006", "unknown-element", Severity.WARNING,
    "An element name that AMPS does not document at this place (often a typo).",
    description="AMPS documentation does not say whether the server rejects or ignores unknown "
    "elements, so a misspelled option may silently do nothing. Module `Options` blocks are never checked.",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>sow/%n.sow</FileName>
      <Durabilty>transient</Durabilty>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>sow/%n.sow</FileName>
      <Durability>transient</Durability>
    </Topic>
  </SOW>""",
    source="spec/config.md §6.3",
)
declare(
    "GEN-007", "undefined-environment-variable", Severity.ERROR,
    "A ${VAR} reference names an environment variable that is not defined.",
    description="AMPS expands ${VAR} from its environment (or -DVAR=value) when it starts. ampsctl reads the "
    "process environment and `--env NAME=VALUE`; an undefined reference is left as written.",
    bad="""  <TransactionLog>
    <JournalDirectory>${AMPSCTL_SURELY_UNDEFINED}/journal</JournalDirectory>
  </TransactionLog>""",
    good="""  <TransactionLog>
    <JournalDirectory>${AMPS_CONFIG_DIRECTORY}/journal</JournalDirectory>
  </TransactionLog>""",
    source="spec/config.md §6.1",
)
declare(
    "GEN-008", "include-problem", Severity.ERROR,
    "An <Include> names a file that is missing, unreadable or cyclic, or the expanded config is too large.",
    description="Relative include paths resolve against the directory of the file that holds the "
    "<Include>. The total expanded size is capped by ConfigCycleDetectionThreshold (5MB by default), as in AMPS.",
    bad="""  <Logging>
    <Include>does-not-exist.xml</Include>
  </Logging>""",
    good="""  <Logging>
    <Target><Protocol>stdout</Protocol><Level>info</Level></Target>
  </Logging>""",
    source="spec/config.md §6.2",
)
declare(
    "XSD-001", "schema-structure", Severity.ERROR,
    "An element that the schema knows is used where AMPS does not accept it.",
    description="Reported from schemas/amps-config.xsd when no semantic rule explains the same element better.",
    bad="""  <Transports>
    <Topic><Name>orders</Name></Topic>
  </Transports>""",
    good="""  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol></Transport>
  </Transports>""",
    source="schemas/amps-config.xsd",
)
declare(
    "XSD-002", "schema-value", Severity.ERROR,
    "A value does not have the type the schema requires (enumeration, interval, size, number).",
    description="Reported from schemas/amps-config.xsd when no semantic rule explains the same value better.",
    bad="""  <Transports>
    <Transport><Name>json-tcp</Name><Type>udp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol></Transport>
  </Transports>""",
    good="""  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol></Transport>
  </Transports>""",
    source="schemas/amps-config.xsd",
)
declare(
    "SUP-001", "suppression-without-reason", Severity.ERROR,
    "An inline suppression must name rule codes and give a reason.",
    description="Write `<!-- ampsctl: disable=CODE why -->`; a directive without a reason is ignored.",
    bad="""  <!-- ampsctl: disable=GEN-006 -->
  <Unknown/>""",
    good="""  <!-- ampsctl: disable=GEN-006 read by our deployment wrapper, not by AMPS -->
  <Unknown/>""",
    source="ampsctl",
)
declare(
    "SUP-002", "suppression-unknown-code", Severity.WARNING,
    "An inline suppression names a rule code that does not exist.",
    bad="""  <!-- ampsctl: disable=NOPE-001 legacy element -->
  <Unknown/>""",
    good="""  <!-- ampsctl: disable=GEN-006 legacy element -->
  <Unknown/>""",
    source="ampsctl",
)

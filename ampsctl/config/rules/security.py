"""Rules for Authentication, Entitlement and Authenticator blocks: spec/config.md §4.8.

SEC-001..SEC-008 follow the rows of the §4.8 module table in order, one rule per shipped
module; SEC-009 is the instance-wide "nobody can log on" trap. A block is matched to a
row by its Module: a built-in name, or a Modules/Module whose Library is the shipped file.
The http and oauth modules also read defaults from the Options of their Modules/Module
declaration, so required options may come from there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, Section, regex_error
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.catalog import (
    DEFAULT_AUTHENTICATION_MODULE as DEFAULT_AUTH,
    IMPLICIT_AUTHENTICATION_MODULE as IMPLICIT_AUTH,
    NO_AUTHENTICATION_MODULE as NO_AUTH,
)
from ampsctl.config.rules.common import FALSE_WORDS, TRUE_WORDS, is_true
from ampsctl.config.rules.modules import library_stem
from ampsctl.config.rules.replication import label as destination_label
from ampsctl.config.rules.sections import options
from ampsctl.config.rules.transports import CLIENT_TYPES, label as transport_label

_LIBRARIES = {
    "libamps_http_entitlement": "http",
    "libamps_multi_authentication": "multi-authentication",
    "libamps_multi_authenticator": "multi-authenticator",
    "libamps_exec_authenticator": "exec",
    "libamps_oauth_authentication": "oauth",
    "libamps_simple_access_entitlement": "simple-access",
}
_READS_MODULE_DEFAULTS = frozenset({"http", "oauth"})


@dataclass(frozen=True, slots=True)
class Block:
    """One Authentication, Entitlement or Authenticator block and the options it gives its module."""

    el: etree._Element
    role: str  # Authentication | Entitlement | Authenticator
    where: str
    module: str
    own: tuple[etree._Element, ...]
    defaults: tuple[etree._Element, ...] = ()

    def names(self) -> set[str]:
        return {opt.tag for opt in (*self.defaults, *self.own) if (opt.text or "").strip()}

    def value(self, name: str) -> str | None:
        """The effective option value: the block's own option wins over the module default."""
        for opt in (*reversed(self.own), *reversed(self.defaults)):
            if opt.tag == name:
                return (opt.text or "").strip()
        return None

    def label(self) -> str:
        return f"{self.role} module '{self.module}' ({self.where})"


def _identity(model: ConfigModel, module: str) -> str | None:
    if module in (DEFAULT_AUTH, IMPLICIT_AUTH, NO_AUTH):
        return module
    return _LIBRARIES.get(library_stem(model, module) or "")


def _places(model: ConfigModel) -> Iterator[tuple[str, Section]]:
    yield "instance", model.root
    for transport in model.transports:
        yield transport_label(transport), transport
    for admin in model.root.all("Admin"):
        yield "Admin", Section(admin)
    for dest in model.replication_destinations:
        for transport in dest.all("Transport"):
            yield destination_label(dest), Section(transport)


def _blocks(model: ConfigModel, identity: str) -> Iterator[Block]:
    for where, role, el in model.shared(_block_elements):
        module = Section(el).text("Module") or ""
        if _identity(model, module) != identity:
            continue
        defaults = options(model.modules.get(module)) if identity in _READS_MODULE_DEFAULTS else ()
        yield Block(el, role, where, module, tuple(options(el)), tuple(defaults))


def _block_elements(model: ConfigModel) -> list[tuple[str, str, etree._Element]]:
    """(where, role, element) of every Authentication, Entitlement and Authenticator block, in
    the order of ``_places``: found once for the eight rules that look for their module."""
    return [
        (where, role, el)
        for where, place in _places(model)
        for role in ("Authentication", "Entitlement", "Authenticator")
        for el in place.all(role)
    ]


def _own_options(blocks: list[Block]) -> Iterator[tuple[Block, etree._Element]]:
    """Each option element once, with a block that uses it (module defaults may be shared)."""
    seen: set[etree._Element] = set()
    for block in blocks:
        for opt in (*block.defaults, *block.own):
            if opt not in seen:
                seen.add(opt)
                yield block, opt


def _flag_options(blocks: list[Block], flags: tuple[str, ...]) -> Iterator[Issue]:
    for block, opt in _own_options(blocks):
        value = (opt.text or "").strip()
        if opt.tag not in flags:
            yield Issue(opt, f"{block.label()} has no option '{opt.tag}'",
                        f"this module reads only {', '.join(flags)}", at_text=False, severity=Severity.WARNING)
        elif value not in TRUE_WORDS | FALSE_WORDS:
            yield Issue(opt, f"{block.label()} option {opt.tag} is '{value}', not true or false", "write true or false")


def _require(block: Block, *names: str, hint: str) -> Iterator[Issue]:
    missing = [name for name in names if name not in block.names()]
    if missing:
        yield Issue(block.el, f"{block.label()} has no {', no '.join(missing)} option", hint, at_text=False)


def _pair(block: Block, first: str, second: str) -> Iterator[Issue]:
    present = block.names()
    if (first in present) != (second in present):
        have, lack = (first, second) if first in present else (second, first)
        yield Issue(block.el, f"{block.label()} sets {have} without {lack}", f"set {first} and {second} together",
                    at_text=False)


def _milliseconds(blocks: list[Block], names: tuple[str, ...]) -> Iterator[Issue]:
    for block, opt in _own_options(blocks):
        value = (opt.text or "").strip()
        if opt.tag in names and not value.isdigit():
            yield Issue(opt, f"{block.label()} option {opt.tag} is '{value}', not a whole number of milliseconds",
                        "write digits only, e.g. 2000")


@rule(
    "SEC-001", "security-default-authentication-options", Severity.ERROR,
    "amps-default-authentication-module options are AllowSpoofing, RequireLogon and RequireUsername, "
    "each true or false.",
    description="Row 1 of the §4.8 module table. The default authentication module reads three flags: "
    "AllowSpoofing (default false), RequireLogon (default true) and RequireUsername (default false). A "
    "value that is no flag word at all is an error (the spelling of a valid flag word is UNIT-005's); an "
    "option it does not read is reported as a warning.",
    source="spec/config.md §4.8 row 1 [DIG]",
    bad="""  <Authentication>
    <Module>amps-default-authentication-module</Module>
    <Options><RequireLogon>yes</RequireLogon></Options>
  </Authentication>""",
    good="""  <Authentication>
    <Module>amps-default-authentication-module</Module>
    <Options><RequireLogon>true</RequireLogon></Options>
  </Authentication>""",
)
def default_authentication(model: ConfigModel) -> Iterator[Issue]:
    yield from _flag_options(list(_blocks(model, DEFAULT_AUTH)), ("AllowSpoofing", "RequireLogon", "RequireUsername"))


@rule(
    "SEC-002", "security-implicit-authentication-options", Severity.ERROR,
    "amps-implicit-authentication-module reads one option, AllowSpoofing (true or false).",
    description="Row 2 of the §4.8 module table. The implicit module accepts every logon; its only option "
    "is AllowSpoofing (default false). A value other than true/false is an error; any other option is "
    "reported as a warning.",
    source="spec/config.md §4.8 row 2 [DIG]",
    bad="""  <Authentication>
    <Module>amps-implicit-authentication-module</Module>
    <Options><AllowSpoofing>sometimes</AllowSpoofing></Options>
  </Authentication>""",
    good="""  <Authentication>
    <Module>amps-implicit-authentication-module</Module>
    <Options><AllowSpoofing>false</AllowSpoofing></Options>
  </Authentication>""",
)
def implicit_authentication(model: ConfigModel) -> Iterator[Issue]:
    yield from _flag_options(list(_blocks(model, IMPLICIT_AUTH)), ("AllowSpoofing",))


_URI_HINT = "add <ResourceURI>https://host/path/{{USER_NAME}}</ResourceURI>"
_HTTP_MODULE = """  <Modules>
    <Module><Name>http-auth</Name><Library>libamps_http_entitlement.so</Library></Module>
  </Modules>"""


@rule(
    "SEC-003", "security-http-entitlement-options", Severity.ERROR,
    "The http entitlement module needs ResourceURI (Authentication) or ResourceURI/CredentialStore "
    "(Entitlement), and consistent connection options.",
    description="Row 3 of the §4.8 module table (`libamps_http_entitlement.so`). In an Authentication block "
    "ResourceURI is required and EntitlementOnly is not allowed; in an Entitlement block ResourceURI or its "
    "synonym CredentialStore is required. ReuseConnections belongs in the Modules/Module Options only. "
    "ConnectionTimeout and RequestTimeout are whole numbers of milliseconds (RetryCount is a count, checked "
    "by UNIT-001). An https URI needs CAKey unless AllowUnverifiedPeer is true. Options of the "
    "Modules/Module declaration count as defaults.",
    source="spec/config.md §4.8 row 3 [DIG]",
    bad=_HTTP_MODULE + """
  <Authentication>
    <Module>http-auth</Module>
    <Options><ConnectionTimeout>2000</ConnectionTimeout></Options>
  </Authentication>""",
    good=_HTTP_MODULE + """
  <Authentication>
    <Module>http-auth</Module>
    <Options>
      <ResourceURI>https://auth.example.com/amps/{{USER_NAME}}</ResourceURI>
      <CAKey>/etc/amps/ca.pem</CAKey>
    </Options>
  </Authentication>""",
)
def http_entitlement(model: ConfigModel) -> Iterator[Issue]:
    blocks = list(_blocks(model, "http"))
    for block in blocks:
        present = block.names()
        if block.role == "Entitlement":
            if not present & {"ResourceURI", "CredentialStore"}:
                yield Issue(block.el, f"{block.label()} has neither ResourceURI nor CredentialStore",
                            _URI_HINT, at_text=False)
        else:
            yield from _require(block, "ResourceURI", hint=_URI_HINT)
            for opt in block.own:
                if opt.tag == "EntitlementOnly":
                    yield Issue(opt, f"{block.label()} uses EntitlementOnly, which only applies to Entitlement "
                                "blocks", "remove it from the Authentication block", at_text=False)
        for opt in block.own:
            if opt.tag == "ReuseConnections":
                yield Issue(opt, f"{block.label()} sets ReuseConnections, which is read only from the "
                            "Modules/Module Options", "move it to the module declaration's <Options>", at_text=False)
        uri = block.value("ResourceURI") or block.value("CredentialStore") or ""
        if uri.lower().startswith("https:") and not is_true(block.value("AllowUnverifiedPeer")) \
                and "CAKey" not in present:
            yield Issue(block.el, f"{block.label()} uses an https URI without CAKey",
                        "add <CAKey>/path/ca.pem</CAKey> (or AllowUnverifiedPeer true for testing only)", at_text=False)
    yield from _milliseconds(blocks, ("ConnectionTimeout", "RequestTimeout"))


_MECHANISMS = ("Kerberos", "LDAP")


@rule(
    "SEC-004", "security-multi-authentication-options", Severity.ERROR,
    "The multi-mechanism authentication module needs a complete Kerberos or LDAP configuration.",
    description="Row 4 of the §4.8 module table (`libamps_multi_authentication.so`). A mechanism is enabled "
    "by giving its options: Kerberos needs Kerberos.Keytab and Kerberos.SPN together; any LDAP.* option "
    "needs LDAP.Host. At least one mechanism must be configured, and DefaultAuthenticationMechanism must be "
    "Kerberos or LDAP and name a configured mechanism.",
    source="spec/config.md §4.8 row 4 [DIG]",
    bad="""  <Modules>
    <Module><Name>multi-auth</Name><Library>libamps_multi_authentication.so</Library></Module>
  </Modules>
  <Authentication>
    <Module>multi-auth</Module>
    <Options><Kerberos.Keytab>/etc/amps/amps.keytab</Kerberos.Keytab></Options>
  </Authentication>""",
    good="""  <Modules>
    <Module><Name>multi-auth</Name><Library>libamps_multi_authentication.so</Library></Module>
  </Modules>
  <Authentication>
    <Module>multi-auth</Module>
    <Options>
      <Kerberos.Keytab>/etc/amps/amps.keytab</Kerberos.Keytab>
      <Kerberos.SPN>AMPS/amps.example.com</Kerberos.SPN>
    </Options>
  </Authentication>""",
)
def multi_authentication(model: ConfigModel) -> Iterator[Issue]:
    for block in _blocks(model, "multi-authentication"):
        present = block.names()
        enabled = [m for m in _MECHANISMS if any(name.startswith(m + ".") for name in present)]
        if not enabled:
            yield Issue(block.el, f"{block.label()} configures no mechanism",
                        "add Kerberos.Keytab and Kerberos.SPN, or LDAP.Host", at_text=False)
        yield from _pair(block, "Kerberos.Keytab", "Kerberos.SPN")
        if "LDAP" in enabled and "LDAP.Host" not in present:
            yield Issue(block.el, f"{block.label()} sets LDAP options without LDAP.Host",
                        "add <LDAP.Host>ldap://ldap.example.com</LDAP.Host>", at_text=False)
        for opt in block.own:
            value = (opt.text or "").strip()
            if opt.tag == "DefaultAuthenticationMechanism" and value not in enabled:
                why = "names a mechanism that is not configured" if value in _MECHANISMS else "is not Kerberos or LDAP"
                yield Issue(opt, f"{block.label()} DefaultAuthenticationMechanism '{value}' {why}",
                            f"use {' or '.join(enabled or _MECHANISMS)}")


_AUTHENTICATOR = """  <Modules>
    <Module><Name>{name}</Name><Library>{library}</Library></Module>
  </Modules>
  <Replication>
    <Destination>
      <SyncType>async</SyncType>
      <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
      <Transport>
        <Type>amps-replication</Type><InetAddr>amps-b.example.com:10004</InetAddr>
        <Authenticator>
          <Module>{name}</Module>
          <Options>{options}</Options>
        </Authenticator>
      </Transport>
    </Destination>
  </Replication>"""


@rule(
    "SEC-005", "security-multi-authenticator-options", Severity.ERROR,
    "The multi-mechanism authenticator needs Kerberos.Keytab with Kerberos.SPN and LDAP.Username with "
    "LDAP.PasswordFile.",
    description="Row 5 of the §4.8 module table (`libamps_multi_authenticator.so`), which provides "
    "credentials for outgoing replication. Each mechanism's options come in pairs: Kerberos.Keytab with "
    "Kerberos.SPN, LDAP.Username with LDAP.PasswordFile.",
    source="spec/config.md §4.8 row 5 [DIG]",
    bad=_AUTHENTICATOR.format(name="multi", library="libamps_multi_authenticator.so",
                              options="<LDAP.Username>amps</LDAP.Username>"),
    good=_AUTHENTICATOR.format(
        name="multi", library="libamps_multi_authenticator.so",
        options="<LDAP.Username>amps</LDAP.Username><LDAP.PasswordFile>/etc/amps/ldap.pw</LDAP.PasswordFile>"),
)
def multi_authenticator(model: ConfigModel) -> Iterator[Issue]:
    for block in _blocks(model, "multi-authenticator"):
        yield from _pair(block, "Kerberos.Keytab", "Kerberos.SPN")
        yield from _pair(block, "LDAP.Username", "LDAP.PasswordFile")


@rule(
    "SEC-006", "security-exec-authenticator-options", Severity.ERROR,
    "The exec authenticator needs Command and UserName.",
    description="Row 6 of the §4.8 module table (`libamps_exec_authenticator.so`). AMPS runs Command to "
    "obtain the password for UserName on an outgoing replication connection; without either the module "
    "fails to initialise and AMPS stops starting up. (MaxLength, a count, is checked by UNIT-001.)",
    source="spec/config.md §4.8 row 6 [DIG]",
    bad=_AUTHENTICATOR.format(name="exec", library="libamps_exec_authenticator.so",
                              options="<Command>/opt/amps/bin/get-token</Command>"),
    good=_AUTHENTICATOR.format(name="exec", library="libamps_exec_authenticator.so", options="<Command>/opt/amps/bin/get-token</Command><UserName>amps-repl</UserName>"),
)
def exec_authenticator(model: ConfigModel) -> Iterator[Issue]:
    for block in _blocks(model, "exec"):
        yield from _require(block, "Command", "UserName", hint="add <Command>/path/to/program</Command> and "
                            "<UserName>name</UserName>")


_OAUTH_MODULE = """  <Modules>
    <Module><Name>oauth</Name><Library>libamps_oauth_authentication.so</Library></Module>
  </Modules>"""


@rule(
    "SEC-007", "security-oauth-options", Severity.ERROR,
    "The OAuth authentication module needs TokenEndpoint, RedirectURI, ClientID and ClientSecret.",
    description="Row 7 of the §4.8 module table (`libamps_oauth_authentication.so`). The module exchanges "
    "codes at TokenEndpoint as the client ClientID/ClientSecret with the registered RedirectURI; all four "
    "are required (they may be set in the Modules/Module Options as defaults).",
    source="spec/config.md §4.8 row 7 [DIG]",
    bad=_OAUTH_MODULE + """
  <Admin>
    <InetAddr>localhost:8085</InetAddr>
    <Authentication>
      <Module>oauth</Module>
      <Options><TokenEndpoint>https://idp.example.com/token</TokenEndpoint></Options>
    </Authentication>
  </Admin>""",
    good=_OAUTH_MODULE + """
  <Admin>
    <InetAddr>localhost:8085</InetAddr>
    <Authentication>
      <Module>oauth</Module>
      <Options>
        <TokenEndpoint>https://idp.example.com/token</TokenEndpoint>
        <RedirectURI>https://amps.example.com:8085/</RedirectURI>
        <ClientID>amps-admin</ClientID>
        <ClientSecret>${OAUTH_SECRET}</ClientSecret>
      </Options>
    </Authentication>
  </Admin>""",
)
def oauth(model: ConfigModel) -> Iterator[Issue]:
    for block in _blocks(model, "oauth"):
        yield from _require(block, "TokenEndpoint", "RedirectURI", "ClientID", "ClientSecret",
                            hint="set TokenEndpoint, RedirectURI, ClientID and ClientSecret")


_SIMPLE_ACCESS = """  <Modules>
    <Module><Name>simple-access</Name><Library>libamps_simple_access_entitlement.so</Library></Module>
  </Modules>
  <Admin>
    <InetAddr>localhost:8085</InetAddr>
    <Entitlement>
      <Module>simple-access</Module>
      <Options>{options}</Options>
    </Entitlement>
  </Admin>"""
_PERMISSIONS = ("read", "write")


@rule(
    "SEC-008", "security-simple-access-options", Severity.ERROR,
    "The simple access entitlement module needs AllowedTopics and/or DeniedTopics (regexes); "
    "GrantedPermissions is read and/or write.",
    description="Row 8 of the §4.8 module table (`libamps_simple_access_entitlement.so`). In an Entitlement "
    "block it grants access to resources matching AllowedTopics (default `.*`) and not DeniedTopics; at "
    "least one of the two must be given, and each must be a valid regular expression. GrantedPermissions "
    "lists `read` and/or `write`.",
    source="spec/config.md §4.8 row 8 [DIG]",
    bad=_SIMPLE_ACCESS.format(options="<GrantedPermissions>read</GrantedPermissions>"),
    good=_SIMPLE_ACCESS.format(options="<AllowedTopics>^/amps/instance/.*</AllowedTopics>"
                               "<GrantedPermissions>read</GrantedPermissions>"),
)
def simple_access(model: ConfigModel) -> Iterator[Issue]:
    blocks = [b for b in _blocks(model, "simple-access") if b.role == "Entitlement"]
    for block in blocks:
        if not block.names() & {"AllowedTopics", "DeniedTopics"}:
            yield Issue(block.el, f"{block.label()} has neither AllowedTopics nor DeniedTopics",
                        "add <AllowedTopics>regex</AllowedTopics> and/or <DeniedTopics>regex</DeniedTopics>",
                        at_text=False)
    for block, opt in _own_options(blocks):
        value = (opt.text or "").strip()
        if opt.tag in ("AllowedTopics", "DeniedTopics") and value and (error := regex_error(value)):
            yield Issue(opt, f"{block.label()} {opt.tag} is not a valid regular expression: {error}",
                        "fix the regular expression")
        elif opt.tag == "GrantedPermissions":
            bad = [t for t in (p.strip() for p in value.split(",")) if t not in _PERMISSIONS]
            if bad:
                yield Issue(opt, f"{block.label()} GrantedPermissions has {', '.join(repr(t) for t in bad)}",
                            "use read, write or read,write")


@rule(
    "SEC-009", "security-no-authentication-everywhere", Severity.WARNING,
    "amps-default-no-authentication-module is the instance authentication and a client transport does not override it.",
    description="The no-authentication module refuses every logon. Set as the instance-wide Authentication "
    "it applies to every transport that has no Authentication of its own, so no client can log on there.",
    source="spec/config.md §4.8",
    bad="""  <Authentication><Module>amps-default-no-authentication-module</Module></Authentication>
  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol></Transport>
  </Transports>""",
    good="""  <Authentication><Module>amps-default-no-authentication-module</Module></Authentication>
  <Transports>
    <Transport>
      <Name>json-tcp</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol>
      <Authentication><Module>amps-default-authentication-module</Module></Authentication>
    </Transport>
  </Transports>""",
)
def no_authentication_everywhere(model: ConfigModel) -> Iterator[Issue]:
    for el in model.root.all("Authentication"):
        module = Section(el).first("Module")
        if module is None or (module.text or "").strip() != NO_AUTH:
            continue
        exposed = [transport_label(t) for t in model.transports
                   if t.text("Type") in CLIENT_TYPES and not t.has("Authentication")]
        if exposed:
            yield Issue(module, f"The instance uses {NO_AUTH}, so nobody can log on to {', '.join(exposed)}",
                        "give those transports their own <Authentication>, or use amps-default-authentication-module")

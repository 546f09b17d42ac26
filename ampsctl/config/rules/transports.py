"""Rules for Protocols and Transports/Transport: spec/config.md §4.1.

Port clashes are found once here for both TRN-009 (transport against transport) and
ADM-005 (Admin/InetAddr against a transport), so each clash is reported by exactly one rule.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, Section
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.catalog import BUILTIN_MODULES, LEGACY_PROTOCOLS, PROTOCOL_MODULES, TRANSPORT_FILTER_MODULES
from ampsctl.config.rules.common import is_true
from ampsctl.config.rules.sections import nested_sections, options, repeated_names
from ampsctl.errors import UnitError
from ampsctl.units import parse_interval

TRANSPORT_TYPES = ("tcp", "tcps", "amps-replication", "amps-replication-secure", "amps-unix")
REPLICATION_TYPES = frozenset({"amps-replication", "amps-replication-secure"})
CLIENT_TYPES = frozenset({"tcp", "tcps", "amps-unix"})
TLS_PROTOCOLS = ("SSLv2", "SSLv3", "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3")


def label(transport: Section) -> str:
    return f"Transport '{transport.text('Name') or '?'}'"


def protocols(model: ConfigModel) -> dict[str, Section]:
    """Protocols/Protocol sections by Name (first definition wins)."""
    found: dict[str, Section] = {}
    for protocol in nested_sections(model, "Protocols", "Protocol"):
        found.setdefault(protocol.text("Name") or "", protocol)
    found.pop("", None)
    return found


def protocol_module(model: ConfigModel, name: str | None, declared: dict[str, Section] | None = None) -> str | None:
    """The protocol module a Transport/Protocol value selects ('amps', 'websocket', 'fix'...), or None."""
    declared = protocols(model) if declared is None else declared
    if name in declared:
        return declared[name].text("Module")
    return name if name in PROTOCOL_MODULES else None


# --- listening addresses -------------------------------------------------------------------

_LOCALHOST = frozenset({"localhost", "127.0.0.1", "::1"})
_BOTH = frozenset({"v4", "v6"})


@dataclass(frozen=True, slots=True)
class Bind:
    """Where a listener binds: a port, the address families it covers, and a host (None = all)."""

    port: int
    families: frozenset[str]  # {"v4"}, {"v6"} or both (a bare port or a host name)
    host: str | None


def parse_bind(text: str) -> Bind | None:
    """Read `port`, `host:port`, `ip:port`, `0.0.0.0:port` or `[v6]:port`; None when unreadable."""
    text = text.strip()
    if text.isdigit():
        return Bind(int(text), _BOTH, None)
    if text.startswith("["):
        host, sep, port = text[1:].partition("]:")
    else:
        host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return Bind(int(port), _BOTH, host.lower())  # a host name: it may resolve to either family
    family = frozenset({"v4" if ip.version == 4 else "v6"})
    return Bind(int(port), family, None if ip.is_unspecified else str(ip))


def overlaps(a: Bind, b: Bind) -> bool:
    if a.port != b.port or a.port == 0 or not a.families & b.families:
        return False
    if a.host is None or b.host is None:
        return True
    return a.host == b.host or (a.host in _LOCALHOST and b.host in _LOCALHOST)


def port_clashes(model: ConfigModel) -> list[tuple[etree._Element, str, str, bool]]:
    """(InetAddr element, its owner, what it clashes with, involves Admin) for each clashing listener.

    A transport is reported against the first earlier transport it clashes with; an
    Admin/InetAddr against the first transport it clashes with, wherever that one is.
    Worked out once per config for both rules.
    """
    return model.shared(_port_clashes)


def _port_clashes(model: ConfigModel) -> list[tuple[etree._Element, str, str, bool]]:
    by_port: dict[int, list[tuple[str, Bind]]] = {}
    found: list[tuple[etree._Element, str, str, bool]] = []
    for transport in model.transports:
        addr = transport.first("InetAddr")
        bind = parse_bind(addr.text or "") if addr is not None and transport.text("Type") != "amps-unix" else None
        if bind is None:
            continue
        earlier = by_port.setdefault(bind.port, [])
        other = next((name for name, seen in earlier if overlaps(bind, seen)), None)
        if other:
            found.append((addr, label(transport), other, False))
        earlier.append((label(transport), bind))
    for admin in model.root.all("Admin"):
        addr = Section(admin).first("InetAddr")
        bind = parse_bind(addr.text or "") if addr is not None else None
        if bind is not None:
            other = next((name for name, seen in by_port.get(bind.port, ()) if overlaps(bind, seen)), None)
            if other:
                found.append((addr, "Admin", other, True))
    return found


# --- rules ---------------------------------------------------------------------------------


def _transport(*children: str) -> str:
    """A doc example: one Transport with these child elements, one per line."""
    inner = "".join(f"      {child}\n" for child in children)
    return f"  <Transports>\n    <Transport>\n{inner}    </Transport>\n  </Transports>"


_TCP_CHILDREN = ("<Name>json-tcp</Name>", "<Type>tcp</Type>", "<InetAddr>9007</InetAddr>", "<Protocol>amps</Protocol>")
_TLS_CHILDREN = ("<Name>json-tls</Name>", "<Type>tcps</Type>", "<InetAddr>9443</InetAddr>", "<Protocol>amps</Protocol>")
_TCP_LINE = "".join(_TCP_CHILDREN)
_CERT = "<Certificate>/etc/amps/cert.pem</Certificate>"
_KEY = "<PrivateKey>/etc/amps/key.pem</PrivateKey>"
_FIX = ("<Name>fix-tcp</Name>", "<Type>tcp</Type>", "<InetAddr>9010</InetAddr>", "<Protocol>fix</Protocol>")
_TCP = _transport(*_TCP_CHILDREN)


@rule(
    "TRN-001", "transport-name-type", Severity.ERROR,
    "A Transport needs a Name and a Type, and the Type must be one AMPS knows.",
    description="The Name appears in logs and is referenced by Admin/SQLTransport and by actions. The Type "
    "selects the listener: `tcp`, `tcps`, `amps-unix` for clients, `amps-replication` or "
    "`amps-replication-secure` for incoming replication.",
    source="spec/config.md §4.1",
    bad=_transport(_TCP_CHILDREN[0], "<Type>udp</Type>", *_TCP_CHILDREN[2:]),
    good=_TCP,
)
def name_and_type(model: ConfigModel) -> Iterator[Issue]:
    for transport in model.transports:
        missing = [child for child in ("Name", "Type") if not transport.text(child)]
        if missing:
            yield Issue(transport.el, f"{label(transport)} has no {' and no '.join(missing)}",
                        f"add <Name> and a <Type> ({', '.join(TRANSPORT_TYPES)})", at_text=False)
        kind = transport.text("Type")
        if kind and kind not in TRANSPORT_TYPES:
            yield Issue(transport.first("Type"), f"{label(transport)} has an unknown Type '{kind}'",
                        f"use one of {', '.join(TRANSPORT_TYPES)}")


@rule(
    "TRN-002", "transport-address-required", Severity.ERROR,
    "A network transport needs an InetAddr; an amps-unix transport needs a FileName.",
    description="AMPS listens on InetAddr (`port`, `host:port`, `0.0.0.0:port`, `[::]:port`) for every "
    "transport type except `amps-unix`, which listens on the Unix domain socket named by FileName.",
    source="spec/config.md §4.1",
    bad=_transport(*_TCP_CHILDREN[:2], _TCP_CHILDREN[3]),
    good=_TCP,
)
def address_required(model: ConfigModel) -> Iterator[Issue]:
    for transport in model.transports:
        kind = transport.text("Type")
        if kind == "amps-unix":
            if not transport.text("FileName"):
                yield Issue(transport.el, f"{label(transport)} is an amps-unix transport without a FileName",
                            "add <FileName>/var/run/amps/amps.sock</FileName>", at_text=False)
        elif kind in TRANSPORT_TYPES and not transport.text("InetAddr"):
            yield Issue(transport.el, f"{label(transport)} has no InetAddr",
                        "add <InetAddr>9007</InetAddr> (or host:port)", at_text=False)


@rule(
    "TRN-003", "transport-protocol", Severity.ERROR,
    "A client transport needs a Protocol that is built in or defined in Protocols.",
    description="Client transports (`tcp`, `tcps`, `amps-unix`) speak a protocol: `amps` (synonym `json`), "
    "`websocket`, a legacy protocol (`fix`, `fix-session`, `nvfix`, `soap`, `xml`) or the Name of a "
    "Protocols/Protocol. Replication transports need none.",
    source="spec/config.md §4.1",
    bad=_transport(*_TCP_CHILDREN[:3], "<Protocol>amsp</Protocol>"),
    good=_TCP,
)
def protocol_known(model: ConfigModel) -> Iterator[Issue]:
    declared = protocols(model)
    for transport in model.transports:
        protocol = transport.text("Protocol")
        if protocol is None:
            if transport.text("Type") in CLIENT_TYPES:
                yield Issue(transport.el, f"{label(transport)} is a client transport without a Protocol",
                            "add <Protocol>amps</Protocol> (or websocket)", at_text=False)
        elif protocol not in PROTOCOL_MODULES and protocol not in declared:
            yield Issue(transport.first("Protocol"), f"{label(transport)} uses an unknown Protocol '{protocol}'",
                        f"use amps, websocket or a legacy protocol, or define it in Protocols/Protocol"
                        f"{' (' + ', '.join(sorted(declared)) + ')' if declared else ''}")


@rule(
    "TRN-004", "transport-legacy-protocol-message-type", Severity.ERROR,
    "A transport with a legacy protocol must set MessageType.",
    description="The `amps` and `websocket` protocols carry the message type in each command; the legacy "
    "protocols (`fix`, `fix-session`, `nvfix`, `soap`, `xml`) do not, so the transport must say which "
    "message type it carries.",
    source="spec/config.md §4.1",
    bad=_transport(*_FIX),
    good=_transport(*_FIX, "<MessageType>fix</MessageType>"),
)
def legacy_protocol_message_type(model: ConfigModel) -> Iterator[Issue]:
    declared = protocols(model)
    for transport in model.transports:
        if transport.text("Type") in REPLICATION_TYPES or transport.text("MessageType"):
            continue
        module = protocol_module(model, transport.text("Protocol"), declared)
        if module in LEGACY_PROTOCOLS:
            yield Issue(transport.el, f"{label(transport)} uses the legacy protocol '{module}' without a MessageType",
                        f"add <MessageType>{'fix' if module == 'fix-session' else module}</MessageType> "
                        "(or the message type it carries)", at_text=False)


@rule(
    "TRN-005", "transport-tls-files", Severity.ERROR,
    "A tcps or amps-replication-secure transport needs both Certificate and PrivateKey.",
    description="Secure transports terminate TLS, which needs the server certificate and its private key.",
    source="spec/config.md §4.1",
    bad=_transport(*_TLS_CHILDREN, _CERT),
    good=_transport(*_TLS_CHILDREN, _CERT, _KEY),
)
def tls_files(model: ConfigModel) -> Iterator[Issue]:
    for transport in model.transports:
        kind = transport.text("Type")
        if kind not in ("tcps", "amps-replication-secure"):
            continue
        missing = [child for child in ("Certificate", "PrivateKey") if not transport.text(child)]
        if missing:
            example = {"Certificate": "<Certificate>/path/cert.pem</Certificate>",
                       "PrivateKey": "<PrivateKey>/path/key.pem</PrivateKey>"}
            yield Issue(transport.el, f"{label(transport)} is a {kind} transport without {' and '.join(missing)}",
                        f"add {' and '.join(example[m] for m in missing)}", at_text=False)


@rule(
    "TRN-006", "transport-tls-on-tcp", Severity.INFO,
    "Certificate and PrivateKey on a plain tcp transport: TLS is enforced anyway.",
    description="When a `tcp` transport has a certificate and key, AMPS requires TLS on it. The docs "
    "recommend declaring such a transport as `tcps` so the configuration says what happens.",
    source="spec/config.md §4.1",
    bad=_transport(*_TCP_CHILDREN, _CERT, _KEY),
    good=_transport(*_TLS_CHILDREN, _CERT, _KEY),
)
def tls_on_tcp(model: ConfigModel) -> Iterator[Issue]:
    for transport in model.transports:
        if transport.text("Type") == "tcp" and transport.text("Certificate") and transport.text("PrivateKey"):
            yield Issue(transport.first("Type"), f"{label(transport)} has a Certificate and PrivateKey, so it "
                        "only accepts TLS connections although its Type is tcp", "write <Type>tcps</Type>")


@rule(
    "TRN-007", "transport-verify-client-ca", Severity.ERROR,
    "VerifyClient true needs CAFile or CAPath.",
    description="With VerifyClient (mutual TLS) AMPS checks each client certificate against the trusted "
    "certificate authorities given by CAFile or CAPath; without either no client can be verified.",
    source="spec/config.md §4.1",
    bad=_transport(*_TLS_CHILDREN, _CERT, _KEY, "<VerifyClient>True</VerifyClient>"),
    good=_transport(*_TLS_CHILDREN, _CERT, _KEY, "<VerifyClient>True</VerifyClient>",
                    "<CAFile>/etc/amps/ca.pem</CAFile>"),
)
def verify_client_ca(model: ConfigModel) -> Iterator[Issue]:
    for transport in model.transports:
        if is_true(transport.text("VerifyClient")) and not (transport.text("CAFile") or transport.text("CAPath")):
            yield Issue(transport.first("VerifyClient"),
                        f"{label(transport)} verifies client certificates but has neither CAFile nor CAPath",
                        "add <CAFile>/path/ca.pem</CAFile> or <CAPath>/path/certs</CAPath>")


@rule(
    "TRN-008", "transport-single-replication", Severity.ERROR,
    "Only one incoming replication transport per instance.",
    description="An instance accepts incoming replication on a single `amps-replication` or "
    "`amps-replication-secure` transport; every upstream instance connects to that one.",
    source="spec/config.md §4.1",
    bad="""  <Transports>
    <Transport><Name>repl</Name><Type>amps-replication</Type><InetAddr>10004</InetAddr></Transport>
    <Transport><Name>repl2</Name><Type>amps-replication</Type><InetAddr>10005</InetAddr></Transport>
  </Transports>""",
    good="""  <Transports>
    <Transport><Name>repl</Name><Type>amps-replication</Type><InetAddr>10004</InetAddr></Transport>
  </Transports>""",
)
def single_replication(model: ConfigModel) -> Iterator[Issue]:
    first: Section | None = None
    for transport in model.transports:
        if transport.text("Type") not in REPLICATION_TYPES:
            continue
        if first is None:
            first = transport
        else:
            yield Issue(transport.first("Type"),
                        f"{label(transport)} is a second incoming replication transport ({label(first)} is the first)",
                        "keep one amps-replication transport and remove the others")


@rule(
    "TRN-009", "transport-port-clash", Severity.ERROR,
    "Two transports listen on the same port on overlapping addresses.",
    description="Each listener needs its own port: a bare port binds every interface (IPv4 and IPv6), "
    "`0.0.0.0:port` every IPv4 interface, `[::]:port` every IPv6 interface. Two transports whose addresses "
    "overlap on the same port cannot both start. A clash between a transport and Admin/InetAddr is "
    "reported once, by ADM-005.",
    source="spec/config.md §4.1",
    bad="""  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol></Transport>
    <Transport><Name>fix-tcp</Name><Type>tcp</Type><InetAddr>0.0.0.0:9007</InetAddr><Protocol>fix</Protocol><MessageType>fix</MessageType></Transport>
  </Transports>""",
    good="""  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol></Transport>
    <Transport><Name>fix-tcp</Name><Type>tcp</Type><InetAddr>9008</InetAddr><Protocol>fix</Protocol><MessageType>fix</MessageType></Transport>
  </Transports>""",
)
def port_clash(model: ConfigModel) -> Iterator[Issue]:
    for addr, owner, other, with_admin in port_clashes(model):
        if not with_admin:
            yield Issue(addr, f"InetAddr '{(addr.text or '').strip()}' of {owner} uses the same port as {other}",
                        "give each transport its own port")


@rule(
    "TRN-010", "transport-duplicate-name", Severity.WARNING,
    "Two transports share a Name.",
    description="Transport names appear in logs and are how Admin/SQLTransport and the enable/disable "
    "transport actions select a transport; duplicates make them ambiguous.",
    source="spec/config.md §4.1",
    bad="""  <Transports>
    <Transport><Name>json</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol></Transport>
    <Transport><Name>json</Name><Type>tcp</Type><InetAddr>9008</InetAddr><Protocol>websocket</Protocol></Transport>
  </Transports>""",
    good="""  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol></Transport>
    <Transport><Name>json-ws</Name><Type>tcp</Type><InetAddr>9008</InetAddr><Protocol>websocket</Protocol></Transport>
  </Transports>""",
)
def duplicate_name(model: ConfigModel) -> Iterator[Issue]:
    for transport, name in repeated_names(model.transports):
        yield Issue(transport.first("Name"), f"Transport name '{name}' is used more than once",
                    "give each transport a unique Name")


@rule(
    "TRN-011", "transport-unknown-message-type", Severity.ERROR,
    "A client transport's MessageType is not a default or declared message type.",
    description="A client transport restricted to one MessageType accepts only that type; the name must "
    "be a default type (fix, nvfix, xml, json, msgpack, bson, bflat, binary) or a MessageTypes/MessageType.",
    source="spec/config.md §4.1",
    bad="""  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol><MessageType>jsn</MessageType></Transport>
  </Transports>""",
    good="""  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol><MessageType>json</MessageType></Transport>
  </Transports>""",
)
def unknown_message_type(model: ConfigModel) -> Iterator[Issue]:
    for transport in model.transports:
        mtype = transport.text("MessageType")
        if mtype and transport.text("Type") not in REPLICATION_TYPES and mtype not in model.message_types:
            yield Issue(transport.first("MessageType"), f"{label(transport)} uses an unknown MessageType '{mtype}'",
                        "use a default message type or declare it in MessageTypes")


@rule(
    "TRN-012", "transport-replication-message-type", Severity.INFO,
    "MessageType on a replication transport is ignored.",
    description="A replication transport carries every replicated message type; which types are replicated "
    "is set per Replication/Destination/Topic, so MessageType here has no effect.",
    source="spec/config.md §4.1",
    bad="""  <Transports>
    <Transport><Name>repl</Name><Type>amps-replication</Type><InetAddr>10004</InetAddr><MessageType>json</MessageType></Transport>
  </Transports>""",
    good="""  <Transports>
    <Transport><Name>repl</Name><Type>amps-replication</Type><InetAddr>10004</InetAddr></Transport>
  </Transports>""",
)
def replication_message_type(model: ConfigModel) -> Iterator[Issue]:
    for transport in model.transports:
        if transport.text("Type") in REPLICATION_TYPES and transport.has("MessageType"):
            yield Issue(transport.first("MessageType"), f"{label(transport)} is a replication transport; "
                        "its MessageType is ignored", "remove <MessageType>", at_text=False)


@rule(
    "TRN-013", "transport-filter-module", Severity.ERROR,
    "A TransportFilter needs a Module that is a built-in filter or a loaded module.",
    description="Transport filters run in file order on every incoming message. The built-in filters are "
    "`amps-topic-translator` and `amps-conflated-topic-translator`; any other filter module must be "
    "declared in Modules.",
    source="spec/config.md §4.1",
    bad=_transport(_TCP_LINE, "<TransportFilter><Module>amps-topic-translater</Module></TransportFilter>"),
    good=_transport(_TCP_LINE, "<TransportFilter>", "  <Module>amps-topic-translator</Module>",
                    "  <Options><Topic>orders:orders-v2</Topic></Options>", "</TransportFilter>"),
)
def filter_module(model: ConfigModel) -> Iterator[Issue]:
    for transport in model.transports:
        for el in transport.all("TransportFilter"):
            module_el = Section(el).first("Module")
            module = (module_el.text or "").strip() if module_el is not None else ""
            if module_el is None or not module:
                yield Issue(el, f"A TransportFilter of {label(transport)} has no Module",
                            "add <Module>amps-topic-translator</Module> or the Name of a declared filter module",
                            at_text=False)
            elif module not in TRANSPORT_FILTER_MODULES and module not in model.modules:
                what = "is a built-in module but not a transport filter" if module in BUILTIN_MODULES else \
                    "is neither a built-in transport filter nor declared in Modules"
                yield Issue(module_el, f"TransportFilter module '{module}' of {label(transport)} {what}",
                            "use amps-topic-translator or amps-conflated-topic-translator, or declare the "
                            "module in Modules/Module")


@rule(
    "TRN-014", "transport-translator-topic", Severity.ERROR,
    "Topic translator options must read `from:to` (topic translator) or `from:to:interval` (conflated).",
    description="`amps-topic-translator` rewrites topic `from` to `to`; `amps-conflated-topic-translator` "
    "rewrites `from` to the conflated topic `to` with the given conflation interval (e.g. `500ms`). Each "
    "translator needs at least one Topic option.",
    source="spec/config.md §4.1",
    bad=_transport(_TCP_LINE, "<TransportFilter>", "  <Module>amps-conflated-topic-translator</Module>",
                   "  <Options><Topic>orders:orders-C</Topic></Options>", "</TransportFilter>"),
    good=_transport(_TCP_LINE, "<TransportFilter>", "  <Module>amps-conflated-topic-translator</Module>",
                   "  <Options><Topic>orders:orders-C:500ms</Topic></Options>", "</TransportFilter>"),
)
def translator_topic(model: ConfigModel) -> Iterator[Issue]:
    for transport in model.transports:
        for el in transport.all("TransportFilter"):
            module = Section(el).text("Module")
            if module not in TRANSPORT_FILTER_MODULES:
                continue
            conflated = module == "amps-conflated-topic-translator"
            shape, example = _TRANSLATION[conflated]
            topics = [opt for opt in options(el) if opt.tag == "Topic"]
            if not topics:
                yield Issue(el, f"{module} on {label(transport)} has no Topic option",
                            f"add <Options><Topic>{example}</Topic></Options>", at_text=False)
            for opt in topics:
                value = (opt.text or "").strip()
                if not _translation_ok(value, conflated):
                    yield Issue(opt, f"{module} Topic '{value}' on {label(transport)} is not {shape}",
                                f"write {shape}, e.g. {example}")


_TRANSLATION = {False: ("from:to", "orders:orders-v2"), True: ("from:to:interval", "orders:orders-C:500ms")}


def _translation_ok(text: str, conflated: bool) -> bool:
    parts = text.split(":")
    if len(parts) != (3 if conflated else 2) or not all(p.strip() for p in parts):
        return False
    if conflated:
        try:
            parse_interval(parts[2])
        except UnitError:
            return False
    return True


@rule(
    "TRN-015", "transport-tls-protocols", Severity.ERROR,
    "SecureSocketProtocols lists a protocol AMPS does not know.",
    description="SecureSocketProtocols is a space-separated list of SSLv2, SSLv3, TLSv1, TLSv1.1, TLSv1.2 "
    "and TLSv1.3 (default `TLSv1.1 TLSv1.2 TLSv1.3`), spelled exactly so.",
    source="spec/config.md §4.1",
    bad=_transport("".join(_TLS_CHILDREN), _CERT + _KEY,
                   "<SecureSocketProtocols>TLSv1.2 TLSv1.4</SecureSocketProtocols>"),
    good=_transport("".join(_TLS_CHILDREN), _CERT + _KEY,
                   "<SecureSocketProtocols>TLSv1.2 TLSv1.3</SecureSocketProtocols>"),
)
def tls_protocols(model: ConfigModel) -> Iterator[Issue]:
    by_lower = {p.lower(): p for p in TLS_PROTOCOLS}
    for transport in model.transports:
        for el in transport.all("SecureSocketProtocols"):
            tokens = (el.text or "").split()
            bad = [t for t in tokens if t not in TLS_PROTOCOLS]
            if not tokens or bad:
                fixes = [by_lower[t.lower()] for t in bad if t.lower() in by_lower]
                hint = f"write {' '.join(fixes)} (exact case)" if fixes and len(fixes) == len(bad) else \
                    f"use a space-separated list of {' '.join(TLS_PROTOCOLS)}"
                what = f"unknown protocol{'s' if len(bad) > 1 else ''} {', '.join(map(repr, bad))}" if bad \
                    else "no protocols"
                yield Issue(el, f"SecureSocketProtocols of {label(transport)} has {what}", hint)

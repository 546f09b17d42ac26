"""Rules for the Admin (monitoring/HTTP administration) section: spec/config.md §4.6."""

from __future__ import annotations

from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, Section
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.common import interval_of
from ampsctl.config.rules.transports import port_clashes, protocol_module, protocols

_ONE_SECOND_NS = 1_000_000_000


def _admins(model: ConfigModel) -> list[Section]:
    return [Section(el) for el in model.root.all("Admin")]


@rule(
    "ADM-001", "admin-interval-minimum", Severity.ERROR,
    "Admin Interval must be at least 1s.",
    description="Interval is how often AMPS refreshes its statistics (default `10s`); the documented "
    "minimum is one second.",
    source="spec/config.md §4.6",
    bad="""  <Admin>
    <InetAddr>localhost:8085</InetAddr>
    <Interval>500ms</Interval>
  </Admin>""",
    good="""  <Admin>
    <InetAddr>localhost:8085</InetAddr>
    <Interval>1s</Interval>
  </Admin>""",
)
def interval_minimum(model: ConfigModel) -> Iterator[Issue]:
    for admin in _admins(model):
        interval = interval_of(admin.first("Interval"))
        if interval is not None and interval.nanos < _ONE_SECOND_NS:
            yield Issue(admin.first("Interval"), f"Admin Interval '{interval.text.strip()}' is shorter than 1s",
                        "use 1s or more (the default is 10s)")


@rule(
    "ADM-002", "admin-sql-transport", Severity.ERROR,
    "Admin/SQLTransport must name a Transport that uses the websocket protocol.",
    description="The Galvanometer SQL page queries AMPS over a websocket connection on the transport named "
    "by SQLTransport. It must be the Name of a Transport whose Protocol is `websocket` (or a "
    "Protocols/Protocol whose Module is `websocket`).",
    source="spec/config.md §4.6",
    bad="""  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol></Transport>
  </Transports>
  <Admin>
    <InetAddr>localhost:8085</InetAddr>
    <SQLTransport>json-tcp</SQLTransport>
  </Admin>""",
    good="""  <Transports>
    <Transport><Name>json-ws</Name><Type>tcp</Type><InetAddr>9008</InetAddr><Protocol>websocket</Protocol></Transport>
  </Transports>
  <Admin>
    <InetAddr>localhost:8085</InetAddr>
    <SQLTransport>json-ws</SQLTransport>
  </Admin>""",
)
def sql_transport(model: ConfigModel) -> Iterator[Issue]:
    admins = [admin for admin in _admins(model) if admin.has("SQLTransport")]
    if not admins:
        return
    declared = protocols(model)
    modules: dict[str, str | None] = {}
    for transport in model.transports:
        name = transport.text("Name")
        if name and name not in modules:
            modules[name] = protocol_module(model, transport.text("Protocol"), declared)
    for admin in admins:
        name = admin.text("SQLTransport") or ""
        if name not in modules:
            yield Issue(admin.first("SQLTransport"), f"Admin SQLTransport '{name}' is not the Name of a Transport",
                        "name a Transport whose Protocol is websocket")
        elif modules[name] != "websocket":
            yield Issue(admin.first("SQLTransport"), f"Admin SQLTransport '{name}' names a Transport that does "
                        "not use the websocket protocol", "point it at a websocket transport, or add one")


@rule(
    "ADM-003", "admin-tls-pair", Severity.ERROR,
    "Admin Certificate and PrivateKey go together.",
    description="The admin server serves HTTPS when it has a certificate and its private key; one without "
    "the other cannot work.",
    source="spec/config.md §4.6",
    bad="""  <Admin>
    <InetAddr>localhost:8085</InetAddr>
    <Certificate>/etc/amps/admin-cert.pem</Certificate>
  </Admin>""",
    good="""  <Admin>
    <InetAddr>localhost:8085</InetAddr>
    <Certificate>/etc/amps/admin-cert.pem</Certificate>
    <PrivateKey>/etc/amps/admin-key.pem</PrivateKey>
  </Admin>""",
)
def tls_pair(model: ConfigModel) -> Iterator[Issue]:
    for admin in _admins(model):
        has_cert, has_key = bool(admin.text("Certificate")), bool(admin.text("PrivateKey"))
        if has_cert != has_key:
            present, missing = ("Certificate", "PrivateKey") if has_cert else ("PrivateKey", "Certificate")
            yield Issue(admin.first(present), f"Admin has a {present} but no {missing}",
                        f"add <{missing}>, or remove <{present}> to serve plain HTTP", at_text=False)


def _varies_on_origin(header: str) -> bool:
    name, sep, value = header.partition(":")
    return bool(sep) and name.strip().lower() == "vary" and any(
        token.strip().lower() in ("origin", "*") for token in value.split(",")
    )


@rule(
    "ADM-004", "admin-cors-vary", Severity.WARNING,
    "AccessControlAllowOrigin is set without a `Vary: Origin` Header.",
    description="When the admin server answers with an origin-specific Access-Control-Allow-Origin, caches "
    "must key responses by Origin; the docs advise adding `<Header>Vary: Origin</Header>` whenever "
    "AccessControlAllowOrigin is set.",
    source="spec/config.md §4.6",
    bad="""  <Admin>
    <InetAddr>localhost:8085</InetAddr>
    <AccessControlAllowOrigin>https://.*\\.example\\.com</AccessControlAllowOrigin>
  </Admin>""",
    good="""  <Admin>
    <InetAddr>localhost:8085</InetAddr>
    <AccessControlAllowOrigin>https://.*\\.example\\.com</AccessControlAllowOrigin>
    <Header>Vary: Origin</Header>
  </Admin>""",
)
def cors_vary(model: ConfigModel) -> Iterator[Issue]:
    for admin in _admins(model):
        origin = admin.first("AccessControlAllowOrigin")
        if origin is None:
            continue
        if not any(_varies_on_origin(el.text or "") for el in admin.all("Header")):
            yield Issue(origin, "Admin sets AccessControlAllowOrigin but sends no 'Vary: Origin' header",
                        "add <Header>Vary: Origin</Header> to the Admin section", at_text=False)


@rule(
    "ADM-005", "admin-port-clash", Severity.ERROR,
    "Admin/InetAddr uses the same port as a transport.",
    description="The admin HTTP server needs its own port. When Admin/InetAddr overlaps a transport's "
    "InetAddr on the same port, one of the two listeners cannot start. Reported here, at the Admin "
    "address (TRN-009 reports clashes between transports only).",
    source="spec/config.md §4.6",
    bad="""  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>8085</InetAddr><Protocol>amps</Protocol></Transport>
  </Transports>
  <Admin>
    <InetAddr>localhost:8085</InetAddr>
  </Admin>""",
    good="""  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol></Transport>
  </Transports>
  <Admin>
    <InetAddr>localhost:8085</InetAddr>
  </Admin>""",
)
def port_clash(model: ConfigModel) -> Iterator[Issue]:
    for addr, _, other, with_admin in port_clashes(model):
        if with_admin:
            yield Issue(addr, f"Admin InetAddr '{(addr.text or '').strip()}' uses the same port as {other}",
                        "give the admin server a port no transport uses")

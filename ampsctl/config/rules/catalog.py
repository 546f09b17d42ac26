"""The modules AMPS ships, by kind: the names a config may use without a Modules/Module entry.

spec/config.md §4.5 lists them, and §5.2/§5.3 the action modules. This is the one place that
says which built-in names exist and which kind of `<Module>` reference accepts which of them;
the module, transport, message-type and security rules all read it from here. The
amps-action-* names come from ``action_modules``, which also knows each one's options.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ampsctl.config.rules import action_modules

COMPOSITE_MESSAGE_TYPE_MODULES = frozenset({"composite-global", "composite-local"})
MESSAGE_TYPE_MODULES = frozenset({
    "fix", "nvfix", "json", "bflat", "msgpack", "bson", "xml", "protobuf", "binary", "struct",
}) | COMPOSITE_MESSAGE_TYPE_MODULES

DEFAULT_AUTHENTICATION_MODULE = "amps-default-authentication-module"
IMPLICIT_AUTHENTICATION_MODULE = "amps-implicit-authentication-module"
NO_AUTHENTICATION_MODULE = "amps-default-no-authentication-module"  # refuses every logon
AUTHENTICATION_MODULES = frozenset({
    DEFAULT_AUTHENTICATION_MODULE, IMPLICIT_AUTHENTICATION_MODULE, NO_AUTHENTICATION_MODULE,
})
ENTITLEMENT_MODULES = frozenset({"amps-default-entitlement-module", "amps-default-no-entitlement-module"})
AUTHENTICATOR_MODULES = frozenset({"amps-default-authenticator-module"})

TRANSPORT_FILTER_MODULES = frozenset({"amps-topic-translator", "amps-conflated-topic-translator"})
# Legacy protocols do not carry the message type in each command (TRN-004).
LEGACY_PROTOCOLS = frozenset({"fix", "fix-session", "nvfix", "soap", "xml"})
PROTOCOL_MODULES = frozenset({"amps", "json", "websocket"}) | LEGACY_PROTOCOLS

ACTION_MODULES = frozenset(action_modules.MODULES)

BUILTIN_MODULES = (
    MESSAGE_TYPE_MODULES | AUTHENTICATION_MODULES | ENTITLEMENT_MODULES | AUTHENTICATOR_MODULES
    | TRANSPORT_FILTER_MODULES | PROTOCOL_MODULES | ACTION_MODULES
)

# Which built-ins a <Module> reference may name, by the element that holds it, with the kind
# to name in a hint. A place not listed accepts any built-in name.
BUILTINS_BY_PLACE: Mapping[str, tuple[frozenset[str], str]] = MappingProxyType({
    "Authentication": (AUTHENTICATION_MODULES, "authentication"),
    "Entitlement": (ENTITLEMENT_MODULES, "entitlement"),
    "Authenticator": (AUTHENTICATOR_MODULES, "authenticator"),
    "MessageType": (MESSAGE_TYPE_MODULES, "message type"),
    "Protocol": (PROTOCOL_MODULES, "protocol"),
    "KeyGenerator": (frozenset(), "key generator"),
    "Function": (frozenset(), "user-defined function"),
})

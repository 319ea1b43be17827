"""Each listener's security: protocol, TLS context, SASL mechanisms — from Kafka's keys.

``listener.security.protocol.map`` names each listener's protocol (PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL). A key is looked up for a listener as Kafka does: first
``listener.name.<listener>.<key>`` (listener name in lower case), then ``<key>``. SASL
login modules come from ``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (the
broker form), then ``listener.name.<listener>.sasl.jaas.config``, then ``sasl.jaas.config``.

No silent downgrade (issue #14 item 7): ``check_supported`` refuses, with a message naming
the key, every security setting kbroker would otherwise ignore — GSSAPI/Kerberos and
unknown mechanisms, custom principal builders, callback handlers, login classes, SSL
engine factories and providers, OAUTHBEARER's JWT (JWKS) validation, and authorizers other
than Kafka's ``StandardAuthorizer``. ``build`` raises ``TlsConfigError``/``JaasError`` for
unreadable keystores or bad JAAS text; the config layer turns both into ``ConfigError``.
"""
from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .authenticator import SaslAuthenticator
    from .jaas import LoginModule
    from .tls import PrincipalMapper
# the TLS context, JAAS text and SCRAM modules load with the first listener that uses them
# (kbroker/security/tls.py, jaas.py, scram.py): a PLAINTEXT node starts without them

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
DEFAULT_PRINCIPAL_BUILDER = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
UNSECURED_VALIDATOR = ("org.apache.kafka.common.security.oauthbearer."
                       "OAuthBearerValidatorCallbackHandler")

# settings that name code kbroker cannot load: refused when set (listener-prefixed too)
_CLASS_KEYS = ("sasl.server.callback.handler.class", "sasl.login.class",
               "sasl.login.callback.handler.class", "ssl.engine.factory.class", "ssl.provider",
               "sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.token.endpoint.url")

# keys kbroker acts on (marked "used" in the config definitions)
USED_KEYS = frozenset({
    "listener.security.protocol.map", "sasl.enabled.mechanisms", "sasl.jaas.config",
    "connections.max.reauth.ms", "principal.builder.class", "ssl.client.auth",
    "ssl.enabled.protocols", "ssl.cipher.suites", "ssl.key.password", "ssl.keystore.certificate.chain",
    "ssl.keystore.key", "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type",
    "ssl.principal.mapping.rules", "ssl.truststore.certificates", "ssl.truststore.location",
    "ssl.truststore.password", "ssl.truststore.type", "sasl.server.max.receive.size",
})


class SecurityConfigError(ValueError):
    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key = key


def _list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [v.strip() for v in value if v.strip()]
    return [v.strip() for v in str(value).split(",") if v.strip()]


class ListenerKeys:
    """A listener's view of the broker config: its overrides first, then the broker value."""

    def __init__(self, values: dict, listener: str):
        self.values = values
        self.listener = listener
        self.prefix = f"listener.name.{listener.lower()}."

    def key_of(self, key: str) -> str:
        return self.prefix + key if self.prefix + key in self.values else key

    def get(self, key: str):
        if self.prefix + key in self.values:
            return self.values[self.prefix + key]
        return self.values.get(key)

    def jaas(self, mechanism: str) -> tuple[str, str | None]:
        for key in (f"{self.prefix}{mechanism.lower()}.sasl.jaas.config",
                    f"{self.prefix}sasl.jaas.config", "sasl.jaas.config"):
            if self.values.get(key):
                return key, self.values[key]
        return f"{self.prefix}{mechanism.lower()}.sasl.jaas.config", None

    def mechanism_get(self, mechanism: str, key: str):
        k = f"{self.prefix}{mechanism.lower()}.{key}"
        return self.values[k] if k in self.values else self.get(key)


@dataclass
class ListenerSecurity:
    """What a connection on this listener needs: the TLS context (SSL, SASL_SSL), the
    enabled SASL mechanisms with their login-module options (SASL_*), the reauth limit."""

    name: str
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: PrincipalMapper | None = None
    mechanisms: dict[str, LoginModule] = field(default_factory=dict)
    reauth_ms: int = 0
    max_receive: int = 524288

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def authenticator(self, credentials, now_ms: Callable[[], int],
                      random_bytes: Callable[[int], bytes],
                      api_versions_max: int = 4) -> SaslAuthenticator | None:
        """A fresh SASL state machine for one connection; ``credentials`` offers
        ``scram(mechanism, user)`` and ``token(mechanism, token_id)``."""
        # the SASL state machine and mechanisms load with the first SASL connection
        from .authenticator import SaslAuthenticator
        from .mechanisms import OAuthBearerUnsecuredServer, PlainServer, ScramMechanismServer
        from .scram import MECHANISMS as SCRAM_MECHANISMS
        if not self.uses_sasl:
            return None
        factories = {}
        # credential lifetimes are wall-clock timestamps; ``now_ms`` is the connection's
        # monotonic clock, used where only durations matter (session expiry)
        wall_ms = getattr(credentials, "wall_ms", None)
        wall = now_ms if wall_ms is None or wall_ms() is None else wall_ms
        for mech, module in self.mechanisms.items():
            if mech == "PLAIN":
                users = {k[5:]: v for k, v in module.options.items() if k.startswith("user_")}
                factories[mech] = lambda users=users: PlainServer(users)
            elif mech in SCRAM_MECHANISMS:
                factories[mech] = lambda m=mech: ScramMechanismServer(
                    m, lambda user: credentials.scram(m, user), random_bytes,
                    lambda token_id: credentials.token(m, token_id), wall)
            elif mech == "OAUTHBEARER":
                factories[mech] = lambda o=module.options: OAuthBearerUnsecuredServer(o, wall)
        return SaslAuthenticator(factories, now_ms, self.reauth_ms, api_versions_max)


def check_supported(values: dict, explicit: set[str]) -> None:
    """Refuse settings kbroker would otherwise silently ignore."""
    for key in sorted(explicit):
        value = values.get(key)
        if value in (None, "", []):
            continue
        suffix = key
        if key.startswith("listener.name."):
            suffix = key.split(".", 3)[3] if key.count(".") >= 3 else key
            for mech in MECHANISMS + ("GSSAPI",):
                if suffix.lower().startswith(mech.lower() + "."):
                    suffix = suffix[len(mech) + 1:]
        if suffix in _CLASS_KEYS:
            raise SecurityConfigError(key, f"{value} is not supported by kbroker (it runs no "
                                      "custom security classes and no external token validation); "
                                      "remove the setting")
        if suffix == "principal.builder.class" and value != DEFAULT_PRINCIPAL_BUILDER:
            raise SecurityConfigError(key, f"custom principal builder {value} is not supported "
                                      f"(only {DEFAULT_PRINCIPAL_BUILDER})")
        if suffix == "authorizer.class.name" and value != STANDARD_AUTHORIZER:
            raise SecurityConfigError(key, f"authorizer {value} is not supported (only "
                                      f"{STANDARD_AUTHORIZER})")


def build(values: dict, listener: str, protocol: str) -> ListenerSecurity:
    keys = ListenerKeys(values, listener)
    sec = ListenerSecurity(listener, protocol,
                           reauth_ms=int(keys.get("connections.max.reauth.ms") or 0),
                           max_receive=int(keys.get("sasl.server.max.receive.size") or 524288))
    if protocol not in PROTOCOLS:
        raise SecurityConfigError("listener.security.protocol.map",
                                  f"unknown security protocol {protocol} for listener {listener}")
    if sec.uses_tls:
        from .tls import PrincipalMapper, TlsConfigError, server_context
        try:
            sec.ssl_context = server_context(keys.get)
            sec.principal_mapper = PrincipalMapper(keys.get("ssl.principal.mapping.rules"))
        except TlsConfigError as e:
            raise SecurityConfigError(keys.key_of(e.key), str(e).split(": ", 1)[1]) from None
    if sec.uses_sasl:
        from .jaas import OAUTHBEARER_MODULE, PLAIN_MODULE, SCRAM_MODULE, JaasError, parse_jaas
        module_of = {"PLAIN": PLAIN_MODULE, "SCRAM-SHA-256": SCRAM_MODULE,
                     "SCRAM-SHA-512": SCRAM_MODULE, "OAUTHBEARER": OAUTHBEARER_MODULE}
        key = keys.key_of("sasl.enabled.mechanisms")
        mechs = _list(keys.get("sasl.enabled.mechanisms"))
        if not mechs:
            raise SecurityConfigError(key, f"listener {listener} ({protocol}) enables no SASL mechanism")
        for mech in mechs:
            if mech == "GSSAPI":
                raise SecurityConfigError(key, "GSSAPI (Kerberos) is not supported by kbroker; enable "
                                          "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER "
                                          "(Kafka's default for this key is GSSAPI)")
            if mech not in MECHANISMS:
                raise SecurityConfigError(key, f"SASL mechanism {mech} is not supported "
                                          f"({', '.join(MECHANISMS)})")
            jaas_key, text = keys.jaas(mech)
            if not text:
                raise SecurityConfigError(jaas_key, f"no JAAS login module configured for {mech} "
                                          f"on listener {listener}")
            try:
                modules = parse_jaas(text)
            except JaasError as e:
                raise SecurityConfigError(jaas_key, str(e)) from None
            if len(modules) != 1 or modules[0].name != module_of[mech]:
                raise SecurityConfigError(jaas_key, f"{mech} needs exactly one {module_of[mech]}, "
                                          f"found {', '.join(m.name for m in modules)}")
            if mech == "OAUTHBEARER":
                handler = keys.mechanism_get(mech, "sasl.server.callback.handler.class")
                if handler:
                    raise SecurityConfigError("sasl.server.callback.handler.class",
                                              f"{handler}: only the unsecured validator is supported")
            sec.mechanisms[mech] = modules[0]
    return sec


def build_all(config) -> dict[str, ListenerSecurity]:
    """Every bound client listener's security (``config.listeners``)."""
    return {l.name: build(config.values, l.name, l.security_protocol) for l in config.listeners}

"""Where a client command connects and how: ``-b``, ``--command-config FILE``, ``-X``,
``--profile NAME``, as Kafka's tools and rpk take them.

* ``--command-config FILE`` is a Kafka client properties file, the one every Kafka tool takes
  (``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config``, ``ssl.truststore.*``,
  ``ssl.keystore.*``, ``ssl.endpoint.identification.algorithm``, ``client.id`` ...).
* ``-X KEY=VALUE`` sets one such Kafka key (repeatable; wins over the file).
* ``--profile NAME`` reads ``[profiles.NAME]`` of the profiles file
  (``$KBROKER_PROFILES``, else ``$XDG_CONFIG_HOME/kbroker/profiles.toml``, else
  ``~/.config/kbroker/profiles.toml``)::

      [profiles.secure]
      bootstrap-servers = "broker1:9093,broker2:9093"
      command-config = "/etc/kafka/admin.properties"   # optional, a Kafka properties file
      [profiles.secure.properties]                       # optional, Kafka keys
      "security.protocol" = "SASL_SSL"

  ``$KBROKER_PROFILE`` names the default profile. Explicit flags win over the profile.

The result is one dict of Kafka keys (``kafka_properties``); ``librdkafka_config`` maps it to
confluent-kafka's (librdkafka's) names: JAAS options become ``sasl.username``/``sasl.password``,
PKCS12 and PEM truststores become ``ssl.ca.pem``, a PKCS12 keystore is passed as is, ``""`` for
``ssl.endpoint.identification.algorithm`` is librdkafka's ``none``. Java-only keys (serializers,
callback classes, ...) are left out with a warning naming them. Errors here are ``UsageError``
(exit 2), raised before any connection.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


class UsageError(Exception):
    """Bad options or an unreadable configuration: one line on stderr, exit code 2."""


def parse_properties_text(text: str) -> dict[str, str]:
    """A Java properties file's ``key=value`` / ``key: value`` lines; ``#``/``!`` comments and
    trailing-backslash continuations (the forms Kafka's client property files use)."""
    out: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip() if pending else raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut < 0:
            out[line] = ""
            continue
        out[line[:cut].strip()] = line[cut + 1:].strip()
    if pending:
        out.setdefault(pending.strip(), "")
    return out


def read_properties_file(path: str) -> dict[str, str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot read --command-config {path}: {e.strerror or e}") from None
    return parse_properties_text(text)


def profiles_path() -> Path:
    explicit = os.environ.get("KBROKER_PROFILES")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "kbroker" / "profiles.toml"


def load_profile(name: str) -> dict:
    """``[profiles.NAME]`` of the profiles file."""
    import tomllib
    path = profiles_path()
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise UsageError(f"profile {name!r}: no profiles file at {path}") from None
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise UsageError(f"cannot read the profiles file {path}: {e}") from None
    profiles = data.get("profiles", {})
    if name not in profiles:
        known = ", ".join(sorted(profiles)) or "none"
        raise UsageError(f"profile {name!r} is not in {path} (profiles there: {known})")
    return profiles[name]


def key_value(item: str, flag: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"{flag} expects KEY=VALUE, got {item!r}")
    return key.strip(), value.strip()


def resolve(args) -> tuple[str, dict[str, str]]:
    """(bootstrap servers, Kafka client properties) from the parsed options."""
    props: dict[str, str] = {}
    bootstrap = None
    name = getattr(args, "profile", None) or os.environ.get("KBROKER_PROFILE")
    if name:
        prof = load_profile(name)
        bootstrap = prof.get("bootstrap-servers") or prof.get("bootstrap_servers")
        if prof.get("command-config"):
            props.update(read_properties_file(os.path.expanduser(prof["command-config"])))
        props.update({str(k): str(v) for k, v in (prof.get("properties") or {}).items()})
    if getattr(args, "command_config", None):
        props.update(read_properties_file(args.command_config))
    for item in getattr(args, "property", None) or ():
        k, v = key_value(item, "-X")
        props[k] = v
    if getattr(args, "bootstrap_server", None):
        bootstrap = args.bootstrap_server
    bootstrap = (bootstrap or props.get("bootstrap.servers")
                 or os.environ.get("KBROKER_BOOTSTRAP_SERVERS") or DEFAULT_BOOTSTRAP)
    props.pop("bootstrap.servers", None)
    return bootstrap, props


# Kafka client keys librdkafka takes under the same name and meaning.
_SAME = {"security.protocol", "sasl.mechanism", "client.id", "ssl.keystore.location",
         "ssl.keystore.password", "ssl.key.password", "ssl.cipher.suites", "client.rack",
         "socket.connection.setup.timeout.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
         "retry.backoff.ms", "metadata.max.age.ms", "connections.max.idle.ms",
         "request.timeout.ms", "message.max.bytes", "enable.idempotence", "linger.ms",
         "batch.size", "compression.type", "acks", "isolation.level", "auto.offset.reset",
         "session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms",
         "fetch.min.bytes", "fetch.max.bytes", "max.partition.fetch.bytes", "group.protocol",
         "group.instance.id", "client.dns.lookup", "sasl.oauthbearer.token.endpoint.url",
         "sasl.oauthbearer.client.id", "sasl.oauthbearer.client.secret", "sasl.oauthbearer.scope"}
# Kafka keys that only a Java client understands; librdkafka has no equivalent.
_JAVA_ONLY_PREFIXES = ("key.", "value.", "interceptor.", "sasl.login.", "sasl.client.callback",
                       "ssl.engine.", "ssl.trustmanager.", "ssl.keymanager.", "ssl.secure.random",
                       "ssl.provider", "metric.", "metrics.", "default.api.timeout", "partitioner.",
                       "ssl.protocol", "ssl.enabled.protocols", "sasl.kerberos.", "auto.include.jmx")


def _pem_of_truststore(props: dict[str, str]) -> str | None:
    """The CA certificates of ``ssl.truststore.*`` (PEM file, inline PEM or PKCS12) as PEM."""
    inline = props.get("ssl.truststore.certificates")
    if inline:
        return inline
    location = props.get("ssl.truststore.location")
    if not location:
        return None
    try:
        data = Path(location).read_bytes()
    except OSError as e:
        raise UsageError(f"ssl.truststore.location {location}: {e.strerror or e}") from None
    kind = (props.get("ssl.truststore.type") or "").upper()
    if kind == "PEM" or (not kind and b"-----BEGIN" in data):
        return data.decode("ascii", errors="replace")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12
    password = props.get("ssl.truststore.password")
    try:
        _key, cert, extra = pkcs12.load_key_and_certificates(
            data, password.encode() if password else None)
    except ValueError:
        raise UsageError(f"ssl.truststore.location {location}: not a PKCS12 store this password "
                         "opens (a JKS truststore must be converted: keytool -importkeystore "
                         "-deststoretype PKCS12)") from None
    certs = ([cert] if cert is not None else []) + list(extra or ())
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


def _jaas_credentials(props: dict[str, str]) -> dict[str, str]:
    text = props.get("sasl.jaas.config")
    if not text:
        return {}
    from kbroker.security.jaas import JaasError, parse_jaas
    try:
        modules = parse_jaas(text)
    except JaasError as e:
        raise UsageError(f"sasl.jaas.config: {e}") from None
    out = {}
    for m in modules[:1]:
        if "username" in m.options:
            out["sasl.username"] = m.options["username"]
        if "password" in m.options:
            out["sasl.password"] = m.options["password"]
    return out


def librdkafka_config(props: dict[str, str], warn=None) -> dict[str, str]:
    """confluent-kafka's settings for the Kafka client properties ``props``."""
    warn = warn or (lambda text: print(f"kbroker: warning: {text}", file=sys.stderr))
    out: dict[str, str] = {}
    skipped = []
    for key, value in props.items():
        if key in _SAME:
            out[key] = value
        elif key == "ssl.endpoint.identification.algorithm":
            out[key] = value if value else "none"
        elif key in ("sasl.jaas.config", "ssl.truststore.location", "ssl.truststore.password",
                     "ssl.truststore.type", "ssl.truststore.certificates", "ssl.keystore.type"):
            continue   # mapped below
        elif key in ("ssl.keystore.key", "ssl.keystore.certificate.chain"):
            out["ssl.key.pem" if key.endswith(".key") else "ssl.certificate.pem"] = value
        elif key in ("sasl.username", "sasl.password") or key.startswith(("ssl.ca.", "sasl.oauthbearer.")):
            out[key] = value   # librdkafka's own names, accepted as given
        elif key.startswith(_JAVA_ONLY_PREFIXES) or key.endswith(".class"):
            skipped.append(key)
        else:
            out[key] = value   # librdkafka refuses what it does not know, naming the key
    if skipped:
        warn(f"ignored Java-only client keys: {', '.join(sorted(skipped))}")
    out.update({k: v for k, v in _jaas_credentials(props).items() if k not in out})
    ca = _pem_of_truststore(props)
    if ca:
        out["ssl.ca.pem"] = ca
    if (props.get("ssl.keystore.type") or "").upper() == "PEM" and props.get("ssl.keystore.location"):
        # a PEM keystore file holds key and chain: librdkafka reads them as separate settings
        path = out.pop("ssl.keystore.location")
        out.pop("ssl.keystore.password", None)
        out["ssl.certificate.location"] = path
        out["ssl.key.location"] = path
    return out

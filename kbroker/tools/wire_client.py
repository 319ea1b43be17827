"""The few calls confluent-kafka (librdkafka 2.16) does not make, over the project's own codec
(``kbroker.wire``) on a plain blocking socket: ListGroups v5 (librdkafka lists classic and
consumer groups only and reads KIP-848's Assigning/Reconciling states as Unknown),
ConsumerGroupDescribe, ShareGroupDescribe and StreamsGroupDescribe (KIP-848, KIP-932,
KIP-1071), Metadata's offline replicas, DescribeTopicPartitions' eligible leader replicas
(KIP-966) and DescribeQuorum (KIP-595/853).

One ``WireSession`` per command: it speaks to the bootstrap broker, then to other nodes by
id (addresses from Metadata), each connection opened on first use with the command's own
Kafka client properties: TLS (``kbroker.security.tls.client_context``, Kafka's ``ssl.*``
keys) and SASL PLAIN / SCRAM-SHA-256/512 (SaslHandshake v1 + SaslAuthenticate v2,
``kbroker.security.scram``). Versions are the highest both sides know (ApiVersions). Every
socket operation has the command's ``--timeout``; failures are ``CommandError`` sentences.
"""
from __future__ import annotations

import os
import socket

from kbroker.tools.errors import CommandError, broker_error_sentence, principal_of

API_VERSIONS, METADATA, FIND_COORDINATOR, LIST_GROUPS = 18, 3, 10, 16
DESCRIBE_TOPIC_PARTITIONS = 75
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36


class _Conn:
    def __init__(self, session: "WireSession", host: str, port: int):
        from kbroker.wire.protocol import FrameDecoder
        self.where = f"{host}:{port}"
        self.session = session
        try:
            sock = socket.create_connection((host, port), timeout=session.timeout)
        except OSError as e:
            raise CommandError(f"cannot connect to {self.where}: "
                               f"{(e.strerror or str(e)).lower()}") from None
        sock.settimeout(session.timeout)
        proto = (session.props.get("security.protocol") or "PLAINTEXT").upper()
        if proto in ("SSL", "SASL_SSL"):
            from kbroker.security.tls import TlsConfigError, client_context
            try:
                ctx = client_context(lambda k: session.props.get(k))
            except TlsConfigError as e:
                raise CommandError(f"TLS settings: {e}") from None
            try:
                sock = ctx.wrap_socket(sock, server_hostname=host)
            except (OSError, ValueError) as e:
                raise CommandError(f"TLS with {self.where} failed: {e}") from None
        self.sock = sock
        self.decoder = FrameDecoder(64 << 20)
        self.corr = 0
        self.versions: dict[int, tuple[int, int]] = {}
        self._negotiate()
        if proto.startswith("SASL"):
            self._sasl()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def raw_call(self, api_key: int, version: int, body):
        from kbroker.wire.protocol import decode_response, encode_request
        self.corr += 1
        try:
            self.sock.sendall(encode_request(api_key, version, self.corr, "kbroker-cli", body))
            frames: list = []
            while not frames:
                data = self.sock.recv(1 << 16)
                if not data:
                    raise CommandError(f"{self.where} closed the connection (request key {api_key})")
                frames = self.decoder.feed(data)
        except socket.timeout:
            raise CommandError(f"no answer from {self.where} within {self.session.timeout:g} s "
                               "(--timeout)") from None
        except OSError as e:
            raise CommandError(f"connection to {self.where} failed: {e.strerror or e}") from None
        _corr, resp = decode_response(frames[0], api_key, version)
        return resp

    def _negotiate(self) -> None:
        from kbroker.wire import messages
        resp = self.raw_call(API_VERSIONS, 3, messages.ApiVersionsRequest(
            client_software_name="kbroker-cli", client_software_version="1"))
        if resp.error_code == 35:   # an older broker: it answered with its own range, at v0
            resp = self.raw_call(API_VERSIONS, 0, messages.ApiVersionsRequest())
        for k in resp.api_keys or ():
            self.versions[k.api_key] = (k.min_version, k.max_version)

    def version(self, api_key: int, name: str) -> int:
        from kbroker.wire import messages
        ours = messages.request_class(api_key)._message.valid
        theirs = self.versions.get(api_key)
        if theirs is None:
            raise CommandError(f"{self.where} does not serve {name} (API key {api_key})")
        best = [v for v in range(theirs[0], theirs[1] + 1) if v in ours]
        if not best:
            raise CommandError(f"{self.where} serves {name} at versions {theirs[0]}-{theirs[1]}, "
                               "none of which kbroker knows")
        return max(best)

    def call(self, api_key: int, name: str, body):
        return self.raw_call(api_key, self.version(api_key, name), body)

    def _sasl(self) -> None:
        from kbroker.wire import messages
        props = self.session.props
        mech = (props.get("sasl.mechanism") or "GSSAPI").upper()
        user, password = _credentials(props)
        who = principal_of(props)
        if mech not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            raise CommandError(f"sasl.mechanism {mech}: kbroker's own calls speak PLAIN and SCRAM")
        hs = self.raw_call(SASL_HANDSHAKE, 1, messages.SaslHandshakeRequest(mechanism=mech))
        if hs.error_code:
            raise CommandError(f"{self.where} does not take SASL {mech} "
                               f"(it offers {', '.join(hs.mechanisms or []) or 'none'})")

        def token(data: bytes) -> bytes:
            r = self.raw_call(SASL_AUTHENTICATE, 2, messages.SaslAuthenticateRequest(auth_bytes=data))
            if r.error_code:
                raise CommandError(f"{self.where} refused the authentication of {who} ({mech}): "
                                   f"{r.error_message or 'authentication failed'}")
            return bytes(r.auth_bytes or b"")

        if mech == "PLAIN":
            token(f"\0{user}\0{password}".encode())
            return
        from kbroker.security.scram import ScramClient, ScramError
        client = ScramClient(mech, user, password, nonce=os.urandom(18).hex())
        try:
            client.verify(token(client.final(token(client.first()))))
        except ScramError as e:
            raise CommandError(f"SCRAM with {self.where} failed: {e}") from None


def _credentials(props: dict) -> tuple[str, str]:
    if props.get("sasl.username") is not None:
        return props["sasl.username"], props.get("sasl.password", "")
    text = props.get("sasl.jaas.config") or ""
    from kbroker.security.jaas import JaasError, parse_jaas
    try:
        modules = parse_jaas(text) if text else []
    except JaasError as e:
        raise CommandError(f"sasl.jaas.config: {e}") from None
    opts = modules[0].options if modules else {}
    return opts.get("username", ""), opts.get("password", "")


class WireSession:
    """Connections to the cluster's nodes for one command (see the module docstring)."""

    def __init__(self, bootstrap: str, props: dict, timeout: float):
        self.bootstrap, self.props, self.timeout = bootstrap, props, timeout
        self._conns: dict = {}
        self._brokers: dict[int, tuple[str, int]] | None = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for c in self._conns.values():
            c.close()

    def any(self) -> _Conn:
        if "bootstrap" in self._conns:
            return self._conns["bootstrap"]
        last = None
        for addr in self.bootstrap.split(","):
            host, _, port = addr.strip().rpartition(":")
            try:
                conn = _Conn(self, host.strip("[]") or "127.0.0.1", int(port))
            except CommandError as e:
                last = e
                continue
            except ValueError:
                raise CommandError(f"not a HOST:PORT address: {addr!r}") from None
            self._conns["bootstrap"] = conn
            return conn
        raise last or CommandError(f"no bootstrap address in {self.bootstrap!r}")

    def node(self, node_id: int) -> _Conn:
        if node_id not in self._conns:
            brokers = self.brokers()
            if node_id not in brokers:
                raise CommandError(f"node {node_id} is not in the cluster's metadata")
            host, port = brokers[node_id]
            self._conns[node_id] = _Conn(self, host, port)
        return self._conns[node_id]

    def metadata(self, topics: list[str] | None = None):
        from kbroker.wire import messages
        req = messages.MetadataRequest(
            topics=None if topics is None else [messages.MetadataRequest.MetadataRequestTopic(name=t)
                                                for t in topics],
            allow_auto_topic_creation=False)
        resp = self.any().call(METADATA, "Metadata", req)
        self._brokers = {b.node_id: (b.host, b.port) for b in resp.brokers}
        return resp

    def partition_elrs(self, topics: list[str]) -> dict[tuple[str, int], tuple[list, list]] | None:
        """(eligible leader replicas, last known ELR) of each partition of ``topics``
        (DescribeTopicPartitions, KIP-966; paged by its cursor as kafka-topics does); None
        when the broker does not serve it (then kafka-topics prints ``N/A``)."""
        from kbroker.wire import messages
        conn = self.any()
        if DESCRIBE_TOPIC_PARTITIONS not in conn.versions or not topics:
            return None
        R = messages.DescribeTopicPartitionsRequest
        out: dict = {}
        cursor = None
        for _ in range(10_000):                 # bounded: each page moves the cursor on
            resp = conn.call(DESCRIBE_TOPIC_PARTITIONS, "DescribeTopicPartitions", R(
                topics=[R.TopicRequest(name=t) for t in topics], response_partition_limit=2000,
                cursor=cursor))
            for t in resp.topics:
                for p in t.partitions or ():
                    out[(t.name, p.partition_index)] = (list(p.eligible_leader_replicas or ()),
                                                        list(p.last_known_elr or ()))
            nxt = resp.next_cursor
            if nxt is None:
                break
            cursor = R.Cursor(topic_name=nxt.topic_name, partition_index=nxt.partition_index)
        return out

    def brokers(self) -> dict[int, tuple[str, int]]:
        if self._brokers is None:
            self.metadata([])
        return self._brokers

    def coordinator(self, group: str) -> _Conn:
        from kbroker.wire import messages
        conn = self.any()
        v = conn.version(FIND_COORDINATOR, "FindCoordinator")
        req = (messages.FindCoordinatorRequest(key_type=0, coordinator_keys=[group]) if v >= 4
               else messages.FindCoordinatorRequest(key=group, key_type=0))
        resp = conn.raw_call(FIND_COORDINATOR, v, req)
        c = resp.coordinators[0] if resp.coordinators else resp
        if c.error_code:
            raise CommandError(broker_error_sentence(c.error_code, f"find the coordinator of group {group}",
                                                     c.error_message))
        key = ("coordinator", c.node_id)
        if key not in self._conns:
            self._conns[key] = _Conn(self, c.host, c.port)
        return self._conns[key]

"""Security: listeners' protocols, TLS, SASL authentication and SCRAM credentials.

Layers, as HTTP servers split them (DESIGN §6):

- ``listeners`` — which security protocol each listener speaks
  (``listener.security.protocol.map``) and its settings with Kafka's per-listener
  overrides (``listener.name.<listener>.<key>``); settings kbroker does not implement stop
  the start with a message naming the key (no silent downgrade).
- ``tls`` — an ``ssl.SSLContext`` from Kafka's ``ssl.*`` keys (PEM and PKCS12 keystores and
  truststores, client auth, protocols, cipher suites) and the principal of a client
  certificate (``ssl.principal.mapping.rules``). The server runs TLS on the socket
  with the stdlib's ``SSLObject`` (``kbroker/server/tls.py``).
- ``jaas`` — the ``sasl.jaas.config`` syntax (login modules and their options).
- ``scram`` — RFC 5802/7677 as Kafka speaks it: credential derivation and the server's
  message exchange, without I/O.
- ``mechanisms`` — PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER (unsecured tokens) servers.
- ``authenticator`` — the per-connection SASL state machine without I/O: Kafka frames in,
  response frames / "close" / "authenticated as principal" out (fuzzed like the codecs).
- ``credentials`` — SCRAM credentials as the metadata image holds them.
"""

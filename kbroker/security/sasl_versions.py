"""The SaslHandshake (17) and SaslAuthenticate (36) versions kbroker serves, apart from the
SASL state machine (``authenticator.py``) so that registering their API modules loads no
SASL mechanism: a node without SASL listeners never imports them (start-up, issue 32)."""

HANDSHAKE_VERSIONS = (0, 1)
AUTHENTICATE_VERSIONS = (0, 2)

"""Where SASL servers find credentials: SCRAM credentials in the current metadata image
(``UserScramCredentialRecord``, replayed into ``MetadataImage.scram_credentials``), and
delegation tokens through ``token_lookup`` (set by the delegation-token code, KIP-48:
``token_lookup(mechanism, token_id) -> (owner user name, ScramCredential) | None``).
Read at every authentication, so a credential added or removed with
AlterUserScramCredentials applies to the next connection without a restart.
"""
from __future__ import annotations

from typing import Callable

from .scram import MECHANISMS, ScramCredential


class Credentials:
    def __init__(self, image: Callable[[], object]):
        self._image = image
        self.token_lookup: Callable[[str, str], tuple[str, ScramCredential] | None] | None = None

    def scram(self, mechanism: str, user: str) -> ScramCredential | None:
        image = self._image()
        if image is None:
            return None
        return image.scram_credentials.get(user, {}).get(MECHANISMS[mechanism][0])

    def token(self, mechanism: str, token_id: str) -> tuple[str, ScramCredential] | None:
        return self.token_lookup(mechanism, token_id) if self.token_lookup else None

"""Sealing of continuation tokens (search, unit and session-API cursors): opaque, tamper-evident and
deterministic, under a key of the cluster.

A token is AES-SIV (RFC 5297) of the cursor's bytes, in URL-safe base64 without padding. SIV is
authenticated encryption without a nonce: the same cursor sealed twice gives the same token, so the same
request on the same data answers the same bytes, while nobody without the key can read a cursor or
write one that opens (an edited, cut or foreign token fails its tag). The key is derived with HKDF-SHA256
from the cluster key the query node is given (`--cluster-key-file`), so every query node of a cluster
opens every other's cursors, and a cursor survives restarts. A query node without a cluster key seals
with a random key of its own process, and logs that its cursors open nowhere else and not after a
restart.
"""

from __future__ import annotations

import base64
import binascii
import logging
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESSIV
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

KEY_BYTES = 64  # AES-256-SIV: two 256-bit keys
_INFO = b"quarry/v1 cursor seal"  # HKDF's context: this key serves nothing else derived from the cluster key
_ASSOCIATED = b"quarry cursor"
_log = logging.getLogger(__name__)


class CursorSeal:
    """A seal under one key; `associated`: what the sealed bytes are, bound into the tag, so a token sealed
    for one purpose (a cursor) never opens as another (the web reader's sign-in cookie) under one key."""

    def __init__(self, key: bytes, associated: bytes = _ASSOCIATED) -> None:
        self._siv = AESSIV(key)
        self._associated = [associated]

    @classmethod
    def of_cluster_key(cls, cluster_key: str, info: bytes = _INFO, associated: bytes = _ASSOCIATED) -> CursorSeal:
        """The seal whose key HKDF derives from the cluster key under `info` (one info per purpose)."""
        derived = HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=info).derive(cluster_key.encode())
        return cls(derived, associated)

    def seal(self, payload: bytes) -> str:
        return base64.urlsafe_b64encode(self._siv.encrypt(payload, self._associated)).rstrip(b"=").decode()

    def open(self, token: str) -> bytes | None:
        """The payload a token sealed; None when this key did not seal it, or it was changed or cut."""
        try:
            sealed = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            return self._siv.decrypt(sealed, self._associated)
        except (InvalidTag, ValueError, binascii.Error):  # ValueError: not base64, or shorter than a tag
            return None


_current: CursorSeal | None = None


def configure(cluster_key: str | None) -> None:
    """Seal with the cluster's key; without one, with a random key of this process (logged)."""
    global _current
    if cluster_key is None:
        _log.warning(
            "no cluster key (--cluster-key-file): cursors are sealed with a key of this process, so another "
            "query node will not accept them, nor will this one after a restart"
        )
        _current = CursorSeal(secrets.token_bytes(KEY_BYTES))
    else:
        _current = CursorSeal.of_cluster_key(cluster_key)


def current() -> CursorSeal:
    """The seal of this process (configured by the query node at start; a random key until then)."""
    if _current is None:
        configure(None)
    assert _current is not None
    return _current

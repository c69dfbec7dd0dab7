"""The Ed25519 signing key that signs the cubes a user packs.

The private key is a PKCS#8 PEM file readable by its owner only (``0600``, in a folder
``0700``): by default ``$REMEM_HOME/keys/signing-ed25519.pem`` (``~/.remem/keys/``), or
where ``Config.signing_key`` says. It is created on first use and never leaves the file;
a cube carries only the public key and its fingerprint. Signing uses the ``cryptography``
package (``pip install 'remem[cube]'``), imported only here and only when needed.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, CubeVerifyError
from .format import b64url, unb64url

__all__ = ["SigningKey", "fingerprint", "load_or_create", "load_signing_key", "verify_signature"]


def _crypto() -> Any:
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:  # pragma: no cover - the extra is part of the test install
        raise ConfigError("signing and verifying cubes needs the cryptography package: "
                          "pip install 'remem[cube]'") from None
    return ed25519


def fingerprint(public_key: bytes) -> str:
    """The first 16 hex digits of the SHA-256 of a raw public key: how a signer is named."""
    return hashlib.sha256(public_key).hexdigest()[:16]


@dataclass(frozen=True)
class SigningKey:
    """A loaded private key, its raw public key and where it lives."""

    path: Path
    private: Any
    public_key: bytes
    created: bool = False

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_key)

    @property
    def public_b64(self) -> str:
        return b64url(self.public_key)

    def sign(self, data: bytes) -> str:
        """The base64url signature of ``data``."""
        return b64url(self.private.sign(data))


def _public(private: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return bytes(private.public_key().public_bytes(serialization.Encoding.Raw,
                                                   serialization.PublicFormat.Raw))


def load_signing_key(path: Path) -> SigningKey:
    """The key at ``path``; ConfigError when it is missing, unreadable, not Ed25519, or
    readable by others than its owner."""
    from cryptography.hazmat.primitives import serialization

    ed25519 = _crypto()
    if not path.is_file():
        raise ConfigError(f"no signing key at {path}; create one with `remem keys signing`")
    mode = stat.S_IMODE(path.stat().st_mode)
    if os.name == "posix" and mode & 0o077:
        raise ConfigError(f"the signing key {path} is readable by others (mode {mode:o}); "
                          f"run `chmod 600 {path}`")
    try:
        private = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{path} is not a PEM private key: {exc}") from None
    if not isinstance(private, ed25519.Ed25519PrivateKey):
        raise ConfigError(f"{path} is not an Ed25519 key")
    return SigningKey(path, private, _public(private))


def load_or_create(path: Path) -> SigningKey:
    """The key at ``path``, created (with its folder) if there is none yet."""
    from cryptography.hazmat.primitives import serialization

    ed25519 = _crypto()
    if path.exists():
        return load_signing_key(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    private = ed25519.Ed25519PrivateKey.generate()
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    # created 0600 from the start: never a moment when others could read it
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    return SigningKey(path, private, _public(private), created=True)


def verify_signature(public_b64: str, signature_b64: str, data: bytes) -> None:
    """CubeVerifyError unless ``signature_b64`` is the signature of ``data`` by the key."""
    from cryptography.exceptions import InvalidSignature

    ed25519 = _crypto()
    # base64 leaves spare bits in its last character: only the one spelling is accepted
    if b64url(unb64url(signature_b64)) != signature_b64 or b64url(unb64url(public_b64)) != public_b64:
        raise CubeVerifyError("the signature or the public key is not as it was written: the "
                              "cube was changed")
    try:
        key = ed25519.Ed25519PublicKey.from_public_bytes(unb64url(public_b64))
        key.verify(unb64url(signature_b64), data)
    except (InvalidSignature, ValueError):
        raise CubeVerifyError("the signature does not match the manifest: the cube was changed "
                              "after it was signed, or signed by another key") from None

"""Redaction before storage: secrets and personal data never reach the disk as they were.

Every text a door hands to :class:`~remem.Memory` (turns, agent events with their
metadata, remembered and updated memories, notes and reasons, the queries written to the
injection log) goes through one :class:`Redactor` first. Each kind of finding
(:data:`~remem.govern.detect.KINDS`) has its policy:

- ``mask``: replaced by ``[redacted:<kind>]``;
- ``hash``: replaced by ``[<kind>:sha256:<12 hex>]``, the same for the same value, so
  that two mentions of one address can still be told apart from two addresses (keyed
  with ``hash_key`` when given; unkeyed, a short value such as a phone number can be
  found again by trying every number);
- ``keep``: left as it is.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from ..config import RedactionConfig
from .detect import KINDS, find

__all__ = ["KINDS", "Redactor"]


class Redactor:
    """Applies a :class:`~remem.config.RedactionConfig` to texts and to JSON values."""

    def __init__(self, config: RedactionConfig | None = None) -> None:
        self.config = config or RedactionConfig()

    def policy(self, kind: str) -> str:
        """What is done with a value of ``kind``: mask, hash or keep."""
        return self.config.policy.get(kind, self.config.default)

    def _replacement(self, value: str, kind: str) -> str:
        if self.policy(kind) == "hash":
            key = (self.config.hash_key or "").encode()
            digest = (hmac.new(key, value.encode(), hashlib.sha256) if key
                      else hashlib.sha256(value.encode())).hexdigest()[:12]
            return f"[{kind}:sha256:{digest}]"
        return f"[redacted:{kind}]"

    def text(self, text: str) -> str:
        """``text`` with what the policy does not keep replaced."""
        if not self.config.enabled or not text:
            return text
        spans = [s for s in find(text, entropy_ratio=self.config.entropy_ratio)
                 if self.policy(s[2]) != "keep"]
        if not spans:
            return text
        out, last = [], 0
        for start, end, kind in spans:
            out.append(text[last:start])
            out.append(self._replacement(text[start:end], kind))
            last = end
        out.append(text[last:])
        return "".join(out)

    def maybe(self, text: str | None) -> str | None:
        """:meth:`text`, passing None through."""
        return None if text is None else self.text(text)

    def value(self, value: Any) -> Any:
        """A JSON value (metadata, an event) with every string in it redacted; a key that
        names a secret has its whole value masked, whatever it looks like."""
        if not self.config.enabled:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if (isinstance(item, str) and isinstance(key, str) and _names_secret(key)
                        and self.policy("credential") != "keep" and item.strip()):
                    out[key] = self._replacement(item, "credential")
                else:
                    out[key] = self.value(item)
            return out
        return value


def _names_secret(key: str) -> bool:
    """A key that holds a credential by its name (``password``, ``api_key``, ``token``)."""
    name = key.lower().replace("-", "_")
    return any(word in name for word in ("password", "passwd", "passphrase", "secret", "api_key",
                                         "apikey", "access_key", "private_key", "credential")) \
        or name in ("pass", "pwd", "pw", "token", "auth_token", "access_token", "refresh_token")

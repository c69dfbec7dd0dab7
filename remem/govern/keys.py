"""API keys of the REST service: shown once when created, kept only as a hash.

Needs only the store, not the ``server`` extra, so ``remem keys`` works everywhere; the
doors reach them through :attr:`remem.Memory.keys`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .._inputs import check_label, parse_scope
from ..errors import RememError, ValidationError
from ..model import new_id
from ..store.base import Store

__all__ = ["SCOPES", "ApiKey", "KeyStore", "NewKey", "UnknownKeyError", "parse_scopes"]

#: What a key may do: read memories, write them, administer the service (jobs, purge,
#: store-wide stats). ``admin`` includes the other two.
SCOPES = ("read", "write", "admin")

_PREFIX = "rmk_"
_TOUCH_EVERY_S = 60.0  # last_used_at is a hint; writing it on every request would cost a lock


class UnknownKeyError(RememError, LookupError):
    """No API key has this id."""

    def __init__(self, key_id: str) -> None:
        self.key_id = key_id
        super().__init__(f"no API key with id {key_id!r}; see `remem keys list` for the ids")


class ApiKey(BaseModel):
    """An API key as stored: who it acts for and what it may do, never the key itself."""

    model_config = ConfigDict(frozen=True)

    id: str
    org_id: str = Field(description="the org every request with this key is confined to")
    user_id: str | None = Field(None, description="if set, the one user the key acts for")
    scopes: tuple[str, ...]
    name: str | None = None
    created_at: datetime
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None

    def allows(self, scope: str) -> bool:
        """True if the key has ``scope`` (``admin`` has every scope)."""
        return scope in self.scopes or "admin" in self.scopes


class NewKey(BaseModel):
    """A key just created: the secret ``key`` (shown this once) and what was stored."""

    model_config = ConfigDict(frozen=True)

    key: str = Field(repr=False)
    info: ApiKey


def parse_scopes(value: str | Iterable[str]) -> tuple[str, ...]:
    """``("read", "write")`` from ``"read,write"`` or a list; unknown or no scopes are refused."""
    items = value.split(",") if isinstance(value, str) else list(value)
    scopes = tuple(dict.fromkeys(s.strip().lower() for s in items if s.strip()))
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown or not scopes:
        raise ValidationError("scopes", f"{','.join(unknown) or 'nothing'} given; use one or more "
                              f"of {', '.join(SCOPES)}, comma-separated (e.g. read,write)")
    return scopes


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _key(row: tuple[Any, ...]) -> ApiKey:
    kid, _, org, user, scopes, name, created, revoked, used = row
    # times are epoch seconds, read by pydantic as UTC datetimes
    return ApiKey.model_validate({
        "id": kid, "org_id": org, "user_id": user, "scopes": str(scopes).split(","), "name": name,
        "created_at": created, "revoked_at": revoked, "last_used_at": used,
    })


class KeyStore:
    """The API keys kept in a store's ``api_keys`` table."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._touched: dict[str, float] = {}
        self._seen_any = False
        self._lock = threading.Lock()

    def create(self, org_id: str, *, user_id: str | None = None,
               scopes: str | Iterable[str] = ("read", "write"), name: str | None = None) -> NewKey:
        """A new key for ``org_id`` (and only ``user_id`` if given) with these scopes."""
        if not org_id:
            raise ValidationError("org_id", "is missing; every key belongs to one org")
        scope = parse_scope(org_id=org_id, user_id=user_id)
        check_label(name, "name")
        allowed = parse_scopes(scopes)
        key = _PREFIX + secrets.token_urlsafe(32)
        info = ApiKey(id=new_id("k_"), org_id=scope.org_id, user_id=scope.user_id, scopes=allowed,
                      name=name, created_at=datetime.now(timezone.utc))
        self.store.add_key((info.id, _hash(key), info.org_id, info.user_id, ",".join(allowed), name,
                            info.created_at.timestamp(), None, None))
        return NewKey(key=key, info=info)

    def list(self) -> list[ApiKey]:
        """Every key, revoked ones too, oldest first."""
        return [_key(r) for r in self.store.key_rows()]

    def get(self, key_id: str) -> ApiKey:
        """The key with this id."""
        rows = self.store.key_rows(key_id=key_id)
        if not rows:
            raise UnknownKeyError(key_id)
        return _key(rows[0])

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key for good; requests with it are refused from now on. Idempotent."""
        if not self.store.revoke_key(key_id, time.time()):
            raise UnknownKeyError(key_id)
        return self.get(key_id)

    def any(self) -> bool:
        """True once any key was ever created: from then on every request needs a key.
        Keys are revoked, never deleted, so a True is kept rather than asked again."""
        if not self._seen_any:
            self._seen_any = self.store.key_counts()[0] > 0
        return self._seen_any

    def active(self) -> int:
        """How many keys are not revoked."""
        return self.store.key_counts()[1]

    def verify(self, key: str) -> ApiKey | None:
        """The stored key that ``key`` is (revoked or not), or None if it is no key of ours."""
        digest = _hash(key)
        rows = self.store.key_rows(digest=digest)
        row = rows[0] if rows else None
        if row is None or not hmac.compare_digest(str(row[1]), digest):
            return None
        found = _key(row)
        if found.revoked_at is None:
            self._touch(found.id)
        return found

    def _touch(self, key_id: str) -> None:
        now = time.time()
        with self._lock:
            if now - self._touched.get(key_id, 0.0) < _TOUCH_EVERY_S:
                return
            self._touched[key_id] = now
        self.store.touch_key(key_id, now)

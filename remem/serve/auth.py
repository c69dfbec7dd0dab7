"""Who a request acts for: its API key's org, user and scopes, or the single user of a
loopback server that has no keys."""


from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from .errors import ApiError
from .keys import SCOPES, KeyStore

__all__ = ["Authenticator", "Principal"]

_BEARER = HTTPBearer(auto_error=False, description="an API key from `remem keys create`")
_Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


@dataclass(frozen=True)
class Principal:
    """What a request may touch. ``org_id`` None means single-user mode: no key, any org."""

    org_id: str | None
    user_id: str | None
    scopes: frozenset[str]
    key_id: str | None = None

    def allows(self, scope: str) -> bool:
        """True if the request may do what ``scope`` covers."""
        return scope in self.scopes or "admin" in self.scopes

    def confine(self, org_id: str | None, user_id: str | None) -> tuple[str | None, str | None]:
        """The org and user a request may act for, from those it asked for.

        A key's org and user replace what the request leaves out; asking for another org,
        or another user than the key's, is refused (403).
        """
        if self.org_id is None:
            return org_id, user_id
        if org_id is not None and org_id != self.org_id:
            raise ApiError(403, "wrong_org",
                           f"this API key belongs to org {self.org_id!r} and cannot act for org "
                           f"{org_id!r}; leave org_id out (the key's org is used) or use a key of "
                           "that org")
        if self.user_id is not None and user_id is not None and user_id != self.user_id:
            raise ApiError(403, "wrong_user",
                           f"this API key acts only for user {self.user_id!r}, not {user_id!r}; "
                           "leave user_id out or use a key of that user or of the whole org")
        return self.org_id, self.user_id or user_id


_SINGLE_USER = Principal(org_id=None, user_id=None, scopes=frozenset(SCOPES))


class Authenticator:
    """Checks the ``Authorization: Bearer KEY`` of requests against the store's keys.

    While no key was ever created every request is the single user's; once one exists,
    every request needs a valid key (the server refuses to listen on a non-loopback
    address without one, see :func:`remem.serve.run.check_bind`).
    """

    def __init__(self, keys: KeyStore) -> None:
        self.keys = keys

    def principal(self, credentials: HTTPAuthorizationCredentials | None,
                  header: str | None) -> Principal:
        """The principal of a request with this Authorization header, or a 401."""
        if not self.keys.any():
            return _SINGLE_USER
        if credentials is None:
            if header:
                raise ApiError(401, "invalid_key", "the Authorization header must be "
                               "`Bearer KEY`, with a key from `remem keys create`", headers=_CHALLENGE)
            raise ApiError(401, "missing_key", "this server needs an API key: send "
                           "`Authorization: Bearer KEY` (create a key with `remem keys create "
                           "--org ORG`)", headers=_CHALLENGE)
        found = self.keys.verify(credentials.credentials.strip())
        if found is None:
            raise ApiError(401, "invalid_key", "this API key is not valid: check that it was copied "
                           "whole, or create a new one with `remem keys create`", headers=_CHALLENGE)
        if found.revoked_at is not None:
            raise ApiError(401, "revoked_key", f"this API key ({found.id}) was revoked on "
                           f"{found.revoked_at:%Y-%m-%d %H:%M} UTC; create a new one with "
                           "`remem keys create`", headers=_CHALLENGE)
        return Principal(org_id=found.org_id, user_id=found.user_id, scopes=frozenset(found.scopes),
                         key_id=found.id)

    def require(self, *scopes: str) -> Callable[..., Principal]:
        """A FastAPI dependency: the request's principal, if it has all of ``scopes`` (else 403)."""

        def dependency(request: Request, credentials: _Credentials) -> Principal:
            who = self.principal(credentials, request.headers.get("authorization"))
            missing = [s for s in scopes if not who.allows(s)]
            if missing:
                raise ApiError(403, "insufficient_scope",
                               f"this API key has the scopes {','.join(sorted(who.scopes))}; "
                               f"{request.method} {request.url.path} needs {','.join(missing)}. "
                               f"Create a key with `remem keys create --org {who.org_id} --scopes "
                               f"{','.join(sorted({*who.scopes, *missing}))}`")
            request.state.principal = who  # for the audit log
            return who

        return dependency

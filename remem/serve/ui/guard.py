"""Who is using the console, and a check that a form was sent by the console itself.

In single-user mode (a loopback server with no API key) the console is the single
user's. Otherwise the login page takes an API key, kept in an HttpOnly, SameSite=Strict
cookie, and every page acts as that key (its org, its user, its scopes). Every form
carries a CSRF token that must match a cookie only this site can set (double submit);
the host and origin checks of :mod:`remem.serve.hosts` run before any of this.
"""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import parse_qs

from fastapi import Request
from fastapi.security import HTTPAuthorizationCredentials

from ..auth import Authenticator, Principal
from ..errors import ApiError

__all__ = ["CSRF_COOKIE", "KEY_COOKIE", "Forbidden", "LoginNeeded", "StaleForm", "console_principal",
           "csrf_token", "read_form"]

KEY_COOKIE = "remem_key"
CSRF_COOKIE = "remem_csrf"
_MAX_FORM = 200_000


class LoginNeeded(Exception):
    """The console needs an API key (shown as the login page)."""


class StaleForm(Exception):
    """A form without the console's CSRF token: stale, or sent by another site."""


class Forbidden(Exception):
    """The key lacks the scope an action needs."""


def console_principal(request: Request, auth: Authenticator) -> Principal:
    """The principal of a console request: the single user, or the key of the login cookie."""
    if not auth.keys.any():
        return auth.principal(None, None)
    key = request.cookies.get(KEY_COOKIE)
    if not key:
        raise LoginNeeded()
    try:
        return auth.principal(HTTPAuthorizationCredentials(scheme="Bearer", credentials=key),
                              f"Bearer {key}")
    except ApiError:
        raise LoginNeeded() from None


def require(who: Principal, scope: str) -> None:
    """Refuse (:class:`Forbidden`) unless ``who`` has ``scope``."""
    if not who.allows(scope):
        raise Forbidden(scope)


def csrf_token(request: Request) -> tuple[str, bool]:
    """The CSRF token of this browser, and whether it is new (to be set as a cookie)."""
    token = request.cookies.get(CSRF_COOKIE)
    if token and 20 <= len(token) <= 100:
        return token, False
    return secrets.token_urlsafe(24), True


async def read_form(request: Request) -> dict[str, str]:
    """The fields of a posted form (urlencoded), once its CSRF token is checked."""
    body = await request.body()
    if len(body) > _MAX_FORM:
        raise StaleForm()
    fields = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace"),
                                            keep_blank_values=True).items()}
    cookie = request.cookies.get(CSRF_COOKIE) or ""
    sent = fields.pop("csrf", "")
    if not cookie or not hmac.compare_digest(cookie.encode(), sent.encode()):
        raise StaleForm()
    return fields

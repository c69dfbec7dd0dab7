"""A guard against DNS rebinding and cross-site requests: the Host header must name this
server, and a browser's Origin must be one of its names.

A web page the user visits can make the browser send requests to 127.0.0.1 under a name
the page's author controls; without this check such a page could read and write every
memory of a single-user loopback server. Requests that fail get 403 in the error shape.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import error_response

__all__ = ["LOOPBACK_NAMES", "HostGuard", "allowed_hosts"]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def allowed_hosts(listen_host: str, extra: list[str]) -> set[str] | None:
    """The host names requests may use, or None for any (a server listening beyond
    loopback without a list: keys guard it)."""
    names = {_hostname(h) for h in extra if h.strip()}
    if listen_host.strip("[]") in ("0.0.0.0", "::") and not names:
        return None
    return (names | set(LOOPBACK_NAMES) | {listen_host.lower().strip("[]")}) - {""}


_BRACKETED = re.compile(r"^\[([0-9a-f:.]+)\](?::\d+)?$")


def _hostname(value: str) -> str:
    """The host of a Host header or a configured name, without its port; "" if malformed."""
    value = value.strip().lower()
    if value.startswith("["):  # [::1]:8420
        m = _BRACKETED.match(value)
        return m.group(1) if m else ""
    if value.count(":") == 1:
        host, _, port = value.partition(":")
        return host if port.isdigit() else ""
    return value


class HostGuard:
    """ASGI middleware: 403 unless the Host (and any Origin) names an allowed host."""

    def __init__(self, app: ASGIApp, hosts: set[str] | None) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.hosts is None:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        host = _hostname(headers.get(b"host", b"").decode("latin-1"))
        origin = headers.get(b"origin", b"").decode("latin-1")
        try:
            origin_host = urlsplit(origin).hostname if origin and origin != "null" else None
        except ValueError:  # "http://[::1": no host we know
            origin_host = None
        if host not in self.hosts or (origin and (origin_host or "") not in self.hosts):
            what = f"Origin {origin!r}" if host in self.hosts else f"Host {host!r}"
            await error_response(
                403, "host_not_allowed",
                f"{what} is not a name of this server; requests must use one of "
                f"{', '.join(sorted(self.hosts))} (add names with REMEM_SERVER_ALLOWED_HOSTS)",
            )(scope, receive, send)
            return
        await self.app(scope, receive, send)

"""Running the service: the bind check and uvicorn."""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket
from collections.abc import Callable
from typing import Any

from ..config import ServerConfig
from ..errors import ConfigError
from ..memory import Memory
from .keys import KeyStore

__all__ = ["check_bind", "is_loopback", "listen", "serve"]

log = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    """True if ``host`` is reachable from this machine only (127.0.0.0/8, ::1, localhost)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a host name may resolve to anything: treat it as public


def check_bind(host: str, keys: KeyStore) -> None:
    """Refuse to listen beyond this machine while no API key is active."""
    if is_loopback(host) or keys.active():
        return
    raise ConfigError(
        f"refusing to listen on {host} with no API key: anyone who can reach it could read and "
        "change every memory. Create a key first with `remem keys create --org ORG` (clients "
        "then send `Authorization: Bearer KEY`), or listen on 127.0.0.1 only (--host 127.0.0.1)"
    )


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening; ConfigError, in one sentence, when
    the port is taken or the address cannot be used."""
    name = host.strip("[]")
    family = socket.AF_INET6 if ":" in name else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((name, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} on {host} is already in use (another remem serve, "
                              "or another program); stop it, or pass another --port") from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def serve(memory: Memory, config: ServerConfig, *, log_level: str = "info",
          ready: Callable[[], object] | None = None, upstream: Any = None) -> None:
    """Serve ``memory`` over HTTP until interrupted (Ctrl-C); ``ready`` is called once
    the port is open, before the first request is answered; ``upstream`` is an httpx
    transport answering the chat proxy in this process (a local model)."""
    import uvicorn

    from .app import create_app

    check_bind(config.host, memory.keys)
    sock = listen(config.host, config.port)
    try:
        app = create_app(memory, config=config, upstream=upstream)
        server = uvicorn.Server(uvicorn.Config(
            app, host=config.host, port=config.port, log_level=log_level, ws="none",
            timeout_graceful_shutdown=5, server_header=False))
        if ready is not None:
            ready()
        server.run(sockets=[sock])
    finally:
        sock.close()

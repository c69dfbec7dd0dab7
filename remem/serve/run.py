"""Running the service: the bind check and uvicorn."""

from __future__ import annotations

import ipaddress
import logging

from ..config import ServerConfig
from ..errors import ConfigError
from ..memory import Memory
from .keys import KeyStore

__all__ = ["check_bind", "is_loopback", "serve"]

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


def serve(memory: Memory, config: ServerConfig, *, log_level: str = "info") -> None:
    """Serve ``memory`` over HTTP until interrupted (Ctrl-C)."""
    import uvicorn

    from .app import create_app

    check_bind(config.host, KeyStore(memory.store))
    app = create_app(memory, config=config)
    server = uvicorn.Server(uvicorn.Config(
        app, host=config.host, port=config.port, log_level=log_level, ws="none",
        timeout_graceful_shutdown=5, server_header=False))
    server.run()

"""``create_app``: the FastAPI application of a ``Memory``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import Depends, FastAPI

from .. import __version__
from ..config import ServerConfig
from ..memory import Memory
from .agent_routes import agent_routes
from .audit import AuditTrail, audit_routes
from .auth import Authenticator
from .do_routes import do_routes
from .errors import install_error_handlers
from .events import EventHub, event_routes
from .hosts import HostGuard, allowed_hosts
from .limits import BodyLimit
from .log_routes import log_routes
from .proxy import ChatProxy, proxy_routes
from .query import strict_query
from .routes import memory_routes, service_routes
from .share_routes import share_routes
from .ui import install_console

__all__ = ["create_app"]

_DESCRIPTION = """\
The memory of AI agents over HTTP: every `remem.Memory` operation, a stream of what is
added, and an OpenAI-compatible chat proxy that gives a model the memory of its users.

Send `Authorization: Bearer KEY` with a key from `remem keys create` (a server on a
loopback address with no key created runs in single-user mode, without keys). Each
request is confined to its key's org, and to its user if the key has one. Errors are
`{"error": {"code": ..., "message": ...}}`.
"""


def create_app(memory: Memory, *, config: ServerConfig | None = None,
               upstream: httpx.AsyncBaseTransport | None = None) -> FastAPI:
    """The REST service of ``memory`` (an ASGI app). ``config`` defaults to
    ``memory.config.server``; ``upstream`` answers the chat proxy in this process (a
    local model, :mod:`remem.serve.local`) instead of ``config.upstream_base_url``. The
    caller keeps ownership of ``memory`` and closes it."""
    config = config or memory.config.server
    keys = memory.keys
    auth = Authenticator(keys)
    hub = EventHub(memory)
    proxy = ChatProxy(memory, hub, config, transport=upstream)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await hub.start()
        await proxy.start()
        try:
            yield
        finally:
            await proxy.stop()
            await hub.stop()

    app = FastAPI(title="remem", version=__version__, description=_DESCRIPTION, lifespan=lifespan)
    install_error_handlers(app)
    app.add_middleware(AuditTrail, memory=memory)
    app.add_middleware(BodyLimit, max_bytes=config.max_body_bytes)
    app.add_middleware(HostGuard, hosts=allowed_hosts(config.host, config.allowed_hosts))
    for router in (service_routes(memory, auth, keys), memory_routes(memory, auth, hub),
                   agent_routes(memory, auth), do_routes(memory, auth), log_routes(memory, auth),
                   share_routes(memory, auth), audit_routes(memory, auth), event_routes(hub, auth),
                   proxy_routes(proxy, auth)):
        app.include_router(router, dependencies=[Depends(strict_query)])
    install_console(app, memory, auth)
    return app
